// CPU twin of gert::InferDataTypeContext: input dtypes in, output dtypes out.
#ifndef OPGEN_TWIN_EXE_GRAPH_INFER_DATATYPE_CONTEXT_H
#define OPGEN_TWIN_EXE_GRAPH_INFER_DATATYPE_CONTEXT_H

#include "exe_graph/runtime/extended_kernel_context.h"
#include "graph/ge_error_codes.h"
#include "graph/types.h"

namespace gert {

class InferDataTypeContext : public ExtendedKernelContext {
 public:
    // Twin-only: built by the runner.
    explicit InferDataTypeContext(opgen_twin::HostCallState* state)
        : ExtendedKernelContext(state) {}

    ge::DataType GetInputDataType(size_t index) const;
    ge::DataType GetOutputDataType(size_t index) const;
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType datatype);
};

}  // namespace gert

#endif
