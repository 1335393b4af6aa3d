// DataCopy and DataCopyPad between GM and UB (and UB to UB), with the real units: DataCopy counts
// in elements or 32-byte blocks, DataCopyPad's GM side in bytes and its UB side in 32-byte blocks.
// Every GM->UB row of DataCopyPad lands in its own 32-byte-aligned UB slot, padded to 32 bytes.
#ifndef OPGEN_TWIN_KERNEL_COPY_H
#define OPGEN_TWIN_KERNEL_COPY_H

#include <cstdint>
#include <cstring>
#include <string>

#include "opgen_twin/kernel/state.h"
#include "opgen_twin/kernel/tensor.h"
#include "opgen_twin/trace.h"

namespace AscendC {

struct DataCopyParams {
    DataCopyParams() {}
    DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
    uint16_t blockCount = DEFAULT_DATA_COPY_NBURST;
    uint16_t blockLen = 0;
    uint16_t srcStride = DEFAULT_DATA_COPY_STRIDE;
    uint16_t dstStride = DEFAULT_DATA_COPY_STRIDE;
};

struct DataCopyExtParams {
    DataCopyExtParams() {}
    DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                      const uint32_t rsvIn)
        : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
    uint16_t blockCount = DEFAULT_DATA_COPY_NBURST;
    uint32_t blockLen = 0;
    uint32_t srcStride = DEFAULT_DATA_COPY_STRIDE;
    uint32_t dstStride = DEFAULT_DATA_COPY_STRIDE;
    uint32_t rsv = 0;
};

struct DataCopyPadParams {
    DataCopyPadParams() {}
    DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue,
                      const uint64_t padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
};

template <typename T>
struct DataCopyPadExtParams {
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
        : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
};

}  // namespace AscendC

