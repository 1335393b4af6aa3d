// Twin-only: SoC families and the platform object a TilingContext hands to PlatformAscendC.
#ifndef OPGEN_TWIN_HOST_PLATFORM_H
#define OPGEN_TWIN_HOST_PLATFORM_H

#include <string>

#include "opgen_twin/runtime.h"

namespace opgen_twin {

enum class SocFamily { A2, A3, Ascend310P, Ascend310B, Ascend910, Unknown };

// From a SoC version name such as "Ascend910B2", "Ascend910_9392", "Ascend310P3" (any case).
SocFamily soc_family(const std::string& soc_name);
// The OpDef AddConfig name that covers the family ("ascend910b", "ascend910_93", ...), or "".
const char* compute_unit(SocFamily family);
// Every AddConfig name the twin knows (compute units of CANN 8.1-era op projects).
bool is_known_compute_unit(const std::string& name);

}  // namespace opgen_twin

namespace fe {

// On CANN an opaque platform description; in the twin a snapshot of the SoC the runner models.
class PlatFormInfos {
 public:
    explicit PlatFormInfos(const opgen_twin::SocConfig& soc) : soc_(soc) {}
    const opgen_twin::SocConfig& OpgenTwinSoc() const { return soc_; }

 private:
    opgen_twin::SocConfig soc_;
};

}  // namespace fe

#endif
