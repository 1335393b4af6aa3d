// Three APIs the rotary family needs beyond the count forms:
//  - Gather (count form): the element permutation of rotate_half and of the interleaved pair
//    swap;
//  - Mul in its level-0 form (mask, repeatTimes, BinaryRepeatParams): with src1RepStride = 0 it
//    multiplies every head's row by the same cos/sin row, which is how a table row is broadcast
//    over heads without copying it (or, one instruction per head, every position's row of one
//    head by its table row);
//  - Muls in its level-0 form (mask, repeatTimes, UnaryRepeatParams): the sign of rotate_half,
//    -1 on the first half of every table row of a block in one instruction (research K7).
//
// ---- Gather ----
// Semantics ([DEVKIT] docs/zh/api/SIMD-API/基础API/Memory矢量计算/离散与聚合/Gather.md; CANN 8.1
// basic_api/interface/kernel_operator_vec_gather_intf.h):
//   for i in [0, count): dst[i] = src[(srcBaseAddr + srcOffset[i]) / sizeof(T)]
// srcOffset holds byte offsets (uint32_t) relative to src's start plus srcBaseAddr.
// A2 dtypes: int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float (it moves bits, so
// bfloat16_t is allowed). count = 0 is a no-op on A2.
//
// The twin's rules (each stops the run naming the API, the core and the tensor):
//  G1 dtype outside the A2 list;
//  G2 dst, src and srcOffset are live UB tensors with 32-byte-aligned starts, and dst / srcOffset
//     cover `count` elements (the shared operand checks);
//  G3 srcBaseAddr not a multiple of sizeof(T) ("src element type width aligned", else the NPU
//     silently reads shifted data);
//  G4 an offset whose address (srcBaseAddr + srcOffset[i]) is not a multiple of sizeof(T);
//  G5 an offset whose element lies outside the src tensor (the NPU only requires the address to
//     stay inside UB: the twin is stricter, like every other vector operand, so a wrong offset
//     table names the element instead of silently reading a neighbouring buffer);
//  G6 dst overlapping src ("src and dst must not be the same memory"); the NPU gives no error.
#ifndef OPGEN_TWIN_KERNEL_EXT_ROTARY_H
#define OPGEN_TWIN_KERNEL_EXT_ROTARY_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "opgen_twin/kernel/copy.h"
#include "opgen_twin/kernel/vector_common.h"

namespace opgen_twin {
namespace kern {

constexpr uint32_t kGather = dbit(DType::I16) | dbit(DType::U16) | dbit(DType::F16) | dbit(DType::BF16) |
                             dbit(DType::I32) | dbit(DType::U32) | dbit(DType::F32);

}  // namespace kern
}  // namespace opgen_twin

namespace AscendC {

template <typename T>
void Gather(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<uint32_t>& srcOffsetLocal,
            const uint32_t srcBaseAddr, const uint32_t count,
            opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Gather", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "Gather";
    k::require_dtype<T>(api, "T", k::kGather);
    const uint64_t n = count;
    const uint64_t src_bytes = uint64_t(srcLocal.GetSize()) * sizeof(T);
    uint8_t* d = k::operand(api, "dst", dstLocal, n);
    const uint8_t* s = k::ub_operand(api, "src", srcLocal.ref_, src_bytes);
    const uint8_t* o = k::operand(api, "srcOffset", srcOffsetLocal, n);
    if (srcBaseAddr % sizeof(T) != 0) {
        opgen_twin::fail(api, "srcBaseAddr not aligned to the element size",
                         "srcBaseAddr " + std::to_string(srcBaseAddr) + " B with " + std::to_string(sizeof(T)) +
                             "-byte elements (the NPU reads shifted data)");
    }
    if (n == 0) return;
    const uint64_t d0 = dstLocal.ref_.off, d1 = d0 + n * sizeof(T);
    const uint64_t s0 = srcLocal.ref_.off, s1 = s0 + src_bytes;
    if (d0 < s1 && s0 < d1) {
        opgen_twin::fail(api, "src and dst overlap",
                         "dst " + k::tensor_desc(dstLocal.ref_) + " and src " + k::tensor_desc(srcLocal.ref_) +
                             " share UB bytes; Gather must not write the tensor it reads");
    }
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t at = uint64_t(srcBaseAddr) + k::load<uint32_t>(o + i * sizeof(uint32_t));
        if (at % sizeof(T) != 0) {
            opgen_twin::fail(api, "offset not aligned to the element size",
                             "srcOffset[" + std::to_string(i) + "] = " + std::to_string(at - srcBaseAddr) +
                                 " B (+ srcBaseAddr " + std::to_string(srcBaseAddr) + ") with " +
                                 std::to_string(sizeof(T)) + "-byte elements");
        }
        if (at + sizeof(T) > src_bytes) {
            opgen_twin::fail(api, "offset outside the src tensor",
                             "srcOffset[" + std::to_string(i) + "] = " + std::to_string(at - srcBaseAddr) +
                                 " B (+ srcBaseAddr " + std::to_string(srcBaseAddr) + ") reads past src " +
                                 k::tensor_desc(srcLocal.ref_) + " of " + std::to_string(src_bytes) + " B");
        }
        std::memcpy(d + i * sizeof(T), s + at, sizeof(T));
    }
    k::count_vector(api, n);
}

