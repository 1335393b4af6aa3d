// expect: ok
// Cross-core order through SyncAll (runtime.h run_cores): each of 4 cores writes its tile of the
// user workspace, SyncAll, reads its neighbour's tile (written by another core: ordered by the
// barrier), SyncAll, and overwrites its own tile (read by its neighbour before the second
// barrier: the WAR is ordered too). y must hold every tile rotated by one core, and the last
// tiles the second values. Reads of one input by every core in one phase never race.
#include <cstdio>

#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;
using cross_core::TILE;

constexpr int CORES = 4;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE * sizeof(float));
    const uint32_t core = uint32_t(GetBlockIdx());
    const uint32_t next = (core + 1) % uint32_t(GetBlockNum());
    SetSysWorkspace(workspace);
    GlobalTensor<float> xGm, yGm, ws;
    xGm.SetGlobalBuffer((__gm__ float*)x, 2 * CORES * TILE);
    yGm.SetGlobalBuffer((__gm__ float*)y, 2 * CORES * TILE);
    ws.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), CORES * TILE);
    cross_core::copy_tile(q, xGm, 0, ws, core * TILE);  // every core reads x's first tile: no race
    cross_core::copy_tile(q, xGm, core * TILE, ws, core * TILE);
    SyncAll();
    cross_core::copy_tile(q, ws, next * TILE, yGm, core * TILE);
    SyncAll();
    cross_core::copy_tile(q, xGm, (CORES + core) * TILE, ws, core * TILE);
    SyncAll();
    cross_core::copy_tile(q, ws, next * TILE, yGm, (CORES + core) * TILE);
}

int main() {
    const size_t n = 2 * CORES * TILE;
    GM_ADDR x = opgen_twin::gm_alloc("x", n * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", n * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + CORES * TILE * sizeof(float));
    for (size_t i = 0; i < n; ++i) reinterpret_cast<float*>(x)[i] = float(i);
    twin_test::launch(CORES, [&] { kernel(x, y, ws); });
    int bad = 0;
    for (int half = 0; half < 2; ++half) {
        for (int c = 0; c < CORES; ++c) {
            for (uint32_t i = 0; i < TILE; ++i) {
                const size_t at = size_t(half * CORES + c) * TILE + i;
                const float want = float(size_t(half * CORES + (c + 1) % CORES) * TILE + i);
                bad += reinterpret_cast<float*>(y)[at] != want;
            }
        }
    }
    if (bad != 0) std::fprintf(stderr, "pos_sync_all: %d wrong elements\n", bad);
    return bad == 0 ? 0 : 1;
}
