// expect: DeQue on an empty queue
// Rule 3: DeQue with nothing EnQue'd waits forever on the NPU.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void deque_empty() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 2, 256);
    LocalTensor<float> a = in.AllocTensor<float>();
    in.EnQue(a);
    LocalTensor<float> b = in.DeQue<float>();
    LocalTensor<float> c = in.DeQue<float>();
    in.FreeTensor(b);
    in.FreeTensor(c);
}

int main() {
    twin_test::launch(1, [] { deque_empty(); });
    return twin_test::not_stopped();
}
