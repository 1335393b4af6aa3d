// CPU twin of platform_ascendc::PlatformAscendC, the TilingFunc's view of the SoC. Answers come
// from the SoC the runner was started with (opgen_twin::soc(): name, vector cores, UB bytes).
// Only the queries that CANN 8.1 offers and that tiling code for vector kernels needs exist.
#ifndef OPGEN_TWIN_TILING_PLATFORM_PLATFORM_ASCENDC_H
#define OPGEN_TWIN_TILING_PLATFORM_PLATFORM_ASCENDC_H

#include <cstdint>

namespace fe {
class PlatFormInfos;
}

namespace platform_ascendc {

// Same enumerators and values as CANN 8.1.
enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

// Same enumerators and values as CANN 8.1; A3 (Ascend910_93) parts report ASCEND910B.
enum class SocVersion {
    ASCEND910 = 0,
    ASCEND910B,
    ASCEND310P,
    ASCEND310B,
    RESERVED_VERSION = 99999
};

class PlatformAscendC {
 public:
    PlatformAscendC() = delete;
    ~PlatformAscendC() = default;
    explicit PlatformAscendC(fe::PlatFormInfos* platformInfo) : platformInfo_(platformInfo) {}

    // Vector cores on A2/A3 (cube and vector cores are separate there), AI Cores elsewhere.
    uint32_t GetCoreNum() const;
    uint32_t GetCoreNumAic() const;
    uint32_t GetCoreNumAiv() const;
    // Stand-alone vector cores (an Atlas inference feature): 0 on the SoCs the twin models.
    uint32_t GetCoreNumVector() const;
    uint32_t GetLibApiWorkSpaceSize() const;
    void GetCoreMemSize(const CoreMemType& memType, uint64_t& size) const;
    SocVersion GetSocVersion() const;

 private:
    fe::PlatFormInfos* platformInfo_;
};

}  // namespace platform_ascendc

#endif
