// CPU twin of gert::ExtendedKernelContext: what every op_host context offers (tensor
// descriptors, attributes, node name). On CANN the contexts are views over a packed kernel
// argument block; in the twin they are views over the runner's HostCallState, so they cannot be
// created or copied by op code. Every index is checked: asking for input 3 of a 2-input op stops
// the run instead of returning nullptr for the op code to dereference.
#ifndef OPGEN_TWIN_EXE_GRAPH_EXTENDED_KERNEL_CONTEXT_H
#define OPGEN_TWIN_EXE_GRAPH_EXTENDED_KERNEL_CONTEXT_H

#include <cstddef>

#include "exe_graph/runtime/compute_node_info.h"
#include "exe_graph/runtime/runtime_attrs.h"
#include "graph/types.h"

namespace opgen_twin {
struct HostCallState;
}

namespace gert {

class ExtendedKernelContext {
 public:
    ExtendedKernelContext(const ExtendedKernelContext&) = delete;
    ExtendedKernelContext& operator=(const ExtendedKernelContext&) = delete;

    const CompileTimeTensorDesc* GetInputDesc(size_t index) const;
    const CompileTimeTensorDesc* GetOutputDesc(size_t index) const;
    size_t GetComputeNodeInputNum() const;
    size_t GetComputeNodeOutputNum() const;
    const RuntimeAttrs* GetAttrs() const;
    const ge::char_t* GetNodeType() const;
    const ge::char_t* GetNodeName() const;

 protected:
    explicit ExtendedKernelContext(opgen_twin::HostCallState* state) : state_(state) {}
    opgen_twin::HostCallState* state_;
};

}  // namespace gert

#endif
