// expect: GM access to bytes dirty in a scalar DataCache: GM 'workspace' bytes [16777216, 16777220): written by SetValue of core 0 (GlobalTensor::SetValue at r18_dcache_dirty_other_core.cpp:12) into its scalar DataCache, then read by core 1 (GlobalTensor::GetValue at r18_dcache_dirty_other_core.cpp:14)
// Rule 18: core 0 stores a flag by SetValue and core 1 reads it after SyncAll. SyncAll orders
// the cores but does not write core 0's DataCache back: core 1 reads GM's old bytes
// (pos_dcache.cpp calls DataCacheCleanAndInvalid on core 0 before the barrier).
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR workspace) {
    GlobalTensor<int32_t> ws;
    ws.SetGlobalBuffer((__gm__ int32_t*)GetUserWorkspace(workspace), 16);
    if (GetBlockIdx() == 0) ws.SetValue(0, 7);
    SyncAll();
    if (GetBlockIdx() == 1) (void)ws.GetValue(0);
}

int main() {
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + 64);
    twin_test::launch(2, [&] { kernel(ws); });
    return twin_test::not_stopped();
}
