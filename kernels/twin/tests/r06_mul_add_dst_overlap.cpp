// expect: partial overlap of dst and src
// Rule 6 for MulAddDst: dst may be a source exactly (in place) but must not overlap one
// partially (the lanes would read other lanes' half-updated sums).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void overlap() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 2048);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 512);
    MulAddDst(x, x, x[256], 128);     // in place with src0: fine
    MulAddDst(x[8], x, x[256], 128);  // dst [32, 544) B overlaps src0 [0, 512) B
}

int main() {
    // This test is about another rule: auto-sync supplies the V->V barriers.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { overlap(); });
    return twin_test::not_stopped();
}
