// Three level-0 APIs for batched per-row quantisation (issue 14 point 4: one row max, one scale
// and one multiplier per (token, head) row for a whole pass of rows, no scalar step per row):
//  - WholeReduceMax (continuous mask): the max of each repeat, one repeat per row (the
//    reshape_and_cache_int8 kernel reduces each 64-lane chunk of its rows this way);
//  - Max in its level-0 form (mask, repeatTimes, BinaryRepeatParams): folds the 64-lane chunks
//    of every row onto one, as CANN's DynamicQuant multi-row kernel does (not used by a
//    generated kernel today: the fold needs a 256-byte-per-row buffer the int8 kernel avoids);
//  - Brcb: each of 8 elements per repeat broadcast to a 32-byte block, so a per-row value can be
//    the stride-0 block operand of a level-0 Mul.
//
// ---- Max, level 0 ----
// Semantics ([DEVKIT] docs 基础算术/Max.md, SIMD计算说明/高维切分.md; CANN 8.1
// basic_api/interface/kernel_operator_vec_binary_intf.h): as the level-0 Mul of ext_rotary.h
// (repeat r, element e of operand X at X + (r * XRepStride + (e / per_block) * XBlkStride) * 32 +
// (e % per_block) * sizeof(T)), dst = max(src0, src1) with the count form's NaN and tie rules
// (vector_common.h MaxOp). A2 dtypes as the count form (half, float, int16_t, int32_t).
// The twin's rules are those of the level-0 Mul (M1 mask, M2 operands, M3 partial overlap, and
// the unmodelled BinaryRepeatParams modes), raised from the shared helper below.
//
// ---- WholeReduceMax (mask continuous mode) ----
// Semantics ([DEVKIT] atlasascendc_api_07_0079 WholeReduceMax; CANN 8.1
// basic_api/interface/kernel_operator_vec_reduce_intf.h, impl/dav_c220/
// kernel_operator_vec_reduce_impl.h WholeReduceMaxImpl: one vcmax, no hidden synchronisation):
// for each repeat r the max of its first `mask` elements (element j at
// src + r * srcRepStride * 32 + (j / per_block) * srcBlkStride * 32 + (j % per_block) * sizeof(T))
// goes to dst; with ORDER_VALUE_INDEX the value and its index within the repeat (in T's bits)
// are a pair at dst + r * dstRepStride * 2 * sizeof(T); with ORDER_ONLY_VALUE the value alone at
// dst + r * dstRepStride * sizeof(T) (dstRepStride counts reduced results). A2 dtypes: half,
// float. repeatTimes in [0, 255]; src 32-byte aligned; dst 4-byte aligned for half and 8-byte
// aligned for float.
// The twin's rules:
//  W1 mask outside [1, 256 / sizeof(T)];
//  W2 repeatTimes outside [0, 255], a negative stride, a source stride past 255 (8-bit fields);
//  W3 dst start not aligned to 2 * sizeof(T) (the documented 4 / 8 bytes);
//  W4 ORDER_INDEX_VALUE and ORDER_ONLY_INDEX are not modelled (refused, not guessed);
//  W5 operands are live UB tensors and every element read or written lies inside its tensor.
// NaN and ties follow ReduceMax (reduce.h `better`: the first NaN wins, ties keep the lowest
// index; assumption, as there).
//
// ---- Brcb ----
// Semantics ([DEVKIT] atlasascendc_api_07_0089 Brcb; CANN 8.1 basic_api/interface/
// kernel_operator_vec_brcb_intf.h, kernel_struct_brcb.h): repeat r reads src0[8r .. 8r + 7]
// and writes element 8r + j to every lane of the 32-byte block at
// dst + (r * dstRepStride + j * dstBlkStride) * 32. A2 dtypes: int16_t, uint16_t, int32_t,
// uint32_t, half, bfloat16_t, float. repeatTimes in [0, 255]; dst and src0 32-byte aligned;
// src0 and dst must not be the same memory.
// The twin's rules:
//  B1 dtype outside the A2 list;
//  B2 src0 shorter than 8 * repeatTimes elements, dst blocks outside dst (shared operand checks);
//  B3 dstBlkStride 0 (the NPU silently treats it as 1: the twin refuses the ambiguity);
//  B4 src0 and dst overlapping (the documented "not the same memory", on any shared byte);
//  B5 blockNumber or the stride modes changed from their defaults (not modelled).
#ifndef OPGEN_TWIN_KERNEL_EXT_QUANT_H
#define OPGEN_TWIN_KERNEL_EXT_QUANT_H

#include <algorithm>
#include <cstdint>
#include <string>

