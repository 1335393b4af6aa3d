// expect: BrcbRepeatParams field not modelled
// Rule B5 (ext_quant.h): only dstBlkStride and dstRepStride of BrcbRepeatParams are modelled.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void r16_brcb_params_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 2048);
    pipe.InitBuffer(b, 2048);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> y = b.Get<float>();
    Duplicate(x, 1.0f, 512);
    Duplicate(y, 2.0f, 512);
    PipeBarrier<PIPE_V>();
    BrcbRepeatParams p(1, 8);
    p.repeatStrideMode = true;
    Brcb(y, x, 1, p);
}

int main() {
    twin_test::launch(1, [] { r16_brcb_params_kernel(); });
    return twin_test::not_stopped();
}
