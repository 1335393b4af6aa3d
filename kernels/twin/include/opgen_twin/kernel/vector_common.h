// What every vector API shares: the A2 dtype tables, the operand checks of the count forms and
// the element arithmetic. The arithmetic is the twin's numeric contract:
//  - float: one IEEE single operation per element (each API is a single +, -, *, / or libm call,
//    so there is no a*b+c for the compiler to contract into an FMA; runtime.cpp is additionally
//    built with -ffp-contract=off);
//  - half / bfloat16_t: the operation runs in double on the exact inputs and the result is
//    rounded once, to nearest even. For +, -, * the double result is exact; for / and sqrt the
//    double intermediate cannot change the final rounding (53 >= 2*11+2); for exp/log the libm
//    double result is within an ulp of double, far below half's resolution;
//  - integers: two's-complement wrap-around.
#ifndef OPGEN_TWIN_KERNEL_VECTOR_COMMON_H
#define OPGEN_TWIN_KERNEL_VECTOR_COMMON_H

#include <cstdint>
#include <string>
#include <type_traits>

#include "opgen_twin/kernel/numeric.h"
#include "opgen_twin/kernel/profile.h"
#include "opgen_twin/kernel/state.h"
#include "opgen_twin/kernel/tensor.h"
#include "opgen_twin/kernel/types.h"

