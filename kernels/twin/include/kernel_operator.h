// The one header a generated kernel includes. With g++ it resolves to the ascend-opgen CPU twin
// of the AscendC kernel API (kernels/twin/include/opgen_twin/kernel/); with the CANN toolchain the
// real kernel_operator.h is found instead, and the same kernel source compiles against both.
#ifndef OPGEN_TWIN_KERNEL_OPERATOR_H
#define OPGEN_TWIN_KERNEL_OPERATOR_H

#include "opgen_twin/kernel/globals.h"
#include "opgen_twin/kernel/types.h"
#include "opgen_twin/kernel/tensor.h"
#include "opgen_twin/kernel/pipe.h"
#include "opgen_twin/kernel/copy.h"
#include "opgen_twin/kernel/vector.h"
#include "opgen_twin/kernel/cast.h"
#include "opgen_twin/kernel/reduce.h"
#include "opgen_twin/kernel/cmpsel.h"
#include "opgen_twin/kernel/sync.h"
#include "opgen_twin/kernel/dcache.h"
#include "opgen_twin/kernel/mask.h"
#include "opgen_twin/kernel/ext_rotary.h"
#include "opgen_twin/kernel/ext_quant.h"

#endif
