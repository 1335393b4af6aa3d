// Compare, CompareScalar and Select. Masks are packed LSB first: element i is bit (i % 8) of byte
// i / 8; a set bit selects src0. The count forms of Compare only compute whole 256-byte repeats,
// so the twin rejects a count that leaves a partial repeat instead of leaving bits unwritten.
#ifndef OPGEN_TWIN_KERNEL_CMPSEL_H
#define OPGEN_TWIN_KERNEL_CMPSEL_H

#include <cstdint>
#include <string>
#include <type_traits>

#include "opgen_twin/kernel/vector_common.h"

namespace opgen_twin {
namespace kern {

constexpr uint32_t kCompare = dbit(DType::F16) | dbit(DType::F32) | dbit(DType::I32);
constexpr uint32_t kMaskBytes = dbit(DType::U8) | dbit(DType::I8);
constexpr uint32_t kGatherMask = dbit(DType::F16) | dbit(DType::BF16) | dbit(DType::I16) | dbit(DType::U16) |
                                 dbit(DType::F32) | dbit(DType::I32) | dbit(DType::U32);
constexpr uint32_t kSelectMask = dbit(DType::U8) | dbit(DType::U16) | dbit(DType::U32) | dbit(DType::U64);

template <typename T>
inline bool compare(T a, T b, AscendC::CMPMODE mode) {
    const long double x = exact_value(a);
    const long double y = exact_value(b);
    switch (mode) {
        case AscendC::CMPMODE::LT: return x < y;
        case AscendC::CMPMODE::GT: return x > y;
        case AscendC::CMPMODE::EQ: return x == y;
        case AscendC::CMPMODE::LE: return x <= y;
        case AscendC::CMPMODE::GE: return x >= y;
        case AscendC::CMPMODE::NE: return x != y;
    }
    return false;
}

template <typename T, typename U>
inline uint8_t* compare_operands(const char* api, const AscendC::LocalTensor<U>& dst, AscendC::CMPMODE mode,
                                 uint64_t n) {
    require_dtype<T>(api, "T", kCompare);
    require_dtype<U>(api, "U (mask)", kMaskBytes);
    if (dtype_of<T>() == DType::I32 && mode != AscendC::CMPMODE::EQ) {
        fail(api, "CMPMODE not supported for int32_t", "A2 compares int32_t only with CMPMODE::EQ");
    }
    if ((n * sizeof(T)) % 256 != 0) {
        fail(api, "Compare size not a multiple of 256 bytes",
             std::to_string(n) + " elements x " + std::to_string(sizeof(T)) +
                 " B (the NPU leaves the trailing partial repeat uncompared)");
    }
    return ub_operand(api, "dst", dst.ref_, n / 8);
}

template <typename T, typename U>
inline void select_checks(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& mask,
                          uint64_t mask_bytes, uint64_t n) {
    require_dtype<T>(api, "T", kFloats);
    require_dtype<U>(api, "U (mask)", kSelectMask);
    ub_operand(api, "selMask", mask.ref_, mask_bytes);
    check_overlap(api, "dst", dst.ref_, n * sizeof(T), "selMask", mask.ref_, mask_bytes, false);
}

inline bool mask_bit(const uint8_t* mask, uint64_t i) { return ((mask[i / 8] >> (i % 8)) & 1u) != 0; }

}  // namespace kern
}  // namespace opgen_twin