namespace opgen_twin {
namespace kern {

constexpr uint64_t kBlock = 32;
constexpr uint32_t kMaxBlockCount = 4095;
constexpr uint32_t kMaxPadBlockLen = 2097151;  // DataCopyExtParams::blockLen, bytes

inline uint64_t round_up32(uint64_t n) { return (n + kBlock - 1) / kBlock * kBlock; }

// One DMA transfer described in bytes: `rows` rows of `row_bytes`; rows are `gm_gap` bytes apart
// on the GM side (end to start) and `ub_gap` bytes apart on the UB side. With `slots`, each UB row
// takes whole 32-byte blocks (left padding + data + right padding, rounded up).
struct Dma {
    const char* api;
    uint32_t elem;
    uint64_t rows;
    uint64_t row_bytes;
    uint64_t gm_gap;
    uint64_t ub_gap;
    bool slots;
    uint64_t left_bytes;
    uint64_t right_bytes;
};

inline uint64_t ub_row_bytes(const Dma& d) {
    return d.slots ? round_up32(d.left_bytes + d.row_bytes + d.right_bytes) : d.row_bytes;
}
inline uint64_t gm_span_bytes(const Dma& d) { return (d.rows - 1) * (d.row_bytes + d.gm_gap) + d.row_bytes; }
inline uint64_t ub_span_bytes(const Dma& d) { return (d.rows - 1) * (ub_row_bytes(d) + d.ub_gap) + ub_row_bytes(d); }

inline void check_block_count(const char* api, uint64_t rows) {
    if (rows > kMaxBlockCount) {
        fail(api, "blockCount out of range", "blockCount " + std::to_string(rows) + " > " + std::to_string(kMaxBlockCount));
    }
}

inline void check_pad_block_len(const char* api, uint64_t len, uint32_t elem) {
    if (len > kMaxPadBlockLen) {
        fail(api, "blockLen out of range", "blockLen " + std::to_string(len) + " B > " + std::to_string(kMaxPadBlockLen));
    }
    if (len % elem != 0) {
        fail(api, "blockLen not a multiple of sizeof(T)",
             "blockLen " + std::to_string(len) + " B with " + std::to_string(elem) + "-byte elements");
    }
}

inline void check_padding(const char* api, uint64_t left, uint64_t right, uint32_t elem) {
    if (left * elem > kBlock || right * elem > kBlock) {
        fail(api, "padding out of range",
             "leftPadding " + std::to_string(left) + " / rightPadding " + std::to_string(right) +
                 " elements exceed one 32-byte block");
    }
}

// `pad` is the padding element, or nullptr to repeat each row's first element (isPad = false).
inline void dma_in(const Dma& d, const GmView& view, const uint8_t* gm, const TensorRef& dst, const uint8_t* pad) {
    if (d.rows == 0 || d.row_bytes == 0) return;
    uint8_t* ub =
        ub_operand(d.api, "dst", dst, ub_span_bytes(d), true, d.slots ? Extent::BlockPadded : Extent::Exact, false);
    const char* name = gm_operand(d.api, "src", view, gm, gm_span_bytes(d), "GM access beyond the GlobalTensor size");
    const uint64_t slot = ub_row_bytes(d);
    for (uint64_t r = 0; r < d.rows; ++r) {
        const uint8_t* from = gm + r * (d.row_bytes + d.gm_gap);
        uint8_t* row = ub + r * (slot + d.ub_gap);
        // MTE2 reads the GM row and writes the whole UB slot (padding included); gaps are untouched.
        track_gm(from, d.row_bytes, false);
        track_ub(dst.off + r * (slot + d.ub_gap), slot, true);
        std::memcpy(row + d.left_bytes, from, d.row_bytes);
        // isPad = false: the dummy lanes repeat the row's first element, but only without left/
        // right padding; with padding "the padding and dummy values are all random" (DataCopyPad
        // docs, 参数解释), so the twin fills them with seeded garbage (runtime.h set_pad_seed:
        // finite values and NaN) and a kernel that reads them shows.
        if (pad == nullptr && (d.left_bytes != 0 || d.right_bytes != 0)) {
            pad_garbage(row, d.left_bytes, d.elem);
            pad_garbage(row + d.left_bytes + d.row_bytes, slot - d.left_bytes - d.row_bytes, d.elem);
            continue;
        }
        const uint8_t* filler = pad != nullptr ? pad : from;
        for (uint64_t b = 0; b < d.left_bytes; b += d.elem) std::memcpy(row + b, filler, d.elem);
        for (uint64_t b = d.left_bytes + d.row_bytes; b < slot; b += d.elem) std::memcpy(row + b, filler, d.elem);
    }
    count_copy_in(name, d.rows * d.row_bytes, dst);
    trace::dma_shape(d.rows, d.row_bytes, gm);
}

// `t` is the element type, for copy-outs under SetAtomicAdd (copy_out_row).
inline void dma_out(const Dma& d, const GmView& view, uint8_t* gm, const TensorRef& src, DType t) {
    if (d.rows == 0 || d.row_bytes == 0) return;
    const uint8_t* ub =
        ub_operand(d.api, "src", src, ub_span_bytes(d), true, d.slots ? Extent::BlockPadded : Extent::Exact, false);
    const char* name = gm_operand(d.api, "dst", view, gm, gm_span_bytes(d), "GM access beyond the GlobalTensor size");
    const uint64_t slot = ub_row_bytes(d);
    for (uint64_t r = 0; r < d.rows; ++r) {
        // MTE3 reads the row's data bytes of UB (not the slot padding) and writes the GM row.
        track_ub(src.off + r * (slot + d.ub_gap), d.row_bytes, false);
        track_gm(gm + r * (d.row_bytes + d.gm_gap), d.row_bytes, true);
        copy_out_row(d.api, gm + r * (d.row_bytes + d.gm_gap), ub + r * (slot + d.ub_gap), d.row_bytes, t);
    }
    count_copy_out(name, d.rows * d.row_bytes);
    trace::dma_shape(d.rows, d.row_bytes, gm);
}

// UB to UB copies run on the vector pipe, so they count as vector instructions.
inline void dma_local(const Dma& d, const TensorRef& dst, const TensorRef& src, uint64_t src_gap) {
    if (d.rows == 0 || d.row_bytes == 0) return;
    const uint64_t dst_span = (d.rows - 1) * (d.row_bytes + d.ub_gap) + d.row_bytes;
    const uint64_t src_span = (d.rows - 1) * (d.row_bytes + src_gap) + d.row_bytes;
    uint8_t* to = ub_operand(d.api, "dst", dst, dst_span, true, Extent::Exact, false);
    const uint8_t* from = ub_operand(d.api, "src", src, src_span, true, Extent::Exact, false);
    check_overlap(d.api, "dst", dst, dst_span, "src", src, src_span, true);
    for (uint64_t r = 0; r < d.rows; ++r) {
        track_ub(src.off + r * (d.row_bytes + src_gap), d.row_bytes, false);
        track_ub(dst.off + r * (d.row_bytes + d.ub_gap), d.row_bytes, true);
    }
    for (uint64_t r = 0; r < d.rows; ++r) {
        std::memmove(to + r * (d.row_bytes + d.ub_gap), from + r * (d.row_bytes + src_gap), d.row_bytes);
    }
    count_vector(d.api, d.rows * d.row_bytes / d.elem);
}

inline void check_count_bytes(const char* api, uint64_t count, uint32_t elem) {
    if ((count * elem) % kBlock != 0) {
        fail(api, "DataCopy size not a multiple of 32 bytes",
             std::to_string(count) + " elements x " + std::to_string(elem) + " B = " + std::to_string(count * elem) +
                 " B (the NPU rounds down and drops the tail); DataCopyPad moves unaligned lengths");
    }
}

inline Dma blocks_dma(const char* api, uint32_t elem, const AscendC::DataCopyParams& p, bool gm_to_ub) {
    check_block_count(api, p.blockCount);
    const uint64_t gm_stride = gm_to_ub ? p.srcStride : p.dstStride;
    const uint64_t ub_stride = gm_to_ub ? p.dstStride : p.srcStride;
    return Dma{api, elem, p.blockCount, p.blockLen * kBlock, gm_stride * kBlock, ub_stride * kBlock, false, 0, 0};
}

}  // namespace kern
}  // namespace opgen_twin

