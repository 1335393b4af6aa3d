// expect: mask out of range
// Rule M1 (ext_rotary.h): a continuous mask counts the elements of one 256-byte repeat, at most
// 64 floats; 65 is refused.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void mul_level0_mask() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 256);
    Mul(x, x, x, 65, 1, BinaryRepeatParams(1, 1, 1, 8, 8, 8));
}

int main() {
    twin_test::launch(1, [] { mul_level0_mask(); });
    return twin_test::not_stopped();
}