namespace AscendC {

template <typename T, typename U>
void Compare(const LocalTensor<U>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
             CMPMODE cmpMode, uint32_t calCount,
             opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Compare", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "Compare";
    const uint64_t n = calCount;
    uint8_t* d = k::compare_operands<T>(api, dstLocal, cmpMode, n);
    const uint8_t* a = k::operand(api, "src0", src0Local, n);
    const uint8_t* b = k::operand(api, "src1", src1Local, n);
    k::check_overlap(api, "dst", dstLocal.ref_, n / 8, "src0", src0Local.ref_, n * sizeof(T), false);
    k::check_overlap(api, "dst", dstLocal.ref_, n / 8, "src1", src1Local.ref_, n * sizeof(T), false);
    for (uint64_t byte = 0; byte < n / 8; ++byte) {
        uint8_t bits = 0;
        for (uint64_t j = 0; j < 8; ++j) {
            const uint64_t i = byte * 8 + j;
            if (k::compare(k::load<T>(a + i * sizeof(T)), k::load<T>(b + i * sizeof(T)), cmpMode)) bits |= 1u << j;
        }
        d[byte] = bits;
    }
    k::count_vector(api, n);
}

template <typename T, typename U>
void CompareScalar(const LocalTensor<U>& dstLocal, const LocalTensor<T>& src0Local, const T src1Scalar,
                   CMPMODE cmpMode, uint32_t calCount,
                   opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("CompareScalar", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "CompareScalar";
    const uint64_t n = calCount;
    uint8_t* d = k::compare_operands<T>(api, dstLocal, cmpMode, n);
    const uint8_t* a = k::operand(api, "src0", src0Local, n);
    k::check_overlap(api, "dst", dstLocal.ref_, n / 8, "src0", src0Local.ref_, n * sizeof(T), false);
    for (uint64_t byte = 0; byte < n / 8; ++byte) {
        uint8_t bits = 0;
        for (uint64_t j = 0; j < 8; ++j) {
            if (k::compare(k::load<T>(a + (byte * 8 + j) * sizeof(T)), src1Scalar, cmpMode)) bits |= 1u << j;
        }
        d[byte] = bits;
    }
    k::count_vector(api, n);
}

// VSEL_CMPMASK_SPR reuses the first 256/sizeof(T) mask bits for every repeat;
// VSEL_TENSOR_TENSOR_MODE consumes one bit per element. The scalar mode has its own overload.
template <typename T, typename U>
void Select(const LocalTensor<T>& dstLocal, const LocalTensor<U>& selMask, const LocalTensor<T>& src0Local,
            const LocalTensor<T>& src1Local, SELMODE selMode, uint32_t calCount,
            opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Select", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "Select";
    if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        opgen_twin::fail(api, "SELMODE not valid for this overload",
                         "VSEL_TENSOR_SCALAR_MODE selects against a scalar: pass src1 as a T value");
    }
    const uint64_t n = calCount;
    const uint64_t per = 256 / sizeof(T);
    const bool repeating = selMode == SELMODE::VSEL_CMPMASK_SPR;
    const uint64_t mask_bytes = repeating ? per / 8 : (n + 7) / 8;
    k::select_checks(api, dstLocal, selMask, mask_bytes, n);
    uint8_t* d = k::operand(api, "dst", dstLocal, n);
    const uint8_t* a = k::operand(api, "src0", src0Local, n);
    const uint8_t* b = k::operand(api, "src1", src1Local, n);
    const uint8_t* m = k::ub_operand(api, "selMask", selMask.ref_, mask_bytes);
    k::no_partial_overlap(api, "src0", dstLocal, src0Local, n);
    k::no_partial_overlap(api, "src1", dstLocal, src1Local, n);
    // dav_c220 VSEL_TENSOR_TENSOR_MODE stores the mask address with a vector Duplicate into 32 B
    // at TMP_UB_OFFSET (CANN 8.1 impl/dav_c220/kernel_operator_vec_cmpsel_impl.h l.176-183).
    if (selMode == SELMODE::VSEL_TENSOR_TENSOR_MODE) k::api_scratch(api, 32);
    for (uint64_t i = 0; i < n; ++i) {
        const bool take0 = k::mask_bit(m, repeating ? i % per : i);
        k::store<T>(d + i * sizeof(T), k::load<T>((take0 ? a : b) + i * sizeof(T)));
    }
    k::count_vector(api, n);
}

template <typename T, typename U>
void Select(const LocalTensor<T>& dstLocal, const LocalTensor<U>& selMask, const LocalTensor<T>& src0Local,
            T src1Local, SELMODE selMode, uint32_t calCount,
            opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Select", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "Select";
    if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE) {
        opgen_twin::fail(api, "SELMODE not valid for this overload",
                         "a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
    }
    const uint64_t n = calCount;
    const uint64_t mask_bytes = (n + 7) / 8;
    k::select_checks(api, dstLocal, selMask, mask_bytes, n);
    uint8_t* d = k::operand(api, "dst", dstLocal, n);
    const uint8_t* a = k::operand(api, "src0", src0Local, n);
    const uint8_t* m = k::ub_operand(api, "selMask", selMask.ref_, mask_bytes);
    k::no_partial_overlap(api, "src0", dstLocal, src0Local, n);
    // The scalar mode broadcasts src1 with a vector Duplicate into 32 B at TMP_UB_OFFSET
    // (impl/dav_c220/kernel_operator_vec_cmpsel_impl.h l.199-214).
    k::api_scratch(api, 32);
    for (uint64_t i = 0; i < n; ++i) {
        k::store<T>(d + i * sizeof(T), k::mask_bit(m, i) ? k::load<T>(a + i * sizeof(T)) : src1Local);
    }
    k::count_vector(api, n);
}

// ---- GatherMask (user pattern, counter mode) ----
// Semantics ([DEVKIT] atlasascendc_api_07_0071 GatherMask; CANN 8.1 basic_api/interface/
// kernel_operator_vec_gather_mask_intf.h, impl/dav_c220/kernel_operator_vec_gather_mask_impl.h
// GatherMaskCal / GatherMaskImpl: one vreducev2, then rsvdCnt = AscendCUtils::GetRsvdCnt()):
// the elements i of src0 whose pattern bit is set (bit i % bits of pattern word i / bits, the
// LSB-first order Compare writes, so a Compare mask reinterpreted as uint32_t is a pattern) are
// written in order to dst[0 .. rsvdCnt); rsvdCnt is their count. A2: T half/bfloat16_t/int16_t/
// uint16_t with a uint16_t pattern, float/int32_t/uint32_t with a uint32_t pattern (a mismatch
// does not compile here; the NPU's headers assert). dst may be src0 itself (CANN's
// moe_gating_top_k_softmax_v2 compacts in place); writes trail reads.
// The twin models one form: reduceMode = true (counter mode) with repeatTimes = 1 and
// src0BlockStride = 1, where `mask` is the number of elements. Normal mode, several repeats and
// the built-in patterns are refused rather than guessed. The scalar reads rsvdCnt from a special
// register after the instruction, a vector -> scalar wait (a hidden V_S, as ReduceSum's).
struct GatherMaskParams {
    GatherMaskParams() {}
    GatherMaskParams(const uint8_t src0BlockStrideIn, const uint16_t repeatTimesIn, const uint16_t src0RepeatStrideIn,
                     const uint8_t src1RepeatStrideIn)
        : src0BlockStride(src0BlockStrideIn),
          repeatTimes(repeatTimesIn),
          src0RepeatStride(src0RepeatStrideIn),
          src1RepeatStride(src1RepeatStrideIn) {}
    uint8_t src0BlockStride = 1;
    uint16_t repeatTimes = 0;
    uint16_t src0RepeatStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepeatStride = DEFAULT_REPEAT_STRIDE;
};

template <typename T, typename U>
void GatherMask(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<U>& src1Pattern,
                const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                uint64_t& rsvdCnt, opgen_twin::kern::Here here = {}) {
    static_assert(sizeof(T) == sizeof(U) && (sizeof(T) == 2 || sizeof(T) == 4) && std::is_unsigned<U>::value,
                  "GatherMask: a 16-bit T takes a uint16_t pattern, a 32-bit T a uint32_t pattern");
    const opgen_twin::kern::Call twin_call("GatherMask", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "GatherMask";
    k::require_dtype<T>(api, "T", k::kGatherMask);
    const GatherMaskParams& p = gatherMaskParams;
    if (!reduceMode || p.repeatTimes != 1 || p.src0BlockStride != 1 || mask == 0) {
        opgen_twin::fail(api, "GatherMask form not modelled",
                         "reduceMode " + std::to_string(reduceMode) + ", repeatTimes " + std::to_string(p.repeatTimes) +
                             ", src0BlockStride " + std::to_string(p.src0BlockStride) + ", mask " +
                             std::to_string(mask) +
                             ": the twin models counter mode (reduceMode true) with one repeat of `mask` > 0 "
                             "elements and src0BlockStride 1");
    }
    const uint64_t n = mask;
    constexpr uint64_t bits = 8 * sizeof(U);
    const uint64_t words = (n + bits - 1) / bits;
    const uint8_t* s = k::operand(api, "src0", src0Local, n);
    const uint8_t* m = k::operand(api, "src1Pattern", src1Pattern, words);
    uint64_t kept = 0;
    for (uint64_t i = 0; i < n; ++i) {
        const U word = k::load<U>(m + (i / bits) * sizeof(U));
        kept += (word >> (i % bits)) & 1u;
    }
    // dst must hold the kept elements (what the NPU writes; whether it rounds the write up to a
    // 32-byte block is not documented, so the twin asks for whole blocks: stricter either way).
    const uint64_t dst_bytes = (kept * sizeof(T) + 31) / 32 * 32;
    if (dstLocal.ref_.off != src0Local.ref_.off) {  // in place is allowed, any other overlap is not
        k::check_overlap(api, "dst", dstLocal.ref_, dst_bytes, "src0", src0Local.ref_, n * sizeof(T), false);
    }
    k::check_overlap(api, "dst", dstLocal.ref_, dst_bytes, "src1Pattern", src1Pattern.ref_, words * sizeof(U), false);
    if (kept != 0) {
        uint8_t* d = k::ub_operand(api, "dst", dstLocal.ref_, dst_bytes, true, k::Extent::BlockPadded);
        uint64_t at = 0;
        for (uint64_t i = 0; i < n; ++i) {
            const U word = k::load<U>(m + (i / bits) * sizeof(U));
            if (((word >> (i % bits)) & 1u) != 0) {
                k::store<T>(d + at * sizeof(T), k::load<T>(s + i * sizeof(T)));
                ++at;
            }
        }
    }
    k::count_vector(api, n);
    rsvdCnt = kept;
    k::hidden_sync(uint8_t(HardEvent::V_S));
}

}  // namespace AscendC

#endif
