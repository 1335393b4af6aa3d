// The twin's registry of op definitions and tiling classes. OP_ADD and
// REGISTER_TILING_DATA_CLASS call in here while the program starts (static initialisation, any
// order across files), so both maps live in function-local statics.
#include <map>
#include <string>
#include <vector>

#include "opgen_twin/host_op_check.h"
#include "opgen_twin/host_registry.h"
#include "register/op_def.h"
#include "register/tilingdata_base.h"

namespace opgen_twin {

namespace {

std::map<std::string, RegisteredOp>& op_registry() {
    static std::map<std::string, RegisteredOp> ops;
    return ops;
}

std::map<std::string, TilingClass>& tiling_registry() {
    static std::map<std::string, TilingClass> classes;
    return classes;
}

bool same_layout(const TilingClass& a, const TilingClass& b) {
    if (a.class_name != b.class_name || a.data_size != b.data_size ||
        a.fields.size() != b.fields.size()) {
        return false;
    }
    for (size_t i = 0; i < a.fields.size(); ++i) {
        const TilingField& x = a.fields[i];
        const TilingField& y = b.fields[i];
        if (x.name != y.name || x.c_type != y.c_type || x.offset != y.offset ||
            x.count != y.count) {
            return false;
        }
    }
    return true;
}

}  // namespace

// Reads the private record of an OpDef (it is a friend of the builder classes).
struct OpDefReader {
    static ParamKind kind_of(ops::Option option) {
        switch (option) {
            case ops::REQUIRED:
                return ParamKind::Required;
            case ops::OPTIONAL:
                return ParamKind::Optional;
            case ops::DYNAMIC:
                return ParamKind::Dynamic;
            default:
                return ParamKind::Other;
        }
    }

    static RegisteredParam read_param(const ops::OpParamDef& def,
                                      std::vector<std::string>& problems) {
        RegisteredParam param;
        param.name = def.name_;
        param.param_type = kind_of(def.param_type_);
        param.data_types = def.data_types_;
        param.formats = def.formats_;
        param.unknown_shape_formats = def.unknown_shape_formats_;
        param.auto_contiguous = def.auto_contiguous_;
        param.ignore_contiguous = def.ignore_contiguous_;
        problems.insert(problems.end(), def.problems_.begin(), def.problems_.end());
        return param;
    }

    static RegisteredAttr read_attr(const ops::OpAttrDef& def,
                                    std::vector<std::string>& problems) {
        RegisteredAttr attr;
        attr.name = def.name_;
        attr.has_default = def.has_default_;
        attr.default_value = def.value_;
        if (def.attr_type_set_) {
            attr.required = def.attr_type_ == ops::REQUIRED;
            if (def.attr_type_ != ops::REQUIRED && def.attr_type_ != ops::OPTIONAL) {
                problems.push_back("attr '" + attr.name + "': AttrType must be REQUIRED or OPTIONAL");
            }
            if (def.attr_type_ == ops::OPTIONAL && !def.has_default_) {
                problems.push_back("attr '" + attr.name + "': OPTIONAL without a default value");
            }
        } else {
            attr.required = !def.has_default_;
        }
        problems.insert(problems.end(), def.problems_.begin(), def.problems_.end());
        return attr;
    }

    static RegisteredOp read(const ops::OpDef& def) {
        RegisteredOp op;
        op.type = def.type_;
        for (const ops::OpParamDef& input : def.inputs_) {
            op.inputs.push_back(read_param(input, op.problems));
        }
        for (const ops::OpParamDef& output : def.outputs_) {
            op.outputs.push_back(read_param(output, op.problems));
        }
        for (const ops::OpAttrDef& attr : def.attrs_) {
            op.attrs.push_back(read_attr(attr, op.problems));
        }
        op.infer_shape = def.infer_shape_;
        op.infer_data_type = def.infer_data_type_;
        op.tiling = def.aicore_.tiling_;
        for (const std::string& config : def.aicore_.configs_) {
            bool seen = false;
            for (const std::string& known : op.aicore_configs) {
                seen = seen || known == config;
            }
            if (!seen) {
                op.aicore_configs.push_back(config);
            }
        }
        return op;
    }
};

int register_op_def(const char* type, ops::OpDef (*make)(const char*)) {
    const ops::OpDef def = make(type);
    RegisteredOp op = OpDefReader::read(def);
    check_registered_op(op);
    auto& ops = op_registry();
    auto found = ops.find(op.type);
    if (found != ops.end()) {
        found->second.problems.push_back("OP_ADD(" + op.type + ") appears more than once");
    } else {
        ops.emplace(op.type, op);
    }
    return 0;
}

int register_tiling_class(const char* op_type, const optiling::TilingDef& prototype) {
    TilingClass tiling;
    tiling.class_name = prototype.GetTilingClassName();
    tiling.data_size = prototype.GetDataSize();
    tiling.fields = prototype.OpgenTwinFields();
    auto& classes = tiling_registry();
    auto found = classes.find(op_type);
    if (found == classes.end()) {
        classes.emplace(op_type, tiling);
    } else if (!same_layout(found->second, tiling)) {
        found->second.problems.push_back("tiling classes " + found->second.class_name + " and " +
                                         tiling.class_name + " both registered for " + op_type);
    }
    return 0;
}

const RegisteredOp* find_op(const std::string& type) {
    const auto& ops = op_registry();
    auto found = ops.find(type);
    return found == ops.end() ? nullptr : &found->second;
}

std::vector<std::string> registered_ops() {
    std::vector<std::string> names;
    for (const auto& entry : op_registry()) {
        names.push_back(entry.first);
    }
    return names;
}

const TilingClass* find_tiling_class(const std::string& op_type) {
    const auto& classes = tiling_registry();
    auto found = classes.find(op_type);
    return found == classes.end() ? nullptr : &found->second;
}

size_t RegisteredOp::column_count() const {
    if (!inputs.empty()) {
        return inputs.front().data_types.size();
    }
    return outputs.empty() ? 0 : outputs.front().data_types.size();
}

const char* param_kind_name(ParamKind kind) {
    switch (kind) {
        case ParamKind::Required:
            return "required";
        case ParamKind::Optional:
            return "optional";
        case ParamKind::Dynamic:
            return "dynamic";
        default:
            return "other";
    }
}

}  // namespace opgen_twin
