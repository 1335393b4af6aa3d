// expect: atomic add left on at kernel end: SetAtomicAdd<float> at r17_atomic_left_on.cpp:16 was never followed by SetAtomicNone()
// Rule 17: the docs ask for SetAtomicNone after the adds; the mode is core state (only a TPipe
// constructor or Reset clears it), so later copy-outs on the core would add instead of store.
#include "kernels/atomic.h"
#include "twin_test.h"
using namespace AscendC;
using atomic_test::TILE_BYTES;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE_BYTES);
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, TILE_BYTES / 4);
    yGm.SetGlobalBuffer((__gm__ float*)y, TILE_BYTES / 4);
    SetAtomicAdd<float>();
    atomic_test::copy_tile(q, xGm, 0, yGm, 0);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", TILE_BYTES);
    GM_ADDR y = opgen_twin::gm_alloc("y", TILE_BYTES);
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
