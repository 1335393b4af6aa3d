// The gert contexts and RuntimeAttrs as views over a HostCallState. Every index is checked
// against the op's declaration; a bad one stops the run with the API and the index named.
#include <string>

#include "exe_graph/runtime/extended_kernel_context.h"
#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/runtime_attrs.h"
#include "exe_graph/runtime/tiling_context.h"
#include "opgen_twin/host_call_state.h"
#include "opgen_twin/runtime.h"

namespace {

opgen_twin::HostTensor& tensor_at(std::vector<opgen_twin::HostTensor>& tensors, size_t index,
                                  const char* api, const char* what) {
    if (index >= tensors.size()) {
        // twin rule: "input index out of range" "output index out of range"
        opgen_twin::fail(api, (std::string(what) + " index out of range").c_str(),
                         "index " + std::to_string(index) + ", the op has " +
                             std::to_string(tensors.size()) + " " + what + "s");
    }
    return tensors[index];
}

}  // namespace

namespace gert {

// ---- RuntimeAttrs ----

size_t RuntimeAttrs::GetAttrNum() const { return values_->size(); }

const void* RuntimeAttrs::PointerOf(size_t index, opgen_twin::AttrKind kind,
                                    const char* c_type) const {
    if (index >= values_->size()) {
        opgen_twin::fail("RuntimeAttrs::GetAttrPointer", "attr index out of range",
                         "index " + std::to_string(index) + ", the op has " +
                             std::to_string(values_->size()) + " attrs");
    }
    const opgen_twin::AttrValue& value = (*values_)[index];
    if (kind != value.kind) {
        opgen_twin::fail("RuntimeAttrs::GetAttrPointer", "attr read with the wrong C type",
                         "attr " + std::to_string(index) + " '" + value.name + "' is " +
                             opgen_twin::attr_kind_name(value.kind) + ", read as " + c_type);
    }
    switch (value.kind) {
        case opgen_twin::AttrKind::Bool:
            return &value.b;
        case opgen_twin::AttrKind::Float:
            return &value.f;
        case opgen_twin::AttrKind::Int:
            return &value.i;
        case opgen_twin::AttrKind::String:
            return value.s.c_str();
        default:
            return nullptr;
    }
}

// ---- ExtendedKernelContext ----

const CompileTimeTensorDesc* ExtendedKernelContext::GetInputDesc(size_t index) const {
    return &tensor_at(state_->inputs, index, "GetInputDesc", "input").desc;
}

const CompileTimeTensorDesc* ExtendedKernelContext::GetOutputDesc(size_t index) const {
    return &tensor_at(state_->outputs, index, "GetOutputDesc", "output").desc;
}

size_t ExtendedKernelContext::GetComputeNodeInputNum() const { return state_->inputs.size(); }

size_t ExtendedKernelContext::GetComputeNodeOutputNum() const { return state_->outputs.size(); }

const RuntimeAttrs* ExtendedKernelContext::GetAttrs() const { return &state_->attrs; }

const ge::char_t* ExtendedKernelContext::GetNodeType() const { return state_->op_type.c_str(); }

const ge::char_t* ExtendedKernelContext::GetNodeName() const {
    return state_->node_name.c_str();
}

// ---- InferShapeContext ----

const Shape* InferShapeContext::GetInputShape(size_t index) const {
    return &tensor_at(state_->inputs, index, "InferShapeContext::GetInputShape", "input")
                .tensor.GetStorageShape();
}

const Tensor* InferShapeContext::GetInputTensor(size_t index) const {
    return &tensor_at(state_->inputs, index, "InferShapeContext::GetInputTensor", "input").tensor;
}

Shape* InferShapeContext::GetOutputShape(size_t index) {
    return &tensor_at(state_->outputs, index, "InferShapeContext::GetOutputShape", "output")
                .tensor.MutableStorageShape();
}

// ---- InferDataTypeContext ----

ge::DataType InferDataTypeContext::GetInputDataType(size_t index) const {
    return tensor_at(state_->inputs, index, "InferDataTypeContext::GetInputDataType", "input")
        .desc.GetDataType();
}

ge::DataType InferDataTypeContext::GetOutputDataType(size_t index) const {
    return tensor_at(state_->outputs, index, "InferDataTypeContext::GetOutputDataType", "output")
        .desc.GetDataType();
}

ge::graphStatus InferDataTypeContext::SetOutputDataType(size_t index, ge::DataType datatype) {
    opgen_twin::HostTensor& output =
        tensor_at(state_->outputs, index, "InferDataTypeContext::SetOutputDataType", "output");
    output.desc.SetDataType(datatype);
    output.tensor.SetDataType(datatype);
    return ge::GRAPH_SUCCESS;
}

// ---- TilingContext ----

const StorageShape* TilingContext::GetInputShape(size_t index) const {
    return &tensor_at(state_->inputs, index, "TilingContext::GetInputShape", "input")
                .tensor.GetShape();
}

const StorageShape* TilingContext::GetOutputShape(size_t index) const {
    return &tensor_at(state_->outputs, index, "TilingContext::GetOutputShape", "output")
                .tensor.GetShape();
}

const Tensor* TilingContext::GetInputTensor(size_t index) const {
    return &tensor_at(state_->inputs, index, "TilingContext::GetInputTensor", "input").tensor;
}

ge::graphStatus TilingContext::SetBlockDim(uint32_t block_dim) {
    state_->block_dim_set = true;
    state_->block_dim = block_dim;
    return ge::GRAPH_SUCCESS;
}

uint32_t TilingContext::GetBlockDim() const { return state_->block_dim; }

ge::graphStatus TilingContext::SetTilingKey(uint64_t tiling_key) {
    state_->tiling_key = tiling_key;
    return ge::GRAPH_SUCCESS;
}

uint64_t TilingContext::GetTilingKey() const { return state_->tiling_key; }

TilingData* TilingContext::GetRawTilingData() { return state_->raw_tiling; }

size_t* TilingContext::GetWorkspaceSizes(size_t workspace_count) {
    if (workspace_count != 1) {
        opgen_twin::fail("TilingContext::GetWorkspaceSizes", "workspace count other than 1",
                         "asked for " + std::to_string(workspace_count) +
                             "; the kernel takes one workspace address");
    }
    if (state_->workspace_sizes.empty()) {
        state_->workspace_sizes.assign(1, 0);
    }
    return state_->workspace_sizes.data();
}

size_t TilingContext::GetWorkspaceNum() const { return state_->workspace_sizes.size(); }

fe::PlatFormInfos* TilingContext::GetPlatformInfo() const { return state_->platform; }

}  // namespace gert
