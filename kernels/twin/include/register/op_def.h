// CPU twin of the OpDef builder (ops::OpDef and its parameter, attribute and AI Core parts).
// Every builder call only records what was said; src/host_registry.cpp checks the record when the
// op is registered (OP_ADD) and exposes it through opgen_twin/host_registry.h.
// Only the calls generated op_host code makes are modelled: a call the twin does not know fails
// to compile, which is the signal to model it instead of silently ignoring it.
#ifndef OPGEN_TWIN_REGISTER_OP_DEF_H
#define OPGEN_TWIN_REGISTER_OP_DEF_H

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "graph/ge_error_codes.h"
#include "graph/types.h"
#include "opgen_twin/host_attrs.h"
#include "opgen_twin/host_fn_types.h"

namespace opgen_twin {
struct OpDefReader;
}

namespace ops {

class OpDef;

// Same enumerators and values as CANN's ops::Option.
enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3, VIRTUAL = 4 };

class OpParamDef {
 public:
    explicit OpParamDef(const char* name);
    OpParamDef& ParamType(Option param_type);
    OpParamDef& DataType(std::vector<ge::DataType> types);
    OpParamDef& Format(std::vector<ge::Format> formats);
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format> formats);
    OpParamDef& AutoContiguous();
    OpParamDef& IgnoreContiguous();

 private:
    friend class OpDef;
    friend struct opgen_twin::OpDefReader;
    std::string name_;
    Option param_type_ = REQUIRED;
    std::vector<ge::DataType> data_types_;
    std::vector<ge::Format> formats_;
    std::vector<ge::Format> unknown_shape_formats_;
    bool auto_contiguous_ = false;
    bool ignore_contiguous_ = false;
    std::vector<std::string> problems_;
};

class OpAttrDef {
 public:
    explicit OpAttrDef(const char* name);
    OpAttrDef& AttrType(Option attr_type);
    OpAttrDef& Bool();
    OpAttrDef& Bool(bool value);
    OpAttrDef& Float();
    OpAttrDef& Float(float value);
    OpAttrDef& Int();
    OpAttrDef& Int(int64_t value);
    OpAttrDef& String();
    OpAttrDef& String(const char* value);

 private:
    friend class OpDef;
    friend struct opgen_twin::OpDefReader;
    void SetKind(opgen_twin::AttrKind kind, bool has_default);
    std::string name_;
    bool attr_type_set_ = false;
    Option attr_type_ = REQUIRED;
    bool has_default_ = false;
    opgen_twin::AttrValue value_;
    std::vector<std::string> problems_;
};

class OpAICoreDef {
 public:
    OpAICoreDef& SetTiling(opgen_twin::TilingFn func);
    OpAICoreDef& AddConfig(const char* soc);

 private:
    friend struct opgen_twin::OpDefReader;
    opgen_twin::TilingFn tiling_ = nullptr;
    std::vector<std::string> configs_;
};

class OpDef {
 public:
    explicit OpDef(const char* type);
    // Asking again for a name already declared returns the same parameter (or attribute), so a
    // definition may be built in several statements.
    OpParamDef& Input(const char* name);
    OpParamDef& Output(const char* name);
    OpAttrDef& Attr(const char* name);
    OpDef& SetInferShape(opgen_twin::InferShapeFn func);
    OpDef& SetInferDataType(opgen_twin::InferDataTypeFn func);
    OpAICoreDef& AICore();

 private:
    friend struct opgen_twin::OpDefReader;
    static OpParamDef& FindOrAdd(std::deque<OpParamDef>& params, const char* name);
    std::string type_;
    // deque: references returned by Input/Output/Attr stay valid while more are declared.
    std::deque<OpParamDef> inputs_;
    std::deque<OpParamDef> outputs_;
    std::deque<OpAttrDef> attrs_;
    opgen_twin::InferShapeFn infer_shape_ = nullptr;
    opgen_twin::InferDataTypeFn infer_data_type_ = nullptr;
    OpAICoreDef aicore_;
};

}  // namespace ops

#endif
