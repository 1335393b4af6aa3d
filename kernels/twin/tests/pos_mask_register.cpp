// expect: ok
// The vector mask register decides the lanes of a level-0 call with isSetMask = false (its mask
// argument is MASK_PLACEHOLDER): all lanes after the TPipe constructor (InitSocState sets every
// lane) and after ResetMask, lanes 0..n-1 after SetVectorMask<T>(n), and the mask of the last
// level-0 call with isSetMask = true. A kernel that calls Muls<float, false> meaning 8 lanes
// without SetVectorMask doubles all 64 on the NPU, and now on the twin.
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

constexpr uint32_t kN = 64;
int g_bad = 0;

void expect(const char* what, const LocalTensor<float>& x, uint32_t doubled) {
    for (uint32_t i = 0; i < kN; ++i) {
        const float want = i < doubled ? 2.0f : 1.0f;
        if (x.GetValue(i) != want && g_bad++ < 12) {
            std::fprintf(stderr, "%s: x[%u] = %g, want %g\n", what, i, double(x.GetValue(i)), double(want));
        }
    }
}

extern "C" __global__ __aicore__ void mask_register(GM_ADDR ones) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, kN * sizeof(float));
    GlobalTensor<float> onesGm;
    onesGm.SetGlobalBuffer((__gm__ float*)ones, kN);
    LocalTensor<float> x = a.Get<float>();
    const UnaryRepeatParams params(1, 1, 8, 8);
    const float two = 2.0f;
    // Loads by DMA only: no vector API has touched the register since the TPipe set every lane.
    DataCopy(x, onesGm, kN);
    PipeBarrier<PIPE_ALL>();
    Muls<float, false>(x, x, two, MASK_PLACEHOLDER, 1, params);
    expect("after TPipe", x, kN);

    PipeBarrier<PIPE_ALL>();
    DataCopy(x, onesGm, kN);
    PipeBarrier<PIPE_ALL>();
    SetVectorMask<float>(16);
    Muls<float, false>(x, x, two, MASK_PLACEHOLDER, 1, params);
    expect("after SetVectorMask(16)", x, 16);

    PipeBarrier<PIPE_ALL>();
    DataCopy(x, onesGm, kN);
    PipeBarrier<PIPE_ALL>();
    Muls<float, true>(x, x, 1.0f, 8, 1, params);  // sets the register to 8 lanes
    Muls<float, false>(x, x, two, MASK_PLACEHOLDER, 1, params);
    expect("after a level-0 mask of 8", x, 8);

    PipeBarrier<PIPE_ALL>();
    DataCopy(x, onesGm, kN);
    PipeBarrier<PIPE_ALL>();
    ResetMask();
    Muls<float, false>(x, x, two, MASK_PLACEHOLDER, 1, params);
    expect("after ResetMask", x, kN);
}

int main() {
    opgen_twin::set_auto_sync(true);
    GM_ADDR ones = opgen_twin::gm_alloc("ones", kN * sizeof(float));
    for (uint32_t i = 0; i < kN; ++i) {
        const float v = 1.0f;
        std::memcpy(ones + 4 * i, &v, 4);
    }
    twin_test::launch(1, [&] { mask_register(ones); });
    return g_bad == 0 ? 0 : 1;
}
