// expect: ok
// Positive test of the numeric oracle: every Cast pair / RoundMode the generator uses, on special
// values and on 4000 random floats over a wide exponent range, against independent references:
// the compiler's _Float16 conversion under each FE rounding mode (soft-float honours it), libm's
// integer rounding, and bf16 rounding done on the float's bits. Also half arithmetic (one RNE
// rounding of the exact result) and int16 wrap-around.
#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

constexpr uint32_t kN = 4096;
constexpr RoundMode kModes[] = {RoundMode::CAST_NONE,  RoundMode::CAST_RINT,  RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL,
                                RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC, RoundMode::CAST_ODD};
constexpr RoundMode kDirected[] = {RoundMode::CAST_RINT, RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL,
                                   RoundMode::CAST_ROUND, RoundMode::CAST_TRUNC};

// Output layout in GM, in elements of each section.
struct Out {
    GM_ADDR half_modes;   // 7 x kN half: float -> half, every mode
    GM_ADDR bf16_modes;   // 5 x kN bf16: float -> bf16
    GM_ADDR int_modes;    // 5 x kN int32: float -> int32
    GM_ADDR int8_modes;   // 6 x kN int8: half -> int8 (NONE + directed)
    GM_ADDR half_div;     // kN half: half(x) / half(y)
    GM_ADDR half_exp;     // kN half: Exp(half(x) / 16)
    GM_ADDR i16_add;      // 16 int16
};

template <typename T>
void copy_out(GM_ADDR base, uint32_t offset, const LocalTensor<T>& t, uint32_t n) {
    GlobalTensor<T> g;
    g.SetGlobalBuffer((__gm__ T*)base + offset, n);
    PipeBarrier<PIPE_ALL>();
    DataCopy(g, t, n);
    PipeBarrier<PIPE_ALL>();
}

extern "C" __global__ __aicore__ void cast_modes(GM_ADDR x, GM_ADDR y, Out out) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> fx, fy, hx, hy, hz, b16, i32, i8, i16;
    pipe.InitBuffer(fx, kN * 4);
    pipe.InitBuffer(fy, kN * 4);
    pipe.InitBuffer(hx, kN * 2);
    pipe.InitBuffer(hy, kN * 2);
    pipe.InitBuffer(hz, kN * 2);
    pipe.InitBuffer(b16, kN * 2);
    pipe.InitBuffer(i32, kN * 4);
    pipe.InitBuffer(i8, kN);
    pipe.InitBuffer(i16, 64);
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, kN);
    yGm.SetGlobalBuffer((__gm__ float*)y, kN);
    LocalTensor<float> fxT = fx.Get<float>(), fyT = fy.Get<float>();
    LocalTensor<half> hxT = hx.Get<half>(), hyT = hy.Get<half>(), hzT = hz.Get<half>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(fxT, xGm, kN);
    PipeBarrier<PIPE_ALL>();
    DataCopy(fyT, yGm, kN);
    PipeBarrier<PIPE_ALL>();

    for (uint32_t m = 0; m < 7; ++m) {
        Cast(hzT, fxT, kModes[m], kN);
        copy_out(out.half_modes, m * kN, hzT, kN);
    }
    for (uint32_t m = 0; m < 5; ++m) {
        LocalTensor<bfloat16_t> b = b16.Get<bfloat16_t>();
        Cast(b, fxT, kDirected[m], kN);
        copy_out(out.bf16_modes, m * kN, b, kN);
        LocalTensor<int32_t> iT = i32.Get<int32_t>();
        Cast(iT, fxT, kDirected[m], kN);
        copy_out(out.int_modes, m * kN, iT, kN);
    }
    Cast(hxT, fxT, RoundMode::CAST_RINT, kN);
    Cast(hyT, fyT, RoundMode::CAST_RINT, kN);
    LocalTensor<int8_t> i8T = i8.Get<int8_t>();
    Cast(i8T, hxT, RoundMode::CAST_NONE, kN);
    copy_out(out.int8_modes, 0, i8T, kN);
    for (uint32_t m = 0; m < 5; ++m) {
        Cast(i8T, hxT, kDirected[m], kN);
        copy_out(out.int8_modes, (m + 1) * kN, i8T, kN);
    }
    Div(hzT, hxT, hyT, kN);
    copy_out(out.half_div, 0, hzT, kN);
    Muls(hzT, hxT, (half)0.0625f, kN);
    Exp(hzT, hzT, kN);
    copy_out(out.half_exp, 0, hzT, kN);

    LocalTensor<int16_t> s = i16.Get<int16_t>();
    Duplicate(s, static_cast<int16_t>(30000), 16);
    PipeBarrier<PIPE_ALL>();
    Add(s, s, s, 16);
    copy_out(out.i16_add, 0, s, 16);
}

