// CPU twin of register/op_def_registry.h: the OpDef builder plus OP_ADD, which records the op in
// the twin's registry while the program starts (CANN instead records a factory that its build
// tools call). Including this header alone brings in everything generated op_host code uses
// from the gert and ge namespaces, as the CANN header does.
#ifndef OPGEN_TWIN_REGISTER_OP_DEF_REGISTRY_H
#define OPGEN_TWIN_REGISTER_OP_DEF_REGISTRY_H

#include "opgen_twin/host_registry.h"
#include "register/op_def.h"

// Used inside namespace ops after the op's class: OP_ADD(MyOp); the class name is the op type.
#define OP_ADD(opType, ...)                                                              \
    static int g_opgen_twin_##opType##_added = ::opgen_twin::register_op_def(            \
        #opType, [](const char* name) -> ::ops::OpDef { return opType(name); })

#endif
