// expect: AllocTensor with no free buffer
// Rule 3: a second AllocTensor on a single-buffer queue waits forever on the NPU.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void alloc_no_free() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 256);
    LocalTensor<float> a = in.AllocTensor<float>();
    LocalTensor<float> b = in.AllocTensor<float>();
    in.FreeTensor(a);
    in.FreeTensor(b);
}

int main() {
    twin_test::launch(1, [] { alloc_no_free(); });
    return twin_test::not_stopped();
}
