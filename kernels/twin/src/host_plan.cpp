// The host half of a run: request -> checks against the OpDef -> InferShape -> InferDataType ->
// TilingFunc -> plan. The order and the buffers follow what the CANN framework does before a
// launch: the tiling buffer has a fixed capacity (64 KiB here) and the TilingFunc declares how
// much of it it used.
#include <string>
#include <vector>

#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "opgen_twin/host_call_state.h"
#include "opgen_twin/host_dtypes.h"
#include "opgen_twin/host_plan.h"
#include "opgen_twin/host_platform.h"
#include "opgen_twin/runtime.h"

namespace opgen_twin {

namespace {

constexpr size_t kTilingCapacity = 64 * 1024;

std::string join(const std::vector<std::string>& items, const char* separator) {
    std::string text;
    for (const std::string& item : items) {
        text += (text.empty() ? "" : separator) + item;
    }
    return text;
}

std::string dims_text(const std::vector<int64_t>& dims) {
    std::vector<std::string> parts;
    for (int64_t dim : dims) {
        parts.push_back(std::to_string(dim));
    }
    return "[" + join(parts, ",") + "]";
}

// "(float16, float16), (float32, float32)": the registered columns of the given params.
std::string columns_text(const std::vector<RegisteredParam>& params, size_t columns) {
    std::vector<std::string> combos;
    for (size_t column = 0; column < columns; ++column) {
        std::vector<std::string> names;
        for (const RegisteredParam& param : params) {
            names.push_back(ge_dtype_name(param.data_types[column]));
        }
        combos.push_back("(" + join(names, ", ") + ")");
    }
    return join(combos, ", ");
}

std::string names_text(const std::vector<RegisteredParam>& params) {
    std::vector<std::string> names;
    for (const RegisteredParam& param : params) {
        names.push_back(param.name);
    }
    return "(" + join(names, ", ") + ")";
}

bool column_has_dtypes(const std::vector<RegisteredParam>& params, size_t column,
                       const std::vector<ge::DataType>& dtypes) {
    for (size_t i = 0; i < params.size(); ++i) {
        if (params[i].data_types[column] != dtypes[i]) {
            return false;
        }
    }
    return true;
}

class Planner {
 public:
    explicit Planner(const PlanRequest& request) : request_(request) {}

    PlanResult run() {
        if (!(check_op() && check_soc() && check_inputs() && choose_column() && collect_attrs())) {
            return result_;
        }
        fill_state();
        if (infer_shape() && infer_data_type() && record_outputs() && tile()) {
            result_.status = PlanStatus::Ok;
        }
        return result_;
    }

 private:
    bool stop(PlanStatus status, const std::string& message) {
        result_.status = status;
        result_.message = message;
        return false;
    }
    bool usage(const std::string& message) { return stop(PlanStatus::Usage, message); }
    bool rejected(const std::string& message) {
        return stop(PlanStatus::Rejected, op_->type + ": " + message);
    }
    bool rule(const char* api, const char* rule, const std::string& detail) {
        result_.rule_api = api;
        result_.rule = rule;
        return stop(PlanStatus::Rule, detail);
    }

    bool check_op() {
        op_ = find_op(request_.op_type);
        if (op_ == nullptr) {
            std::vector<std::string> names = registered_ops();
            return usage("unknown op '" + request_.op_type + "'; registered ops: " +
                         (names.empty() ? std::string("none") : join(names, ", ")));
        }
        result_.plan.op = op_;
        if (!op_->problems.empty()) {
            return rule("OpDef", "definition rejected",
                        op_->type + ": " + join(op_->problems, "; "));
        }
        tiling_class_ = find_tiling_class(op_->type);
        if (tiling_class_ != nullptr && !tiling_class_->problems.empty()) {
            return rule("REGISTER_TILING_DATA_CLASS", "definition rejected",
                        join(tiling_class_->problems, "; "));
        }
        result_.plan.tiling_class = tiling_class_;
        return true;
    }

