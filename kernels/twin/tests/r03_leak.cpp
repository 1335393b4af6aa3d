// expect: tensor not freed at kernel end
// Rule 3: end_core() finds a queue tensor that was dequeued but never freed.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void leak() {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(out, 1, 256);
    LocalTensor<float> t = out.AllocTensor<float>();
    out.EnQue(t);
    LocalTensor<float> u = out.DeQue<float>();
    (void)u;
}

int main() {
    twin_test::launch(1, [] { leak(); });
    return twin_test::not_stopped();
}
