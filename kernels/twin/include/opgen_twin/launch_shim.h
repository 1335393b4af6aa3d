// Twin-only: the two functions a per-op launch shim defines for the runner. args holds the GM
// addresses of the inputs (declaration order), then the outputs (declaration order), then the
// workspace, then the tiling data.
#ifndef OPGEN_TWIN_LAUNCH_SHIM_H
#define OPGEN_TWIN_LAUNCH_SHIM_H

#include <cstdint>

extern "C" int opgen_twin_kernel_arg_count();
extern "C" void opgen_twin_launch(uint8_t** args);

#endif
