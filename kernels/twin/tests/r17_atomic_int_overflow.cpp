// expect: atomic add overflows the integer type: GM 'y' byte 0: 100 + 100 leaves int8_t
// Rule 17: whether an integer atomic add wraps or saturates is not documented for A2, so the
// twin refuses one that leaves the type's range (a kernel must not depend on either).
#include "kernels/atomic.h"
#include "twin_test.h"
using namespace AscendC;
using atomic_test::TILE_BYTES;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE_BYTES);
    GlobalTensor<int8_t> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ int8_t*)x, TILE_BYTES);
    yGm.SetGlobalBuffer((__gm__ int8_t*)y, TILE_BYTES);
    SetAtomicAdd<int8_t>();
    atomic_test::copy_tile(q, xGm, 0, yGm, 0);
    SetAtomicNone();
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", TILE_BYTES);
    GM_ADDR y = opgen_twin::gm_alloc("y", TILE_BYTES);
    for (uint32_t i = 0; i < TILE_BYTES; ++i) {
        reinterpret_cast<int8_t*>(x)[i] = 100;
        reinterpret_cast<int8_t*>(y)[i] = 100;
    }
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
