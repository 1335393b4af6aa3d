// expect: repeatTimes outside [0, 255] narrowed to uint8_t: repeatTimes 300 at r12_muls_level0_repeat_wrap.cpp:20: the API's repeatTimes is a uint8_t, so the NPU would run 44 repeats
// Rule 12: the level-0 Muls takes `const uint8_t repeatTimes` (CANN 8.1
// kernel_operator_vec_binary_scalar_intf.h): 300 rows in one call compile (an implicit
// narrowing) and wrap to 44 repeats on the NPU, leaving 256 rows unscaled. The twin refuses it.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void muls_repeat_wrap() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    const uint32_t rows = 300;  // one 32-byte block (8 floats) per row
    pipe.InitBuffer(a, rows * 32);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, int32_t(rows * 8));
    PipeBarrier<PIPE_V>();
    const UnaryRepeatParams params(1, 1, 1, 1);
    const uint32_t repeat = rows;
    const float two = 2.0f;
    Muls(x, x, two, 8, repeat, params);
}

int main() {
    twin_test::launch(1, [] { muls_repeat_wrap(); });
    return twin_test::not_stopped();
}
