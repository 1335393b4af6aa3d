// expect: WAR between cores without SyncAll: GM 'x' bytes [256, 512): read by several cores (the latest: DataCopy at cross_core.h:18), then written by core 2
// Rule 15: cores 0 and 1 both read x's second tile (concurrent reads never race), then core 2
// overwrites it in the same phase: the readers may see the new or the old values.
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
    if (core < 2) cross_core::copy_tile(q, xGm, TILE, yGm, core * TILE);
    if (core == 2) cross_core::copy_tile(q, yGm, 3 * TILE, xGm, TILE);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 4 * TILE * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 4 * TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", 32);
    twin_test::launch(3, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
