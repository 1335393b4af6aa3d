// expect: UB address not 32-byte aligned
// Rule M2 (ext_rotary.h): level-0 operands start on 32-byte boundaries; c[4] starts 16 B in.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void mul_level0_misaligned() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, c;
    pipe.InitBuffer(a, 512);
    pipe.InitBuffer(c, 512);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> t = c.Get<float>();
    Duplicate(x, 1.0f, 128);
    Duplicate(t, 2.0f, 128);
    Mul(x, x, t[4], 64, 1, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { mul_level0_misaligned(); });
    return twin_test::not_stopped();
}