// ---- Mul, level 0 (mask continuous mode) ----
// Semantics ([DEVKIT] docs/zh/api/SIMD-API/基础API/Memory矢量计算/基础算术/Mul.md, SIMD计算说明/
// 高维切分.md; CANN 8.1 basic_api/interface/kernel_operator_vec_binary_intf.h,
// kernel_struct_binary.h): repeatTimes repeats; repeat r handles the first `mask` elements of
// an 8-block (256-byte) vector, element e living in block e / (32 / sizeof(T)) at lane
// e % (32 / sizeof(T)); operand X's block b of repeat r starts at
// X + (r * XRepStride + b * XBlkStride) * 32 bytes. dst = src0 * src1 element by element.
// A2 dtypes as the count form (half, float, int16_t, int32_t); repeatTimes = 0 is a no-op.
//
// The twin's rules:
//  M1 mask outside [1, 256 / sizeof(T)] (the continuous mask counts the elements of one repeat);
//  M2 the operands are live UB tensors with 32-byte-aligned starts and every element a repeat
//     touches lies inside its tensor (shared operand checks, over the strided extent);
//  M3 dst overlapping src0 or src1 unless it is the same tensor start with the same strides
//     (in place); partially overlapping strided operands race on the NPU.
// BinaryRepeatParams::repeatStrideMode / strideSizeMode / blockNumber are not modelled: they
// must keep their defaults.

struct BinaryRepeatParams {
    BinaryRepeatParams() {}
    BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                       const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
        : dstBlkStride(dstBlkStrideIn),
          src0BlkStride(src0BlkStrideIn),
          src1BlkStride(src1BlkStrideIn),
          dstRepStride(dstRepStrideIn),
          src0RepStride(src0RepStrideIn),
          src1RepStride(src1RepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint8_t dstBlkStride = 1;
    uint8_t src0BlkStride = 1;
    uint8_t src1BlkStride = 1;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src0RepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t src1RepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
};

}  // namespace AscendC

