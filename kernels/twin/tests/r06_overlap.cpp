// expect: partial overlap of dst and src
// Rule 6: dst may be src exactly (in place) but must not overlap it partially.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void overlap() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 256);
    Add(x, x, x, 64);          // full overlap: fine
    Add(x[8], x, x[128], 64);  // dst [32, 288) B overlaps src0 [0, 256) B
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { overlap(); });
    return twin_test::not_stopped();
}
