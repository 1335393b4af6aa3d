// expect: GM access to bytes dirty in a scalar DataCache: GM 'workspace' bytes [16777224, 16777228): written by SetValue of core 0 (GlobalTensor::SetValue at r18_dcache_dirty_dma.cpp:17) into its scalar DataCache, then read by DMA of core 0 (DataCopy at cross_core.h:18)
// Rule 18: a SetValue into GM only dirties the core's scalar DataCache; the DMA that copies the
// same bytes back reads GM, which still holds the old value (pos_dcache.cpp cleans the line with
// DataCacheCleanAndInvalid first). The barrier orders S before MTE2, so only the cache is at fault.
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;
using cross_core::TILE;

extern "C" __global__ __aicore__ void kernel(GM_ADDR y, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE * sizeof(float));
    GlobalTensor<float> yGm, ws;
    yGm.SetGlobalBuffer((__gm__ float*)y, TILE);
    ws.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), TILE);
    ws.SetValue(2, 5.0f);
    PipeBarrier<PIPE_ALL>();
    cross_core::copy_tile(q, ws, 0, yGm, 0);
}

int main() {
    GM_ADDR y = opgen_twin::gm_alloc("y", TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + TILE * sizeof(float));
    twin_test::launch(1, [&] { kernel(y, ws); });
    return twin_test::not_stopped();
}
