// CPU twin of gert::Tensor as op_host code sees it: shape, dtype and formats. The data accessors
// are deliberately absent: on a real host a tensor's data lives on the device and is readable only
// for value-depend inputs, which the twin does not model, so using them fails to compile here
// rather than reading memory that would not exist on the NPU host.
#ifndef OPGEN_TWIN_EXE_GRAPH_TENSOR_H
#define OPGEN_TWIN_EXE_GRAPH_TENSOR_H

#include "exe_graph/runtime/storage_shape.h"
#include "graph/types.h"

namespace gert {

class Tensor {
 public:
    int64_t GetShapeSize() const { return storage_shape_.GetStorageShape().GetShapeSize(); }
    ge::DataType GetDataType() const { return data_type_; }
    void SetDataType(const ge::DataType data_type) { data_type_ = data_type; }

    const Shape& GetStorageShape() const { return storage_shape_.GetStorageShape(); }
    Shape& MutableStorageShape() { return storage_shape_.MutableStorageShape(); }
    const Shape& GetOriginShape() const { return storage_shape_.GetOriginShape(); }
    Shape& MutableOriginShape() { return storage_shape_.MutableOriginShape(); }
    const StorageShape& GetShape() const { return storage_shape_; }
    StorageShape& GetShape() { return storage_shape_; }

    ge::Format GetStorageFormat() const { return storage_format_; }
    void SetStorageFormat(const ge::Format format) { storage_format_ = format; }
    ge::Format GetOriginFormat() const { return origin_format_; }
    void SetOriginFormat(const ge::Format format) { origin_format_ = format; }

 private:
    StorageShape storage_shape_;
    ge::Format origin_format_ = ge::FORMAT_ND;
    ge::Format storage_format_ = ge::FORMAT_ND;
    ge::DataType data_type_ = ge::DT_UNDEFINED;
};

}  // namespace gert

#endif
