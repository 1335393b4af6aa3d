// expect: plain and atomic writes between cores without SyncAll: GM 'y' bytes [0, 256): atomically added (float) by core 0 (DataCopy at atomic.h:25), then atomically added (int32_t) by core 1
// Rule 17: two cores add into the same bytes in one phase, one as float, one as int32_t: each
// add reads the other's partial result as its own type.
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
    if (core == 0) {
        SetAtomicAdd<float>();
        atomic_test::copy_tile(q, xGm, 0, yGm, 0);
    } else {
        GlobalTensor<int32_t> xi, yi;
        xi.SetGlobalBuffer((__gm__ int32_t*)x, 2 * TILE_BYTES / 4);
        yi.SetGlobalBuffer((__gm__ int32_t*)y, 2 * TILE_BYTES / 4);
        SetAtomicAdd<int32_t>();
        atomic_test::copy_tile(q, xi, 0, yi, 0);
    }
    SetAtomicNone();
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 2 * TILE_BYTES);
    GM_ADDR y = opgen_twin::gm_alloc("y", 2 * TILE_BYTES);
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", atomic_test::SYS_WORKSPACE);
    twin_test::launch(2, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
