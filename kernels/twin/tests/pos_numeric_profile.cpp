// expect: ok
// cann: twin only: it tests the twin's numeric profiles (opgen_twin/kernel/profile.h)
// Positive test of the numeric profiles (opgen_twin/kernel/profile.h): the default keeps float32
// subnormals and overflows to Inf; "ftz" flushes subnormal float32 operands and results of vector
// arithmetic and Cast to zero (sign kept); "saturate" turns overflow into the largest finite value
// and NaN into 0, for float32 arithmetic and for Cast to half and bfloat16.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

constexpr uint32_t kN = 8;

struct Results {
    float mul[kN];    // x * 0.5
    float add[kN];    // x + x
    half h[kN];       // Cast(x * 2, half)
};

Results g_out;

extern "C" __global__ __aicore__ void numeric_profile(GM_ADDR x) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, m, s, hb;
    pipe.InitBuffer(a, 64);
    pipe.InitBuffer(m, 64);
    pipe.InitBuffer(s, 64);
    pipe.InitBuffer(hb, 32);
    LocalTensor<float> xl = a.Get<float>();
    LocalTensor<float> ml = m.Get<float>();
    LocalTensor<float> sl = s.Get<float>();
    LocalTensor<half> hl = hb.Get<half>();
    for (uint32_t i = 0; i < kN; ++i) {
        float v;
        std::memcpy(&v, x + 4 * i, 4);
        xl.SetValue(i, v);
    }
    PipeBarrier<PIPE_ALL>();
    Muls(ml, xl, 0.5f, kN);
    Add(sl, xl, xl, kN);
    PipeBarrier<PIPE_V>();
    Muls(xl, xl, 2.0f, kN);
    PipeBarrier<PIPE_V>();
    Cast(hl, xl, RoundMode::CAST_RINT, kN);
    PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i < kN; ++i) {
        g_out.mul[i] = ml.GetValue(i);
        g_out.add[i] = sl.GetValue(i);
        g_out.h[i] = hl.GetValue(i);
    }
}

int g_bad = 0;
void expect(const char* profile, const char* what, uint32_t i, float got, float want) {
    const bool same = (std::isnan(got) && std::isnan(want)) || (got == want && std::signbit(got) == std::signbit(want));
    if (!same && g_bad++ < 20) {
        std::fprintf(stderr, "%s: %s[%u] = %g, want %g\n", profile, what, i, double(got), double(want));
    }
}

}  // namespace

int main() {
    opgen_twin::set_auto_sync(true);  // numerics, not pipelining: scalar/vector steps lean on auto-sync
    const float tiny = std::ldexp(1.0f, -130);  // subnormal
    const float in[kN] = {tiny, -tiny, FLT_MIN, 3.0e38f, -3.0e38f, NAN, 1.0e5f, 1.5f};
    GM_ADDR x = opgen_twin::gm_alloc("x", sizeof in);
    std::memcpy(x, in, sizeof in);
    const float inf = INFINITY;

    struct Case {
        const char* name;
        bool ftz, saturate;
    } cases[] = {{"default", false, false}, {"ftz", true, false}, {"saturate", false, true}};
    for (const Case& c : cases) {
        opgen_twin::numeric_profile().ftz = c.ftz;
        opgen_twin::numeric_profile().saturate = c.saturate;
        twin_test::launch(1, [&] { numeric_profile(x); });
        const float sub_half = c.ftz ? 0.0f : std::ldexp(1.0f, -131);
        const float sub_twice = c.ftz ? 0.0f : std::ldexp(1.0f, -129);
        const float big = c.saturate ? FLT_MAX : inf;
        const float nan_out = c.saturate ? 0.0f : NAN;
        const float want_mul[kN] = {sub_half, -sub_half, c.ftz ? 0.0f : FLT_MIN / 2, 1.5e38f, -1.5e38f, nan_out, 5.0e4f, 0.75f};
        const float want_add[kN] = {sub_twice, -sub_twice, 2 * FLT_MIN, big, -big, nan_out, 2.0e5f, 3.0f};
        const float h_max = 65504.0f;
        const float h_big = c.saturate ? h_max : inf;
        const float want_h[kN] = {0.0f, -0.0f, 0.0f, h_big, -h_big, nan_out, h_big, 3.0f};
        for (uint32_t i = 0; i < kN; ++i) {
            expect(c.name, "Muls", i, g_out.mul[i], want_mul[i]);
            expect(c.name, "Add", i, g_out.add[i], want_add[i]);
            expect(c.name, "Cast", i, float(g_out.h[i]), want_h[i]);
        }
    }
    return g_bad == 0 ? 0 : 1;
}
