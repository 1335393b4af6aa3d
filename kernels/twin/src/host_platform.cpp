// SoC families and PlatformAscendC. Core counts and UB size come from the SoC the runner models;
// the other memory sizes are those of the A2/A3 parts (research/ascendc-api.md section 6.1,
// from CANN 8.1's platform .ini files). A query the twin cannot answer truthfully stops the run
// rather than inventing a number a TilingFunc would then plan with.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>

#include "opgen_twin/host_platform.h"
#include "opgen_twin/runtime.h"
#include "tiling/platform/platform_ascendc.h"

namespace opgen_twin {

namespace {

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

bool starts_with(const std::string& text, const std::string& prefix) {
    return text.compare(0, prefix.size(), prefix) == 0;
}

// "ascend910b" followed by a part number; plain "Ascend910B" is not an A2 part name.
bool has_part_digit(const std::string& name, const std::string& prefix) {
    return name.size() > prefix.size() &&
           std::isdigit(static_cast<unsigned char>(name[prefix.size()])) != 0;
}

const char* const kKnownComputeUnits[] = {"ascend910",  "ascend910b", "ascend910_93",
                                          "ascend310p", "ascend310b", "ascend950",
                                          "kirinx90",   "kirin9030"};

}  // namespace

SocFamily soc_family(const std::string& soc_name) {
    const std::string name = lower(soc_name);
    if (starts_with(name, "ascend910_93")) {
        return SocFamily::A3;
    }
    if (starts_with(name, "ascend910b") && has_part_digit(name, "ascend910b")) {
        return SocFamily::A2;
    }
    if (starts_with(name, "ascend310p") && has_part_digit(name, "ascend310p")) {
        return SocFamily::Ascend310P;
    }
    if (starts_with(name, "ascend310b") && has_part_digit(name, "ascend310b")) {
        return SocFamily::Ascend310B;
    }
    if (name == "ascend910a" || name == "ascend910proa" || name == "ascend910prob" ||
        name == "ascend910premiuma") {
        return SocFamily::Ascend910;
    }
    return SocFamily::Unknown;
}

const char* compute_unit(SocFamily family) {
    switch (family) {
        case SocFamily::A2:
            return "ascend910b";
        case SocFamily::A3:
            return "ascend910_93";
        case SocFamily::Ascend310P:
            return "ascend310p";
        case SocFamily::Ascend310B:
            return "ascend310b";
        case SocFamily::Ascend910:
            return "ascend910";
        default:
            return "";
    }
}

bool is_known_compute_unit(const std::string& name) {
    for (const char* unit : kKnownComputeUnits) {
        if (name == unit) {
            return true;
        }
    }
    return false;
}

}  // namespace opgen_twin

