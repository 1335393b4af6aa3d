// expect: ok
// Rule 10: UB is poisoned (0xFF bytes, NaN in float/half/bf16) when a core starts and whenever a
// queue buffer is allocated, so a kernel that reads UB it never wrote sees NaN instead of the
// previous tile's data. The twin does not stop such a kernel; this test checks the poison shows.
#include <cstring>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void ub_poison(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> scratch;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(scratch, 256);
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 64);
    yGm.SetGlobalBuffer((__gm__ float*)y, 192);

    // Tile 0 fills the queue's only buffer with real data.
    LocalTensor<float> t = in.AllocTensor<float>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(t, xGm, 64);
    PipeBarrier<PIPE_ALL>();
    in.EnQue(t);
    LocalTensor<float> u = in.DeQue<float>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(yGm, u, 64);
    PipeBarrier<PIPE_ALL>();
    in.FreeTensor(u);

    // Tile 1 allocates the same buffer again but forgets the copy-in.
    t = in.AllocTensor<float>();
    in.EnQue(t);
    u = in.DeQue<float>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(yGm[64], u, 64);
    PipeBarrier<PIPE_ALL>();
    in.FreeTensor(u);

    // A TBuf nobody wrote.
    PipeBarrier<PIPE_ALL>();
    DataCopy(yGm[128], scratch.Get<float>(), 64);
    PipeBarrier<PIPE_ALL>();
}

int main() {
    // This test is about data layout and numerics, not pipelining: every copy sits between
    // PipeBarrier<PIPE_ALL>s, and the vector/scalar steps lean on compiler auto-sync.
    opgen_twin::set_auto_sync(true);
    GM_ADDR x = opgen_twin::gm_alloc("x", 64 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 192 * sizeof(float));
    for (int i = 0; i < 64; ++i) {
        const float v = float(i) + 0.5f;
        std::memcpy(x + i * sizeof(float), &v, sizeof v);
    }
    twin_test::launch(1, [&] { ub_poison(x, y); });
    for (int i = 0; i < 192; ++i) {
        float v;
        uint32_t bits;
        std::memcpy(&v, y + i * sizeof(float), sizeof v);
        std::memcpy(&bits, &v, sizeof bits);
        const bool ok = i < 64 ? v == float(i) + 0.5f : (bits == 0xFFFFFFFFu && v != v);
        if (!ok) {
            std::fprintf(stderr, "y[%d] = %g (bits %08x): poison not visible\n", i, double(v), unsigned(bits));
            return 1;
        }
    }
    return 0;
}