uint16_t f16_bits(double v, int fe_mode) {
    std::fesetround(fe_mode);
    volatile double in = v;
    const _Float16 h = static_cast<_Float16>(in);
    std::fesetround(FE_TONEAREST);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}

double f16_value(uint16_t bits) {
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    return static_cast<double>(h);
}

// Reference float -> half for every RoundMode; ROUND and ODD are chosen between the two
// directed neighbours (an overflowing upper neighbour counts as 65536 for the distance).
uint16_t ref_half(float v, int mode) {
    if (std::isnan(v)) return 0x7E00;
    const uint16_t down = f16_bits(v, FE_DOWNWARD), up = f16_bits(v, FE_UPWARD);
    switch (mode) {
        case 0:
        case 1: return f16_bits(v, FE_TONEAREST);
        case 2: return down;
        case 3: return up;
        case 5: return f16_bits(v, FE_TOWARDZERO);
        default: break;
    }
    if (down == up) return down;
    const auto finite = [](uint16_t b) {
        const double value = f16_value(b);
        return std::isinf(value) ? std::copysign(65536.0, value) : value;
    };
    if (mode == 6) return (down & 1) ? down : up;
    const double dd = double(v) - finite(down), du = finite(up) - double(v);
    if (dd != du) return dd < du ? down : up;
    return v > 0 ? up : down;  // tie: away from zero
}

uint16_t ref_bf16(float v, int mode) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (std::isnan(v)) return uint16_t((bits >> 16) | 0x40);
    const uint16_t toward = uint16_t(bits >> 16), away = uint16_t(toward + 1);
    const uint32_t rest = bits & 0xFFFF;
    if (rest == 0) return toward;
    const bool neg = std::signbit(v);
    switch (mode) {
        case 1: return rest > 0x8000 || (rest == 0x8000 && (toward & 1)) ? away : toward;
        case 2: return neg ? away : toward;
        case 3: return neg ? toward : away;
        case 4: return rest >= 0x8000 ? away : toward;
        default: return toward;
    }
}

