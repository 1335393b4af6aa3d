// Twin-only: the runner's dtype names ("float16", "bfloat16", "float32", ...) and element sizes.
#ifndef OPGEN_TWIN_HOST_DTYPES_H
#define OPGEN_TWIN_HOST_DTYPES_H

#include <cstddef>
#include <string>

#include "graph/types.h"

namespace opgen_twin {

// The name of a dtype, or "DT_<number>" for one the twin does not name.
std::string ge_dtype_name(ge::DataType dtype);
// Parses a dtype name; false for an unknown name.
bool parse_ge_dtype(const std::string& name, ge::DataType& dtype);
// Bytes per element of a named dtype (0 for one without a fixed size).
size_t ge_dtype_size(ge::DataType dtype);

}  // namespace opgen_twin

#endif
