// The vector mask register API (CANN 8.1 interface/kernel_common.h): SetVectorMask, ResetMask,
// SetMaskCount, SetMaskNorm. The register decides the lanes of level-0 calls with
// isSetMask = false (runtime_mask.cpp).
#ifndef OPGEN_TWIN_KERNEL_MASK_H
#define OPGEN_TWIN_KERNEL_MASK_H

#include <cstdint>

#include "opgen_twin/kernel/state.h"
#include "opgen_twin/kernel/types.h"

namespace AscendC {

template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow, opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("SetVectorMask", opgen_twin::kern::Pipe::S, here);
    opgen_twin::kern::mask_set("SetVectorMask", maskHigh, maskLow, mode == MaskMode::COUNTER);
}

// Lanes 0..len-1 (normal mode; AscendCUtils::SetMask<T>(len)), or the count in counter mode.
template <typename T, MaskMode mode = MaskMode::NORMAL>
void SetVectorMask(int32_t len, opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("SetVectorMask", opgen_twin::kern::Pipe::S, here);
    if constexpr (mode == MaskMode::COUNTER) {
        opgen_twin::kern::mask_set("SetVectorMask", 0, uint64_t(len), true);
    } else {
        opgen_twin::kern::mask_set_prefix("SetVectorMask", len < 0 ? 0 : uint64_t(len));
    }
}

inline void ResetMask(opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("ResetMask", opgen_twin::kern::Pipe::S, here);
    opgen_twin::kern::mask_set("ResetMask", ~uint64_t(0), ~uint64_t(0), false);
}

inline void SetMaskCount(opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("SetMaskCount", opgen_twin::kern::Pipe::S, here);
    opgen_twin::kern::mask_mode("SetMaskCount", true);
}

inline void SetMaskNorm(opgen_twin::kern::Here here = {}) {
    const opgen_twin::kern::Call twin_call("SetMaskNorm", opgen_twin::kern::Pipe::S, here);
    opgen_twin::kern::mask_mode("SetMaskNorm", false);
}

}  // namespace AscendC

#endif
