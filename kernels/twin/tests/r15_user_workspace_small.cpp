// expect: GetUserWorkspace: workspace smaller than the system workspace: the workspace 'workspace' has 1024 B
// Rule 15: GetUserWorkspace on a workspace without the 16 MiB system part: on the NPU the user
// pointer lands past the end of the workspace.
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
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 4 * TILE * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 4 * TILE * sizeof(float));
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", 4 * TILE * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y, ws); });
    return twin_test::not_stopped();
}
