// main() of the twin runner: parse the command line, plan the op with its own host code, then
// (unless --plan-only) run the kernel on the simulated cores and report.
// Exit codes: 0 ok, 2 the op's host code rejected the request, 3 a twin rule was broken,
// 4 the runner was called wrongly (opgen_twin/runtime.h).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "opgen_twin/host_plan.h"
#include "opgen_twin/kernel/perturb.h"
#include "opgen_twin/kernel/profile.h"
#include "opgen_twin/host_report.h"
#include "opgen_twin/runner_args.h"
#include "opgen_twin/runner_launch.h"
#include "opgen_twin/runtime.h"

namespace {

void write_report(const std::string& path, const std::string& json) {
    FILE* file = std::fopen(path.c_str(), "wb");
    bool ok = file != nullptr && std::fputs((json + "\n").c_str(), file) >= 0;
    if (file != nullptr) {
        ok = std::fclose(file) == 0 && ok;
    }
    if (!ok) {
        opgen_twin::exit_usage("cannot write the report '" + path + "'");
    }
}

opgen_twin::PlanRequest request_of(const opgen_twin::RunnerArgs& args) {
    opgen_twin::PlanRequest request;
    request.op_type = args.op;
    for (const opgen_twin::InputArg& input : args.inputs) {
        request.inputs.push_back(input.tensor);
    }
    request.attrs = args.attrs;
    return request;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace opgen_twin;
    if (argc == 1) {
        std::fputs(runner_usage(), stderr);
        return EXIT_USAGE;
    }
    RunnerArgs args;
    std::string error;
    if (!parse_runner_args(argc, argv, args, error)) {
        exit_usage(error);
    }
    if (args.describe_ops) {
        std::printf("%s\n", describe_ops_json().c_str());
        return EXIT_OK;
    }
    set_soc(args.soc);

    const PlanResult result = plan_op(request_of(args));
    switch (result.status) {
        case PlanStatus::Usage:
            exit_usage(result.message);
        case PlanStatus::Rejected:
            std::fprintf(stderr, "opgen-twin: host: %s\n", result.message.c_str());
            return EXIT_HOST_REJECTED;
        case PlanStatus::Rule:
            // twin rule: forwarded (the planner's rule() calls in host_plan.cpp)
            fail(result.rule_api.c_str(), result.rule.c_str(), result.message);
        case PlanStatus::Ok:
            break;
    }

    if (args.plan_only) {
        const std::string json = plan_json(result.plan, args.soc.name, false, nullptr);
        std::printf("%s\n", json.c_str());
        if (!args.report_path.empty()) {
            write_report(args.report_path, json);
        }
        return EXIT_OK;
    }

    // The perturbed-numerics mode (opgen_twin/kernel/perturb.h): OPGEN_TWIN_PERTURB="k[:seed]".
    if (const char* spec = std::getenv("OPGEN_TWIN_PERTURB")) {
        char* end = nullptr;
        const unsigned long k = std::strtoul(spec, &end, 10);
        if (end == spec || k > 1000000 || (*end != '\0' && *end != ':')) {
            exit_usage(std::string("OPGEN_TWIN_PERTURB must be k or k:seed, got '") + spec + "'");
        }
        perturbation().ulps = static_cast<uint32_t>(k);
        perturbation().seed = *end == ':' ? std::strtoull(end + 1, nullptr, 10) : 0;
    }
    // Numeric profiles (opgen_twin/kernel/profile.h): OPGEN_TWIN_PROFILE="ftz", "saturate" or both.
    if (const char* spec = std::getenv("OPGEN_TWIN_PROFILE")) {
        const std::string list = spec;
        size_t start = 0;
        while (start <= list.size()) {
            const size_t comma = list.find(',', start);
            const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            if (item == "ftz") {
                numeric_profile().ftz = true;
            } else if (item == "saturate") {
                numeric_profile().saturate = true;
            } else if (!item.empty()) {
                exit_usage("OPGEN_TWIN_PROFILE takes ftz and/or saturate, comma-separated; got '" + list + "'");
            }
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
    }
    const LaunchOutcome outcome = launch_plan(args, result.plan);
    const std::string json = plan_json(result.plan, args.soc.name, outcome.launched,
                                       outcome.launched ? &outcome.counters_json : nullptr);
    if (args.report_path.empty()) {
        std::printf("%s\n", json.c_str());
    } else {
        write_report(args.report_path, json);
    }
    return EXIT_OK;
}