namespace opgen_twin {
namespace kern {

// Byte offset of element e of repeat r of a strided level-0 operand.
template <typename T>
inline uint64_t level0_offset(uint64_t r, uint64_t e, uint8_t blk, uint8_t rep) {
    constexpr uint64_t per_block = kBlock / sizeof(T);
    return (r * rep + (e / per_block) * blk) * kBlock + (e % per_block) * sizeof(T);
}

// Bytes from the operand's start to the end of the last element the call touches.
template <typename T>
inline uint64_t level0_extent(uint64_t repeats, uint64_t mask, uint8_t blk, uint8_t rep) {
    uint64_t end = 0;
    for (uint64_t e = 0; e < mask; ++e) {
        end = std::max<uint64_t>(end, level0_offset<T>(repeats - 1, e, blk, rep) + sizeof(T));
    }
    return end;
}

// Tracks the bytes a level-0 operand really touches, block by block (the extent also spans the
// gaps between blocks and repeats, which other instructions may own).
template <typename T>
inline void level0_track(const TensorRef& t, uint64_t repeats, uint64_t mask, uint8_t blk, uint8_t rep, bool write) {
    constexpr uint64_t per_block = kBlock / sizeof(T);
    for (uint64_t r = 0; r < repeats; ++r) {
        uint64_t run_start = 0, run_end = 0;
        for (uint64_t e = 0; e < mask; e += per_block) {
            const uint64_t a = level0_offset<T>(r, e, blk, rep);
            const uint64_t b = a + std::min<uint64_t>(per_block, mask - e) * sizeof(T);
            if (run_end == run_start || a != run_end) {
                if (run_end > run_start) track_ub(t.off + run_start, run_end - run_start, write);
                run_start = a;
            }
            run_end = b;
        }
        if (run_end > run_start) track_ub(t.off + run_start, run_end - run_start, write);
    }
}

template <typename T>
inline void level0_overlap(const char* api, const char* role, const AscendC::LocalTensor<T>& dst, uint64_t dst_bytes,
                           uint8_t dst_blk, uint8_t dst_rep, const AscendC::LocalTensor<T>& src, uint64_t src_bytes,
                           uint8_t src_blk, uint8_t src_rep) {
    const uint64_t d0 = dst.ref_.off, d1 = d0 + dst_bytes, s0 = src.ref_.off, s1 = s0 + src_bytes;
    if (d1 <= s0 || s1 <= d0) return;
    if (d0 == s0 && dst_blk == src_blk && dst_rep == src_rep) return;
    fail(api, "partial overlap of dst and src",
         std::string("dst UB [") + std::to_string(d0) + ", " + std::to_string(d1) + ") and " + role + " UB [" +
             std::to_string(s0) + ", " + std::to_string(s1) +
             ") overlap without being the same start and strides (in place)");
}

// The level-0 binary form (mask continuous mode) for an elementwise `f`: the checks, tracking
// and arithmetic of Mul, Add and Max (ext_quant.h); `mask` is the lanes level0_lanes gave.
template <typename T, typename F>
inline void level0_binary(const char* api, uint32_t allowed, const AscendC::LocalTensor<T>& dstLocal,
                          const AscendC::LocalTensor<T>& src0Local, const AscendC::LocalTensor<T>& src1Local,
                          uint64_t mask, uint8_t repeatTimes, const AscendC::BinaryRepeatParams& p, F f) {
    require_dtype<T>(api, "T", allowed);
    if (p.blockNumber != AscendC::DEFAULT_BLK_NUM || p.repeatStrideMode || p.strideSizeMode) {
        fail(api, "BinaryRepeatParams mode not modelled",
             "blockNumber, repeatStrideMode and strideSizeMode must keep their defaults");
    }
    if (repeatTimes == 0) return;
    const uint64_t rt = repeatTimes;
    const uint64_t dst_bytes = level0_extent<T>(rt, mask, p.dstBlkStride, p.dstRepStride);
    const uint64_t a_bytes = level0_extent<T>(rt, mask, p.src0BlkStride, p.src0RepStride);
    const uint64_t b_bytes = level0_extent<T>(rt, mask, p.src1BlkStride, p.src1RepStride);
    uint8_t* d = ub_operand(api, "dst", dstLocal.ref_, dst_bytes, true, Extent::Exact, false);
    const uint8_t* a = ub_operand(api, "src0", src0Local.ref_, a_bytes, true, Extent::Exact, false);
    const uint8_t* b = ub_operand(api, "src1", src1Local.ref_, b_bytes, true, Extent::Exact, false);
    level0_track<T>(src0Local.ref_, rt, mask, p.src0BlkStride, p.src0RepStride, false);
    level0_track<T>(src1Local.ref_, rt, mask, p.src1BlkStride, p.src1RepStride, false);
    level0_track<T>(dstLocal.ref_, rt, mask, p.dstBlkStride, p.dstRepStride, true);
    level0_overlap(api, "src0", dstLocal, dst_bytes, p.dstBlkStride, p.dstRepStride, src0Local, a_bytes,
                   p.src0BlkStride, p.src0RepStride);
    level0_overlap(api, "src1", dstLocal, dst_bytes, p.dstBlkStride, p.dstRepStride, src1Local, b_bytes,
                   p.src1BlkStride, p.src1RepStride);
    for (uint64_t r = 0; r < rt; ++r) {
        for (uint64_t e = 0; e < mask; ++e) {
            const T x = load<T>(a + level0_offset<T>(r, e, p.src0BlkStride, p.src0RepStride));
            const T y = load<T>(b + level0_offset<T>(r, e, p.src1BlkStride, p.src1RepStride));
            store<T>(d + level0_offset<T>(r, e, p.dstBlkStride, p.dstRepStride), apply2<T>(x, y, f));
        }
    }
    count_level0_repeats<T>(api, rt);
}

}  // namespace kern
}  // namespace opgen_twin

namespace AscendC {

template <typename T, bool isSetMask = true>
void Mul(const LocalTensor<T>& dstLocal, const LocalTensor<T>& src0Local, const LocalTensor<T>& src1Local,
         uint64_t mask, const opgen_twin::kern::Repeat8 repeatTimes, const BinaryRepeatParams& repeatParams,
         opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Mul", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    k::level0_binary("Mul", k::kArith, dstLocal, src0Local, src1Local, k::level0_lanes<T, isSetMask>("Mul", mask),
                     k::narrow_repeat("Mul", repeatTimes),
                     repeatParams,
                     [](auto u, auto v) { return u * v; });
}

