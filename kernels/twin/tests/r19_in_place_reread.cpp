// expect: in-place input read after it was overwritten: GM 'x' bytes [0, 256) were written by core 0, then read by core 0 (DataCopy at cross_core.h:18)
// Rule 19: x is an input the kernel overwrites in place (the runner's --inplace; CANN's ref
// output is the same buffer). One core writes its results over tile 0 and then reads tile 0
// again, in order and fully synchronised: it gets its results, not the input (a prefetch of a
// tile that overlaps one already written does the same). pos_in_place.cpp reads each tile
// before writing it.
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;
using cross_core::TILE;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE * sizeof(float));
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 2 * TILE);
    cross_core::copy_tile(q, xGm, TILE, xGm, 0);  // reads tile 1, writes tile 0
    cross_core::copy_tile(q, xGm, 0, xGm, TILE);  // reads tile 0: overwritten
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 2 * TILE * sizeof(float));
    opgen_twin::gm_mark_in_place(x);
    twin_test::launch(1, [&] { kernel(x); });
    return twin_test::not_stopped();
}
