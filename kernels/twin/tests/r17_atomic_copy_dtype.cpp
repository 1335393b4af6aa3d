// expect: atomic copy-out dtype differs from the atomic mode's: a copy-out of half while SetAtomicAdd<float>
// Rule 17: the atomic unit adds in the dtype SetAtomicAdd chose, whatever the copy's element
// type: a half copy-out under SetAtomicAdd<float> would add the bytes as floats.
#include "kernels/atomic.h"
#include "twin_test.h"
using namespace AscendC;
using atomic_test::TILE_BYTES;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE_BYTES);
    GlobalTensor<half> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, TILE_BYTES / 2);
    yGm.SetGlobalBuffer((__gm__ half*)y, TILE_BYTES / 2);
    SetAtomicAdd<float>();
    atomic_test::copy_tile(q, xGm, 0, yGm, 0);
    SetAtomicNone();
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", TILE_BYTES);
    GM_ADDR y = opgen_twin::gm_alloc("y", TILE_BYTES);
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