    bool check_soc() {
        const SocFamily family = soc_family(soc().name);
        if (family == SocFamily::Unknown) {
            return usage("unknown SoC '" + soc().name + "' (expected e.g. Ascend910B2)");
        }
        const std::string unit = compute_unit(family);
        for (const std::string& config : op_->aicore_configs) {
            if (config == unit) {
                return true;
            }
        }
        return rejected("no AICore config for " + unit + " (" + soc().name +
                        "); AddConfig was called for: " + join(op_->aicore_configs, ", "));
    }

    bool check_inputs() {
        const std::vector<RegisteredParam>& declared = op_->inputs;
        if (request_.inputs.size() != declared.size()) {
            return usage(op_->type + " takes " + std::to_string(declared.size()) + " inputs " +
                         names_text(declared) + ", got " +
                         std::to_string(request_.inputs.size()));
        }
        for (size_t i = 0; i < declared.size(); ++i) {
            const TensorArg& arg = request_.inputs[i];
            if (arg.name != declared[i].name) {
                return usage("input " + std::to_string(i) + " of " + op_->type + " is '" +
                             declared[i].name + "', got '" + arg.name + "'");
            }
            if (declared[i].param_type == ParamKind::Dynamic) {
                return usage("input '" + arg.name + "' is DYNAMIC; the twin runner does not " +
                             "run tensor-list inputs");
            }
            if (arg.dims.size() > gert::Shape::kMaxDimNum) {
                return usage("input '" + arg.name + "' has more than 25 dims");
            }
            TensorPlan plan{arg.name, arg.dtype, arg.dims};
            for (int64_t dim : arg.dims) {
                if (dim < 0) {
                    return usage("input '" + arg.name + "' has a negative dim " +
                                 dims_text(arg.dims));
                }
            }
            if (plan.elements() < 0) {
                return usage("input '" + arg.name + "' is too large " + dims_text(arg.dims));
            }
            result_.plan.inputs.push_back(plan);
        }
        return true;
    }

    bool choose_column() {
        std::vector<ge::DataType> dtypes;
        std::vector<std::string> names;
        for (const TensorArg& arg : request_.inputs) {
            dtypes.push_back(arg.dtype);
            names.push_back(ge_dtype_name(arg.dtype));
        }
        for (size_t column = 0; column < op_->column_count(); ++column) {
            if (column_has_dtypes(op_->inputs, column, dtypes)) {
                column_ = column;
                return true;
            }
        }
        return rejected("input dtypes (" + join(names, ", ") + ") are not registered; " +
                        names_text(op_->inputs) + " accepts " +
                        columns_text(op_->inputs, op_->column_count()));
    }

    bool collect_attrs() {
        for (size_t i = 0; i < request_.attrs.size(); ++i) {
            const AttrArg& arg = request_.attrs[i];
            bool known = false;
            for (const RegisteredAttr& attr : op_->attrs) {
                known = known || attr.name == arg.name;
            }
            if (!known) {
                std::vector<std::string> names;
                for (const RegisteredAttr& attr : op_->attrs) {
                    names.push_back(attr.name);
                }
                return usage(op_->type + " has no attr '" + arg.name + "' (attrs: " +
                             (names.empty() ? std::string("none") : join(names, ", ")) + ")");
            }
            for (size_t j = 0; j < i; ++j) {
                if (request_.attrs[j].name == arg.name) {
                    return usage("attr '" + arg.name + "' given twice");
                }
            }
        }
        for (const RegisteredAttr& attr : op_->attrs) {
            const AttrArg* given = nullptr;
            for (const AttrArg& arg : request_.attrs) {
                given = arg.name == attr.name ? &arg : given;
            }
            AttrValue value = attr.default_value;
            value.name = attr.name;
            const AttrKind kind = attr.default_value.kind;
            if (given != nullptr) {
                if (parse_attr_kind(given->type) != kind) {
                    return usage("attr '" + attr.name + "' is " + attr_kind_name(kind) +
                                 ", given as '" + given->type + "'");
                }
                if (!parse_attr_value(kind, given->value, value)) {
                    return usage("attr '" + attr.name + "': '" + given->value + "' is not a " +
                                 attr_kind_name(kind));
                }
            } else if (attr.required || !attr.has_default) {
                return usage("required attr '" + attr.name + "' (" + attr_kind_name(kind) +
                             ") not given");
            }
            result_.plan.attrs.push_back(value);
        }
        return true;
    }

