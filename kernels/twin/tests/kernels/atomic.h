// Shared by the atomic-add tests (pos_atomic_add, r17_*): one tile of T GM -> UB, then a
// copy-out to GM under the caller's atomic mode, with the pipes drained around it, so only the
// atomic semantics and the cross-core order are in question.
#ifndef OPGEN_TWIN_TESTS_KERNELS_ATOMIC_H
#define OPGEN_TWIN_TESTS_KERNELS_ATOMIC_H

#include "kernel_operator.h"

namespace atomic_test {
using namespace AscendC;

constexpr uint32_t TILE_BYTES = 256;
// 16 MiB system workspace (dav_c220 RESERVED_WORKSPACE).
constexpr size_t SYS_WORKSPACE = 16u * 1024 * 1024;

template <typename T>
inline void copy_tile(TQue<QuePosition::VECIN, 1>& q, const GlobalTensor<T>& src, uint32_t from,
                      const GlobalTensor<T>& dst, uint32_t to) {
    constexpr uint32_t n = TILE_BYTES / sizeof(T);
    LocalTensor<T> t = q.AllocTensor<T>();
    DataCopy(t, src[from], n);
    q.EnQue(t);
    t = q.DeQue<T>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(dst[to], t, n);
    PipeBarrier<PIPE_ALL>();
    q.FreeTensor(t);
}

}  // namespace atomic_test

#endif
