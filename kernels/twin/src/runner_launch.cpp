// Running a planned op on the simulated cores. GM buffers are allocated in argument order
// (inputs, outputs, workspace, tiling) under their tensor names, so the runtime's messages name
// the tensor a kernel overran.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "opgen_twin/launch_shim.h"
#include "opgen_twin/json_writer.h"
#include "opgen_twin/runner_launch.h"
#include "opgen_twin/runtime.h"
#include "opgen_twin/trace.h"

namespace opgen_twin {

namespace {

constexpr size_t kMinWorkspaceBytes = 32;
constexpr uint32_t kMaxBlockDim = 65535;

std::vector<uint8_t> read_file(const std::string& path, const std::string& what) {
    FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) {
        exit_usage("cannot open " + what + " file '" + path + "'");
    }
    std::vector<uint8_t> bytes;
    uint8_t chunk[1 << 16];
    size_t got = 0;
    while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) {
        bytes.insert(bytes.end(), chunk, chunk + got);
    }
    const bool failed = std::ferror(file) != 0;
    std::fclose(file);
    if (failed) {
        exit_usage("cannot read " + what + " file '" + path + "'");
    }
    return bytes;
}

void write_file(const std::string& path, const uint8_t* bytes, size_t size) {
    FILE* file = std::fopen(path.c_str(), "wb");
    bool ok = file != nullptr;
    if (ok && size > 0) {
        ok = std::fwrite(bytes, 1, size, file) == size;
    }
    if (file != nullptr) {
        ok = std::fclose(file) == 0 && ok;
    }
    if (!ok) {
        exit_usage("cannot write '" + path + "'");
    }
}

bool is_inplace(const RunnerArgs& args, const std::string& name);

// Every output needs exactly one --output, except a ref output (named like an input), which
// needs --inplace of its input (its path: the input's file, written back); every --output and
// --inplace must name a tensor.
std::vector<std::string> output_paths(const RunnerArgs& args, const HostPlan& plan) {
    std::vector<std::string> paths;
    for (const TensorPlan& output : plan.outputs) {
        if (output.ref_input >= 0) {
            if (!is_inplace(args, output.name)) {
                exit_usage("output '" + output.name + "' is input '" + output.name +
                           "' updated in place (a ref output): pass --inplace " + output.name);
            }
            paths.emplace_back();
            continue;
        }
        std::string path;
        for (const OutputArg& arg : args.outputs) {
            if (arg.name == output.name) {
                if (!path.empty()) {
                    exit_usage("--output " + output.name + " given twice");
                }
                path = arg.path;
            }
        }
        if (path.empty()) {
            exit_usage("no --output for output '" + output.name + "'");
        }
        paths.push_back(path);
    }
    for (const OutputArg& arg : args.outputs) {
        bool known = false;
        for (const TensorPlan& output : plan.outputs) {
            known = known || (output.name == arg.name && output.ref_input < 0);
        }
        if (!known) {
            exit_usage("--output " + arg.name + ": " + plan.op->type + " has no such output");
        }
    }
    for (const std::string& name : args.inplace) {
        bool known = false;
        for (const TensorPlan& input : plan.inputs) {
            known = known || input.name == name;
        }
        if (!known) {
            exit_usage("--inplace " + name + ": " + plan.op->type + " has no such input");
        }
    }
    return paths;
}

bool is_inplace(const RunnerArgs& args, const std::string& name) {
    return std::find(args.inplace.begin(), args.inplace.end(), name) != args.inplace.end();
}

// Nothing to compute: every output is empty and some tensor is empty.
bool nothing_to_do(const HostPlan& plan) {
    bool some_empty = false;
    for (const TensorPlan& output : plan.outputs) {
        if (output.elements() != 0) {
            return false;
        }
        some_empty = true;
    }
    for (const TensorPlan& input : plan.inputs) {
        some_empty = some_empty || input.elements() == 0;
    }
    return some_empty;
}

void check_block_dim(const HostPlan& plan) {
    if (!plan.block_dim_set) {
        // twin rule untested: needs a runner built for an op whose TilingFunc skips SetBlockDim (host_registry_test drives the sample op's runner only)
        fail("TilingContext::SetBlockDim", "block dim never set",
             plan.op->type + ": the TilingFunc did not call SetBlockDim");
    }
    if (plan.block_dim < 1 || plan.block_dim > kMaxBlockDim) {
        // twin rule untested: as above, needs a runner for an op whose TilingFunc sets 0 or > 65535
        fail("TilingContext::SetBlockDim", "block dim outside [1, 65535]",
             plan.op->type + ": the TilingFunc set " + std::to_string(plan.block_dim));
    }
}

std::string counters_text() {
    JsonWriter json;
    write_counters(json);
    return json.str();
}

// The byte pattern an output buffer is filled with before the launch (see launch_plan).
uint8_t poison_byte(ge::DataType dtype) {
    switch (dtype) {
        case ge::DT_FLOAT:
        case ge::DT_FLOAT16:
        case ge::DT_BF16:
        case ge::DT_DOUBLE:
            return 0xFF;
        default:
            return 0xA5;
    }
}

}  // namespace

