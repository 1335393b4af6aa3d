// expect: vector mask not a lane prefix: at r12_level0_mask_not_prefix.cpp:16: the mask register (set by SetVectorMask at r12_level0_mask_not_prefix.cpp:15) holds 0x00000:0x000f0
// Rule 12: the twin models mask registers that enable lanes 0..n-1 of a repeat; lanes 4..7
// alone are refused, not guessed.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void level0_mask_not_prefix() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    LocalTensor<float> x = a.Get<float>();
    const UnaryRepeatParams params(1, 1, 8, 8);
    const float two = 2.0f;
    SetVectorMask<float>(0, 0xF0);
    Muls<float, false>(x, x, two, MASK_PLACEHOLDER, 1, params);
}

int main() {
    twin_test::launch(1, [] { level0_mask_not_prefix(); });
    return twin_test::not_stopped();
}
