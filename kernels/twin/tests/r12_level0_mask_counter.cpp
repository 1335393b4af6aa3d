// expect: isSetMask = false in counter mask mode not modelled: at r12_level0_mask_counter.cpp:17
// Rule 12: after SetMaskCount the register counts elements instead of enabling lanes; the twin
// models level-0 calls in normal mode only and refuses the call rather than guess.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void level0_mask_counter() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    LocalTensor<float> x = a.Get<float>();
    const UnaryRepeatParams params(1, 1, 8, 8);
    const float two = 2.0f;
    SetMaskCount();
    SetVectorMask<float, MaskMode::COUNTER>(0, 64);
    Muls<float, false>(x, x, two, MASK_PLACEHOLDER, 1, params);
}

int main() {
    twin_test::launch(1, [] { level0_mask_counter(); });
    return twin_test::not_stopped();
}
