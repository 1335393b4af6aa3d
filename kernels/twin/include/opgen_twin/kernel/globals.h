// Global-namespace names a kernel source expects from the AscendC toolchain: address-space
// qualifiers, GM_ADDR, kernel-type markers, the pipe and event enums and the block variables.
// On the NPU these come from the compiler and its stubs; the twin defines them as plain C++.
#ifndef OPGEN_TWIN_KERNEL_GLOBALS_H
#define OPGEN_TWIN_KERNEL_GLOBALS_H

#include <cstdint>

// Address-space qualifiers only steer the NPU compiler; on the CPU all memory is host memory.
#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __inout_pipe__(...)
#define __in_pipe__(...)
#define __out_pipe__(...)

#define GM_ADDR __gm__ uint8_t*

// Only the NPU build's pre-compile scan reads the kernel type; a normal compile sees nothing.
#define KERNEL_TASK_TYPE_DEFAULT(type)

enum KernelMetaType : uint8_t {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE,
    KERNEL_TYPE_MAX,
};

typedef enum {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
    PIPE_MTE4 = 7,
    PIPE_MTE5 = 8,
    PIPE_V2 = 9,
    PIPE_FIX = 10,
} pipe_t;

// A2 (arch 220) has eight hardware event ids per event type.
typedef enum {
    EVENT_ID0 = 0,
    EVENT_ID1,
    EVENT_ID2,
    EVENT_ID3,
    EVENT_ID4,
    EVENT_ID5,
    EVENT_ID6,
    EVENT_ID7,
} event_t;

// Set by opgen_twin::begin_core for the simulated core that is running (defined in runtime.cpp).
extern int64_t block_idx;
extern int64_t block_num;

#endif
