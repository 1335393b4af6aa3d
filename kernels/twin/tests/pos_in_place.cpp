// expect: ok
// An in-place input (gm_mark_in_place) done right: each of 2 cores reads its own tiles, each
// into UB before its result goes out over it, and never reads a tile again; the results
// (x + 1 per element) are in x afterwards. r19_* break the rule.
#include <cstdio>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

constexpr uint32_t TILE = 64;
constexpr int CORES = 2;
constexpr uint32_t TILES = 3;  // per core

extern "C" __global__ __aicore__ void kernel(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 1, TILE * sizeof(float));
    pipe.InitBuffer(out, 1, TILE * sizeof(float));
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * TILES * TILE, TILES * TILE);
    for (uint32_t k = 0; k < TILES; ++k) {
        LocalTensor<float> a = in.AllocTensor<float>();
        DataCopy(a, xGm[k * TILE], TILE);
        in.EnQue(a);
        a = in.DeQue<float>();
        LocalTensor<float> b = out.AllocTensor<float>();
        Adds(b, a, 1.0f, int32_t(TILE));
        in.FreeTensor(a);
        out.EnQue(b);
        b = out.DeQue<float>();
        DataCopy(xGm[k * TILE], b, TILE);
        out.FreeTensor(b);
    }
}

int main() {
    const size_t n = size_t(CORES) * TILES * TILE;
    GM_ADDR x = opgen_twin::gm_alloc("x", n * sizeof(float));
    float* xf = reinterpret_cast<float*>(x);
    for (size_t i = 0; i < n; ++i) xf[i] = float(i);
    opgen_twin::gm_mark_in_place(x);
    twin_test::launch(CORES, [&] { kernel(x); });
    for (size_t i = 0; i < n; ++i) {
        if (xf[i] != float(i) + 1.0f) {
            std::fprintf(stderr, "x[%zu] = %g, want %g\n", i, double(xf[i]), double(i) + 1.0);
            return 1;
        }
    }
    return 0;
}
