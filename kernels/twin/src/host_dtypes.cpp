// Dtype names as the runner's command line and JSON spell them.
#include <string>

#include "opgen_twin/host_dtypes.h"

namespace opgen_twin {

namespace {

struct DtypeName {
    ge::DataType dtype;
    const char* name;
};

const DtypeName kNames[] = {
    {ge::DT_FLOAT16, "float16"}, {ge::DT_BF16, "bfloat16"}, {ge::DT_FLOAT, "float32"},
    {ge::DT_DOUBLE, "float64"},  {ge::DT_INT8, "int8"},     {ge::DT_INT16, "int16"},
    {ge::DT_INT32, "int32"},     {ge::DT_INT64, "int64"},   {ge::DT_UINT8, "uint8"},
    {ge::DT_UINT16, "uint16"},   {ge::DT_UINT32, "uint32"}, {ge::DT_UINT64, "uint64"},
    {ge::DT_BOOL, "bool"},
};

}  // namespace

std::string ge_dtype_name(ge::DataType dtype) {
    for (const DtypeName& entry : kNames) {
        if (entry.dtype == dtype) {
            return entry.name;
        }
    }
    return "DT_" + std::to_string(static_cast<int>(dtype));
}

bool parse_ge_dtype(const std::string& name, ge::DataType& dtype) {
    for (const DtypeName& entry : kNames) {
        if (name == entry.name) {
            dtype = entry.dtype;
            return true;
        }
    }
    return false;
}

size_t ge_dtype_size(ge::DataType dtype) {
    const int size = ge::GetSizeByDataType(dtype);
    return size > 0 ? static_cast<size_t>(size) : 0;
}

}  // namespace opgen_twin
