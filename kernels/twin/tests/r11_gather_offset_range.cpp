// expect: offset outside the src tensor
// Rule G5 (ext_rotary.h): the gathered element must lie inside src. src is 16 floats (64 B);
// offset 64 is the first byte after it (the next buffer on the NPU, read without an error).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gather_offset_range() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, o;
    pipe.InitBuffer(a, 64);
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(o, 256);
    LocalTensor<uint32_t> off = o.Get<uint32_t>();
    Duplicate(a.Get<float>(), 1.0f, 16);
    Duplicate(off, uint32_t(0), 8);
    off.SetValue(7, uint32_t(64));
    Gather(b.Get<float>(), a.Get<float>(), off, 0, 8);
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { gather_offset_range(); });
    return twin_test::not_stopped();
}
