// expect: ok
// The scalar DataCache (runtime_dcache.cpp) with its maintenance: the r18_dcache_* kernels with
// DataCacheCleanAndInvalid where CANN's kernels put it. (1) A SetValue cleaned to GM, then DMA'd
// back: y gets the stored value. (2) A GetValue, a DMA write of the same bytes, an invalidate of
// the line, a GetValue: it reads the DMA's value. (3) Core 0 stores a flag, cleans the entire
// cache, SyncAll, and core 1 reads it. The values are checked, not only that the twin accepts.
#include <cstdio>

#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;
using cross_core::TILE;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE * sizeof(float));
    GlobalTensor<float> xGm, yGm, zGm, ws;
    xGm.SetGlobalBuffer((__gm__ float*)x, TILE);
    yGm.SetGlobalBuffer((__gm__ float*)y, TILE);
    zGm.SetGlobalBuffer((__gm__ float*)z, 4);
    ws.SetGlobalBuffer((__gm__ float*)GetUserWorkspace(workspace), 2 * TILE);
    if (GetBlockIdx() == 0) {
        ws.SetValue(2, 5.0f);  // (1)
        DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(ws[2]);
        PipeBarrier<PIPE_ALL>();
        cross_core::copy_tile(q, ws, 0, yGm, 0);
        zGm.SetValue(0, ws.GetValue(TILE));  // (2): caches the line of ws[TILE]
        PipeBarrier<PIPE_ALL>();
        cross_core::copy_tile(q, xGm, 0, ws, TILE);
        DataCacheCleanAndInvalid<float, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(ws[TILE]);
        zGm.SetValue(1, ws.GetValue(TILE));
        ws.SetValue(3, 9.0f);  // (3)
        DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(ws);
    }
    SyncAll();
    if (GetBlockIdx() == 1) {
        GlobalTensor<float> z1 = zGm;
        z1.SetValue(2, ws.GetValue(3));
    }
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", TILE * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", TILE * sizeof(float));
    GM_ADDR z = opgen_twin::gm_alloc("z", 4 * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + 2 * TILE * sizeof(float));
    for (uint32_t i = 0; i < TILE; ++i) reinterpret_cast<float*>(x)[i] = 100.0f + float(i);
    twin_test::launch(2, [&] { kernel(x, y, z, ws); });
    const float* yv = reinterpret_cast<const float*>(y);
    const float* zv = reinterpret_cast<const float*>(z);
    // (1) y = the workspace tile: zero (gm_alloc) except the stored 5 at element 2.
    int bad = 0;
    for (uint32_t i = 0; i < TILE; ++i) bad += yv[i] != (i == 2 ? 5.0f : 0.0f);
    // (2) before the DMA the workspace held 0; after it and the invalidate, x[0] = 100.
    bad += zv[0] != 0.0f;
    bad += zv[1] != 100.0f;
    // (3) core 1 sees core 0's flag.
    bad += zv[2] != 9.0f;
    if (bad != 0) std::fprintf(stderr, "pos_dcache: %d wrong values (z = %g %g %g)\n", bad, zv[0], zv[1], zv[2]);
    return bad == 0 ? 0 : 1;
}
