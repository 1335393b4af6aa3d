// expect: Cast pair not supported on A2
// Rule 6: A2's Cast table has no int8_t -> float pair (research/ascendc-api.md 4.2): go through
// half, as the reverse_scan kernels do for an int8 mask.
// cann: compile error (CANN 8.1's dav_c220 vconv has no int8_t -> float CastIntrinsicsImpl either)
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void cast_int8_float() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 1024);
    LocalTensor<int8_t> x = a.Get<int8_t>();
    LocalTensor<float> y = b.Get<float>();
    Duplicate(x.ReinterpretCast<int16_t>(), static_cast<int16_t>(257), 128);
    Cast(y, x, RoundMode::CAST_NONE, 256);
}

int main() {
    twin_test::launch(1, [] { cast_int8_float(); });
    return twin_test::not_stopped();
}
