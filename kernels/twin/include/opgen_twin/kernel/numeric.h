// Exact rounding between the element types the twin handles. Every conversion goes through
// long double, which holds every source value exactly (float, half, bf16, and all integers up to
// 64 bits: x86 long double has a 64-bit significand, aarch64's is IEEE quad), so each result is
// rounded exactly once, in the requested mode. This is the numeric oracle for Cast and for the
// rounding of half/bf16 arithmetic, so it is written out instead of relying on the FPU's mode.
#ifndef OPGEN_TWIN_KERNEL_NUMERIC_H
#define OPGEN_TWIN_KERNEL_NUMERIC_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace opgen_twin {
namespace num {

// Same order as AscendC::RoundMode, so a RoundMode converts by value.
enum class Mode : uint8_t { None = 0, Rint, Floor, Ceil, Round, Trunc, Odd };

// A binary floating-point format: significand bits including the hidden one, the exponent of the
// smallest normal number and of the largest finite one.
struct Format {
    int precision;
    int emin;
    int emax;
    int exp_bits;
};
inline constexpr Format kHalf{11, -14, 15, 5};
inline constexpr Format kBf16{8, -126, 127, 8};
inline constexpr Format kFloat{24, -126, 127, 8};

inline bool is_odd(long double integral) { return std::fmod(integral, 2.0L) != 0.0L; }

// Rounds a finite value to an integer. CAST_NONE only reaches here for lossy conversions, where
// the documented behaviour is that of CAST_RINT (ties to even).
inline long double round_integral_magnitude(long double v, Mode mode) {
    const long double down = std::floor(v);
    const long double frac = v - down;  // exact: v and floor(v) share the same ulp grid
    if (frac == 0.0L) return v;
    switch (mode) {
        case Mode::None:
        case Mode::Rint:
            if (frac != 0.5L) return frac < 0.5L ? down : down + 1.0L;
            return is_odd(down) ? down + 1.0L : down;
        case Mode::Floor:
            return down;
        case Mode::Ceil:
            return down + 1.0L;
        case Mode::Round:  // half away from zero
            if (v >= 0.0L) return frac >= 0.5L ? down + 1.0L : down;
            return frac > 0.5L ? down + 1.0L : down;
        case Mode::Trunc:
            return v >= 0.0L ? down : down + 1.0L;
        case Mode::Odd:  // a lossy result always ends in an odd significand (sticky rounding)
            return is_odd(down) ? down : down + 1.0L;
    }
    return down;
}

// A result of zero keeps the sign of its input, as IEEE rounding does (-0.3 rounds to -0).
inline long double round_integral(long double v, Mode mode) {
    const long double r = round_integral_magnitude(v, mode);
    return r == 0.0L ? std::copysign(0.0L, v) : r;
}

inline long double largest_finite(const Format& f) {
    return std::ldexp(2.0L - std::ldexp(1.0L, 1 - f.precision), f.emax);
}

// Rounds v to the nearest value of format f in the given mode, IEEE style: subnormals are kept
// (no flush to zero), and overflow goes to infinity or to the largest finite value depending on
// the direction of rounding. Round-to-odd never produces infinity from a finite value.
inline long double round_to_format_generic(long double v, const Format& f, Mode mode) {
    if (std::isnan(v) || std::isinf(v) || v == 0.0L) return v;
    int exponent = std::ilogb(v);
    if (exponent < f.emin) exponent = f.emin;
    const long double quantum = std::ldexp(1.0L, exponent - (f.precision - 1));
    const long double rounded = round_integral(v / quantum, mode) * quantum;
    const long double top = largest_finite(f);
    if (std::fabs(rounded) <= top) return rounded;
    const bool positive = v > 0.0L;
    const long double inf = std::numeric_limits<long double>::infinity();
    switch (mode) {
        case Mode::Trunc:
        case Mode::Odd:
            return positive ? top : -top;
        case Mode::Floor:
            return positive ? top : -inf;
        case Mode::Ceil:
            return positive ? inf : -top;
        default:
            return positive ? inf : -inf;
    }
}

// Bit pattern of a value that is already exactly representable in format f (of 16 bits).
inline uint16_t encode16_generic(long double r, const Format& f) {
    const int mant_bits = f.precision - 1;
    const uint16_t sign = std::signbit(r) ? uint16_t(0x8000u) : uint16_t(0);
    const uint16_t exp_all = uint16_t(((1u << f.exp_bits) - 1u) << mant_bits);
    if (std::isnan(r)) return uint16_t(sign | exp_all | (1u << (mant_bits - 1)));  // quiet NaN
    if (std::isinf(r)) return uint16_t(sign | exp_all);
    const long double a = std::fabs(r);
    if (a == 0.0L) return sign;
    const int e = std::ilogb(a);
    if (e < f.emin) {
        const long double mant = std::ldexp(a, mant_bits - f.emin);
        return uint16_t(sign | uint16_t(mant));
    }
    const unsigned field = unsigned(e + f.emax);  // the bias equals emax
    const long double mant = std::ldexp(a, mant_bits - e) - std::ldexp(1.0L, mant_bits);
    return uint16_t(sign | (field << mant_bits) | unsigned(mant));
}

inline long double decode16_generic(uint16_t bits, const Format& f) {
    const int mant_bits = f.precision - 1;
    const unsigned exp_mask = (1u << f.exp_bits) - 1u;
    const unsigned field = (bits >> mant_bits) & exp_mask;
    const unsigned mant = bits & ((1u << mant_bits) - 1u);
    const long double sign = (bits & 0x8000u) ? -1.0L : 1.0L;
    if (field == exp_mask) {
        if (mant == 0) return sign * std::numeric_limits<long double>::infinity();
        return std::copysign(std::numeric_limits<long double>::quiet_NaN(), sign);
    }
    if (field == 0) return sign * std::ldexp(static_cast<long double>(mant), f.emin - mant_bits);
    return sign * std::ldexp(static_cast<long double>(mant + (1u << mant_bits)), int(field) - f.emax - mant_bits);
}

// ---- Fast paths. The functions above are the oracle; these give the same results for the
// cases that dominate a twin run (RNE rounding of a value that is exactly a double: every float,
// and every double result of half/bf16 arithmetic; 16-bit encode and decode) with integer
// operations on IEEE bits instead of long double ilogb/ldexp/division/fmod, which were a
// quarter of a 16-bit kernel's run. tests/pos_fast_rounding.cpp compares both on every 16-bit
// pattern, on every midpoint between neighbouring 16-bit values and its neighbours, and on
// random floats and doubles.

inline uint64_t double_bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}
inline double double_from_bits(uint64_t u) {
    double d;
    std::memcpy(&d, &u, sizeof d);
    return d;
}
// 2^e for the exponents the formats need (normal doubles).
inline double pow2(int e) { return double_from_bits(uint64_t(e + 1023) << 52); }

