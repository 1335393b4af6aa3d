// The runner's command line (see runner_usage for the grammar). All numbers are decimal.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "opgen_twin/host_dtypes.h"
#include "opgen_twin/runner_args.h"

namespace opgen_twin {

namespace {

bool parse_u64(const std::string& text, uint64_t& value) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
        return false;
    }
    errno = 0;
    value = std::strtoull(text.c_str(), nullptr, 10);
    return errno == 0;
}

// "scalar" (a 0-d tensor) or "d0,d1,...".
bool parse_dims(const std::string& text, std::vector<int64_t>& dims) {
    dims.clear();
    if (text == "scalar") {
        return true;
    }
    size_t start = 0;
    while (true) {
        const size_t comma = text.find(',', start);
        const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                                 : comma - start);
        uint64_t dim = 0;
        if (!parse_u64(part, dim) || dim > static_cast<uint64_t>(INT64_MAX)) {
            return false;
        }
        dims.push_back(static_cast<int64_t>(dim));
        if (comma == std::string::npos) {
            return true;
        }
        start = comma + 1;
    }
}

// Splits "a:b:c:rest" into `count` fields; the last field keeps any further ':' (paths, values).
bool split_fields(const std::string& text, size_t count, std::vector<std::string>& fields) {
    fields.clear();
    size_t start = 0;
    for (size_t i = 0; i + 1 < count; ++i) {
        const size_t colon = text.find(':', start);
        if (colon == std::string::npos) {
            return false;
        }
        fields.push_back(text.substr(start, colon - start));
        start = colon + 1;
    }
    fields.push_back(text.substr(start));
    for (size_t i = 0; i + 1 < count; ++i) {
        if (fields[i].empty()) {
            return false;
        }
    }
    return true;
}

bool parse_input(const std::string& text, InputArg& input, std::string& error) {
    std::vector<std::string> fields;
    if (!split_fields(text, 4, fields) || fields[3].empty()) {
        error = "--input wants <name>:<dtype>:<dims>:<path>, got '" + text + "'";
        return false;
    }
    input.tensor.name = fields[0];
    if (!parse_ge_dtype(fields[1], input.tensor.dtype)) {
        error = "--input " + fields[0] + ": unknown dtype '" + fields[1] + "'";
        return false;
    }
    if (!parse_dims(fields[2], input.tensor.dims)) {
        error = "--input " + fields[0] + ": dims must be 'scalar' or decimal numbers " +
                "separated by commas, got '" + fields[2] + "'";
        return false;
    }
    input.path = fields[3];
    return true;
}

bool takes_value(const std::string& option) {
    static const char* const kOptions[] = {"--op",    "--soc",    "--vector-cores",
                                           "--ub-bytes", "--input", "--output",
                                           "--inplace",  "--attr",  "--report"};
    for (const char* known : kOptions) {
        if (option == known) {
            return true;
        }
    }
    return false;
}

}  // namespace

const char* runner_usage() {
    return "usage: runner --op <OpType> --soc <SocVersion> --vector-cores <n> --ub-bytes <n>\n"
           "              --input <name>:<dtype>:<d0,d1,...|scalar>:<path>   (each input, in\n"
           "                                                            declaration order)\n"
           "              --output <name>:<path>      (each output)\n"
           "              [--inplace <input name>]    (an input the kernel writes; written back)\n"
           "              [--attr <name>:<float|int|bool|string>:<value>]\n"
           "              [--plan-only] [--report <path.json>] [--skip-launch-if-empty]\n"
           "       runner --describe-ops\n"
           "dtypes: float16 bfloat16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32\n"
           "        uint64 bool\n";
}

bool parse_runner_args(int argc, char** argv, RunnerArgs& args, std::string& error) {
    bool have_soc = false;
    bool have_cores = false;
    bool have_ub = false;
    for (int i = 1; i < argc; ++i) {
        const std::string option = argv[i];
        auto value = [&](std::string& out) {
            if (i + 1 >= argc) {
                error = option + " needs a value";
                return false;
            }
            out = argv[++i];
            return true;
        };
        std::string text;
        if (option.compare(0, 2, "--") != 0) {
            error = "unexpected argument '" + option + "'";
            return false;
        } else if (option == "--plan-only") {
            args.plan_only = true;
        } else if (option == "--skip-launch-if-empty") {
            args.skip_launch_if_empty = true;
        } else if (option == "--describe-ops") {
            args.describe_ops = true;
        } else if (!takes_value(option)) {
            error = "unknown option '" + option + "'";
            return false;
        } else if (!value(text)) {
            return false;
        } else if (option == "--op") {
            args.op = text;
        } else if (option == "--soc") {
            args.soc.name = text;
            have_soc = true;
        } else if (option == "--vector-cores" || option == "--ub-bytes") {
            uint64_t number = 0;
            if (!parse_u64(text, number) || number == 0) {
                error = option + " wants a positive decimal number, got '" + text + "'";
                return false;
            }
            if (option == "--vector-cores") {
                if (number > 65535) {
                    error = "--vector-cores above 65535";
                    return false;
                }
                args.soc.vector_cores = static_cast<uint32_t>(number);
                have_cores = true;
            } else {
                args.soc.ub_bytes = number;
                have_ub = true;
            }
        } else if (option == "--input") {
            InputArg input;
            if (!parse_input(text, input, error)) {
                return false;
            }
            args.inputs.push_back(input);
        } else if (option == "--output") {
            std::vector<std::string> fields;
            if (!split_fields(text, 2, fields) || fields[1].empty()) {
                error = "--output wants <name>:<path>, got '" + text + "'";
                return false;
            }
            args.outputs.push_back(OutputArg{fields[0], fields[1]});
        } else if (option == "--inplace") {
            args.inplace.push_back(text);
        } else if (option == "--attr") {
            std::vector<std::string> fields;
            if (!split_fields(text, 3, fields)) {
                error = "--attr wants <name>:<type>:<value>, got '" + text + "'";
                return false;
            }
            args.attrs.push_back(AttrArg{fields[0], fields[1], fields[2]});
        } else {  // --report
            args.report_path = text;
        }
    }
    if (args.describe_ops) {
        return true;
    }
    if (args.op.empty() || !have_soc || !have_cores || !have_ub) {
        error = "--op, --soc, --vector-cores and --ub-bytes are required";
        return false;
    }
    return true;
}

void exit_usage(const std::string& message) {
    std::fprintf(stderr, "opgen-twin: usage: %s\n", message.c_str());
    std::exit(EXIT_USAGE);
}

}  // namespace opgen_twin
