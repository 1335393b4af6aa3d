// expect: EnQue beyond the queue depth
// Rule 3: a depth-1 queue holds one EnQue'd tensor; a second EnQue overwrites it on the NPU.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void enque_depth() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 2, 256);
    LocalTensor<float> a = in.AllocTensor<float>();
    LocalTensor<float> b = in.AllocTensor<float>();
    in.EnQue(a);
    in.EnQue(b);
}

int main() {
    twin_test::launch(1, [] { enque_depth(); });
    return twin_test::not_stopped();
}
