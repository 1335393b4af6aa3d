// expect: RAW between cores without SyncAll: GM 'workspace' bytes [16777216, 16777472): written by core 0 (DataCopy at cross_core.h:22), then read by core 1 (DataCopy at cross_core.h:18)
// Rule 15: core 0 writes its tile of the user workspace and core 1 reads it back in the same
// phase: without SyncAll between them core 1 may read before core 0's copy-out lands
// (pos_sync_all.cpp has the barrier).
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;
using cross_core::TILE;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE * sizeof(float));
    const uint32_t core = uint32_t(GetBlockIdx());
    GlobalTensor<float> xGm, yGm, ws;
    xGm.SetGlobalBuffer((__gm__ float*)x, 4 * TILE);
    yGm.SetGlobalBuffer((__gm__ float*)y, 4 * TILE);
    ws.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), 4 * TILE);
    if (core == 0) cross_core::copy_tile(q, xGm, 0, ws, 0);
    if (core == 1) cross_core::copy_tile(q, ws, 0, yGm, 0);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 4 * TILE * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 4 * TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + 4 * TILE * sizeof(float));
    twin_test::launch(2, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