    HostTensor make_tensor(const RegisteredParam& param, ge::DataType dtype,
                           const std::vector<int64_t>& dims) {
        HostTensor tensor;
        tensor.name = param.name;
        tensor.tensor.SetDataType(dtype);
        tensor.tensor.SetOriginFormat(param.formats[column_]);
        tensor.tensor.SetStorageFormat(param.formats[column_]);
        for (int64_t dim : dims) {
            tensor.tensor.MutableOriginShape().AppendDim(dim);
            tensor.tensor.MutableStorageShape().AppendDim(dim);
        }
        tensor.desc.SetDataType(dtype);
        tensor.desc.SetOriginFormat(param.formats[column_]);
        tensor.desc.SetStorageFormat(param.formats[column_]);
        return tensor;
    }

    void fill_state() {
        state_.op_type = op_->type;
        state_.node_name = op_->type;
        for (size_t i = 0; i < op_->inputs.size(); ++i) {
            state_.inputs.push_back(
                make_tensor(op_->inputs[i], request_.inputs[i].dtype, request_.inputs[i].dims));
        }
        for (const RegisteredParam& output : op_->outputs) {
            state_.outputs.push_back(make_tensor(output, ge::DT_UNDEFINED, {}));
        }
        state_.attr_values = result_.plan.attrs;
    }

    static std::string status_text(ge::graphStatus status) {
        return status == ge::GRAPH_FAILED ? "GRAPH_FAILED" : std::to_string(status);
    }

    bool infer_shape() {
        gert::InferShapeContext context(&state_);
        const ge::graphStatus status = op_->infer_shape(&context);
        if (status != ge::GRAPH_SUCCESS) {
            return rejected("InferShape returned " + status_text(status));
        }
        for (HostTensor& output : state_.outputs) {
            const gert::Shape& shape = output.tensor.GetStorageShape();
            output.tensor.MutableOriginShape() = shape;
            for (size_t d = 0; d < shape.GetDimNum(); ++d) {
                if (shape.GetDim(d) < 0) {
                    return rule("InferShape", "negative output dim",
                                op_->type + " gave output '" + output.name + "' dim " +
                                    std::to_string(d) + " = " + std::to_string(shape.GetDim(d)));
                }
            }
        }
        return true;
    }

    bool infer_data_type() {
        gert::InferDataTypeContext context(&state_);
        const ge::graphStatus status = op_->infer_data_type(&context);
        if (status != ge::GRAPH_SUCCESS) {
            return rejected("InferDataType returned " + status_text(status));
        }
        std::vector<ge::DataType> all;
        std::vector<std::string> output_names;
        for (const HostTensor& input : state_.inputs) {
            all.push_back(input.desc.GetDataType());
        }
        for (const HostTensor& output : state_.outputs) {
            if (output.desc.GetDataType() == ge::DT_UNDEFINED) {
                return rule("InferDataType", "output dtype not set",
                            op_->type + " left the dtype of output '" + output.name + "' unset");
            }
            all.push_back(output.desc.GetDataType());
            output_names.push_back(ge_dtype_name(output.desc.GetDataType()));
        }
        std::vector<RegisteredParam> params = op_->inputs;
        params.insert(params.end(), op_->outputs.begin(), op_->outputs.end());
        for (size_t column = 0; column < op_->column_count(); ++column) {
            if (column_has_dtypes(params, column, all)) {
                column_ = column;
                return true;
            }
        }
        return rule("InferDataType", "output dtypes match no registered column",
                    op_->type + " chose (" + join(output_names, ", ") + ") for " +
                        names_text(op_->outputs) + "; registered " + names_text(params) + ": " +
                        columns_text(params, op_->column_count()));
    }

