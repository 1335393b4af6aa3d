// The OpDef builder calls: each one records what it was told. Mistakes that can be seen on the
// spot (a second DataType list for one tensor, two types for one attribute) are noted in the
// record's problems; host_registry.cpp checks the whole definition at OP_ADD time.
#include <string>
#include <vector>

#include "register/op_def.h"

namespace ops {

OpParamDef::OpParamDef(const char* name) : name_(name != nullptr ? name : "") {}

OpParamDef& OpParamDef::ParamType(Option param_type) {
    param_type_ = param_type;
    return *this;
}

OpParamDef& OpParamDef::DataType(std::vector<ge::DataType> types) {
    if (!data_types_.empty()) {
        problems_.push_back("'" + name_ + "': DataType given twice");
    }
    data_types_ = types;
    return *this;
}

OpParamDef& OpParamDef::Format(std::vector<ge::Format> formats) {
    if (!formats_.empty()) {
        problems_.push_back("'" + name_ + "': Format given twice");
    }
    formats_ = formats;
    return *this;
}

OpParamDef& OpParamDef::UnknownShapeFormat(std::vector<ge::Format> formats) {
    unknown_shape_formats_ = formats;
    return *this;
}

OpParamDef& OpParamDef::AutoContiguous() {
    auto_contiguous_ = true;
    return *this;
}

OpParamDef& OpParamDef::IgnoreContiguous() {
    ignore_contiguous_ = true;
    return *this;
}

OpAttrDef::OpAttrDef(const char* name) : name_(name != nullptr ? name : "") {
    value_.name = name_;
}

OpAttrDef& OpAttrDef::AttrType(Option attr_type) {
    attr_type_set_ = true;
    attr_type_ = attr_type;
    return *this;
}

void OpAttrDef::SetKind(opgen_twin::AttrKind kind, bool has_default) {
    if (value_.kind != opgen_twin::AttrKind::None) {
        problems_.push_back("attr '" + name_ + "': type given twice");
    }
    value_.kind = kind;
    has_default_ = has_default;
}

OpAttrDef& OpAttrDef::Bool() {
    SetKind(opgen_twin::AttrKind::Bool, false);
    return *this;
}

OpAttrDef& OpAttrDef::Bool(bool value) {
    SetKind(opgen_twin::AttrKind::Bool, true);
    value_.b = value;
    return *this;
}

OpAttrDef& OpAttrDef::Float() {
    SetKind(opgen_twin::AttrKind::Float, false);
    return *this;
}

OpAttrDef& OpAttrDef::Float(float value) {
    SetKind(opgen_twin::AttrKind::Float, true);
    value_.f = value;
    return *this;
}

OpAttrDef& OpAttrDef::Int() {
    SetKind(opgen_twin::AttrKind::Int, false);
    return *this;
}

OpAttrDef& OpAttrDef::Int(int64_t value) {
    SetKind(opgen_twin::AttrKind::Int, true);
    value_.i = value;
    return *this;
}

OpAttrDef& OpAttrDef::String() {
    SetKind(opgen_twin::AttrKind::String, false);
    return *this;
}

OpAttrDef& OpAttrDef::String(const char* value) {
    SetKind(opgen_twin::AttrKind::String, true);
    if (value == nullptr) {
        problems_.push_back("attr '" + name_ + "': String(nullptr)");
    } else {
        value_.s = value;
    }
    return *this;
}

OpAICoreDef& OpAICoreDef::SetTiling(opgen_twin::TilingFn func) {
    tiling_ = func;
    return *this;
}

OpAICoreDef& OpAICoreDef::AddConfig(const char* soc) {
    configs_.push_back(soc != nullptr ? soc : "");
    return *this;
}

OpDef::OpDef(const char* type) : type_(type != nullptr ? type : "") {}

OpParamDef& OpDef::FindOrAdd(std::deque<OpParamDef>& params, const char* name) {
    const std::string wanted = name != nullptr ? name : "";
    for (OpParamDef& param : params) {
        if (param.name_ == wanted) {
            return param;
        }
    }
    params.emplace_back(wanted.c_str());
    return params.back();
}

OpParamDef& OpDef::Input(const char* name) { return FindOrAdd(inputs_, name); }

OpParamDef& OpDef::Output(const char* name) { return FindOrAdd(outputs_, name); }

OpAttrDef& OpDef::Attr(const char* name) {
    const std::string wanted = name != nullptr ? name : "";
    for (OpAttrDef& attr : attrs_) {
        if (attr.name_ == wanted) {
            return attr;
        }
    }
    attrs_.emplace_back(wanted.c_str());
    return attrs_.back();
}

OpDef& OpDef::SetInferShape(opgen_twin::InferShapeFn func) {
    infer_shape_ = func;
    return *this;
}

OpDef& OpDef::SetInferDataType(opgen_twin::InferDataTypeFn func) {
    infer_data_type_ = func;
    return *this;
}

OpAICoreDef& OpDef::AICore() { return aicore_; }

}  // namespace ops
