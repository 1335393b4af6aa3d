// expect: srcBaseAddr not aligned to the element size
// Rule G3 (ext_rotary.h): srcBaseAddr must be a multiple of sizeof(T); 2 bytes into a float
// array would make the NPU read shifted data without any error.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gather_base_unaligned() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, o;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(o, 256);
    LocalTensor<uint32_t> off = o.Get<uint32_t>();
    Duplicate(a.Get<float>(), 1.0f, 64);
    Duplicate(off, uint32_t(0), 8);
    Gather(b.Get<float>(), a.Get<float>(), off, 2, 8);
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { gather_base_unaligned(); });
    return twin_test::not_stopped();
}
