// expect: WAW between cores without SyncAll: GM 'y' bytes [128, 256): written by core 0 (DataCopy at cross_core.h:22), then written by core 1 (DataCopy at cross_core.h:22)
// Rule 15: two cores copy out to overlapping bytes of y (core 1's tile starts half a tile into
// core 0's); which lands last is up to the hardware.
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
    cross_core::copy_tile(q, xGm, core * TILE, yGm, core * (TILE / 2));
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 4 * TILE * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 4 * TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", 32);
    twin_test::launch(2, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
