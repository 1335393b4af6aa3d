// CPU twin of gert::CompileTimeTensorDesc: dtype and formats of one input or output as the graph
// declared them. (CANN keeps it in compute_node_info.h beside the node's layout; the twin needs
// only the descriptor.)
#ifndef OPGEN_TWIN_EXE_GRAPH_COMPUTE_NODE_INFO_H
#define OPGEN_TWIN_EXE_GRAPH_COMPUTE_NODE_INFO_H

#include "graph/types.h"

namespace gert {

class CompileTimeTensorDesc {
 public:
    ge::DataType GetDataType() const { return data_type_; }
    ge::Format GetOriginFormat() const { return origin_format_; }
    ge::Format GetStorageFormat() const { return storage_format_; }
    void SetDataType(const ge::DataType data_type) { data_type_ = data_type; }
    void SetOriginFormat(const ge::Format format) { origin_format_ = format; }
    void SetStorageFormat(const ge::Format format) { storage_format_ = format; }

 private:
    ge::DataType data_type_ = ge::DT_UNDEFINED;
    ge::Format origin_format_ = ge::FORMAT_ND;
    ge::Format storage_format_ = ge::FORMAT_ND;
};

}  // namespace gert

#endif
