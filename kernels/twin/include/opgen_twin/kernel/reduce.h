// Reductions. The summation order is part of the numeric contract (research/ascendc-api.md 4.2):
// inside each 256-byte repeat the lanes are summed by a pairwise binary tree, and the repeat
// results are then accumulated sequentially, in order. The tree pairs adjacent lanes (2i, 2i+1)
// and carries an odd last lane up unchanged (assumption: the pairing is not documented). Each
// addition rounds to the element type (half additions round to half).
#ifndef OPGEN_TWIN_KERNEL_REDUCE_H
#define OPGEN_TWIN_KERNEL_REDUCE_H

#include <cstdint>
#include <string>

#include "opgen_twin/kernel/vector_common.h"

namespace opgen_twin {
namespace kern {

template <typename T>
inline T add(T a, T b) {
    return apply2<T>(a, b, [](auto x, auto y) { return x + y; });
}

// Sums `n` (<= one repeat) values in place with the pairwise tree.
template <typename T>
inline T tree_sum(T* lanes, uint64_t n) {
    while (n > 1) {
        const uint64_t pairs = n / 2;
        for (uint64_t i = 0; i < pairs; ++i) lanes[i] = add(lanes[2 * i], lanes[2 * i + 1]);
        if (n % 2 != 0) lanes[pairs] = lanes[n - 1];
        n = pairs + n % 2;
    }
    return lanes[0];
}

template <typename T>
constexpr uint64_t lanes_per_repeat() {
    return 256 / sizeof(T);
}

// The work tensor must be a live, aligned UB tensor even where A2 does not read it.
template <typename T>
inline void check_work(const char* api, const AscendC::LocalTensor<T>& work) {
    ub_operand(api, "sharedTmpBuffer", work.ref_, 0);
}

// dav_c220 ReduceSum (count form) and ReduceMax/ReduceMin finish alike: the vector part, then
// SetFlag/WaitFlag<V_S>, a scalar store of the result into dst, then S_V and S_MTE3 set/wait
// pairs (CANN 8.1 impl/dav_c220/kernel_operator_vec_reduce_impl.h: ReduceSumImpl l.152-178,
// ReduceImplThirdStep l.560-640). So the result is written by S, and the kernel's own V_S before
// a GetValue of it is redundant, while the next vector op and copy-out are already ordered.
inline void scalar_result(const TensorRef& dst, uint64_t bytes) {
    hidden_sync(uint8_t(AscendC::HardEvent::V_S));
    call_on(Pipe::S);
    track_ub(dst.off, bytes, true);
    hidden_sync(uint8_t(AscendC::HardEvent::S_V));
    hidden_sync(uint8_t(AscendC::HardEvent::S_MTE3));
}

// The elements of ReduceMax/ReduceMin's work tensor the dav_c220 implementation writes for a
// count-form call (CANN 8.1 impl/dav_c220/kernel_operator_vec_reduce_impl.h: ReduceImplNoIndex,
// ReduceImplWithIndex, ReduceImplThirdStep, ReduceTailCompute; the ReduceMax doc's "workLocal"
// size formula gives the same for the no-index case, except that it says 0 for count < one
// repeat, where the implementation still writes one value/index pair into work). Every round's
// output is a (value, index) pair per repeat; with indices each round starts on a new 32-byte block.
inline uint64_t extreme_work_elems(uint64_t count, uint32_t elem, bool cal_index) {
    const uint64_t per_rep = 256 / elem;
    const uint64_t per_blk = 32 / elem;
    auto blocks = [&](uint64_t n) { return (n + per_blk - 1) / per_blk * per_blk; };
    auto pairs = [&](uint64_t n) { return 2 * ((n + per_rep - 1) / per_rep); };
    const uint64_t repeats = count / per_rep == 0 ? 1 : count / per_rep;
    if (!cal_index || repeats == 1) return blocks(2 * repeats);
    const uint64_t c1 = 2 * repeats;
    const uint64_t s2 = blocks(c1);
    const uint64_t c2 = pairs(c1);
    const uint64_t s3 = blocks(s2 + c2);
    if (c2 == 2) return blocks(s2 + c2);
    if (c2 > per_rep) return blocks(blocks(s3 + pairs(c2)) + 2);
    return blocks(s3 + 2);
}

template <typename T>
inline bool better(T candidate, T best, bool want_max) {
    const long double c = exact_value(candidate);
    const long double b = exact_value(best);
    if (b != b) return false;  // the first NaN wins and stays (assumption, as for Max)
    if (c != c) return true;
    return want_max ? c > b : c < b;  // strict: ties keep the smallest index
}

template <typename T>
inline void reduce_extreme(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                           const AscendC::LocalTensor<T>& work, int32_t count, bool cal_index, bool want_max) {
    require_dtype<T>(api, "T", kFloats);
    check_count(api, count);
    const uint64_t n = uint64_t(count);
    const uint8_t* s = operand(api, "src", src, n);
    // dav_c220 writes dst only with the scalar unit (scalar_result); the vector steps use work.
    uint8_t* d = ub_operand(api, "dst", dst.ref_, (cal_index ? 2 : 1) * sizeof(T), true, Extent::Exact, false);
    check_work(api, work);
    if (n == 0) return;
    // The hardware writes its intermediate rounds into work: a smaller tensor lets them run into
    // whatever follows it in UB.
    const uint64_t need = extreme_work_elems(n, sizeof(T), cal_index);
    if (work.ref_.bytes < need * sizeof(T)) {
        fail(api, "sharedTmpBuffer too small",
             "the work tensor holds " + std::to_string(work.ref_.bytes / sizeof(T)) + " elements; count " +
                 std::to_string(n) + (cal_index ? " with" : " without") + " index needs " + std::to_string(need));
    }
    ub_operand(api, "dst(sharedTmpBuffer)", work.ref_, need * sizeof(T));
    T best = load<T>(s);
    uint64_t best_index = 0;
    for (uint64_t i = 1; i < n; ++i) {
        const T v = load<T>(s + i * sizeof(T));
        if (better(v, best, want_max)) {
            best = v;
            best_index = i;
        }
    }
    store<T>(d, best);
    // The index is stored in the bit pattern of T: 16 bits for half, 32 for float.
    if (cal_index) {
        if (sizeof(T) == 2) {
            if (best_index > 0xFFFF) {
                fail(api, "index does not fit in T", "index " + std::to_string(best_index) + " of a half reduction");
            }
            store<uint16_t>(d + sizeof(T), uint16_t(best_index));
        } else {
            store<uint32_t>(d + sizeof(T), uint32_t(best_index));
        }
    }
    count_vector(api, n);
    scalar_result(dst.ref_, (cal_index ? 2 : 1) * sizeof(T));
}

}  // namespace kern
}  // namespace opgen_twin

