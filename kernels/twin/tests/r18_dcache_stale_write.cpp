// expect: scalar GM write into a stale DataCache line: GM 'workspace' bytes [16777220, 16777224): core 0 cached the line on an earlier scalar access, then GM was written by core 0 (DataCopy at cross_core.h:22), then SetValue of core 0 (GlobalTensor::SetValue at r18_dcache_stale_write.cpp:20)
// Rule 18: a GetValue caches the line, a DMA rewrites the tile in GM, and a SetValue then dirties
// the cached copy, which still holds the bytes from before the DMA: its 64-byte write-back would
// put them back over the DMA's (pos_dcache.cpp invalidates the line before touching it again).
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;
using cross_core::TILE;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE * sizeof(float));
    GlobalTensor<float> xGm, ws;
    xGm.SetGlobalBuffer((__gm__ float*)x, TILE);
    ws.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), TILE);
    (void)ws.GetValue(0);
    PipeBarrier<PIPE_ALL>();
    cross_core::copy_tile(q, xGm, 0, ws, 0);
    ws.SetValue(1, 3.0f);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + TILE * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, ws); });
    return twin_test::not_stopped();
}
