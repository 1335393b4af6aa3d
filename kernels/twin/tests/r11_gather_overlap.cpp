// expect: src and dst overlap
// Rule G6 (ext_rotary.h): Gather must not write the tensor it reads, not even in place.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gather_overlap() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, o;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(o, 256);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<uint32_t> off = o.Get<uint32_t>();
    Duplicate(x, 1.0f, 64);
    Duplicate(off, uint32_t(0), 8);
    Gather(x, x, off, 0, 8);
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { gather_overlap(); });
    return twin_test::not_stopped();
}
