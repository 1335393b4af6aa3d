// Twin-only: the host half of a run. Given an op type, input shapes/dtypes and attributes, it
// checks them against the registered OpDef and calls the op's own InferShape, InferDataType and
// TilingFunc, the way the CANN framework would before a launch. The result is the plan: output
// shapes and dtypes, block dim, tiling key, workspace size and the raw tiling bytes.
#ifndef OPGEN_TWIN_HOST_PLAN_H
#define OPGEN_TWIN_HOST_PLAN_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/types.h"
#include "opgen_twin/host_attrs.h"
#include "opgen_twin/host_registry.h"

namespace opgen_twin {

struct TensorArg {
    std::string name;
    ge::DataType dtype = ge::DT_UNDEFINED;
    std::vector<int64_t> dims;  // empty for a 0-d tensor
};

struct AttrArg {
    std::string name;
    std::string type;   // "float", "int", "bool" or "string"
    std::string value;  // decimal number, true/false/1/0, or the string itself
};

struct PlanRequest {
    std::string op_type;
    std::vector<TensorArg> inputs;  // declaration order
    std::vector<AttrArg> attrs;     // any order; missing ones take their default
};

struct TensorPlan {
    std::string name;
    ge::DataType dtype = ge::DT_UNDEFINED;
    std::vector<int64_t> dims;
    // An output named like an input (CANN's ref form): that input's index; its buffer is the
    // input's. -1 for an input or an output of its own.
    int ref_input = -1;
    int64_t elements() const;
    size_t bytes() const;
};

struct HostPlan {
    const RegisteredOp* op = nullptr;
    const TilingClass* tiling_class = nullptr;  // nullptr when the op registered none
    std::vector<TensorPlan> inputs;
    std::vector<TensorPlan> outputs;
    std::vector<AttrValue> attrs;  // declaration order, defaults filled in
    bool block_dim_set = false;
    uint32_t block_dim = 0;
    uint64_t tiling_key = 0;
    size_t workspace_bytes = 0;
    std::vector<uint8_t> tiling;  // exactly the bytes the TilingFunc declared (SetDataSize)
};

enum class PlanStatus {
    Ok,
    Usage,     // the request does not fit the op (unknown op, attr, input name ...)
    Rejected,  // the op's host code or its OpDef refused the request (exit 2)
    Rule,      // a twin rule was broken (exit 3)
};

struct PlanResult {
    PlanStatus status = PlanStatus::Ok;
    // One line without the "opgen-twin: ..." prefix; for Rejected it starts with the op type.
    // For Rule it is the detail, and rule_api / rule name the broken rule (opgen_twin::fail).
    std::string message;
    std::string rule_api;
    std::string rule;
    HostPlan plan;
};

// Plans against the SoC set by opgen_twin::set_soc.
PlanResult plan_op(const PlanRequest& request);

}  // namespace opgen_twin

#endif
