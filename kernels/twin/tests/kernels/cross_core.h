// Shared by the cross-core tests (pos_sync_all, r15_*): one 64-float tile GM -> UB -> GM per
// call, with the pipes drained around it, so only the cross-core order is in question.
#ifndef OPGEN_TWIN_TESTS_KERNELS_CROSS_CORE_H
#define OPGEN_TWIN_TESTS_KERNELS_CROSS_CORE_H

#include "kernel_operator.h"

namespace cross_core {
using namespace AscendC;

constexpr uint32_t TILE = 64;  // floats
// 16 MiB system workspace (dav_c220 RESERVED_WORKSPACE) + what the tests use after it.
constexpr size_t SYS_WORKSPACE = 16u * 1024 * 1024;

inline void copy_tile(TQue<QuePosition::VECIN, 1>& q, const GlobalTensor<float>& src, uint32_t from,
                      const GlobalTensor<float>& dst, uint32_t to) {
    LocalTensor<float> t = q.AllocTensor<float>();
    DataCopy(t, src[from], TILE);
    q.EnQue(t);
    t = q.DeQue<float>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(dst[to], t, TILE);
    PipeBarrier<PIPE_ALL>();
    q.FreeTensor(t);
}

}  // namespace cross_core

#endif
