// expect: access outside the LocalTensor
// Rule 6: every vector operand must hold `count` elements (src1 is a 32-float view).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void operand_range() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 512);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> y = b.Get<float>(32);
    Duplicate(x, 1.0f, 64);
    Add(x, x, y, 64);
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { operand_range(); });
    return twin_test::not_stopped();
}
