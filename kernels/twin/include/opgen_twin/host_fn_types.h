// The three op_host function types an OpDef registers, named once for the twin.
#ifndef OPGEN_TWIN_HOST_FN_TYPES_H
#define OPGEN_TWIN_HOST_FN_TYPES_H

#include "graph/ge_error_codes.h"

namespace gert {
class InferShapeContext;
class InferDataTypeContext;
class TilingContext;
}  // namespace gert

namespace opgen_twin {

using InferShapeFn = ge::graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeFn = ge::graphStatus (*)(gert::InferDataTypeContext*);
using TilingFn = ge::graphStatus (*)(gert::TilingContext*);

}  // namespace opgen_twin

#endif
