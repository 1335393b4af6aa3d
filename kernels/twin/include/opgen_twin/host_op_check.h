// Twin-only: the checks a registered op definition must pass (the column rule for dtype and
// format lists, unique names, attribute defaults, the three functions, known AddConfig names).
#ifndef OPGEN_TWIN_HOST_OP_CHECK_H
#define OPGEN_TWIN_HOST_OP_CHECK_H

#include "opgen_twin/host_registry.h"

namespace opgen_twin {

// Appends one line per mistake to op.problems; fills missing Format lists with FORMAT_ND.
void check_registered_op(RegisteredOp& op);

}  // namespace opgen_twin

#endif
