// Twin-only: the runner's command line.
#ifndef OPGEN_TWIN_RUNNER_ARGS_H
#define OPGEN_TWIN_RUNNER_ARGS_H

#include <string>
#include <vector>

#include "opgen_twin/host_plan.h"
#include "opgen_twin/runtime.h"

namespace opgen_twin {

struct InputArg {
    TensorArg tensor;
    std::string path;
};

struct OutputArg {
    std::string name;
    std::string path;
};

struct RunnerArgs {
    std::string op;
    SocConfig soc;
    std::vector<InputArg> inputs;
    std::vector<OutputArg> outputs;
    std::vector<std::string> inplace;
    std::vector<AttrArg> attrs;
    bool plan_only = false;
    bool skip_launch_if_empty = false;
    bool describe_ops = false;
    std::string report_path;
};

// The usage text printed with a usage error.
const char* runner_usage();
// false (and a one-line reason) when the command line is malformed.
bool parse_runner_args(int argc, char** argv, RunnerArgs& args, std::string& error);
// Prints "opgen-twin: usage: <message>" to stderr and exits with EXIT_USAGE.
[[noreturn]] void exit_usage(const std::string& message);

}  // namespace opgen_twin

#endif
