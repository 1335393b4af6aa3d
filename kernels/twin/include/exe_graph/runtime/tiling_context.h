// CPU twin of gert::TilingContext: what a TilingFunc reads (shapes, dtypes, attributes, the
// platform) and what it decides (block dim, tiling key, tiling bytes, workspace size).
#ifndef OPGEN_TWIN_EXE_GRAPH_TILING_CONTEXT_H
#define OPGEN_TWIN_EXE_GRAPH_TILING_CONTEXT_H

#include <cstddef>
#include <cstdint>

#include "exe_graph/runtime/extended_kernel_context.h"
#include "exe_graph/runtime/storage_shape.h"
#include "exe_graph/runtime/tensor.h"
#include "exe_graph/runtime/tiling_data.h"
#include "graph/ge_error_codes.h"

namespace fe {
class PlatFormInfos;
}

namespace gert {

class TilingContext : public ExtendedKernelContext {
 public:
    // Twin-only: built by the runner.
    explicit TilingContext(opgen_twin::HostCallState* state) : ExtendedKernelContext(state) {}

    const StorageShape* GetInputShape(size_t index) const;
    const StorageShape* GetOutputShape(size_t index) const;
    const Tensor* GetInputTensor(size_t index) const;

    ge::graphStatus SetBlockDim(uint32_t block_dim);
    uint32_t GetBlockDim() const;
    ge::graphStatus SetTilingKey(uint64_t tiling_key);
    uint64_t GetTilingKey() const;

    TilingData* GetRawTilingData();
    // The twin launches kernels with exactly one workspace pointer, so the count must be 1.
    size_t* GetWorkspaceSizes(size_t workspace_count);
    size_t GetWorkspaceNum() const;

    fe::PlatFormInfos* GetPlatformInfo() const;
};

}  // namespace gert

#endif
