// Checks on a registered op definition. These are the mistakes msOpGen's build tools or the
// graph engine would reject later (often with a less direct message), caught at registration.
#include <set>
#include <string>
#include <vector>

#include "opgen_twin/host_dtypes.h"
#include "opgen_twin/host_op_check.h"
#include "opgen_twin/host_platform.h"

namespace opgen_twin {

namespace {

std::vector<RegisteredParam*> all_params(RegisteredOp& op) {
    std::vector<RegisteredParam*> params;
    for (RegisteredParam& input : op.inputs) {
        params.push_back(&input);
    }
    for (RegisteredParam& output : op.outputs) {
        params.push_back(&output);
    }
    return params;
}

const RegisteredParam* ref_input(const RegisteredOp& op, const std::string& name) {
    for (const RegisteredParam& input : op.inputs) {
        if (input.name == name) return &input;
    }
    return nullptr;
}

void check_names(RegisteredOp& op) {
    std::set<std::string> seen;
    auto note = [&](const std::string& name, const char* what) {
        if (name.empty()) {
            op.problems.push_back(std::string("an ") + what + " has an empty name");
        } else if (!seen.insert(name).second) {
            op.problems.push_back("name '" + name + "' is declared more than once");
        }
    };
    for (const RegisteredParam& input : op.inputs) {
        note(input.name, "input");
    }
    for (const RegisteredParam& output : op.outputs) {
        // An output named like an input is CANN's in-place (ref) form: the input's own buffer,
        // so its DataType list must be the input's (TorchAir's in-place operator guide).
        const RegisteredParam* input = ref_input(op, output.name);
        if (input == nullptr) {
            note(output.name, "output");
        } else if (input->data_types != output.data_types) {
            op.problems.push_back("ref output '" + output.name +
                                  "' (named like an input: updated in place) has another DataType list than input '" +
                                  input->name + "'");
        }
    }
    for (const RegisteredAttr& attr : op.attrs) {
        note(attr.name, "attr");
    }
}

// Column rule: the i-th entries of every DataType (and Format) list form one supported
// combination, so all lists of an op have the same length.
void check_columns(RegisteredOp& op) {
    std::vector<RegisteredParam*> params = all_params(op);
    if (op.outputs.empty()) {
        op.problems.push_back("the op declares no output");
    }
    if (params.empty()) {
        return;
    }
    const size_t columns = params.front()->data_types.size();
    const size_t problems_before = op.problems.size();
    for (RegisteredParam* param : params) {
        if (param->data_types.empty()) {
            op.problems.push_back("'" + param->name + "' has no DataType list");
        } else if (param->data_types.size() != columns) {
            op.problems.push_back("DataType lists differ in length: '" + params.front()->name +
                                  "' has " + std::to_string(columns) + ", '" + param->name +
                                  "' has " + std::to_string(param->data_types.size()));
        }
        if (param->formats.empty()) {
            param->formats.assign(param->data_types.size(), ge::FORMAT_ND);
        } else if (param->formats.size() != param->data_types.size()) {
            op.problems.push_back("'" + param->name + "': Format list length " +
                                  std::to_string(param->formats.size()) +
                                  " differs from its DataType list length " +
                                  std::to_string(param->data_types.size()));
        }
        if (!param->unknown_shape_formats.empty() &&
            param->unknown_shape_formats.size() != param->data_types.size()) {
            op.problems.push_back("'" + param->name + "': UnknownShapeFormat list length " +
                                  std::to_string(param->unknown_shape_formats.size()) +
                                  " differs from its DataType list length " +
                                  std::to_string(param->data_types.size()));
        }
    }
    if (op.problems.size() != problems_before) {
        return;  // the columns are not well formed, so comparing them says nothing more
    }
    std::set<std::vector<int>> seen;
    for (size_t column = 0; column < columns; ++column) {
        std::vector<int> key;
        std::string text;
        for (RegisteredParam* param : params) {
            key.push_back(param->data_types[column]);
            key.push_back(param->formats[column]);
            text += (text.empty() ? "" : ", ") + ge_dtype_name(param->data_types[column]);
        }
        if (!seen.insert(key).second) {
            op.problems.push_back("column " + std::to_string(column) + " (" + text +
                                  ") repeats an earlier column");
        }
    }
}

void check_attrs(RegisteredOp& op) {
    for (const RegisteredAttr& attr : op.attrs) {
        if (attr.default_value.kind == AttrKind::None) {
            op.problems.push_back("attr '" + attr.name +
                                  "' has no type (Bool/Float/Int/String was not called)");
        }
    }
}

void check_functions_and_configs(RegisteredOp& op) {
    if (op.infer_shape == nullptr) {
        op.problems.push_back("SetInferShape was not called");
    }
    if (op.infer_data_type == nullptr) {
        op.problems.push_back("SetInferDataType was not called");
    }
    if (op.tiling == nullptr) {
        op.problems.push_back("AICore().SetTiling was not called");
    }
    if (op.aicore_configs.empty()) {
        op.problems.push_back("AICore().AddConfig was not called");
    }
    for (const std::string& config : op.aicore_configs) {
        if (!is_known_compute_unit(config)) {
            op.problems.push_back("AddConfig(\"" + config + "\") names no known compute unit");
        }
    }
}

}  // namespace

void check_registered_op(RegisteredOp& op) {
    check_names(op);
    check_columns(op);
    check_attrs(op);
    check_functions_and_configs(op);
}

}  // namespace opgen_twin
