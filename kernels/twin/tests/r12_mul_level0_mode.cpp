// expect: BinaryRepeatParams mode not modelled
// Rule M1 (ext_rotary.h): the level-0 Mul models the default blockNumber and stride modes only;
// any other is refused rather than computed wrongly.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void mul_level0_mode() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 256);
    BinaryRepeatParams p(1, 1, 1, 8, 8, 8);
    p.repeatStrideMode = true;
    Mul(x, x, x, 64, 1, p);
}

int main() {
    twin_test::launch(1, [] { mul_level0_mode(); });
    return twin_test::not_stopped();
}
