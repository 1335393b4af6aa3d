// expect: RoundMode not allowed for this Cast on A2
// Rule 6: float -> bfloat16_t needs an explicit rounding mode; CAST_NONE is not allowed.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void cast_mode() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 128);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<bfloat16_t> y = b.Get<bfloat16_t>();
    Duplicate(x, 1.0f, 64);
    Cast(y, x, RoundMode::CAST_NONE, 64);
}

int main() {
    twin_test::launch(1, [] { cast_mode(); });
    return twin_test::not_stopped();
}
