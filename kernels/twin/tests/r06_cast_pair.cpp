// expect: Cast pair not supported on A2
// Rule 6: there is no direct half -> bfloat16_t Cast on A2 (go through float).
// cann: compile error (CANN has no half -> bfloat16_t Cast template; the twin rejects it when run)
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void cast_pair() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 256);
    LocalTensor<half> x = a.Get<half>();
    LocalTensor<bfloat16_t> y = b.Get<bfloat16_t>();
    Duplicate(x, (half)1.0f, 128);
    Cast(y, x, RoundMode::CAST_RINT, 128);
}

int main() {
    twin_test::launch(1, [] { cast_pair(); });
    return twin_test::not_stopped();
}
