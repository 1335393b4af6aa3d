// TPipe, TQue and TBuf. The objects only hold a handle: the buffers, their protocol state and the
// queue FIFOs live in the per-core state (runtime.cpp), so end_core() can still audit every
// queue after the kernel's objects are gone, and a handle from an earlier core or pipe is caught.
#ifndef OPGEN_TWIN_KERNEL_PIPE_H
#define OPGEN_TWIN_KERNEL_PIPE_H

#include <cstdint>

#include "opgen_twin/kernel/state.h"
#include "opgen_twin/kernel/tensor.h"
#include "opgen_twin/kernel/types.h"

namespace AscendC {

namespace detail {
// A TQue at VECIN is fed from GM, one at VECOUT drains to GM; VECCALC stays inside UB.
constexpr TPosition que_src(TPosition pos) { return pos == TPosition::VECIN ? TPosition::GM : pos; }
constexpr TPosition que_dst(TPosition pos) { return pos == TPosition::VECOUT ? TPosition::GM : pos; }
// The events a queue's EnQue/DeQue (fwd) and FreeTensor/AllocTensor (!fwd) use follow from its
// positions exactly as CANN 8.1 computes them (impl/kernel_event.h GetQueEvt, with
// interface/kernel_tpipe.h enQueEvt/freeBufEvt = GetQueEvt(GetPhyType(src), GetPhyType(dst), ...)):
// GM->UB is MTE2_V / V_MTE2, UB->GM is V_MTE3 / MTE3_V, UB->UB is MTE2_MTE3 / MTE3_MTE2.
// EnQue sets enQueEvt and DeQue waits for it; FreeTensor sets freeBufEvt and the next AllocTensor
// of that buffer waits for it (impl/kernel_tquebind_impl.h). All vector positions are UB.
constexpr HardEvent que_event(TPosition src, TPosition dst, bool fwd) {
    if (src == TPosition::GM) return fwd ? HardEvent::MTE2_V : HardEvent::V_MTE2;
    if (dst == TPosition::GM) return fwd ? HardEvent::V_MTE3 : HardEvent::MTE3_V;
    return fwd ? HardEvent::MTE2_MTE3 : HardEvent::MTE3_MTE2;
}
}  // namespace detail

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
public:
    static constexpr TPosition srcPosition = src;
    static constexpr TPosition dstPosition = dst;
    static constexpr TPosition ubPosition = src == TPosition::GM ? dst : src;
    static constexpr int32_t queDepth = depth;
    static constexpr bool isTQue = true;

    TQueBind() = default;

    template <typename T>
    LocalTensor<T> AllocTensor() {
        LocalTensor<T> t;
        t.ref_ = opgen_twin::kern::que_alloc(twin_handle_);
        return t;
    }
    template <typename T>
    bool EnQue(const LocalTensor<T>& tensor, opgen_twin::kern::Here here = {}) {
        opgen_twin::kern::que_enque(twin_handle_, tensor.ref_, here);
        return true;
    }
    template <typename T>
    LocalTensor<T> DeQue() {
        LocalTensor<T> t;
        t.ref_ = opgen_twin::kern::que_deque(twin_handle_);
        return t;
    }
    template <typename T>
    void FreeTensor(LocalTensor<T>& tensor, opgen_twin::kern::Here here = {}) {
        opgen_twin::kern::que_free(twin_handle_, tensor.ref_, here);
    }
    bool HasTensorInQue() { return opgen_twin::kern::que_count(twin_handle_) > 0; }
    int32_t GetTensorCountInQue() { return opgen_twin::kern::que_count(twin_handle_); }

    opgen_twin::kern::Handle twin_handle_;
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<detail::que_src(pos), detail::que_dst(pos), depth, mask> {
public:
    TQue() = default;
};

template <TPosition pos = TPosition::LCM>
class TBuf {
public:
    static constexpr TPosition ubPosition = pos;
    static constexpr bool isTQue = false;

    TBuf() = default;

    template <typename T>
    LocalTensor<T> Get() {
        LocalTensor<T> t;
        t.ref_ = opgen_twin::kern::tbuf_get(twin_handle_, "TBuf::Get", 0, UINT64_MAX);
        t.ref_.bytes -= t.ref_.bytes % sizeof(T);
        return t;
    }
    // len is in elements.
    template <typename T>
    LocalTensor<T> Get(uint32_t len) {
        LocalTensor<T> t;
        t.ref_ = opgen_twin::kern::tbuf_get(twin_handle_, "TBuf::Get", 0, uint64_t(len) * sizeof(T));
        return t;
    }
    // size is in elements, bufOffset in bytes.
    template <typename T>
    LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) {
        LocalTensor<T> t;
        t.ref_ = opgen_twin::kern::tbuf_get(twin_handle_, "TBuf::GetWithOffset", bufOffset, uint64_t(size) * sizeof(T));
        return t;
    }

    opgen_twin::kern::Handle twin_handle_;
};

class TPipe {
public:
    TPipe() { opgen_twin::kern::pipe_open(this); }
    ~TPipe() { opgen_twin::kern::pipe_close(this); }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;

    void Init() {}

    // num buffers of len bytes each (len is rounded up to 32 bytes).
    template <class T>
    bool InitBuffer(T& que, uint8_t num, uint32_t len) {
        static_assert(T::isTQue, "InitBuffer(que, num, len) takes a TQue; a TBuf takes InitBuffer(buf, len)");
        opgen_twin::kern::que_init(que.twin_handle_, uint8_t(T::ubPosition), T::queDepth, num, len,
                                   uint8_t(detail::que_event(T::srcPosition, T::dstPosition, true)),
                                   uint8_t(detail::que_event(T::srcPosition, T::dstPosition, false)));
        return true;
    }
    template <TPosition pos>
    bool InitBuffer(TBuf<pos>& buf, uint32_t len) {
        opgen_twin::kern::tbuf_init(buf.twin_handle_, uint8_t(pos), len);
        return true;
    }

    template <HardEvent evt>
    TEventID AllocEventID() {
        return opgen_twin::kern::event_alloc(uint8_t(evt));
    }
    template <HardEvent evt>
    void ReleaseEventID(TEventID id) {
        opgen_twin::kern::event_release(uint8_t(evt), id);
    }
    template <HardEvent evt>
    TEventID FetchEventID() {
        return opgen_twin::kern::event_fetch(uint8_t(evt));
    }
    TEventID FetchEventID(HardEvent evt) { return opgen_twin::kern::event_fetch(uint8_t(evt)); }

    // Releases every buffer and event id so InitBuffer can start again from the bottom of UB.
    void Reset() { opgen_twin::kern::pipe_reset(this); }
};

inline TPipe* GetTPipePtr() { return static_cast<TPipe*>(opgen_twin::kern::pipe_current()); }

}  // namespace AscendC

#endif
