// Twin-only: the device half of a run. Loads the input files, allocates every GM buffer, runs
// the kernel once per core through the launch shim, checks the guards and writes the outputs
// (and in-place inputs) back to their files.
#ifndef OPGEN_TWIN_RUNNER_LAUNCH_H
#define OPGEN_TWIN_RUNNER_LAUNCH_H

#include <string>

#include "opgen_twin/host_plan.h"
#include "opgen_twin/runner_args.h"

namespace opgen_twin {

struct LaunchOutcome {
    bool launched = false;
    std::string counters_json;  // what write_counters_json printed, when launched
};

// Command-line mistakes (a file of the wrong size, a missing --output) exit with EXIT_USAGE;
// twin rules (block dim out of range, guard damage ...) exit through fail().
LaunchOutcome launch_plan(const RunnerArgs& args, const HostPlan& plan);

}  // namespace opgen_twin

#endif
