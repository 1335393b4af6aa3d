// expect: SyncAll count differs between cores: core 0 waits in SyncAll #1 (at r15_sync_all_count.cpp:20) but core 1 returned after 0 SyncAll calls
// Rule 15: core 1 returns early without the SyncAll every other core waits in: the hardware
// barrier never opens and the NPU hangs.
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
    cross_core::copy_tile(q, xGm, core * TILE, ws, core * TILE);
    if (core == 1) return;
    SyncAll();
    cross_core::copy_tile(q, ws, ((core + 1) % 3) * TILE, yGm, core * TILE);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 4 * TILE * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 4 * TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + 4 * TILE * sizeof(float));
    twin_test::launch(3, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
