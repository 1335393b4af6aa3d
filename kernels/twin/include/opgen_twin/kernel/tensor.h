// GlobalTensor and LocalTensor: typed views of GM and of one UB buffer. Views are plain values;
// every access goes through the checks in state.h so a bad index names the tensor it hit.
#ifndef OPGEN_TWIN_KERNEL_TENSOR_H
#define OPGEN_TWIN_KERNEL_TENSOR_H

#include <cstdint>

#include "opgen_twin/kernel/state.h"
#include "opgen_twin/kernel/types.h"

namespace AscendC {

template <typename T>
class GlobalTensor {
public:
    using PrimType = PrimT<T>;

    GlobalTensor() = default;

    // bufferSize is in elements; accesses beyond it fail even inside the registered GM buffer,
    // because the host tiling declared that size for this core.
    void SetGlobalBuffer(__gm__ PrimType* buffer, uint64_t bufferSize) {
        addr_ = buffer;
        region_ = buffer;
        size_ = bufferSize;
    }
    void SetGlobalBuffer(__gm__ PrimType* buffer) { SetGlobalBuffer(buffer, 0); }

    const __gm__ PrimType* GetPhyAddr() const { return addr_; }
    __gm__ PrimType* GetPhyAddr(const uint64_t offset) const { return addr_ + offset; }

    PrimType GetValue(const uint64_t offset, opgen_twin::kern::Here here = {}) const {
        const opgen_twin::kern::Call call("GlobalTensor::GetValue", opgen_twin::kern::Pipe::S, here);
        uint8_t* p = element("GlobalTensor::GetValue", offset, false);
        return opgen_twin::kern::load<PrimType>(p);
    }
    void SetValue(const uint64_t offset, PrimType value, opgen_twin::kern::Here here = {}) {
        const opgen_twin::kern::Call call("GlobalTensor::SetValue", opgen_twin::kern::Pipe::S, here);
        uint8_t* p = element("GlobalTensor::SetValue", offset, true);
        opgen_twin::kern::store<PrimType>(p, value);
    }
    // The reference escapes the checks after the index check, as on the NPU (tracked as a write).
    __gm__ PrimType& operator()(const uint64_t offset, opgen_twin::kern::Here here = {}) const {
        const opgen_twin::kern::Call call("GlobalTensor::operator()", opgen_twin::kern::Pipe::S, here);
        return *reinterpret_cast<PrimType*>(element("GlobalTensor::operator()", offset, true));
    }

    // Like CANN, a view keeps the size given to SetGlobalBuffer; the twin also keeps the region.
    uint64_t GetSize() const { return size_; }
    GlobalTensor operator[](const uint64_t offset) const {
        GlobalTensor view = *this;
        view.addr_ = addr_ + offset;
        return view;
    }

    opgen_twin::kern::GmView gm_view() const {
        return {reinterpret_cast<const uint8_t*>(region_), size_ * sizeof(PrimType)};
    }

    PrimType* addr_ = nullptr;
    PrimType* region_ = nullptr;
    uint64_t size_ = 0;

private:
    uint8_t* element(const char* api, uint64_t offset, bool write) const {
        const char* name = opgen_twin::kern::gm_operand(api, "element", gm_view(), addr_ + offset, sizeof(PrimType),
                                                        "index out of bounds");
        opgen_twin::kern::count_scalar_gm(name, sizeof(PrimType), write);
        opgen_twin::kern::track_gm(addr_ + offset, sizeof(PrimType), write);
        return reinterpret_cast<uint8_t*>(addr_ + offset);
    }
};

template <typename T>
class LocalTensor {
public:
    using PrimType = PrimT<T>;

    LocalTensor() = default;

    PrimType* GetPhyAddr() const { return reinterpret_cast<PrimType*>(opgen_twin::kern::ub_base() + ref_.off); }
    PrimType* GetPhyAddr(const uint32_t offset) const { return GetPhyAddr() + offset; }

    // Scalar accesses run on the scalar pipe (S).
    PrimType GetValue(const uint32_t index, opgen_twin::kern::Here here = {}) const {
        const opgen_twin::kern::Call call("LocalTensor::GetValue", opgen_twin::kern::Pipe::S, here);
        return opgen_twin::kern::load<PrimType>(
            opgen_twin::kern::ub_element("LocalTensor::GetValue", ref_, index, sizeof(PrimType), false));
    }
    template <typename T1>
    void SetValue(const uint32_t index, const T1 value, opgen_twin::kern::Here here = {}) const {
        const opgen_twin::kern::Call call("LocalTensor::SetValue", opgen_twin::kern::Pipe::S, here);
        opgen_twin::kern::store<PrimType>(
            opgen_twin::kern::ub_element("LocalTensor::SetValue", ref_, index, sizeof(PrimType), true),
            static_cast<PrimType>(value));
    }
    // The reference may be read or written: it is tracked as a write, which conflicts with every
    // unordered access of another pipe.
    PrimType& operator()(const uint32_t index, opgen_twin::kern::Here here = {}) const {
        const opgen_twin::kern::Call call("LocalTensor::operator()", opgen_twin::kern::Pipe::S, here);
        return *reinterpret_cast<PrimType*>(
            opgen_twin::kern::ub_element("LocalTensor::operator()", ref_, index, sizeof(PrimType), true));
    }

    // A view starting `offset` elements in; CANN's CPU debug mode also requires offset < size.
    LocalTensor operator[](const uint32_t offset) const {
        if (uint64_t(offset) >= GetSize()) {
            opgen_twin::fail("LocalTensor::operator[]", "index out of bounds",
                             opgen_twin::kern::tensor_desc(ref_) + ": offset " + std::to_string(offset) +
                                 " is not below the tensor size " + std::to_string(GetSize()));
        }
        LocalTensor view = *this;
        view.ref_.off += offset * sizeof(PrimType);
        view.ref_.bytes -= offset * sizeof(PrimType);
        return view;
    }

    template <typename CAST_T>
    LocalTensor<CAST_T> ReinterpretCast() const {
        LocalTensor<CAST_T> out;
        out.ref_ = ref_;
        out.ref_.bytes = uint32_t(GetSize() * sizeof(PrimType) / sizeof(PrimT<CAST_T>) * sizeof(PrimT<CAST_T>));
        return out;
    }

    int32_t GetPosition() const { return opgen_twin::kern::buffer_position(ref_); }
    uint32_t GetSize() const { return ref_.bytes / sizeof(PrimType); }
    void SetSize(const uint32_t size) {
        opgen_twin::kern::check_resize("LocalTensor::SetSize", ref_, uint64_t(size) * sizeof(PrimType));
        ref_.bytes = uint32_t(size * sizeof(PrimType));
    }

    opgen_twin::kern::TensorRef ref_;
};

}  // namespace AscendC

#endif