#include "opgen_twin/kernel/ext_rotary.h"
#include "opgen_twin/kernel/reduce.h"
#include "opgen_twin/kernel/vector_common.h"

namespace opgen_twin {
namespace kern {

constexpr uint32_t kBrcb = dbit(DType::I16) | dbit(DType::U16) | dbit(DType::I32) | dbit(DType::U32) |
                           dbit(DType::F16) | dbit(DType::BF16) | dbit(DType::F32);

}  // namespace kern
}  // namespace opgen_twin

namespace AscendC {

template <typename T, bool isSetMask = true>
void Max(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         uint64_t mask, const opgen_twin::kern::Repeat8 repeatTimes, const BinaryRepeatParams& repeatParams,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Max", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    k::level0_binary("Max", k::kArith, dstLocal, src0Local, src1Local, k::level0_lanes<T, isSetMask>("Max", mask),
                     k::narrow_repeat("Max", repeatTimes),
                     repeatParams, k::MaxOp{});
}

// The level-0 Add (mask continuous mode), as Max: row_norm_grad's plain float32 path adds a
// per-row value (a Brcb'ed block, block stride 0) over its row.
template <typename T, bool isSetMask = true>
void Add(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         uint64_t mask, const opgen_twin::kern::Repeat8 repeatTimes, const BinaryRepeatParams& repeatParams,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Add", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    k::level0_binary("Add", k::kArith, dstLocal, src0Local, src1Local, k::level0_lanes<T, isSetMask>("Add", mask),
                     k::narrow_repeat("Add", repeatTimes),
                     repeatParams,
                     [](auto u, auto v) { return u + v; });
}

// The level-0 Sub (mask continuous mode), as Add: row_norm_grad's exact 16-bit path folds
// the halves of a pass's short rows in one call per step (one repeat per row).
template <typename T, bool isSetMask = true>
void Sub(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         uint64_t mask, const opgen_twin::kern::Repeat8 repeatTimes, const BinaryRepeatParams& repeatParams,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Sub", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    k::level0_binary("Sub", k::kArith, dstLocal, src0Local, src1Local, k::level0_lanes<T, isSetMask>("Sub", mask),
                     k::narrow_repeat("Sub", repeatTimes),
                     repeatParams,
                     [](auto u, auto v) { return u - v; });
}

template <typename T, bool isSetMask = true>
void WholeReduceMax(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t maskArg,
                    const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride, ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,
                    opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("WholeReduceMax", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "WholeReduceMax";
    k::require_dtype<T>(api, "T", k::kFloats);
    if (maskArg < 0) {
        opgen_twin::fail(api, "mask out of range", "mask " + std::to_string(maskArg) + " is negative");
    }
    const int32_t mask = int32_t(k::level0_lanes<T, isSetMask>(api, uint64_t(maskArg)));
    if (repeatTimes < 0 || repeatTimes > MAX_REPEAT_TIMES) {
        opgen_twin::fail(api, "repeatTimes out of range",
                         "repeatTimes " + std::to_string(repeatTimes) + " not in [0, 255]");
    }
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0) {
        opgen_twin::fail(api, "negative stride", "strides must be >= 0");
    }
    if (srcBlkStride > 255 || srcRepStride > 255) {
        opgen_twin::fail(api, "source stride past 8 bits", "srcBlkStride and srcRepStride are 8-bit fields: at most 255");
    }
    if (order != ReduceOrder::ORDER_VALUE_INDEX && order != ReduceOrder::ORDER_ONLY_VALUE) {
        opgen_twin::fail(api, "ReduceOrder not modelled",
                         "only ORDER_VALUE_INDEX and ORDER_ONLY_VALUE are modelled (the index orders are refused)");
    }
    if (dstLocal.ref_.off % (2 * sizeof(T)) != 0) {
        opgen_twin::fail(api, "dst start not aligned for WholeReduceMax",
                         "dst " + k::tensor_desc(dstLocal.ref_) + " starts at UB " + std::to_string(dstLocal.ref_.off) +
                             "; it must be " + std::to_string(2 * sizeof(T)) + "-byte aligned for " +
                             std::to_string(sizeof(T)) + "-byte elements");
    }
    if (repeatTimes == 0) return;
    const bool pairs = order == ReduceOrder::ORDER_VALUE_INDEX;
    const uint64_t rt = uint64_t(repeatTimes);
    const uint64_t unit = (pairs ? 2 : 1) * sizeof(T);
    const uint64_t src_bytes =
        k::level0_extent<T>(rt, uint64_t(mask), uint8_t(srcBlkStride), uint8_t(srcRepStride));
    const uint64_t dst_bytes = (rt - 1) * uint64_t(dstRepStride) * unit + unit;
    const uint8_t* s = k::ub_operand(api, "src", srcLocal.ref_, src_bytes, true, k::Extent::Exact, false);
    uint8_t* d = k::ub_operand(api, "dst", dstLocal.ref_, dst_bytes, false, k::Extent::Exact, false);
    k::level0_track<T>(srcLocal.ref_, rt, uint64_t(mask), uint8_t(srcBlkStride), uint8_t(srcRepStride), false);
    for (uint64_t r = 0; r < rt; ++r) {
        T best = k::load<T>(s + k::level0_offset<T>(r, 0, uint8_t(srcBlkStride), uint8_t(srcRepStride)));
        uint64_t best_index = 0;
        for (uint64_t j = 1; j < uint64_t(mask); ++j) {
            const T v = k::load<T>(s + k::level0_offset<T>(r, j, uint8_t(srcBlkStride), uint8_t(srcRepStride)));
            if (k::better(v, best, true)) {
                best = v;
                best_index = j;
            }
        }
        uint8_t* out = d + r * uint64_t(dstRepStride) * unit;
        k::track_ub(dstLocal.ref_.off + uint64_t(out - d), unit, true);
        k::store<T>(out, best);
        if (pairs) {
            if (sizeof(T) == 2) {
                k::store<uint16_t>(out + sizeof(T), uint16_t(best_index));
            } else {
                k::store<uint32_t>(out + sizeof(T), uint32_t(best_index));
            }
        }
    }
    k::count_level0_repeats<T>(api, rt);
}

