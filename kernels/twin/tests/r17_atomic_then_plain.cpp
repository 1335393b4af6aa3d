// expect: plain and atomic writes between cores without SyncAll: GM 'y' bytes [128, 256): atomically added (float) by core 0 (DataCopy at atomic.h:25), then written by core 1 (DataCopy at atomic.h:25)
// Rule 17: core 0 adds into y atomically, core 1 stores over half of that tile in the same
// phase (the other order of r17_atomic_plain_mix; the overlap is the tile's second half).
#include "kernels/atomic.h"
#include "twin_test.h"
using namespace AscendC;
using atomic_test::TILE_BYTES;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE_BYTES);
    const uint32_t core = uint32_t(GetBlockIdx());
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 2 * TILE_BYTES / 4);
    yGm.SetGlobalBuffer((__gm__ float*)y, 2 * TILE_BYTES / 4);
    if (core == 0) SetAtomicAdd<float>();
    atomic_test::copy_tile(q, xGm, 0, yGm, core * TILE_BYTES / 8);
    SetAtomicNone();
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 2 * TILE_BYTES);
    GM_ADDR y = opgen_twin::gm_alloc("y", 2 * TILE_BYTES);
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", atomic_test::SYS_WORKSPACE);
    twin_test::launch(2, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
