// expect: ok
// Atomic copy-out (SetAtomicAdd / SetAtomicNone, runtime.cpp "atomic"): 48 cores each add
// their own float32 row into one output row in the same SyncAll phase (no race: the adds land
// whole), then, after a SyncAll, core 0 reads the sum back. Checked against the sum computed
// here in the twin's (baton) order, and exactly for the small integers of the first half of
// the row. A half row gets the sum of the 48 cores' halves with one rounding per add, and an
// int32 row the exact integer sum. The output rows start as their initial value, not 0: an
// atomic add does not clear GM (SetAtomicAdd 注意事项). The float counter records each float
// element added.
#include <cmath>
#include <cstdio>

#include "kernels/atomic.h"
#include "twin_test.h"
using namespace AscendC;
using atomic_test::TILE_BYTES;

constexpr int CORES = 48;
constexpr uint32_t NF = TILE_BYTES / sizeof(float);
constexpr uint32_t NH = TILE_BYTES / sizeof(half);
constexpr uint32_t NI = TILE_BYTES / sizeof(int32_t);

extern "C" __global__ __aicore__ void kernel(GM_ADDR xf, GM_ADDR xh, GM_ADDR xi, GM_ADDR yf, GM_ADDR yh, GM_ADDR yi,
                                             GM_ADDR back, GM_ADDR workspace) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    pipe.InitBuffer(q, 1, TILE_BYTES);
    const uint32_t core = uint32_t(GetBlockIdx());
    GlobalTensor<float> xfGm, yfGm, backGm;
    GlobalTensor<half> xhGm, yhGm;
    GlobalTensor<int32_t> xiGm, yiGm;
    xfGm.SetGlobalBuffer((__gm__ float*)xf, CORES * NF);
    xhGm.SetGlobalBuffer((__gm__ half*)xh, CORES * NH);
    xiGm.SetGlobalBuffer((__gm__ int32_t*)xi, CORES * NI);
    yfGm.SetGlobalBuffer((__gm__ float*)yf, NF);
    yhGm.SetGlobalBuffer((__gm__ half*)yh, NH);
    yiGm.SetGlobalBuffer((__gm__ int32_t*)yi, NI);
    backGm.SetGlobalBuffer((__gm__ float*)back, NF);
    SetAtomicAdd<float>();
    atomic_test::copy_tile(q, xfGm, core * NF, yfGm, 0);
    SetAtomicAdd<half>();
    atomic_test::copy_tile(q, xhGm, core * NH, yhGm, 0);
    SetAtomicType<int32_t>();  // keeps the add, changes its dtype
    atomic_test::copy_tile(q, xiGm, core * NI, yiGm, 0);
    SetAtomicNone();
    SyncAll();
    if (core == 0) atomic_test::copy_tile(q, yfGm, 0, backGm, 0);  // a plain store of the sum
}

int main() {
    GM_ADDR xf = opgen_twin::gm_alloc("xf", CORES * TILE_BYTES);
    GM_ADDR xh = opgen_twin::gm_alloc("xh", CORES * TILE_BYTES);
    GM_ADDR xi = opgen_twin::gm_alloc("xi", CORES * TILE_BYTES);
    GM_ADDR yf = opgen_twin::gm_alloc("yf", TILE_BYTES);
    GM_ADDR yh = opgen_twin::gm_alloc("yh", TILE_BYTES);
    GM_ADDR yi = opgen_twin::gm_alloc("yi", TILE_BYTES);
    GM_ADDR back = opgen_twin::gm_alloc("back", TILE_BYTES);
    GM_ADDR ws = opgen_twin::gm_alloc("workspace", atomic_test::SYS_WORKSPACE);
    float* xfp = reinterpret_cast<float*>(xf);
    half* xhp = reinterpret_cast<half*>(xh);
    int32_t* xip = reinterpret_cast<int32_t*>(xi);
    float* yfp = reinterpret_cast<float*>(yf);
    half* yhp = reinterpret_cast<half*>(yh);
    int32_t* yip = reinterpret_cast<int32_t*>(yi);
    for (int c = 0; c < CORES; ++c) {
        for (uint32_t i = 0; i < NF; ++i) {
            // First half: small integers (every order gives the same exact sum); second half:
            // values whose float sum depends on the order.
            xfp[c * NF + i] = i < NF / 2 ? float(c + 1) : 1.0f / float(3 + c + i);
        }
        for (uint32_t i = 0; i < NH; ++i) xhp[c * NH + i] = half(0.1f * float(c + 1) + 0.01f * float(i));
        for (uint32_t i = 0; i < NI; ++i) xip[c * NI + i] = int32_t(c * 1000 - int32_t(i));
    }
    for (uint32_t i = 0; i < NF; ++i) yfp[i] = 0.5f;
    for (uint32_t i = 0; i < NH; ++i) yhp[i] = half(1.0f);
    for (uint32_t i = 0; i < NI; ++i) yip[i] = 7;
    twin_test::launch(CORES, [&] { kernel(xf, xh, xi, yf, yh, yi, back, ws); });
    int bad = 0;
    for (uint32_t i = 0; i < NF; ++i) {
        float want = 0.5f;  // the twin adds in core order (core 0's add first)
        for (int c = 0; c < CORES; ++c) want += xfp[c * NF + i];
        if (i < NF / 2 && want != 0.5f + float(CORES * (CORES + 1) / 2)) ++bad;  // exact: small integers
        bad += yfp[i] != want;
        bad += reinterpret_cast<float*>(back)[i] != want;
    }
    for (uint32_t i = 0; i < NH; ++i) {
        double acc = 1.0;  // rounded to half after every add
        for (int c = 0; c < CORES; ++c) acc = double(float(half(acc + double(float(xhp[c * NH + i])))));
        bad += float(yhp[i]) != float(acc);
    }
    for (uint32_t i = 0; i < NI; ++i) {
        int64_t want = 7;
        for (int c = 0; c < CORES; ++c) want += int64_t(c) * 1000 - int64_t(i);
        bad += int64_t(yip[i]) != want;
    }
    // Every core added NF + NH float elements (float and half) atomically; int32 adds are exact.
    int counted = 0;
    for (int c = 0; c < CORES; ++c) counted += opgen_twin::float_atomic_adds(c) == NF + NH;
    if (counted != CORES) std::fprintf(stderr, "pos_atomic_add: %d of %d cores count %u float atomic adds\n", counted, CORES, NF + NH);
    bad += counted != CORES;
    if (bad != 0) std::fprintf(stderr, "pos_atomic_add: %d wrong elements\n", bad);
    return bad == 0 ? 0 : 1;
}
