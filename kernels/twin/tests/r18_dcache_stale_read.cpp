// expect: scalar GM read of a stale DataCache line: GM 'workspace' bytes [16777216, 16777220): core 0 cached the line on an earlier scalar access, then GM was written by core 0 (DataCopy at cross_core.h:22), then read by GetValue of core 0 (GlobalTensor::GetValue at r18_dcache_stale_read.cpp:20)
// Rule 18: a GetValue caches its 64-byte line in the core's scalar DataCache; a DMA that then
// writes those GM bytes does not update the cached copy, so the second GetValue returns the old
// value (pos_dcache.cpp invalidates the line with DataCacheCleanAndInvalid between them).
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
    (void)ws.GetValue(0);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + TILE * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, ws); });
    return twin_test::not_stopped();
}
