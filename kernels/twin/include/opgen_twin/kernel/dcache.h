// The scalar DataCache's maintenance API (runtime_dcache.cpp models the cache): CANN 8.1
// interface/kernel_common.h and impl/kernel_reg.h (enum values as there). GlobalTensor
// GetValue/SetValue go through the core's DataCache; DMA and the other cores see a SetValue only
// after DataCacheCleanAndInvalid wrote its line back, and a GetValue sees GM bytes changed since
// the line was cached only after it was invalidated.
#ifndef OPGEN_TWIN_KERNEL_DCACHE_H
#define OPGEN_TWIN_KERNEL_DCACHE_H

#include <cstdint>

#include "opgen_twin/kernel/state.h"
#include "opgen_twin/kernel/tensor.h"

namespace AscendC {

enum class CacheLine : uint64_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };

enum class DcciDst : uint64_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

// dcci(dst, entireType, dcciDst): CACHELINE_OUT (GM) and CACHELINE_ALL cover the GM lines.
template <typename T, CacheLine entireType, DcciDst dcciDst>
void DataCacheCleanAndInvalid(const GlobalTensor<T>& dstTensor, opgen_twin::kern::Here here = {}) {
    const bool single = entireType == CacheLine::SINGLE_CACHE_LINE;
    if (single) {
        opgen_twin::kern::gm_operand("DataCacheCleanAndInvalid", "dstTensor", dstTensor.gm_view(),
                                     dstTensor.GetPhyAddr(), 1, "index out of bounds");
    }
    opgen_twin::kern::data_cache_clean_invalid(dstTensor.GetPhyAddr(), !single,
                                               dcciDst == DcciDst::CACHELINE_OUT || dcciDst == DcciDst::CACHELINE_ALL,
                                               here);
}

// dcci(dst, entireType) without a destination (the dav_c200 form, also on dav_c220): taken as
// covering the GM lines (an assumption: the docs do not say which caches it reaches).
template <typename T, CacheLine entireType>
void DataCacheCleanAndInvalid(const GlobalTensor<T>& dstTensor, opgen_twin::kern::Here here = {}) {
    DataCacheCleanAndInvalid<T, entireType, DcciDst::CACHELINE_ALL>(dstTensor, here);
}

}  // namespace AscendC

#endif
