// CPU twin of gert::InferShapeContext: input shapes in, output shapes out.
#ifndef OPGEN_TWIN_EXE_GRAPH_INFER_SHAPE_CONTEXT_H
#define OPGEN_TWIN_EXE_GRAPH_INFER_SHAPE_CONTEXT_H

#include "exe_graph/runtime/extended_kernel_context.h"
#include "exe_graph/runtime/shape.h"
#include "exe_graph/runtime/tensor.h"

namespace gert {

class InferShapeContext : public ExtendedKernelContext {
 public:
    // Twin-only: built by the runner.
    explicit InferShapeContext(opgen_twin::HostCallState* state) : ExtendedKernelContext(state) {}

    const Shape* GetInputShape(size_t index) const;
    const Tensor* GetInputTensor(size_t index) const;
    Shape* GetOutputShape(size_t index);
};

}  // namespace gert

#endif
