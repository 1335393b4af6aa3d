// Twin-only: everything one op_host call (InferShape, InferDataType or TilingFunc) can see and
// change. The gert contexts are thin views over it; host_plan.cpp fills and reads it.
#ifndef OPGEN_TWIN_HOST_CALL_STATE_H
#define OPGEN_TWIN_HOST_CALL_STATE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exe_graph/runtime/compute_node_info.h"
#include "exe_graph/runtime/runtime_attrs.h"
#include "exe_graph/runtime/tensor.h"
#include "exe_graph/runtime/tiling_data.h"
#include "opgen_twin/host_attrs.h"

namespace fe {
class PlatFormInfos;
}

namespace opgen_twin {

struct HostTensor {
    std::string name;
    gert::Tensor tensor;               // shapes, dtype, formats
    gert::CompileTimeTensorDesc desc;  // dtype and formats again, as the descriptor API shows them
};

struct HostCallState {
    HostCallState() = default;
    HostCallState(const HostCallState&) = delete;
    HostCallState& operator=(const HostCallState&) = delete;

    std::string op_type;
    std::string node_name;
    std::vector<HostTensor> inputs;
    std::vector<HostTensor> outputs;
    std::vector<AttrValue> attr_values;
    gert::RuntimeAttrs attrs{&attr_values};
    fe::PlatFormInfos* platform = nullptr;

    // What the TilingFunc decided.
    bool block_dim_set = false;
    uint32_t block_dim = 0;
    uint64_t tiling_key = 0;
    gert::TilingData* raw_tiling = nullptr;
    std::vector<size_t> workspace_sizes;
};

}  // namespace opgen_twin

#endif
