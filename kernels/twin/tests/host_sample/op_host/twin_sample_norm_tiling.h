// Hand-written tiling header in the msOpGen style, for the twin's host tests. It must compile
// both against the twin and against a real CANN 8.1 toolkit (run_host_tests.sh checks both).
// The field order deliberately needs padding (totalLength, coreSplit) to exercise the layout.
#ifndef TWIN_SAMPLE_NORM_TILING_H
#define TWIN_SAMPLE_NORM_TILING_H

#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(TwinSampleNormTilingData)
TILING_DATA_FIELD_DEF(uint32_t, rowNum);
TILING_DATA_FIELD_DEF(uint32_t, colNum);
TILING_DATA_FIELD_DEF(uint32_t, rowsPerCore);
TILING_DATA_FIELD_DEF(float, epsilon);
TILING_DATA_FIELD_DEF(uint64_t, totalLength);
TILING_DATA_FIELD_DEF(uint8_t, isFloat32);
TILING_DATA_FIELD_DEF_ARR(uint16_t, 3, coreSplit);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(TwinSampleNorm, TwinSampleNormTilingData)
}  // namespace optiling

#endif
