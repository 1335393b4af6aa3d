// CPU twin of the graph status codes that op_host functions return. Only the two values
// generated code uses exist here; the numeric values are CANN's, so a status printed by the twin
// means the same as one printed on a real host.
#ifndef OPGEN_TWIN_GRAPH_GE_ERROR_CODES_H
#define OPGEN_TWIN_GRAPH_GE_ERROR_CODES_H

#include <cstdint>

namespace ge {

using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0U;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFU;

}  // namespace ge

#endif
