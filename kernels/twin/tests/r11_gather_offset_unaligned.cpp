// expect: offset not aligned to the element size
// Rule G4 (ext_rotary.h): every byte offset must be a multiple of sizeof(T); an element index
// written where a byte offset belongs (5 instead of 20 for a float) is caught.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gather_offset_unaligned() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, o;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(o, 256);
    LocalTensor<uint32_t> off = o.Get<uint32_t>();
    Duplicate(a.Get<float>(), 1.0f, 64);
    Duplicate(off, uint32_t(0), 8);
    off.SetValue(3, uint32_t(5));
    Gather(b.Get<float>(), a.Get<float>(), off, 0, 8);
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { gather_offset_unaligned(); });
    return twin_test::not_stopped();
}