// RNE rounding of a finite, nonzero, normal double to format f, overflow to infinity; false
// when d is a double subnormal (the generic path takes it: far below every format's range).
inline bool round_double_rne(double d, const Format& f, double& out) {
    const uint64_t u = double_bits(d);
    const int field = int((u >> 52) & 0x7ff);
    if (field == 0) return false;
    const int e = field - 1023;
    const uint64_t m = (u & ((uint64_t(1) << 52) - 1)) | (uint64_t(1) << 52);  // d = m * 2^(e-52)
    const int quantum_exp = (e < f.emin ? f.emin : e) - (f.precision - 1);
    const int s = quantum_exp - (e - 52);  // how many of m's low bits the format drops (>= 29)
    uint64_t kept;
    if (s >= 54) {
        kept = 0;  // |d| < half the quantum
    } else {
        const uint64_t rem = m & ((uint64_t(1) << s) - 1);
        const uint64_t half = uint64_t(1) << (s - 1);
        kept = m >> s;
        if (rem > half || (rem == half && (kept & 1) != 0)) kept += 1;
    }
    double r = double(kept) * pow2(quantum_exp);  // exact: kept <= 2^precision
    const double top = (2.0 - pow2(1 - f.precision)) * pow2(f.emax);  // largest_finite(f), exactly
    if (r > top) r = std::numeric_limits<double>::infinity();
    out = (u >> 63) != 0 ? -r : r;
    return true;
}

inline long double round_to_format(long double v, const Format& f, Mode mode) {
    if (mode == Mode::Rint || mode == Mode::None) {
        const double d = static_cast<double>(v);
        double r;
        if (static_cast<long double>(d) == v && d != 0.0 && std::isfinite(d) && round_double_rne(d, f, r)) return r;
    }
    return round_to_format_generic(v, f, mode);
}

// A value exactly representable in f (of 16 bits) is exactly a float: the bits come from the
// float's (bf16: its top half; half: re-biased, subnormals from the scaled significand).
inline uint16_t encode16(long double r, const Format& f) {
    if (std::isnan(r)) return encode16_generic(r, f);
    const float x = static_cast<float>(r);
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    if (f.precision == kBf16.precision) return uint16_t(u >> 16);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const int field = int((u >> 23) & 0xff);
    if (field == 0xff) return uint16_t(sign | 0x7c00u);  // infinity
    if (field == 0) return sign;                          // zero (no half value is a float subnormal)
    const int e = field - 127;
    const uint32_t m = (u & 0x7fffffu) | 0x800000u;
    if (e < kHalf.emin) return uint16_t(sign | (m >> (13 + (kHalf.emin - e))));  // exact: r is a half value
    return uint16_t(sign | (uint32_t(e + kHalf.emax) << 10) | ((m >> 13) & 0x3ffu));
}

inline long double decode16(uint16_t bits, const Format& f) {
    if (f.precision == kBf16.precision) {
        if ((bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0) return decode16_generic(bits, f);  // NaN
        const uint32_t u = uint32_t(bits) << 16;
        float x;
        std::memcpy(&x, &u, sizeof x);
        return x;
    }
    const unsigned field = (bits >> 10) & 0x1fu;
    const unsigned mant = bits & 0x3ffu;
    if (field == 0x1f) return decode16_generic(bits, f);  // infinity, NaN
    const float sign = (bits & 0x8000u) ? -1.0f : 1.0f;
    if (field == 0) return sign * (float(mant) * float(pow2(kHalf.emin - 10)));
    return sign * (float(mant | 0x400u) * float(pow2(int(field) - kHalf.emax - 10)));
}

// Rounds to an integer type and saturates to its range. `v` is not NaN: what a NaN becomes is
// Cast's choice (cast.h nan_to_int).
template <typename I>
inline I round_to_int(long double v, Mode mode) {
    constexpr long double lo = static_cast<long double>(std::numeric_limits<I>::min());
    constexpr long double hi = static_cast<long double>(std::numeric_limits<I>::max());
    if (v <= lo) return std::numeric_limits<I>::min();
    if (v >= hi) return std::numeric_limits<I>::max();
    const long double r = round_integral(v, mode);
    if (r <= lo) return std::numeric_limits<I>::min();
    if (r >= hi) return std::numeric_limits<I>::max();
    return static_cast<I>(r);
}

}  // namespace num
}  // namespace opgen_twin

#endif
