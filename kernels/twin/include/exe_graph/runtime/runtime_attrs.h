// CPU twin of gert::RuntimeAttrs: an op's attributes by declaration index. Reading one with a C
// type other than its kind's (GetAttrPointer<int>(i) for an Int attribute, which is int64_t) or
// past the last index stops the run; CANN would hand back misread bytes or nullptr.
#ifndef OPGEN_TWIN_EXE_GRAPH_RUNTIME_ATTRS_H
#define OPGEN_TWIN_EXE_GRAPH_RUNTIME_ATTRS_H

#include <cstddef>
#include <cstdint>
#include <vector>

#include "opgen_twin/host_attrs.h"

namespace gert {

class RuntimeAttrs {
 public:
    // Twin-only: the runner builds the attributes; op code only reads them.
    explicit RuntimeAttrs(const std::vector<opgen_twin::AttrValue>* values) : values_(values) {}
    RuntimeAttrs(const RuntimeAttrs&) = delete;
    RuntimeAttrs& operator=(const RuntimeAttrs&) = delete;

    template <typename T>
    const T* GetAttrPointer(size_t index) const {
        return static_cast<const T*>(
            PointerOf(index, opgen_twin::AttrCType<T>::kind(), opgen_twin::AttrCType<T>::name()));
    }
    const int64_t* GetInt(const size_t index) const { return GetAttrPointer<int64_t>(index); }
    const float* GetFloat(const size_t index) const { return GetAttrPointer<float>(index); }
    const bool* GetBool(const size_t index) const { return GetAttrPointer<bool>(index); }
    const char* GetStr(const size_t index) const { return GetAttrPointer<char>(index); }
    size_t GetAttrNum() const;

 private:
    const void* PointerOf(size_t index, opgen_twin::AttrKind kind, const char* c_type) const;
    const std::vector<opgen_twin::AttrValue>* values_;
};

}  // namespace gert

#endif
