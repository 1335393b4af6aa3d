// The perturbed-numerics mode (issue 11 point 3): the float32 results of the transcendental and
// division APIs (Exp, Ln, Sqrt, Rsqrt, Reciprocal, Div) moved by a deterministic pseudo-random
// number of float32 ULP in [-k, k]. The NPU's vector units do not promise libm's (or IEEE's)
// exact results for these; a kernel that verifies only with libm-exact values depends on
// something the hardware does not give. The move is a function of the API, the operands' bits
// and a seed (the same inputs always give the same result, as on hardware), so a run is
// reproducible. Selected by the runner from OPGEN_TWIN_PERTURB="k[:seed]" (`opgen verify
// --perturb K`); k = 0 (the default) leaves every result as libm gives it.
#ifndef OPGEN_TWIN_KERNEL_PERTURB_H
#define OPGEN_TWIN_KERNEL_PERTURB_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace opgen_twin {

struct Perturbation {
    uint32_t ulps = 0;
    uint64_t seed = 0;
};

// One instance for the whole runner (inline function statics are shared across translation units).
inline Perturbation& perturbation() {
    static Perturbation p;
    return p;
}

// splitmix64's finaliser: a well-mixed hash of the key.
inline uint64_t perturb_mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

inline uint32_t float_bits(float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

// `result` moved by d ULP, d in [-k, k] from a hash of (api, a, b, seed); NaN, Inf, zero and
// results that would cross into Inf are left alone (the perturbation models rounding, not
// overflow).
inline float perturbed(float result, uint32_t api, float a, float b = 0.0f) {
    const Perturbation& p = perturbation();
    // Zero stays zero (a relative error of an exact 0 is 0: Div(0, y) is 0 on any hardware) and
    // NaN/Inf stay as they are.
    if (p.ulps == 0 || !std::isfinite(result) || result == 0.0f) {
        return result;
    }
    const uint64_t h = perturb_mix(p.seed ^ (uint64_t(api) << 56) ^ (uint64_t(float_bits(a)) << 24) ^
                                   uint64_t(float_bits(b)));
    const int64_t d = int64_t(h % (2 * uint64_t(p.ulps) + 1)) - int64_t(p.ulps);
    // The magnitude moves by d ULP; the sign stays (a move that would reach or cross zero, only
    // possible for subnormal results, is not made).
    const uint32_t bits = float_bits(result);
    const int64_t magnitude = int64_t(bits & 0x7fffffffu) + d;
    if (magnitude <= 0) {
        return result;
    }
    const uint32_t out_bits = (bits & 0x80000000u) | uint32_t(magnitude);
    float out;
    std::memcpy(&out, &out_bits, sizeof out);
    return std::isfinite(out) ? out : result;
}

// API identities for the hash.
enum PerturbApi : uint32_t { kPerturbExp = 1, kPerturbLn, kPerturbSqrt, kPerturbRsqrt, kPerturbReciprocal, kPerturbDiv };

}  // namespace opgen_twin

#endif
