// Twin-only: the runner's JSON documents.
//
// Plan / report (one object):
//   {"op":..., "soc":..., "block_dim":N, "tiling_key":N, "workspace_bytes":N,
//    "tiling_data_bytes":N, "tiling":{"<field>":value or [values], ...},
//    "outputs":[{"name":..., "dtype":..., "shape":[...]}, ...], "launched":bool,
//    "counters":{...}}            ("counters" only after a launch)
// Registry description: {"ops":[{"op":..., "inputs":[...], "outputs":[...], "attrs":[...],
//    "aicore_configs":[...], "problems":[...], "tiling_class":{...} or null}, ...]}
#ifndef OPGEN_TWIN_HOST_REPORT_H
#define OPGEN_TWIN_HOST_REPORT_H

#include <string>

#include "opgen_twin/host_plan.h"

namespace opgen_twin {

// counters_json: the text write_counters_json printed, or nullptr when nothing was launched.
std::string plan_json(const HostPlan& plan, const std::string& soc_name, bool launched,
                      const std::string* counters_json);
std::string describe_ops_json();

}  // namespace opgen_twin

#endif
