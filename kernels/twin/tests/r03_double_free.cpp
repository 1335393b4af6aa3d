// expect: double FreeTensor
// Rule 3: the second FreeTensor of one allocation corrupts the queue's free list on the NPU.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void double_free() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 2, 256);
    LocalTensor<float> t = in.AllocTensor<float>();
    in.EnQue(t);
    LocalTensor<float> u = in.DeQue<float>();
    in.FreeTensor(u);
    in.FreeTensor(u);
}

int main() {
    twin_test::launch(1, [] { double_free(); });
    return twin_test::not_stopped();
}
