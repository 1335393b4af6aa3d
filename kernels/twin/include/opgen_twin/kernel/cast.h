// Cast with the A2 pair / RoundMode table (research/ascendc-api.md 4.2). Each element is rounded
// exactly once from its exact value (numeric.h): CAST_NONE behaves as CAST_RINT when the
// conversion is lossy; conversions to integers saturate to the destination range; a NaN stays
// NaN in float/half/bf16 and becomes nan_to_int's sentinel in an integer. float -> float with a
// rounding mode rounds to an integral value, like rint/floor/ceil/round/trunc.
#ifndef OPGEN_TWIN_KERNEL_CAST_H
#define OPGEN_TWIN_KERNEL_CAST_H

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "opgen_twin/kernel/vector_common.h"

namespace opgen_twin {
namespace kern {

constexpr uint32_t mbit(num::Mode m) { return 1u << unsigned(m); }
constexpr uint32_t kNoneOnly = mbit(num::Mode::None);
constexpr uint32_t kDirected = mbit(num::Mode::Rint) | mbit(num::Mode::Floor) | mbit(num::Mode::Ceil) |
                               mbit(num::Mode::Round) | mbit(num::Mode::Trunc);
constexpr uint32_t kNoneOrDirected = kNoneOnly | kDirected;
constexpr uint32_t kAllModes = kNoneOrDirected | mbit(num::Mode::Odd);
constexpr uint32_t kDequant = 1u << 31;  // int32 -> half scales by SetDeqScale: not modelled

// Allowed RoundModes of a src -> dst pair on A2 as a bit set; 0 means the pair does not exist.
constexpr uint32_t cast_modes(DType src, DType dst) {
    using D = DType;
    if ((src == D::F16 && dst == D::F32) || (src == D::BF16 && dst == D::F32) || (src == D::I16 && dst == D::F32) ||
        (src == D::I8 && dst == D::F16) || (src == D::U8 && dst == D::F16) || (src == D::I32 && dst == D::I64) ||
        (src == D::I32 && dst == D::I16) || (src == D::I64 && dst == D::I32)) {
        return kNoneOnly;
    }
    if (src == D::F32 && dst == D::F16) return kAllModes;
    if ((src == D::F32 && (dst == D::BF16 || dst == D::I32 || dst == D::I16 || dst == D::I64 || dst == D::F32)) ||
        (src == D::F16 && (dst == D::I32 || dst == D::I16)) || (src == D::BF16 && dst == D::I32) ||
        (src == D::I64 && dst == D::F32)) {
        return kDirected;
    }
    if ((src == D::F16 && (dst == D::I8 || dst == D::U8)) || (src == D::I16 && dst == D::F16) ||
        (src == D::I32 && dst == D::F32)) {
        return kNoneOrDirected;
    }
    if (src == D::I32 && dst == D::F16) return kDequant;
    return 0;
}

const char* round_mode_name(num::Mode m);

// What a NaN becomes in integer type I. The A2 docs do not say (Cast's API reference promises
// saturation only), so the default is the hostile choice: the most negative value (x86's
// "integer indefinite"; the largest for unsigned types), far from the 0 a kernel might count on
// when it lets a NaN reach an integer cast. The `saturate` profile (the older parts' mode, in
// which NaN becomes 0) gives 0.
template <typename I>
inline I nan_to_int() {
    if (numeric_profile().saturate) return I(0);
    return std::is_signed<I>::value ? std::numeric_limits<I>::min() : std::numeric_limits<I>::max();
}

// Float inputs and results pass through the numeric profile (profile.h; the default changes nothing).
template <typename D, typename S>
inline D cast_element(S s, num::Mode mode) {
    long double v = exact_value(s);
    if constexpr (std::is_same<S, float>::value) v = profile_input(s);
    if constexpr (std::is_same<D, half>::value) {
        const long double r = profile_result16(num::round_to_format(v, num::kHalf, mode), num::largest_finite(num::kHalf));
        return half::from_bits(num::encode16(r, num::kHalf));
    } else if constexpr (std::is_same<D, bfloat16_t>::value) {
        const long double r = profile_result16(num::round_to_format(v, num::kBf16, mode), num::largest_finite(num::kBf16));
        return bfloat16_t::from_bits(num::encode16(r, num::kBf16));
    } else if constexpr (std::is_same<D, float>::value && std::is_same<S, float>::value) {
        if (std::isnan(v) || std::isinf(v)) return profile_result(static_cast<float>(v));
        return profile_result(static_cast<float>(num::round_integral(v, mode)));
    } else if constexpr (std::is_floating_point<D>::value) {
        return profile_result(static_cast<D>(num::round_to_format(v, num::kFloat, mode)));
    } else {
        if (std::isnan(v)) return nan_to_int<D>();
        return num::round_to_int<D>(v, mode);
    }
}

}  // namespace kern
}  // namespace opgen_twin

namespace AscendC {

template <typename T1, typename T2>
void Cast(const LocalTensor<T1>& dstLocal, const LocalTensor<T2>& srcLocal, const RoundMode& round_mode,
          const uint32_t calCount,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Cast", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    using opgen_twin::DType;
    const char* api = "Cast";
    const DType src = opgen_twin::dtype_of<T2>();
    const DType dst = opgen_twin::dtype_of<T1>();
    const auto mode = static_cast<opgen_twin::num::Mode>(round_mode);
    const uint32_t modes = k::cast_modes(src, dst);
    const std::string pair = std::string(opgen_twin::dtype_name(src)) + " -> " + opgen_twin::dtype_name(dst);
    if (modes == 0) opgen_twin::fail(api, "Cast pair not supported on A2", pair + " has no direct Cast on A2");
    if (modes == k::kDequant) {
        opgen_twin::fail(api, "Cast pair not supported on A2",
                         pair + " scales by SetDeqScale, which the twin does not model");
    }
    if ((modes & k::mbit(mode)) == 0) {
        opgen_twin::fail(api, "RoundMode not allowed for this Cast on A2",
                         pair + " with " + k::round_mode_name(mode));
    }
    const uint64_t n = calCount;
    uint8_t* d = k::operand(api, "dst", dstLocal, n);
    const uint8_t* s = k::operand(api, "src", srcLocal, n);
    k::no_partial_overlap(api, "src", dstLocal, srcLocal, n);
    for (uint64_t i = 0; i < n; ++i) {
        k::store<T1>(d + i * sizeof(T1), k::cast_element<T1, T2>(k::load<T2>(s + i * sizeof(T2)), mode));
    }
    k::count_vector(api, n);
}

}  // namespace AscendC

#endif
