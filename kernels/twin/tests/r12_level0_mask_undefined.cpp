// expect: isSetMask = false with the vector mask register undefined: at r12_level0_mask_undefined.cpp:19: the call runs the lanes the mask register holds, last changed by Duplicate at r12_level0_mask_undefined.cpp:17
// Rule 12: a level-0 Muls with isSetMask = false runs the lanes the vector mask register
// holds, whatever its mask argument says; the kernel never set the register, and the count-form
// Duplicate before it is not known to leave it defined. The twin refuses rather than guess.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void level0_mask_undefined() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    LocalTensor<float> x = a.Get<float>();
    const UnaryRepeatParams params(1, 1, 8, 8);
    const float two = 2.0f;
    // The kernel means 8 lanes; the register decides.
    Duplicate(x, 1.0f, 64);
    PipeBarrier<PIPE_V>();
    Muls<float, false>(x, x, two, 8, 1, params);
}

int main() {
    twin_test::launch(1, [] { level0_mask_undefined(); });
    return twin_test::not_stopped();
}
