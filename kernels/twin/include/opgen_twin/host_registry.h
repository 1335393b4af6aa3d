// Twin-only: what op_host code registered, as plain data. OP_ADD and REGISTER_TILING_DATA_CLASS
// feed this registry when the program starts; tests and the runner read it.
#ifndef OPGEN_TWIN_HOST_REGISTRY_H
#define OPGEN_TWIN_HOST_REGISTRY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/types.h"
#include "opgen_twin/host_attrs.h"
#include "opgen_twin/host_fn_types.h"

namespace ops {
class OpDef;
}
namespace optiling {
class TilingDef;
}

namespace opgen_twin {

enum class ParamKind { Required, Optional, Dynamic, Other };
const char* param_kind_name(ParamKind kind);  // "required", "optional", "dynamic", "other"

struct RegisteredParam {
    std::string name;
    ParamKind param_type = ParamKind::Required;
    std::vector<ge::DataType> data_types;    // one per column
    std::vector<ge::Format> formats;         // one per column (FORMAT_ND when none was given)
    std::vector<ge::Format> unknown_shape_formats;  // as given (may be empty)
    bool auto_contiguous = false;
    bool ignore_contiguous = false;
};

struct RegisteredAttr {
    std::string name;
    bool required = true;     // REQUIRED, or declared without a default and without AttrType
    bool has_default = false;
    AttrValue default_value;  // .kind is the attribute's kind even without a default
};

struct RegisteredOp {
    std::string type;
    std::vector<RegisteredParam> inputs;
    std::vector<RegisteredParam> outputs;
    std::vector<RegisteredAttr> attrs;
    InferShapeFn infer_shape = nullptr;
    InferDataTypeFn infer_data_type = nullptr;
    TilingFn tiling = nullptr;
    std::vector<std::string> aicore_configs;  // AddConfig names, in call order, without repeats
    // Mistakes in the definition (mismatched dtype columns, an OPTIONAL attr without default ...).
    // The runner refuses to run an op that has any.
    std::vector<std::string> problems;

    // Number of dtype columns (the length of every DataType list), 0 if there are no params.
    size_t column_count() const;
};

// How a tiling field's bytes are to be read.
enum class ScalarKind { Signed, Unsigned, Float, Bool };

struct TilingField {
    std::string name;
    std::string c_type;  // as written in TILING_DATA_FIELD_DEF
    ScalarKind kind = ScalarKind::Unsigned;
    size_t offset = 0;
    size_t elem_size = 0;
    size_t count = 1;    // > 1 or array == true for TILING_DATA_FIELD_DEF_ARR
    bool array = false;
};

struct TilingClass {
    std::string class_name;
    size_t data_size = 0;  // bytes, a multiple of 8
    std::vector<TilingField> fields;
    // E.g. two different classes registered for one op type; the runner refuses such an op.
    std::vector<std::string> problems;
};

const RegisteredOp* find_op(const std::string& type);
std::vector<std::string> registered_ops();  // sorted
// The tiling class REGISTER_TILING_DATA_CLASS tied to an op type, or nullptr.
const TilingClass* find_tiling_class(const std::string& op_type);

// Called by the registration macros; not for other code.
int register_op_def(const char* type, ops::OpDef (*make)(const char*));
int register_tiling_class(const char* op_type, const optiling::TilingDef& prototype);

}  // namespace opgen_twin

#endif
