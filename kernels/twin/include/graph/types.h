// CPU twin of the ge data-type and format enums. Only the members the twin can model are listed;
// their numeric values are CANN's (graph/types.h of CANN 8.1), because op_host code may store or
// compare them as integers and the tiling data it writes must mean the same on the NPU.
#ifndef OPGEN_TWIN_GRAPH_TYPES_H
#define OPGEN_TWIN_GRAPH_TYPES_H

#include <cstdint>

namespace ge {

using char_t = char;

enum DataType {
    DT_FLOAT = 0,
    DT_FLOAT16 = 1,
    DT_INT8 = 2,
    DT_INT32 = 3,
    DT_UINT8 = 4,
    DT_INT16 = 6,
    DT_UINT16 = 7,
    DT_UINT32 = 8,
    DT_INT64 = 9,
    DT_UINT64 = 10,
    DT_DOUBLE = 11,
    DT_BOOL = 12,
    DT_BF16 = 27,
    DT_UNDEFINED = 28,
};

enum Format {
    FORMAT_NCHW = 0,
    FORMAT_NHWC = 1,
    FORMAT_ND = 2,
    FORMAT_NC1HWC0 = 3,
    FORMAT_FRACTAL_Z = 4,
    FORMAT_NDHWC = 27,
    FORMAT_FRACTAL_NZ = 29,
    FORMAT_NCDHW = 30,
    FORMAT_NC = 35,
    FORMAT_NCL = 47,
};

// Bytes per element, or -1 for a type without a fixed element size (as CANN answers).
inline int GetSizeByDataType(DataType data_type) {
    switch (data_type) {
        case DT_INT8:
        case DT_UINT8:
        case DT_BOOL:
            return 1;
        case DT_FLOAT16:
        case DT_BF16:
        case DT_INT16:
        case DT_UINT16:
            return 2;
        case DT_FLOAT:
        case DT_INT32:
        case DT_UINT32:
            return 4;
        case DT_INT64:
        case DT_UINT64:
        case DT_DOUBLE:
            return 8;
        default:
            return -1;
    }
}

}  // namespace ge

#endif
