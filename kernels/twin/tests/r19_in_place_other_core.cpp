// expect: in-place input read after it was overwritten: GM 'x' bytes [256, 512) were written by core 0, then read by core 1 (DataCopy at cross_core.h:18)
// Rule 19 across cores: rows of an in-place input given to two cores with overlapping ranges.
// Core 0 writes tile 1 (its range's end), core 1 then reads tile 1 (its range's start) after a
// SyncAll, so no race: still its input is gone (the rows must be disjoint). Without the
// SyncAll the order is a race, which r15_cross_core_raw reports.
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;
using cross_core::TILE;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE * sizeof(float));
    SetSysWorkspace(workspace);
    const uint32_t core = uint32_t(GetBlockIdx());
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 3 * TILE);
    if (core == 0) cross_core::copy_tile(q, xGm, 0, xGm, TILE);  // core 0: tiles [0, 2)
    SyncAll();
    if (core == 1) cross_core::copy_tile(q, xGm, TILE, xGm, 2 * TILE);  // core 1: tiles [1, 3)
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 3 * TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE);
    opgen_twin::gm_mark_in_place(x);
    twin_test::launch(2, [&] { kernel(x, ws); });
    return twin_test::not_stopped();
}