namespace AscendC {

// The total lands in dst[0]; dst may alias src or the (unread on A2) work tensor.
template <typename T, bool isSetMask = true>
void ReduceSum(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& workLocal,
               const int32_t count,
               opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("ReduceSum", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "ReduceSum";
    k::require_dtype<T>(api, "T", k::kFloats);
    k::check_count(api, count);
    const uint64_t n = uint64_t(count);
    const uint8_t* s = k::operand(api, "src", srcLocal, n);
    uint8_t* d = k::operand(api, "dst", dstLocal, 1);
    k::check_work(api, workLocal);
    if (n == 0) return;
    constexpr uint64_t per = k::lanes_per_repeat<T>();
    T lanes[per];
    T total = T(0);
    for (uint64_t first = 0; first < n; first += per) {
        const uint64_t m = n - first < per ? n - first : per;
        for (uint64_t i = 0; i < m; ++i) lanes[i] = k::load<T>(s + (first + i) * sizeof(T));
        const T part = k::tree_sum(lanes, m);
        total = first == 0 ? part : k::add(total, part);
    }
    k::store<T>(d, total);
    k::count_vector(api, n);
    k::scalar_result(dstLocal.ref_, sizeof(T));
}

template <typename T>
void ReduceMax(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& workLocal,
               const int32_t count, bool calIndex = 0,
               opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("ReduceMax", opgen_twin::kern::Pipe::V, here);
    opgen_twin::kern::reduce_extreme("ReduceMax", dstLocal, srcLocal, workLocal, count, calIndex, true);
}

template <typename T>
void ReduceMin(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& workLocal,
               const int32_t count, bool calIndex = 0,
               opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("ReduceMin", opgen_twin::kern::Pipe::V, here);
    opgen_twin::kern::reduce_extreme("ReduceMin", dstLocal, srcLocal, workLocal, count, calIndex, false);
}

// One sum per repeat over the first `mask` lanes; src strides in 32-byte blocks, dstRepStride in
// elements; src 32-byte aligned, dst element-aligned. Repeats run in order, so a dst that overlaps src only overwrites consumed lanes.
template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const int32_t maskArg,
                    const int32_t repeatTimes, const int32_t dstRepStride, const int32_t srcBlkStride,
                    const int32_t srcRepStride,
                    opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("WholeReduceSum", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    const char* api = "WholeReduceSum";
    k::require_dtype<T>(api, "T", k::kFloats);
    constexpr int64_t per = int64_t(k::lanes_per_repeat<T>());
    constexpr int64_t per_block = 32 / int64_t(sizeof(T));
    if (maskArg < 0) {
        opgen_twin::fail(api, "mask out of range", "mask " + std::to_string(maskArg) + " is negative");
    }
    const int32_t mask = int32_t(k::level0_lanes<T, isSetMask>(api, uint64_t(maskArg)));
    if (repeatTimes < 0 || repeatTimes > MAX_REPEAT_TIMES) {
        opgen_twin::fail(api, "repeatTimes out of range", "repeatTimes " + std::to_string(repeatTimes) + " not in [0, 255]");
    }
    if (dstRepStride < 0 || srcBlkStride < 0 || srcRepStride < 0) {
        opgen_twin::fail(api, "negative stride", "strides must be >= 0");
    }
    if (repeatTimes == 0) return;
    const uint64_t last = uint64_t(mask - 1);
    const uint64_t src_bytes = uint64_t(repeatTimes - 1) * uint64_t(srcRepStride) * 32 +
                               last / per_block * uint64_t(srcBlkStride) * 32 + (last % per_block + 1) * sizeof(T);
    const uint64_t dst_bytes = (uint64_t(repeatTimes - 1) * uint64_t(dstRepStride) + 1) * sizeof(T);
    // dst needs element alignment only (2 bytes for half, 4 for float: the WholeReduceSum API
    // reference, dstLocal), so per-row sums may start anywhere in a row; src needs 32 bytes.
    if (dstLocal.ref_.off % sizeof(T) != 0) {
        opgen_twin::fail(api, "dst start not element-aligned for WholeReduceSum",
                         "dst " + k::tensor_desc(dstLocal.ref_) + " at " + k::call_site() + " starts at UB " +
                             std::to_string(dstLocal.ref_.off) + "; it must be " + std::to_string(sizeof(T)) +
                             "-byte aligned");
    }
    const uint8_t* s = k::ub_operand(api, "src", srcLocal.ref_, src_bytes);
    uint8_t* d = k::ub_operand(api, "dst", dstLocal.ref_, dst_bytes, false);
    T lanes[per];
    for (int32_t r = 0; r < repeatTimes; ++r) {
        const uint8_t* rep = s + uint64_t(r) * uint64_t(srcRepStride) * 32;
        for (int64_t j = 0; j < mask; ++j) {
            lanes[j] = k::load<T>(rep + uint64_t(j / per_block) * uint64_t(srcBlkStride) * 32 +
                                  uint64_t(j % per_block) * sizeof(T));
        }
        k::store<T>(d + uint64_t(r) * uint64_t(dstRepStride) * sizeof(T), k::tree_sum(lanes, uint64_t(mask)));
    }
    k::count_level0_repeats<T>(api, uint64_t(repeatTimes));
}

}  // namespace AscendC

#endif