template <typename I>
I ref_int(double v, int mode) {
    // NaN: the twin's documented hostile choice (cast.h nan_to_int), the most negative value.
    if (std::isnan(v)) return std::numeric_limits<I>::min();
    const double r = mode <= 1 ? std::nearbyint(v) : mode == 2 ? std::floor(v) : mode == 3 ? std::ceil(v)
                   : mode == 4 ? std::round(v) : std::trunc(v);
    if (r <= double(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (r >= double(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return I(r);
}

template <typename T>
T at(GM_ADDR base, uint32_t i) {
    T v;
    std::memcpy(&v, base + i * sizeof(T), sizeof(T));
    return v;
}

int g_bad = 0;
void report(const char* what, uint32_t i, float x, double got, double want) {
    if (g_bad++ < 12) std::fprintf(stderr, "%s[%u]: x=%.9g got %.9g want %.9g\n", what, i, double(x), got, want);
}

}  // namespace

int main() {
    // This test is about data layout and numerics, not pipelining: every copy sits between
    // PipeBarrier<PIPE_ALL>s, and the vector/scalar steps lean on compiler auto-sync.
    opgen_twin::set_auto_sync(true);
    std::vector<float> xs = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f, 65519.99f, 65520.0f, 65536.0f,
                             -65520.0f, 1e-8f, 2.98023224e-8f, 5.96046448e-8f, -2.5f, 2.5f, 3.5f, 0.5f, -0.5f, 1.5f,
                             1e10f, -1e10f, 3e9f, -3e9f, 2147483520.0f, 127.5f, -128.5f, 200.7f, 1.00048828125f,
                             1.00146484375f, -1.00146484375f, 3.38953139e38f};
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> mant(1.0, 2.0);
    std::uniform_int_distribution<int> expo(-30, 20);
    while (xs.size() < kN) {
        const double v = std::ldexp(mant(rng), expo(rng)) * (rng() & 1 ? -1.0 : 1.0);
        xs.push_back(static_cast<float>(v));
    }
    GM_ADDR x = opgen_twin::gm_alloc("x", kN * 4);
    GM_ADDR y = opgen_twin::gm_alloc("y", kN * 4);
    for (uint32_t i = 0; i < kN; ++i) {
        const float yi = static_cast<float>(std::ldexp(mant(rng), expo(rng) / 3));
        std::memcpy(x + 4 * i, &xs[i], 4);
        std::memcpy(y + 4 * i, &yi, 4);
    }
    Out out{opgen_twin::gm_alloc("half_modes", 7 * kN * 2), opgen_twin::gm_alloc("bf16_modes", 5 * kN * 2),
            opgen_twin::gm_alloc("int_modes", 5 * kN * 4),  opgen_twin::gm_alloc("int8_modes", 6 * kN),
            opgen_twin::gm_alloc("half_div", kN * 2),       opgen_twin::gm_alloc("half_exp", kN * 2),
            opgen_twin::gm_alloc("i16_add", 32)};
    twin_test::launch(1, [&] { cast_modes(x, y, out); });

    for (uint32_t i = 0; i < kN; ++i) {
        const float v = xs[i];
        for (int m = 0; m < 7; ++m) {
            const uint16_t got = at<uint16_t>(out.half_modes, m * kN + i), want = ref_half(v, m);
            const bool both_nan = std::isnan(f16_value(got)) && std::isnan(f16_value(want));
            if (got != want && !both_nan) report("float->half", m * kN + i, v, f16_value(got), f16_value(want));
        }
        for (int m = 0; m < 5; ++m) {
            const uint16_t got = at<uint16_t>(out.bf16_modes, m * kN + i), want = ref_bf16(v, m + 1);
            if (got != want && !(std::isnan(v) && (got & 0x7FFF) > 0x7F80)) report("float->bf16", m, v, got, want);
            const int32_t gi = at<int32_t>(out.int_modes, m * kN + i), wi = ref_int<int32_t>(v, m + 1);
            if (gi != wi) report("float->int32", m, v, gi, wi);
        }
        const double h = f16_value(f16_bits(v, FE_TONEAREST));
        for (int m = 0; m < 6; ++m) {
            const int8_t gi = at<int8_t>(out.int8_modes, m * kN + i), wi = ref_int<int8_t>(h, m);
            if (gi != wi) report("half->int8", m, v, gi, wi);
        }
        const double hy = f16_value(f16_bits(at<float>(y, i), FE_TONEAREST));
        const uint16_t div = at<uint16_t>(out.half_div, i), want_div = f16_bits(h / hy, FE_TONEAREST);
        if (div != want_div && !(std::isnan(h / hy) && std::isnan(f16_value(div)))) {
            report("half Div", i, v, f16_value(div), f16_value(want_div));
        }
        const double scaled = f16_value(f16_bits(h * 0.0625, FE_TONEAREST));
        const uint16_t ex = at<uint16_t>(out.half_exp, i), want_ex = f16_bits(std::exp(scaled), FE_TONEAREST);
        if (ex != want_ex && !(std::isnan(scaled) && std::isnan(f16_value(ex)))) {
            report("half Exp", i, v, f16_value(ex), f16_value(want_ex));
        }
    }
    for (uint32_t i = 0; i < 16; ++i) {
        if (at<int16_t>(out.i16_add, i) != int16_t(-5536)) report("int16 Add wraps", i, 30000, at<int16_t>(out.i16_add, i), -5536);
    }
    return g_bad == 0 ? 0 : 1;
}
