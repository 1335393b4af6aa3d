// Elementwise count-form vector APIs: binary, tensor-scalar, unary, Duplicate and bitwise ops.
// Scalar arguments are `const T&` with T deduced from the tensors as well, exactly like CANN, so a
// double passed for a float tensor (or a float for a half tensor) does not compile.
#ifndef OPGEN_TWIN_KERNEL_VECTOR_H
#define OPGEN_TWIN_KERNEL_VECTOR_H

#include <cmath>
#include <cstdint>

#include "opgen_twin/kernel/perturb.h"
#include "opgen_twin/kernel/vector_common.h"

namespace AscendC {

namespace detail {
namespace k = opgen_twin::kern;
struct AddOp {
    template <typename V>
    V operator()(V x, V y) const { return x + y; }
};
struct SubOp {
    template <typename V>
    V operator()(V x, V y) const { return x - y; }
};
struct MulOp {
    template <typename V>
    V operator()(V x, V y) const { return x * y; }
};
struct DivOp {
    template <typename V>
    V operator()(V x, V y) const { return x / y; }
    // float32 division may be perturbed (opgen_twin/kernel/perturb.h).
    float operator()(float x, float y) const { return opgen_twin::perturbed(x / y, opgen_twin::kPerturbDiv, x, y); }
};
struct AndOp {
    template <typename V>
    V operator()(V x, V y) const { return x & y; }
};
struct OrOp {
    template <typename V>
    V operator()(V x, V y) const { return x | y; }
};
// NaN stays NaN through Relu (assumption, as for Max).
struct ReluOp {
    template <typename V>
    V operator()(V x) const { return (x != x || x > V(0)) ? x : V(0); }
};
struct AbsOp {
    template <typename V>
    V operator()(V x) const { return std::fabs(x); }
};
}  // namespace detail

// ---- binary ----
template <typename T>
void Add(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Add", opgen_twin::kern::Pipe::V, here);
    detail::k::binary("Add", detail::k::kArith, dstLocal, src0Local, src1Local, calCount, detail::AddOp{});
}
template <typename T>
void Sub(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Sub", opgen_twin::kern::Pipe::V, here);
    detail::k::binary("Sub", detail::k::kArith, dstLocal, src0Local, src1Local, calCount, detail::SubOp{});
}
template <typename T>
void Mul(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Mul", opgen_twin::kern::Pipe::V, here);
    detail::k::binary("Mul", detail::k::kArith, dstLocal, src0Local, src1Local, calCount, detail::MulOp{});
}
template <typename T>
void Div(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Div", opgen_twin::kern::Pipe::V, here);
    detail::k::binary("Div", detail::k::kFloats, dstLocal, src0Local, src1Local, calCount, detail::DivOp{});
}
template <typename T>
void Max(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Max", opgen_twin::kern::Pipe::V, here);
    detail::k::binary("Max", detail::k::kArith, dstLocal, src0Local, src1Local, calCount, detail::k::MaxOp{});
}
template <typename T>
void Min(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Min", opgen_twin::kern::Pipe::V, here);
    detail::k::binary("Min", detail::k::kArith, dstLocal, src0Local, src1Local, calCount, detail::k::MinOp{});
}
template <typename T>
void And(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("And", opgen_twin::kern::Pipe::V, here);
    detail::k::binary("And", detail::k::kBitwise, dstLocal, src0Local, src1Local, calCount, detail::AndOp{});
}
template <typename T>
void Or(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
        const int32_t& calCount,
        opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Or", opgen_twin::kern::Pipe::V, here);
    detail::k::binary("Or", detail::k::kBitwise, dstLocal, src0Local, src1Local, calCount, detail::OrOp{});
}

// ---- multiply-accumulate ----
// MulAddDst (count form): dst[i] = src0[i] * src1[i] + dst[i], dst read and written (CANN 8.1
// impl/dav_c220/kernel_operator_vec_binary_impl.h MulAddDstImpl: one vmla in counter mode; A2
// pairs (dst, src): (half, half), (float, float), (float, half)). The twin models the same-type
// pairs only (the mixed one does not compile here), with Mul's operand rules: dst may be a source
// exactly, never partially. Rounding: the product rounds to T, then the sum (two roundings; an
// assumption: the documentation does not say whether vmla fuses them).
template <typename T>
void MulAddDst(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
               const int32_t& calCount,
               opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("MulAddDst", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "MulAddDst";
    k::require_dtype<T>(api, "T", k::kFloats);
    k::check_count(api, calCount);
    const uint64_t n = uint64_t(calCount);
    const uint8_t* a = k::operand(api, "src0", src0Local, n);
    const uint8_t* b = k::operand(api, "src1", src1Local, n);
    const uint8_t* acc = k::operand(api, "src2 (dst's old value)", dstLocal, n);  // a read of dst
    uint8_t* d = k::operand(api, "dst", dstLocal, n);
    k::no_partial_overlap(api, "src0", dstLocal, src0Local, n);
    k::no_partial_overlap(api, "src1", dstLocal, src1Local, n);
    for (uint64_t i = 0; i < n; ++i) {
        const T p = k::apply2<T>(k::load<T>(a + i * sizeof(T)), k::load<T>(b + i * sizeof(T)), detail::MulOp{});
        k::store<T>(d + i * sizeof(T), k::apply2<T>(p, k::load<T>(acc + i * sizeof(T)), detail::AddOp{}));
    }
    k::count_vector(api, n);
}

// ---- tensor op scalar ----
template <typename T, bool isSetMask = true>
void Adds(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const T& scalarValue,
          const int32_t& calCount,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Adds", opgen_twin::kern::Pipe::V, here);
    detail::k::with_scalar("Adds", detail::k::kArith, dstLocal, srcLocal, scalarValue, calCount, detail::AddOp{});
}
template <typename T, bool isSetMask = true>
void Muls(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const T& scalarValue,
          const int32_t& calCount,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Muls", opgen_twin::kern::Pipe::V, here);
    detail::k::with_scalar("Muls", detail::k::kArith, dstLocal, srcLocal, scalarValue, calCount, detail::MulOp{});
}
template <typename T, bool isSetMask = true>
void Maxs(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const T& scalarValue,
          const int32_t& calCount,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Maxs", opgen_twin::kern::Pipe::V, here);
    detail::k::with_scalar("Maxs", detail::k::kArith, dstLocal, srcLocal, scalarValue, calCount, detail::k::MaxOp{});
}
template <typename T, bool isSetMask = true>
void Mins(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const T& scalarValue,
          const int32_t& calCount,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Mins", opgen_twin::kern::Pipe::V, here);
    detail::k::with_scalar("Mins", detail::k::kArith, dstLocal, srcLocal, scalarValue, calCount, detail::k::MinOp{});
}

// ---- unary: float uses the single-precision libm function, half the double one ----
template <typename T>
void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Exp", opgen_twin::kern::Pipe::V, here);
    detail::k::unary(
        "Exp", detail::k::kFloats, dstLocal, srcLocal, calCount, [](float x) { return opgen_twin::perturbed(expf(x), opgen_twin::kPerturbExp, x); },
        [](double x) { return std::exp(x); });
}
template <typename T>
void Ln(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount,
        opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Ln", opgen_twin::kern::Pipe::V, here);
    detail::k::unary(
        "Ln", detail::k::kFloats, dstLocal, srcLocal, calCount, [](float x) { return opgen_twin::perturbed(logf(x), opgen_twin::kPerturbLn, x); },
        [](double x) { return std::log(x); });
}
template <typename T>
void Sqrt(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Sqrt", opgen_twin::kern::Pipe::V, here);
    detail::k::unary(
        "Sqrt", detail::k::kFloats, dstLocal, srcLocal, calCount, [](float x) { return opgen_twin::perturbed(sqrtf(x), opgen_twin::kPerturbSqrt, x); },
        [](double x) { return std::sqrt(x); });
}
// Rsqrt is modelled as 1/sqrt: two correctly rounded steps in the element type's arithmetic.
template <typename T>
void Rsqrt(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount,
           opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Rsqrt", opgen_twin::kern::Pipe::V, here);
    detail::k::unary(
        "Rsqrt", detail::k::kFloats, dstLocal, srcLocal, calCount, [](float x) { return opgen_twin::perturbed(1.0f / sqrtf(x), opgen_twin::kPerturbRsqrt, x); },
        [](double x) { return 1.0 / std::sqrt(x); });
}
template <typename T>
void Reciprocal(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount,
                opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Reciprocal", opgen_twin::kern::Pipe::V, here);
    detail::k::unary(
        "Reciprocal", detail::k::kFloats, dstLocal, srcLocal, calCount, [](float x) { return opgen_twin::perturbed(1.0f / x, opgen_twin::kPerturbReciprocal, x); },
        [](double x) { return 1.0 / x; });
}
template <typename T>
void Abs(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Abs", opgen_twin::kern::Pipe::V, here);
    detail::k::unary("Abs", detail::k::kFloats, dstLocal, srcLocal, calCount, detail::AbsOp{}, detail::AbsOp{});
}
template <typename T>
void Relu(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Relu", opgen_twin::kern::Pipe::V, here);
    detail::k::unary("Relu", detail::k::kRelu, dstLocal, srcLocal, calCount, detail::ReluOp{}, detail::ReluOp{});
}
template <typename T>
void Not(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t& calCount,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Not", opgen_twin::kern::Pipe::V, here);
    auto bit_not = [](auto x) { return ~x; };
    detail::k::unary("Not", detail::k::kBitwise, dstLocal, srcLocal, calCount, bit_not, bit_not);
}

// ---- fill ----
template <typename T>
void Duplicate(const LocalTensor<T>& dstLocal, const T& scalarValue, const int32_t& calCount,
               opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Duplicate", opgen_twin::kern::Pipe::V, here);
    namespace k = detail::k;
    k::require_dtype<T>("Duplicate", "T", k::kDuplicate);
    k::check_count("Duplicate", calCount);
    uint8_t* d = k::operand("Duplicate", "dst", dstLocal, uint64_t(calCount));
    for (int32_t i = 0; i < calCount; ++i) k::store<T>(d + uint64_t(i) * sizeof(T), scalarValue);
    k::count_vector("Duplicate", uint64_t(calCount));
}

}  // namespace AscendC

#endif