LaunchOutcome launch_plan(const RunnerArgs& args, const HostPlan& plan) {
    const std::vector<std::string> out_paths = output_paths(args, plan);
    std::vector<std::vector<uint8_t>> input_bytes;
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
        const TensorPlan& input = plan.inputs[i];
        input_bytes.push_back(read_file(args.inputs[i].path, "input '" + input.name + "'"));
        if (input_bytes.back().size() != input.bytes()) {
            exit_usage("input '" + input.name + "' file '" + args.inputs[i].path + "' has " +
                       std::to_string(input_bytes.back().size()) + " bytes, its shape and " +
                       "dtype need " + std::to_string(input.bytes()));
        }
    }
    // DataCopyPad's garbage follows the case: a seed from its inputs (FNV-1a over their bytes).
    uint64_t pad_seed = 0xcbf29ce484222325ull;
    for (const std::vector<uint8_t>& bytes : input_bytes) {
        for (const uint8_t b : bytes) pad_seed = (pad_seed ^ b) * 0x100000001b3ull;
    }
    set_pad_seed(pad_seed);

    LaunchOutcome outcome;
    if (args.skip_launch_if_empty && nothing_to_do(plan)) {
        for (const std::string& path : out_paths) {
            if (!path.empty()) write_file(path, nullptr, 0);  // a ref output's input stays as it was
        }
        return outcome;
    }

    check_block_dim(plan);
    const size_t arg_count = plan.inputs.size() + plan.outputs.size() + 2;
    if (opgen_twin_kernel_arg_count() != static_cast<int>(arg_count)) {
        // twin rule untested: needs a runner linked with another op's launch shim (the build links each op with its own)
        fail("runner", "launch shim does not fit the op",
             "the shim takes " + std::to_string(opgen_twin_kernel_arg_count()) + " arguments, " +
                 plan.op->type + " needs " + std::to_string(arg_count));
    }

    // Buffer names must outlive the GM registry, which keeps the pointers.
    std::vector<std::string> names;
    for (const TensorPlan& input : plan.inputs) {
        names.push_back(input.name);
    }
    for (const TensorPlan& output : plan.outputs) {
        names.push_back(output.name);
    }
    names.push_back("workspace");
    names.push_back("tiling");

    std::vector<uint8_t*> args_gm;
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
        uint8_t* gm = gm_alloc(names[args_gm.size()].c_str(), input_bytes[i].size());
        if (!input_bytes[i].empty()) {
            std::memcpy(gm, input_bytes[i].data(), input_bytes[i].size());
        }
        if (is_inplace(args, plan.inputs[i].name)) {
            gm_mark_in_place(gm);  // its bytes are never read after they are written
        }
        args_gm.push_back(gm);
    }
    for (const TensorPlan& output : plan.outputs) {
        if (output.ref_input >= 0) {
            // A ref output is its input's buffer (marked in place above: --inplace is required).
            args_gm.push_back(args_gm[size_t(output.ref_input)]);
            continue;
        }
        uint8_t* gm = gm_alloc(names[args_gm.size()].c_str(), output.bytes());
        // Outputs start poisoned, never zeroed: a skipped write whose expected value is 0 (a
        // zero row, a masked element) would otherwise pass. Float outputs get 0xFF bytes (a NaN
        // in every float width, which the comparison refuses unless NaN is expected); integer
        // outputs get 0xA5 bytes (int8 -91, int32 -1515870811), a value the catalogue's integer
        // outputs (quantised rows, counts) are unlikely to expect at a skipped position.
        std::memset(gm, poison_byte(output.dtype), output.bytes());
        args_gm.push_back(gm);
    }
    // The workspace is scratch with no defined contents on the NPU either.
    const size_t workspace_bytes = std::max(plan.workspace_bytes, kMinWorkspaceBytes);
    uint8_t* workspace = gm_alloc(names[args_gm.size()].c_str(), workspace_bytes);
    std::memset(workspace, 0xFF, workspace_bytes);
    args_gm.push_back(workspace);
    uint8_t* tiling = gm_alloc(names[args_gm.size()].c_str(), plan.tiling.size());
    std::memcpy(tiling, plan.tiling.data(), plan.tiling.size());
    args_gm.push_back(tiling);

    reset_counters();
    // The cores run concurrently (one at a time, switching at SyncAll: runtime.h run_cores).
    run_cores(plan.block_dim, [&] { opgen_twin_launch(args_gm.data()); });
    gm_check_guards();
    trace::write_launch();

    for (size_t i = 0; i < plan.outputs.size(); ++i) {
        if (plan.outputs[i].ref_input < 0) {
            write_file(out_paths[i], args_gm[plan.inputs.size() + i], plan.outputs[i].bytes());
        }
    }
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
        if (is_inplace(args, plan.inputs[i].name)) {
            write_file(args.inputs[i].path, args_gm[i], input_bytes[i].size());
        }
    }
    outcome.launched = true;
    outcome.counters_json = counters_text();
    gm_free_all();
    return outcome;
}

}  // namespace opgen_twin
