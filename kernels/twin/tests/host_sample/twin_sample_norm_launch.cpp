// A trivial stand-in kernel and launch shim for the TwinSampleNorm host tests: plain C++ over
// the GM addresses (float32 only), no AscendC API, so the runner can be tested on its own.
// It reads the tiling bytes through a plain struct, the way a generated kernel does, which also
// checks that the twin's tiling layout is the C struct layout.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "opgen_twin/launch_shim.h"
#include "opgen_twin/runtime.h"

namespace {

struct TwinSampleNormTiling {
    uint32_t rowNum;
    uint32_t colNum;
    uint32_t rowsPerCore;
    float epsilon;
    uint64_t totalLength;
    uint8_t isFloat32;
    uint16_t coreSplit[3];
};
static_assert(sizeof(TwinSampleNormTiling) == 32, "tiling struct size");
static_assert(offsetof(TwinSampleNormTiling, totalLength) == 16, "totalLength offset");
static_assert(offsetof(TwinSampleNormTiling, coreSplit) == 26, "coreSplit offset");

void twin_sample_norm(uint8_t* x, uint8_t* gamma, uint8_t* y, uint8_t* rstd, uint8_t* workspace,
                      uint8_t* tiling) {
    (void)workspace;
    TwinSampleNormTiling t;
    std::memcpy(&t, tiling, sizeof(t));
    if (t.colNum > 1024) {
        opgen_twin::fail("twin_sample_norm", "test kernel limit", "rows above 1024 elements");
    }
    const uint64_t core = static_cast<uint64_t>(opgen_twin::current_core());
    const uint64_t begin = core * t.rowsPerCore;
    const uint64_t end = std::min<uint64_t>(t.rowNum, begin + t.rowsPerCore);
    for (uint64_t row = begin; row < end; ++row) {
        float xs[1024];
        std::memcpy(xs, x + row * t.colNum * sizeof(float), t.colNum * sizeof(float));
        double squares = 0.0;
        for (uint32_t c = 0; c < t.colNum; ++c) {
            squares += static_cast<double>(xs[c]) * xs[c];
        }
        const float r = static_cast<float>(1.0 / std::sqrt(squares / t.colNum + t.epsilon));
        std::memcpy(rstd + row * sizeof(float), &r, sizeof(float));
        for (uint32_t c = 0; c < t.colNum; ++c) {
            float g;
            std::memcpy(&g, gamma + c * sizeof(float), sizeof(float));
            const float v = xs[c] * r * g;
            std::memcpy(y + (row * t.colNum + c) * sizeof(float), &v, sizeof(float));
        }
    }
}

}  // namespace

extern "C" int opgen_twin_kernel_arg_count() { return 6; }

extern "C" void opgen_twin_launch(uint8_t** args) {
    twin_sample_norm(args[0], args[1], args[2], args[3], args[4], args[5]);
}
