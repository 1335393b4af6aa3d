// CPU twin of gert::StorageShape: the origin (logical) and storage (physical) shapes of a tensor.
// The twin runs ND tensors only, so both are the same unless op code changes one of them.
#ifndef OPGEN_TWIN_EXE_GRAPH_STORAGE_SHAPE_H
#define OPGEN_TWIN_EXE_GRAPH_STORAGE_SHAPE_H

#include "exe_graph/runtime/shape.h"

namespace gert {

struct StorageShape {
 public:
    StorageShape() = default;
    StorageShape(const std::initializer_list<int64_t>& origin_shape,
                 const std::initializer_list<int64_t>& storage_shape)
        : origin_shape_(origin_shape), storage_shape_(storage_shape) {}

    const Shape& GetOriginShape() const { return origin_shape_; }
    const Shape& GetStorageShape() const { return storage_shape_; }
    Shape& MutableOriginShape() { return origin_shape_; }
    Shape& MutableStorageShape() { return storage_shape_; }

    bool operator==(const StorageShape& other) const {
        return origin_shape_ == other.origin_shape_ && storage_shape_ == other.storage_shape_;
    }
    bool operator!=(const StorageShape& other) const { return !(*this == other); }

 private:
    Shape origin_shape_;
    Shape storage_shape_;
};

}  // namespace gert

#endif
