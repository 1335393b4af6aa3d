// expect: dtype not supported on A2
// Rule B1 (ext_quant.h): Brcb has no 8-bit form on A2.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void r16_brcb_dtype_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 2048);
    pipe.InitBuffer(b, 2048);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> y = b.Get<float>();
    Duplicate(x, 1.0f, 512);
    Duplicate(y, 2.0f, 512);
    PipeBarrier<PIPE_V>();
    LocalTensor<int8_t> xi = a.Get<int8_t>();
    LocalTensor<int8_t> yi = b.Get<int8_t>();
    Brcb(yi, xi, 1, BrcbRepeatParams(1, 8));
}

int main() {
    twin_test::launch(1, [] { r16_brcb_dtype_kernel(); });
    return twin_test::not_stopped();
}
