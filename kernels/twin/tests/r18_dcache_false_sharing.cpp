// expect: GM access to bytes dirty in a scalar DataCache: GM 'workspace' bytes [16777216, 16777220): written by SetValue of core 0 (GlobalTensor::SetValue at r18_dcache_false_sharing.cpp:12) into its scalar DataCache, then written by core 1 (GlobalTensor::SetValue at r18_dcache_false_sharing.cpp:14)
// Rule 18: two cores store into different bytes of one 64-byte line. Each core writes its
// DataCache back a whole line at a time, so the later write-back overwrites the other core's
// value (SetValue's docs: cores must keep a cache line apart), even with SyncAll between.
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR workspace) {
    GlobalTensor<int32_t> ws;
    ws.SetGlobalBuffer((__gm__ int32_t*)GetUserWorkspace(workspace), 16);
    if (GetBlockIdx() == 0) ws.SetValue(0, 7);
    SyncAll();
    if (GetBlockIdx() == 1) ws.SetValue(8, 9);
}

int main() {
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE + 64);
    twin_test::launch(2, [&] { kernel(ws); });
    return twin_test::not_stopped();
}