namespace AscendC {

// ---- DataCopy: contiguous, count in elements; count * sizeof(T) must be a multiple of 32 B ----
template <typename T>
void DataCopy(const LocalTensor<T>& dstLocal, const GlobalTensor<T>& srcGlobal, const uint32_t calCount,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopy", opgen_twin::kern::Pipe::MTE2, here);
    namespace k = opgen_twin::kern;
    k::check_count_bytes("DataCopy", calCount, sizeof(T));
    const k::Dma d{"DataCopy", sizeof(T), 1, uint64_t(calCount) * sizeof(T), 0, 0, false, 0, 0};
    k::dma_in(d, srcGlobal.gm_view(), reinterpret_cast<const uint8_t*>(srcGlobal.GetPhyAddr()), dstLocal.ref_, nullptr);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dstGlobal, const LocalTensor<T>& srcLocal, const uint32_t calCount,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopy", opgen_twin::kern::Pipe::MTE3, here);
    namespace k = opgen_twin::kern;
    k::check_count_bytes("DataCopy", calCount, sizeof(T));
    const k::Dma d{"DataCopy", sizeof(T), 1, uint64_t(calCount) * sizeof(T), 0, 0, false, 0, 0};
    k::dma_out(d, dstGlobal.gm_view(), reinterpret_cast<uint8_t*>(dstGlobal.GetPhyAddr(0)), srcLocal.ref_,
                  opgen_twin::dtype_of<T>());
}

template <typename T>
void DataCopy(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t calCount,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopy", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    k::check_count_bytes("DataCopy", calCount, sizeof(T));
    const k::Dma d{"DataCopy", sizeof(T), 1, uint64_t(calCount) * sizeof(T), 0, 0, false, 0, 0};
    k::dma_local(d, dstLocal.ref_, srcLocal.ref_, 0);
}

// ---- DataCopy: strided, blockLen and both strides in 32-byte blocks ----
template <typename T>
void DataCopy(const LocalTensor<T>& dstLocal, const GlobalTensor<T>& srcGlobal, const DataCopyParams& repeatParams,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopy", opgen_twin::kern::Pipe::MTE2, here);
    namespace k = opgen_twin::kern;
    const k::Dma d = k::blocks_dma("DataCopy", sizeof(T), repeatParams, true);
    k::dma_in(d, srcGlobal.gm_view(), reinterpret_cast<const uint8_t*>(srcGlobal.GetPhyAddr()), dstLocal.ref_, nullptr);
}

template <typename T>
void DataCopy(const GlobalTensor<T>& dstGlobal, const LocalTensor<T>& srcLocal, const DataCopyParams& repeatParams,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopy", opgen_twin::kern::Pipe::MTE3, here);
    namespace k = opgen_twin::kern;
    const k::Dma d = k::blocks_dma("DataCopy", sizeof(T), repeatParams, false);
    k::dma_out(d, dstGlobal.gm_view(), reinterpret_cast<uint8_t*>(dstGlobal.GetPhyAddr(0)), srcLocal.ref_,
                  opgen_twin::dtype_of<T>());
}

template <typename T>
void DataCopy(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const DataCopyParams& repeatParams,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopy", opgen_twin::kern::Pipe::V, here);
    namespace k = opgen_twin::kern;
    k::Dma d = k::blocks_dma("DataCopy", sizeof(T), repeatParams, false);
    d.ub_gap = uint64_t(repeatParams.dstStride) * k::kBlock;
    k::dma_local(d, dstLocal.ref_, srcLocal.ref_, uint64_t(repeatParams.srcStride) * k::kBlock);
}

// ---- DataCopyPad: blockLen in bytes; GM-side stride in bytes, UB-side stride in 32-byte blocks ----
template <typename T>
void DataCopyPad(const LocalTensor<T>& dstLocal, const GlobalTensor<T>& srcGlobal,
                 const DataCopyExtParams& dataCopyParams, const DataCopyPadExtParams<T>& padParams,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopyPad", opgen_twin::kern::Pipe::MTE2, here);
    namespace k = opgen_twin::kern;
    const char* api = "DataCopyPad";
    k::check_block_count(api, dataCopyParams.blockCount);
    k::check_pad_block_len(api, dataCopyParams.blockLen, sizeof(T));
    k::check_padding(api, padParams.leftPadding, padParams.rightPadding, sizeof(T));
    const k::Dma d{api,
                   sizeof(T),
                   dataCopyParams.blockCount,
                   dataCopyParams.blockLen,
                   dataCopyParams.srcStride,
                   uint64_t(dataCopyParams.dstStride) * k::kBlock,
                   true,
                   uint64_t(padParams.leftPadding) * sizeof(T),
                   uint64_t(padParams.rightPadding) * sizeof(T)};
    const T pad = padParams.paddingValue;
    k::dma_in(d, srcGlobal.gm_view(), reinterpret_cast<const uint8_t*>(srcGlobal.GetPhyAddr()), dstLocal.ref_,
              padParams.isPad ? reinterpret_cast<const uint8_t*>(&pad) : nullptr);
}

template <typename T>
void DataCopyPad(const GlobalTensor<T>& dstGlobal, const LocalTensor<T>& srcLocal,
                 const DataCopyExtParams& dataCopyParams,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopyPad", opgen_twin::kern::Pipe::MTE3, here);
    namespace k = opgen_twin::kern;
    const char* api = "DataCopyPad";
    k::check_block_count(api, dataCopyParams.blockCount);
    k::check_pad_block_len(api, dataCopyParams.blockLen, sizeof(T));
    const k::Dma d{api,
                   sizeof(T),
                   dataCopyParams.blockCount,
                   dataCopyParams.blockLen,
                   dataCopyParams.dstStride,
                   uint64_t(dataCopyParams.srcStride) * k::kBlock,
                   true,
                   0,
                   0};
    k::dma_out(d, dstGlobal.gm_view(), reinterpret_cast<uint8_t*>(dstGlobal.GetPhyAddr(0)), srcLocal.ref_,
                  opgen_twin::dtype_of<T>());
}

// Legacy forms: DataCopyParams with blockLen in bytes. The 64-bit paddingValue is taken as the
// element's bit pattern in its low bytes (assumption: the documentation does not say).
template <typename T>
void DataCopyPad(const LocalTensor<T>& dstLocal, const GlobalTensor<T>& srcGlobal,
                 const DataCopyParams& dataCopyParams, const DataCopyPadParams& padParams,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopyPad", opgen_twin::kern::Pipe::MTE2, here);
    T pad;
    std::memcpy(static_cast<void*>(&pad), &padParams.paddingValue, sizeof(T));
    const DataCopyExtParams ext(dataCopyParams.blockCount, dataCopyParams.blockLen, dataCopyParams.srcStride,
                                dataCopyParams.dstStride, 0);
    DataCopyPad(dstLocal, srcGlobal, ext,
                DataCopyPadExtParams<T>(padParams.isPad, padParams.leftPadding, padParams.rightPadding, pad));
}

template <typename T>
void DataCopyPad(const GlobalTensor<T>& dstGlobal, const LocalTensor<T>& srcLocal,
                 const DataCopyParams& dataCopyParams,
              opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call call("DataCopyPad", opgen_twin::kern::Pipe::MTE3, here);
    const DataCopyExtParams ext(dataCopyParams.blockCount, dataCopyParams.blockLen, dataCopyParams.srcStride,
                                dataCopyParams.dstStride, 0);
    DataCopyPad(dstGlobal, srcLocal, ext);
}

}  // namespace AscendC

#endif