namespace platform_ascendc {

namespace {

const opgen_twin::SocConfig& soc_of(fe::PlatFormInfos* info, const char* api) {
    if (info == nullptr) {
        opgen_twin::fail(api, "null platform info",
                         "construct PlatformAscendC from context->GetPlatformInfo()");
    }
    return info->OpgenTwinSoc();
}

bool split_cores(const opgen_twin::SocConfig& soc) {
    const opgen_twin::SocFamily family = opgen_twin::soc_family(soc.name);
    return family == opgen_twin::SocFamily::A2 || family == opgen_twin::SocFamily::A3;
}

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;

// L2 and HBM sizes of the A2/A3 parts; false for a part whose size the twin does not know.
bool part_memory(const std::string& soc_name, CoreMemType type, uint64_t& size) {
    const std::string name = opgen_twin::lower(soc_name);
    struct Part {
        const char* name;
        uint64_t l2;
        uint64_t hbm;  // 0: not known
    };
    static const Part kParts[] = {
        {"ascend910b1", 192 * kMiB, 64 * kGiB}, {"ascend910b2", 192 * kMiB, 64 * kGiB},
        {"ascend910b2c", 192 * kMiB, 0},        {"ascend910b3", 192 * kMiB, 64 * kGiB},
        {"ascend910b4", 96 * kMiB, 32 * kGiB},  {"ascend910b4-1", 168 * kMiB, 32 * kGiB},
    };
    for (const Part& part : kParts) {
        if (name == part.name) {
            size = type == CoreMemType::L2 ? part.l2 : part.hbm;
            return size != 0;
        }
    }
    if (opgen_twin::soc_family(soc_name) == opgen_twin::SocFamily::A3) {
        size = type == CoreMemType::L2 ? 192 * kMiB : 64 * kGiB;
        return true;
    }
    return false;
}

}  // namespace

uint32_t PlatformAscendC::GetCoreNum() const {
    return soc_of(platformInfo_, "PlatformAscendC::GetCoreNum").vector_cores;
}

uint32_t PlatformAscendC::GetCoreNumAic() const {
    const opgen_twin::SocConfig& soc = soc_of(platformInfo_, "PlatformAscendC::GetCoreNumAic");
    // A2/A3: one cube core per two vector cores. Elsewhere cube and vector share an AI Core.
    return split_cores(soc) ? soc.vector_cores / 2 : soc.vector_cores;
}

uint32_t PlatformAscendC::GetCoreNumAiv() const {
    return soc_of(platformInfo_, "PlatformAscendC::GetCoreNumAiv").vector_cores;
}

uint32_t PlatformAscendC::GetCoreNumVector() const {
    soc_of(platformInfo_, "PlatformAscendC::GetCoreNumVector");
    return 0;
}

uint32_t PlatformAscendC::GetLibApiWorkSpaceSize() const {
    const opgen_twin::SocConfig& soc =
        soc_of(platformInfo_, "PlatformAscendC::GetLibApiWorkSpaceSize");
    if (!split_cores(soc)) {
        opgen_twin::fail("PlatformAscendC::GetLibApiWorkSpaceSize", "SoC not modelled",
                         "the twin knows the system workspace size of A2/A3 parts only, not " +
                             soc.name);
    }
    // 16 MiB: the size reported on A2/A3 parts (observed; not stated in the API reference).
    return static_cast<uint32_t>(16 * kMiB);
}

void PlatformAscendC::GetCoreMemSize(const CoreMemType& memType, uint64_t& size) const {
    const opgen_twin::SocConfig& soc = soc_of(platformInfo_, "PlatformAscendC::GetCoreMemSize");
    if (memType == CoreMemType::UB) {
        size = soc.ub_bytes;
        return;
    }
    if (split_cores(soc)) {
        switch (memType) {
            case CoreMemType::L1:
                size = 512 * kKiB;
                return;
            case CoreMemType::L0_A:
            case CoreMemType::L0_B:
                size = 64 * kKiB;
                return;
            case CoreMemType::L0_C:
                size = 128 * kKiB;
                return;
            case CoreMemType::L2:
            case CoreMemType::HBM:
                if (part_memory(soc.name, memType, size)) {
                    return;
                }
                break;
            default:
                break;
        }
    }
    opgen_twin::fail("PlatformAscendC::GetCoreMemSize", "memory kind not modelled",
                     "CoreMemType " + std::to_string(static_cast<int>(memType)) + " on " +
                         soc.name);
}

SocVersion PlatformAscendC::GetSocVersion() const {
    const opgen_twin::SocConfig& soc = soc_of(platformInfo_, "PlatformAscendC::GetSocVersion");
    switch (opgen_twin::soc_family(soc.name)) {
        case opgen_twin::SocFamily::A2:
        case opgen_twin::SocFamily::A3:
            return SocVersion::ASCEND910B;
        case opgen_twin::SocFamily::Ascend310P:
            return SocVersion::ASCEND310P;
        case opgen_twin::SocFamily::Ascend310B:
            return SocVersion::ASCEND310B;
        case opgen_twin::SocFamily::Ascend910:
            return SocVersion::ASCEND910;
        default:
            return SocVersion::RESERVED_VERSION;
    }
}

}  // namespace platform_ascendc