namespace opgen_twin {
namespace kern {

constexpr uint32_t dbit(DType t) { return 1u << unsigned(t); }
// A2 dtype sets of the count-form APIs (research/ascendc-api.md 4.1). bfloat16_t appears only
// in data movement, Duplicate and Cast: A2 has no bf16 arithmetic.
constexpr uint32_t kArith = dbit(DType::I16) | dbit(DType::F16) | dbit(DType::I32) | dbit(DType::F32);
constexpr uint32_t kFloats = dbit(DType::F16) | dbit(DType::F32);
constexpr uint32_t kRelu = dbit(DType::F16) | dbit(DType::I32) | dbit(DType::F32);
constexpr uint32_t kBitwise = dbit(DType::I16) | dbit(DType::U16);
constexpr uint32_t kDuplicate = dbit(DType::I16) | dbit(DType::U16) | dbit(DType::F16) | dbit(DType::BF16) |
                                dbit(DType::I32) | dbit(DType::U32) | dbit(DType::F32);

template <typename T>
inline void require_dtype(const char* api, const char* role, uint32_t allowed) {
    if ((allowed & dbit(dtype_of<T>())) == 0) fail_dtype(api, role, dtype_of<T>());
}

template <typename T>
inline T wrap(int64_t v) {
    using U = typename std::make_unsigned<T>::type;
    return static_cast<T>(static_cast<U>(static_cast<uint64_t>(v)));
}

// A 16-bit float result under the numeric profile (profile.h).
template <typename T>
inline T profiled16(T r) {
    if (!numeric_profile().saturate) return r;
    const num::Format& f = dtype_of<T>() == DType::F16 ? num::kHalf : num::kBf16;
    return T(static_cast<double>(profile_result16(r.exact(), num::largest_finite(f))));
}

// f receives float for float, double for half/bf16 and int64_t for integers. Float results pass
// through the numeric profile (profile.h; the default changes nothing).
template <typename T, typename F>
inline T apply2(T a, T b, F f) {
    if constexpr (std::is_same<T, float>::value) {
        return profile_result(f(profile_input(a), profile_input(b)));
    } else if constexpr (is_float16_storage<T>()) {
        return profiled16(T(static_cast<double>(f(static_cast<double>(a.exact()), static_cast<double>(b.exact())))));
    } else {
        return wrap<T>(static_cast<int64_t>(f(static_cast<int64_t>(a), static_cast<int64_t>(b))));
    }
}

// For float the single-precision function `ff` runs; half/bf16 use the double function `fd`.
template <typename T, typename Ff, typename Fd>
inline T apply1(T a, Ff ff, Fd fd) {
    if constexpr (std::is_same<T, float>::value) {
        return profile_result(ff(profile_input(a)));
    } else if constexpr (is_float16_storage<T>()) {
        return profiled16(T(static_cast<double>(fd(static_cast<double>(a.exact())))));
    } else {
        return wrap<T>(static_cast<int64_t>(fd(static_cast<int64_t>(a))));
    }
}

// NaN propagates through Max/Min (assumption: the A2 documentation does not say); on equal
// operands the first one is returned.
struct MaxOp {
    template <typename V>
    V operator()(V x, V y) const {
        if (x != x) return x;
        if (y != y) return y;
        return x >= y ? x : y;
    }
};
struct MinOp {
    template <typename V>
    V operator()(V x, V y) const {
        if (x != x) return x;
        if (y != y) return y;
        return x <= y ? x : y;
    }
};

// Checks `n` elements of a count-form operand and returns its UB bytes.
template <typename T>
inline uint8_t* operand(const char* api, const char* role, const AscendC::LocalTensor<T>& t, uint64_t n) {
    return ub_operand(api, role, t.ref_, n * sizeof(T));
}

template <typename D, typename S>
inline void no_partial_overlap(const char* api, const char* src_role, const AscendC::LocalTensor<D>& dst,
                               const AscendC::LocalTensor<S>& src, uint64_t n) {
    check_overlap(api, "dst", dst.ref_, n * sizeof(D), src_role, src.ref_, n * sizeof(S),
                  std::is_same<D, S>::value);
}

// Elementwise dst[i] = f(src0[i], src1[i]).
template <typename T, typename F>
inline void binary(const char* api, uint32_t allowed, const AscendC::LocalTensor<T>& dst,
                   const AscendC::LocalTensor<T>& src0, const AscendC::LocalTensor<T>& src1, int32_t count, F f) {
    require_dtype<T>(api, "T", allowed);
    check_count(api, count);
    const uint64_t n = uint64_t(count);
    uint8_t* d = operand(api, "dst", dst, n);
    const uint8_t* a = operand(api, "src0", src0, n);
    const uint8_t* b = operand(api, "src1", src1, n);
    no_partial_overlap(api, "src0", dst, src0, n);
    no_partial_overlap(api, "src1", dst, src1, n);
    for (uint64_t i = 0; i < n; ++i) {
        store<T>(d + i * sizeof(T), apply2<T>(load<T>(a + i * sizeof(T)), load<T>(b + i * sizeof(T)), f));
    }
    count_vector(api, n);
}

// Elementwise dst[i] = f(src[i], scalar).
template <typename T, typename F>
inline void with_scalar(const char* api, uint32_t allowed, const AscendC::LocalTensor<T>& dst,
                        const AscendC::LocalTensor<T>& src, const T& scalar, int32_t count, F f) {
    require_dtype<T>(api, "T", allowed);
    check_count(api, count);
    const uint64_t n = uint64_t(count);
    uint8_t* d = operand(api, "dst", dst, n);
    const uint8_t* a = operand(api, "src", src, n);
    no_partial_overlap(api, "src", dst, src, n);
    for (uint64_t i = 0; i < n; ++i) store<T>(d + i * sizeof(T), apply2<T>(load<T>(a + i * sizeof(T)), scalar, f));
    count_vector(api, n);
}

// Elementwise dst[i] = f(src[i]).
template <typename T, typename Ff, typename Fd>
inline void unary(const char* api, uint32_t allowed, const AscendC::LocalTensor<T>& dst,
                  const AscendC::LocalTensor<T>& src, int32_t count, Ff ff, Fd fd) {
    require_dtype<T>(api, "T", allowed);
    check_count(api, count);
    const uint64_t n = uint64_t(count);
    uint8_t* d = operand(api, "dst", dst, n);
    const uint8_t* a = operand(api, "src", src, n);
    no_partial_overlap(api, "src", dst, src, n);
    for (uint64_t i = 0; i < n; ++i) store<T>(d + i * sizeof(T), apply1<T>(load<T>(a + i * sizeof(T)), ff, fd));
    count_vector(api, n);
}

// A level-0 mask in continuous mode: 1 to one repeat's lanes.
template <typename T>
inline void level0_mask(const char* api, uint64_t mask) {
    const uint64_t lanes = 256 / sizeof(T);
    if (mask < 1 || mask > lanes) {
        fail(api, "mask out of range",
             "mask " + std::to_string(mask) + " not in [1, " + std::to_string(lanes) + "] for " +
                 std::to_string(sizeof(T)) + "-byte elements (continuous mode counts one repeat)");
    }
}

// The lanes of one repeat a level-0 call runs: its `mask` (continuous mode), which isSetMask =
// true also writes into the vector mask register, or with isSetMask = false the lanes the
// register holds (the argument is MASK_PLACEHOLDER; runtime_mask.cpp).
template <typename T, bool isSetMask>
inline uint64_t level0_lanes(const char* api, uint64_t mask) {
    if constexpr (isSetMask) {
        level0_mask<T>(api, mask);
        mask_set_prefix(api, mask);
        return mask;
    } else {
        return mask_lanes(api, 256 / sizeof(T));
    }
}

// A repeat count where CANN declares `const uint8_t repeatTimes` (level-0 Mul/Add/Max, Muls,
// Brcb): a wider count converts silently on the NPU and wraps (300 repeats run as 44, -1 as
// 255). The twin's parameter keeps the caller's value, so narrow_repeat can refuse it.
class Repeat8 {
public:
    template <typename I, typename = std::enable_if_t<std::is_integral<I>::value>>
    Repeat8(I v) : value_(static_cast<uint64_t>(v)) {
        if constexpr (std::is_signed<I>::value) negative_ = v < 0;
    }
    bool negative() const { return negative_; }
    uint64_t value() const { return value_; }

private:
    uint64_t value_;
    bool negative_ = false;
};

// The repeat count the API runs: `r` unless it lies outside the uint8_t it is narrowed to.
inline uint8_t narrow_repeat(const char* api, const Repeat8& r) {
    if (r.negative() || r.value() > 255) {
        fail(api, "repeatTimes outside [0, 255] narrowed to uint8_t",
             "repeatTimes " + (r.negative() ? std::to_string(int64_t(r.value())) : std::to_string(r.value())) +
                 " at " + call_site() + ": the API's repeatTimes is a uint8_t, so the NPU would run " +
                 std::to_string(unsigned(uint8_t(r.value()))) + " repeats (split the work into calls of at most 255)");
    }
    return uint8_t(r.value());
}

}  // namespace kern
}  // namespace opgen_twin

#endif
