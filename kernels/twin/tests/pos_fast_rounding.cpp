// expect: ok
// cann: twin only: it checks the twin's own rounding fast paths (opgen_twin::num) against its oracle
// The numeric oracle's fast paths (numeric.h: round_to_format's RNE path on doubles, encode16,
// decode16) give the generic code's results bit for bit: on every 16-bit pattern of half and
// bfloat16, on every midpoint between neighbouring 16-bit values and the doubles and floats next
// to it (the ties and near-ties), at the overflow threshold, and on random floats and doubles
// over the whole exponent range. A fast path that drifts from the oracle (a tie rounded away
// from even, a subnormal shifted by one) fails here with the value printed.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "kernel_operator.h"

namespace num = opgen_twin::num;

namespace {

int g_failures = 0;

uint64_t bits_of(long double v) {
    const double d = static_cast<double>(v);
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}

bool same(long double a, long double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b && std::signbit(a) == std::signbit(b);
}

void check_round(long double v, const num::Format& f, const char* name) {
    for (num::Mode mode : {num::Mode::Rint, num::Mode::None}) {
        const long double fast = num::round_to_format(v, f, mode);
        const long double slow = num::round_to_format_generic(v, f, mode);
        if (!same(fast, slow) && g_failures++ < 20) {
            std::fprintf(stderr, "round_to_format(%s, mode %d) of %.21Lg (bits %016llx): fast %.21Lg, generic %.21Lg\n",
                         name, int(mode), v, static_cast<unsigned long long>(bits_of(v)), fast, slow);
        }
    }
}

void check_neighbours(double d, const num::Format& f, const char* name) {
    check_round(d, f, name);
    check_round(std::nextafter(d, 0.0), f, name);
    check_round(std::nextafter(d, 2.0 * d), f, name);
    const float x = static_cast<float>(d);
    check_round(x, f, name);
    check_round(std::nextafter(x, 0.0f), f, name);
    check_round(std::nextafter(x, 2.0f * x), f, name);
    check_round(-d, f, name);
}

void check_format16(const num::Format& f, const char* name) {
    for (uint32_t b = 0; b < 0x10000u; ++b) {
        const uint16_t bits = uint16_t(b);
        const long double fast = num::decode16(bits, f);
        const long double slow = num::decode16_generic(bits, f);
        if (!same(fast, slow) && g_failures++ < 20) {
            std::fprintf(stderr, "decode16(%s, %04x): fast %.21Lg, generic %.21Lg\n", name, b, fast, slow);
        }
        if (std::isnan(slow)) continue;
        const uint16_t back = num::encode16(slow, f);
        const uint16_t back_slow = num::encode16_generic(slow, f);
        if (back != back_slow && g_failures++ < 20) {
            std::fprintf(stderr, "encode16(%s, %.21Lg): fast %04x, generic %04x\n", name, slow, back, back_slow);
        }
        check_round(slow, f, name);
        // The midpoint to the next value up (exact in double: 16-bit values have few bits).
        const uint16_t next = uint16_t(b + 1);
        if ((b & 0x7fffu) == 0x7fffu) continue;
        const long double up = num::decode16_generic(next, f);
        if (std::isnan(up) || std::isinf(up) || std::signbit(up) != std::signbit(slow)) continue;
        check_neighbours(static_cast<double>((slow + up) / 2), f, name);
    }
    // Past the largest finite value: half a quantum above it is the overflow tie.
    const long double top = num::largest_finite(f);
    const long double quantum = std::ldexp(1.0L, f.emax - (f.precision - 1));
    check_neighbours(static_cast<double>(top + quantum / 2), f, name);
    check_neighbours(static_cast<double>(top + quantum), f, name);
}

void check_random(const num::Format& f, const char* name, std::mt19937_64& rng) {
    for (int i = 0; i < 100000; ++i) {
        uint64_t u = rng();
        double d;
        std::memcpy(&d, &u, sizeof d);
        if (std::isfinite(d)) check_round(d, f, name);
        uint32_t w = uint32_t(u >> 32);
        float x;
        std::memcpy(&x, &w, sizeof x);
        if (std::isfinite(x)) check_round(x, f, name);
        // Doubles in the formats' own range, where the rounding is not to zero or infinity.
        const double scaled = std::ldexp(1.0 + double(u & 0xfffffffffffffull) / 4503599627370496.0,
                                         int(u >> 58) * 8 - 160 + int((u >> 52) & 7));
        check_round((u & 1) ? -scaled : scaled, f, name);
    }
}

}  // namespace

int main() {
    check_format16(num::kHalf, "half");
    check_format16(num::kBf16, "bfloat16");
    std::mt19937_64 rng(20261201);
    check_random(num::kHalf, "half", rng);
    check_random(num::kBf16, "bfloat16", rng);
    check_random(num::kFloat, "float", rng);
    check_round(0.0L, num::kHalf, "half");
    check_round(-0.0L, num::kBf16, "bfloat16");
    check_round(std::numeric_limits<long double>::infinity(), num::kFloat, "float");
    check_round(std::numeric_limits<double>::denorm_min(), num::kFloat, "float");
    if (g_failures != 0) {
        std::fprintf(stderr, "pos_fast_rounding: %d mismatches\n", g_failures);
        return 1;
    }
    std::printf("pos_fast_rounding: fast paths equal the generic oracle\n");
    return 0;
}