struct BrcbRepeatParams {
    BrcbRepeatParams() {}
    BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
        : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint16_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

template <typename T>
void Brcb(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const opgen_twin::kern::Repeat8 repeatTimes,
          const BrcbRepeatParams& repeatParams,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Brcb", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "Brcb";
    k::require_dtype<T>(api, "T", k::kBrcb);
    const BrcbRepeatParams& p = repeatParams;
    if (p.blockNumber != DEFAULT_BLK_NUM || p.repeatStrideMode || p.strideSizeMode || p.src0BlkStride != 1 ||
        p.src1BlkStride != 1 || p.src0RepStride != DEFAULT_REPEAT_STRIDE || p.src1RepStride != DEFAULT_REPEAT_STRIDE) {
        opgen_twin::fail(api, "BrcbRepeatParams field not modelled",
                         "only dstBlkStride and dstRepStride may be set; the other fields keep their defaults");
    }
    if (p.dstBlkStride == 0) {
        opgen_twin::fail(api, "Brcb dstBlkStride 0",
                         "dstBlkStride 0 (the NPU silently treats it as 1): pass 1 for contiguous blocks");
    }
    const uint64_t rt = k::narrow_repeat(api, repeatTimes);
    if (rt == 0) return;
    constexpr uint64_t per_block = k::kBlock / sizeof(T);
    const uint64_t src_bytes = rt * 8 * sizeof(T);
    uint64_t dst_bytes = 0;
    for (uint64_t j = 0; j < 8; ++j) {
        dst_bytes = std::max<uint64_t>(dst_bytes, ((rt - 1) * p.dstRepStride + j * p.dstBlkStride + 1) * k::kBlock);
    }
    const uint8_t* s = k::ub_operand(api, "src0", src0Local.ref_, src_bytes);
    uint8_t* d = k::ub_operand(api, "dst", dstLocal.ref_, dst_bytes, true, k::Extent::Exact, false);
    const uint64_t d0 = dstLocal.ref_.off, d1 = d0 + dst_bytes, s0 = src0Local.ref_.off, s1 = s0 + src_bytes;
    if (d0 < s1 && s0 < d1) {
        opgen_twin::fail(api, "Brcb src0 and dst overlap",
                         "dst " + k::tensor_desc(dstLocal.ref_) + " and src0 " + k::tensor_desc(src0Local.ref_) +
                             " share UB bytes; Brcb must not write the memory it reads");
    }
    for (uint64_t r = 0; r < rt; ++r) {
        for (uint64_t j = 0; j < 8; ++j) {
            const T v = k::load<T>(s + (r * 8 + j) * sizeof(T));
            const uint64_t at = (r * p.dstRepStride + j * p.dstBlkStride) * k::kBlock;
            k::track_ub(d0 + at, k::kBlock, true);
            for (uint64_t e = 0; e < per_block; ++e) k::store<T>(d + at + e * sizeof(T), v);
        }
    }
    k::count_vector(api, rt * 8 * per_block);
}

}  // namespace AscendC

#endif
