// The runner's JSON documents: the plan/report of one run and the description of the registry.
// Tiling bytes are decoded field by field with the layout the tiling class recorded.
#include <cstring>
#include <string>
#include <vector>

#include "opgen_twin/host_dtypes.h"
#include "opgen_twin/host_report.h"
#include "opgen_twin/json_writer.h"

namespace opgen_twin {

namespace {

void write_scalar(JsonWriter& json, const TilingField& field, const uint8_t* bytes) {
    switch (field.kind) {
        case ScalarKind::Float:
            if (field.elem_size == sizeof(float)) {
                float value;
                std::memcpy(&value, bytes, sizeof(value));
                json.float32(value);
            } else {
                double value;
                std::memcpy(&value, bytes, sizeof(value));
                json.float64(value);
            }
            return;
        case ScalarKind::Bool:
            json.boolean(bytes[0] != 0);
            return;
        case ScalarKind::Signed: {
            int64_t value = 0;
            switch (field.elem_size) {
                case 1: { int8_t v; std::memcpy(&v, bytes, 1); value = v; break; }
                case 2: { int16_t v; std::memcpy(&v, bytes, 2); value = v; break; }
                case 4: { int32_t v; std::memcpy(&v, bytes, 4); value = v; break; }
                default: std::memcpy(&value, bytes, 8); break;
            }
            json.integer(value);
            return;
        }
        case ScalarKind::Unsigned: {
            uint64_t value = 0;
            std::memcpy(&value, bytes, field.elem_size);  // little-endian host
            json.uint(value);
            return;
        }
    }
}

void write_tiling(JsonWriter& json, const TilingClass* tiling_class,
                  const std::vector<uint8_t>& bytes) {
    json.begin_object();
    if (tiling_class != nullptr) {
        for (const TilingField& field : tiling_class->fields) {
            json.key(field.name);
            if (field.array) {
                json.begin_array();
                for (size_t i = 0; i < field.count; ++i) {
                    write_scalar(json, field, bytes.data() + field.offset + i * field.elem_size);
                }
                json.end_array();
            } else {
                write_scalar(json, field, bytes.data() + field.offset);
            }
        }
    }
    json.end_object();
}

void write_dims(JsonWriter& json, const std::vector<int64_t>& dims) {
    json.begin_array();
    for (int64_t dim : dims) {
        json.integer(dim);
    }
    json.end_array();
}

void write_param(JsonWriter& json, const RegisteredParam& param) {
    json.begin_object();
    json.key("name").string(param.name);
    json.key("param_type").string(param_kind_name(param.param_type));
    json.key("dtypes").begin_array();
    for (ge::DataType dtype : param.data_types) {
        json.string(ge_dtype_name(dtype));
    }
    json.end_array();
    json.key("formats").begin_array();
    for (ge::Format format : param.formats) {
        json.integer(format);
    }
    json.end_array();
    json.key("auto_contiguous").boolean(param.auto_contiguous);
    json.end_object();
}

void write_attr_value(JsonWriter& json, const AttrValue& value) {
    switch (value.kind) {
        case AttrKind::Bool:
            json.boolean(value.b);
            break;
        case AttrKind::Float:
            json.float32(value.f);
            break;
        case AttrKind::Int:
            json.integer(value.i);
            break;
        case AttrKind::String:
            json.string(value.s);
            break;
        default:
            json.raw("null");
    }
}

void write_tiling_class(JsonWriter& json, const TilingClass* tiling_class) {
    if (tiling_class == nullptr) {
        json.raw("null");
        return;
    }
    json.begin_object();
    json.key("class").string(tiling_class->class_name);
    json.key("bytes").uint(tiling_class->data_size);
    json.key("fields").begin_array();
    for (const TilingField& field : tiling_class->fields) {
        json.begin_object();
        json.key("name").string(field.name);
        json.key("c_type").string(field.c_type);
        json.key("offset").uint(field.offset);
        json.key("elem_size").uint(field.elem_size);
        json.key("count").uint(field.count);
        json.key("array").boolean(field.array);
        json.end_object();
    }
    json.end_array();
    json.end_object();
}

}  // namespace

std::string plan_json(const HostPlan& plan, const std::string& soc_name, bool launched,
                      const std::string* counters_json) {
    JsonWriter json;
    json.begin_object();
    json.key("op").string(plan.op->type);
    json.key("soc").string(soc_name);
    json.key("block_dim").uint(plan.block_dim);
    json.key("tiling_key").uint(plan.tiling_key);
    json.key("workspace_bytes").uint(plan.workspace_bytes);
    json.key("tiling_data_bytes").uint(plan.tiling.size());
    json.key("tiling");
    write_tiling(json, plan.tiling_class, plan.tiling);
    json.key("outputs").begin_array();
    for (const TensorPlan& output : plan.outputs) {
        json.begin_object();
        json.key("name").string(output.name);
        json.key("dtype").string(ge_dtype_name(output.dtype));
        json.key("shape");
        write_dims(json, output.dims);
        json.end_object();
    }
    json.end_array();
    json.key("launched").boolean(launched);
    if (counters_json != nullptr) {
        json.key("counters").raw(*counters_json);
    }
    json.end_object();
    return json.str();
}

std::string describe_ops_json() {
    JsonWriter json;
    json.begin_object();
    json.key("ops").begin_array();
    for (const std::string& name : registered_ops()) {
        const RegisteredOp& op = *find_op(name);
        json.begin_object();
        json.key("op").string(op.type);
        json.key("inputs").begin_array();
        for (const RegisteredParam& input : op.inputs) {
            write_param(json, input);
        }
        json.end_array();
        json.key("outputs").begin_array();
        for (const RegisteredParam& output : op.outputs) {
            write_param(json, output);
        }
        json.end_array();
        json.key("attrs").begin_array();
        for (const RegisteredAttr& attr : op.attrs) {
            json.begin_object();
            json.key("name").string(attr.name);
            json.key("type").string(attr_kind_name(attr.default_value.kind));
            json.key("required").boolean(attr.required);
            json.key("default");
            if (attr.has_default) {
                write_attr_value(json, attr.default_value);
            } else {
                json.raw("null");
            }
            json.end_object();
        }
        json.end_array();
        json.key("aicore_configs").begin_array();
        for (const std::string& config : op.aicore_configs) {
            json.string(config);
        }
        json.end_array();
        json.key("problems").begin_array();
        for (const std::string& problem : op.problems) {
            json.string(problem);
        }
        json.end_array();
        json.key("tiling_class");
        write_tiling_class(json, find_tiling_class(op.type));
        json.end_object();
    }
    json.end_array();
    json.end_object();
    return json.str();
}

}  // namespace opgen_twin
