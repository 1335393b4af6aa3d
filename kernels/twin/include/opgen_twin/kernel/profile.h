// Numeric profiles (issue 11 point 3): hardware modes the A2 documentation leaves open, as
// switches, so the catalogue's behaviour under each can be measured and written down.
//  - ftz: float32 vector arithmetic and Cast flush subnormal inputs and results to zero (sign
//    kept). The A2 docs do not say whether the vector unit keeps float32 subnormals; the 950
//    docs say Exp/Reciprocal flush them. The default keeps them (IEEE).
//  - saturate: the saturation overflow mode of older Ascend parts instead of the Inf/NaN mode:
//    a float result that overflows is the largest finite value of its type (sign kept) and NaN
//    becomes 0, for vector arithmetic and Cast. The default is the Inf/NaN mode (A2's default).
// Selected by the runner from OPGEN_TWIN_PROFILE="ftz", "saturate" or "ftz,saturate"
// (`opgen verify --profile ...`).
#ifndef OPGEN_TWIN_KERNEL_PROFILE_H
#define OPGEN_TWIN_KERNEL_PROFILE_H

#include <cfloat>
#include <cmath>

namespace opgen_twin {

struct NumericProfile {
    bool ftz = false;
    bool saturate = false;
};

// One instance for the whole runner (inline function statics are shared across translation units).
inline NumericProfile& numeric_profile() {
    static NumericProfile p;
    return p;
}

// A float32 operand as a flushing unit reads it.
inline float profile_input(float v) {
    if (numeric_profile().ftz && std::fpclassify(v) == FP_SUBNORMAL) return std::copysign(0.0f, v);
    return v;
}

// A float32 result as the profile leaves it.
inline float profile_result(float v) {
    const NumericProfile& p = numeric_profile();
    if (p.ftz && std::fpclassify(v) == FP_SUBNORMAL) return std::copysign(0.0f, v);
    if (p.saturate) {
        if (std::isnan(v)) return 0.0f;
        if (std::isinf(v)) return std::copysign(FLT_MAX, v);
    }
    return v;
}

// A 16-bit float result (value already rounded to the format): saturation only, since the
// profiles are about the float32 unit's subnormals; `top` is the format's largest finite value.
inline long double profile_result16(long double v, long double top) {
    if (!numeric_profile().saturate) return v;
    if (std::isnan(v)) return 0.0L;
    if (std::isinf(v)) return std::copysign(top, v);
    return v;
}

}  // namespace opgen_twin

#endif