// ---- Muls, level 0 (mask continuous mode) ----
// Semantics ([DEVKIT] docs/zh/api/SIMD-API/基础API/Memory矢量计算/基础算术/Muls.md, SIMD计算说明/
// 高维切分.md; asc-devkit include/basic_api/kernel_struct_unary.h for UnaryRepeatParams): as the
// level-0 Mul above with one tensor operand, dst = src * scalar; element e of repeat r of
// operand X at X + (r * XRepStride + (e / per_block) * XBlkStride) * 32 + (e % per_block) *
// sizeof(T). A2 dtypes as the count form; repeatTimes = 0 is a no-op.
// The twin's rules: U1 mask outside [1, 256 / sizeof(T)]; U2 operands live UB tensors with
// 32-byte-aligned starts and every touched element inside its tensor; U3 dst overlapping src
// unless in place (same start, same strides); U4 blockNumber, the stride modes and halfBlock
// changed from their defaults, or a block stride past 255 (not modelled: refused, not guessed).

struct UnaryRepeatParams {
    UnaryRepeatParams() {}
    UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                      const uint8_t srcRepStrideIn)
        : dstBlkStride(dstBlkStrideIn),
          srcBlkStride(srcBlkStrideIn),
          dstRepStride(dstRepStrideIn),
          srcRepStride(srcRepStrideIn) {}
    uint32_t blockNumber = DEFAULT_BLK_NUM;
    uint16_t dstBlkStride = 1;
    uint16_t srcBlkStride = 1;
    uint8_t dstRepStride = DEFAULT_REPEAT_STRIDE;
    uint8_t srcRepStride = DEFAULT_REPEAT_STRIDE;
    bool repeatStrideMode = false;
    bool strideSizeMode = false;
    bool halfBlock = false;
};

template <typename T, bool isSetMask = true>
void Muls(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const T& scalarValue, uint64_t maskArg,
          const opgen_twin::kern::Repeat8 repeatTimes, const UnaryRepeatParams& repeatParams,
          opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("Muls", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "Muls";
    k::require_dtype<T>(api, "T", k::kArith);
    const uint64_t mask = k::level0_lanes<T, isSetMask>(api, maskArg);
    const UnaryRepeatParams& p = repeatParams;
    if (p.blockNumber != DEFAULT_BLK_NUM || p.repeatStrideMode || p.strideSizeMode || p.halfBlock ||
        p.dstBlkStride > 255 || p.srcBlkStride > 255) {
        opgen_twin::fail(api, "UnaryRepeatParams mode not modelled",
                         "blockNumber, repeatStrideMode, strideSizeMode and halfBlock must keep their defaults "
                         "and the block strides stay below 256");
    }
    const uint64_t rt = k::narrow_repeat(api, repeatTimes);
    if (rt == 0) return;
    const uint8_t db = static_cast<uint8_t>(p.dstBlkStride), sb = static_cast<uint8_t>(p.srcBlkStride);
    const uint64_t dst_bytes = k::level0_extent<T>(rt, mask, db, p.dstRepStride);
    const uint64_t src_bytes = k::level0_extent<T>(rt, mask, sb, p.srcRepStride);
    uint8_t* d = k::ub_operand(api, "dst", dstLocal.ref_, dst_bytes, true, k::Extent::Exact, false);
    const uint8_t* a = k::ub_operand(api, "src", srcLocal.ref_, src_bytes, true, k::Extent::Exact, false);
    k::level0_track<T>(srcLocal.ref_, rt, mask, sb, p.srcRepStride, false);
    k::level0_track<T>(dstLocal.ref_, rt, mask, db, p.dstRepStride, true);
    k::level0_overlap(api, "src", dstLocal, dst_bytes, db, p.dstRepStride, srcLocal, src_bytes, sb, p.srcRepStride);
    for (uint64_t r = 0; r < rt; ++r) {
        for (uint64_t e = 0; e < mask; ++e) {
            const T x = k::load<T>(a + k::level0_offset<T>(r, e, sb, p.srcRepStride));
            k::store<T>(d + k::level0_offset<T>(r, e, db, p.dstRepStride),
                        k::apply2<T>(x, scalarValue, [](auto u, auto v) { return u * v; }));
        }
    }
    k::count_level0_repeats<T>(api, rt);
}

}  // namespace AscendC

#endif
