// expect: SyncAll without the system workspace: at r15_sync_all_workspace.cpp:18: the launch's workspace has 32 B
// Rule 15: a kernel that calls SyncAll on a launch whose TilingFunc asked for no system
// workspace (GetLibApiWorkSpaceSize) in GetWorkspaceSizes.
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
    cross_core::copy_tile(q, xGm, core * TILE, yGm, core * TILE);
    SyncAll();
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 4 * TILE * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 4 * TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", 32);
    twin_test::launch(2, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
