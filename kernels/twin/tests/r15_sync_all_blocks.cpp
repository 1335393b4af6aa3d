// expect: SyncAll with more blocks than vector cores: at r15_sync_all_blocks.cpp:20: the launch has 49 blocks but Ascend910B2 has 48 vector cores
// Rule 15: a launch of 49 blocks on a 48-vector-core 910B2 calls SyncAll. Only 48 blocks are
// resident; the 49th starts when one of them returns, which none does while it waits in the
// barrier: the NPU hangs. The twin runs all 49 as threads, so it must refuse the launch.
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;
using cross_core::TILE;

constexpr int kBlocks = 49;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE * sizeof(float));
    const uint32_t core = uint32_t(GetBlockIdx());
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, kBlocks * TILE);
    yGm.SetGlobalBuffer((__gm__ float*)y, kBlocks * TILE);
    SyncAll();
    cross_core::copy_tile(q, xGm, core * TILE, yGm, core * TILE);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", kBlocks * TILE * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", kBlocks * TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE);
    twin_test::launch(kBlocks, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
