// expect: partial overlap of dst and src
// Rule M3 (ext_rotary.h): dst may be src0 in place (same start, same strides) but must not
// overlap it otherwise; here dst starts one block into src0.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void mul_level0_overlap() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, c;
    pipe.InitBuffer(a, 1024);
    pipe.InitBuffer(c, 256);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 256);
    Duplicate(c.Get<float>(), 2.0f, 64);
    Mul(x, x, c.Get<float>(), 64, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 0));  // in place: fine
    Mul(x[8], x, c.Get<float>(), 64, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 0));
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { mul_level0_overlap(); });
    return twin_test::not_stopped();
}
