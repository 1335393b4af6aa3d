// expect: access outside the LocalTensor
// Rule M2 (ext_rotary.h): the strided extent of a level-0 operand must stay in its tensor. dst
// holds 3 rows of 64 floats; 4 repeats of 8 blocks write a fourth row past its end.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void mul_level0_extent() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c;
    pipe.InitBuffer(a, 3 * 256);
    pipe.InitBuffer(b, 4 * 256);
    pipe.InitBuffer(c, 256);
    Duplicate(b.Get<float>(), 1.0f, 256);
    Duplicate(c.Get<float>(), 2.0f, 64);
    Mul(a.Get<float>(), b.Get<float>(), c.Get<float>(), 64, 4, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
}

int main() {
    twin_test::launch(1, [] { mul_level0_extent(); });
    return twin_test::not_stopped();
}