    bool record_outputs() {
        for (const HostTensor& output : state_.outputs) {
            std::vector<int64_t> dims;
            const gert::Shape& shape = output.tensor.GetStorageShape();
            for (size_t d = 0; d < shape.GetDimNum(); ++d) {
                dims.push_back(shape.GetDim(d));
            }
            TensorPlan plan{output.name, output.desc.GetDataType(), dims};
            if (plan.elements() < 0) {
                return rule("InferShape", "output too large",
                            "output '" + output.name + "' " + dims_text(dims));
            }
            for (size_t i = 0; i < result_.plan.inputs.size(); ++i) {
                const TensorPlan& input = result_.plan.inputs[i];
                if (input.name != output.name) continue;
                if (input.dims != plan.dims || input.dtype != plan.dtype) {
                    // twin rule untested: needs an op whose InferShape or InferDataType changes its ref output (host_test_ops has none; the generated ones copy the input's)
                    return rule("InferShape", "ref output differs from its input",
                                "output '" + output.name + "' " + dims_text(plan.dims) +
                                    " is updated in place over input '" + input.name + "' " + dims_text(input.dims) +
                                    ": one buffer, so the shape and dtype must be the input's");
                }
                plan.ref_input = int(i);
            }
            result_.plan.outputs.push_back(plan);
        }
        return true;
    }

    bool tile() {
        std::vector<uint8_t> buffer(kTilingCapacity, 0);
        gert::TilingData raw(buffer.data(), buffer.size());
        fe::PlatFormInfos platform(soc());
        state_.raw_tiling = &raw;
        state_.platform = &platform;
        gert::TilingContext context(&state_);
        const ge::graphStatus status = op_->tiling(&context);
        state_.raw_tiling = nullptr;
        state_.platform = nullptr;
        if (status != ge::GRAPH_SUCCESS) {
            return rejected("TilingFunc returned " + status_text(status));
        }
        const size_t size = raw.GetDataSize();
        if (size == 0) {
            return rule("TilingData::SetDataSize", "no tiling data",
                        op_->type + ": the TilingFunc never declared its tiling data size");
        }
        if (tiling_class_ != nullptr && size != tiling_class_->data_size) {
            return rule("TilingData::SetDataSize", "tiling data size differs from its class",
                        op_->type + ": " + std::to_string(size) + " bytes declared, " +
                            tiling_class_->class_name + " has " +
                            std::to_string(tiling_class_->data_size));
        }
        HostPlan& plan = result_.plan;
        plan.tiling.assign(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(size));
        plan.block_dim_set = state_.block_dim_set;
        plan.block_dim = state_.block_dim;
        plan.tiling_key = state_.tiling_key;
        plan.workspace_bytes = state_.workspace_sizes.empty() ? 0 : state_.workspace_sizes[0];
        return true;
    }

    const PlanRequest& request_;
    PlanResult result_;
    const RegisteredOp* op_ = nullptr;
    const TilingClass* tiling_class_ = nullptr;
    size_t column_ = 0;
    HostCallState state_;
};

}  // namespace

int64_t TensorPlan::elements() const {
    int64_t count = 1;
    for (int64_t dim : dims) {
        if (__builtin_mul_overflow(count, dim, &count)) {
            return -1;
        }
    }
    return count;
}

size_t TensorPlan::bytes() const {
    return static_cast<size_t>(elements()) * ge_dtype_size(dtype);
}

PlanResult plan_op(const PlanRequest& request) { return Planner(request).run(); }

}  // namespace opgen_twin
