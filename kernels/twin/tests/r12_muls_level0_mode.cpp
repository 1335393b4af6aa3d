// expect: UnaryRepeatParams mode not modelled
// Rule U4 (ext_rotary.h): the level-0 Muls models the default blockNumber, stride modes and
// halfBlock only; any other is refused rather than computed wrongly.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void muls_level0_mode() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 256);
    UnaryRepeatParams p(1, 1, 8, 8);
    p.halfBlock = true;
    Muls(x, x, -1.0f, 64, 1, p);
}

int main() {
    twin_test::launch(1, [] { muls_level0_mode(); });
    return twin_test::not_stopped();
}
