// The cost of one call of a generated TilingFunc, on this machine. Linked by benches/tiling.rs
// with the twin's op_host library (kernels/twin/src/host_*.cpp, runtime.cpp) and the generated
// op_host/<stem>.cpp, compiled with -O2 and no sanitizers.
//
// The TilingFunc runs on the host before every launch of the op, so it is on the critical path
// of eager dispatch. The twin's gert contexts and PlatformAscendC are thin views over plain
// structs; CANN's are not, so this measures the generated code plus the twin's accessors.
//
// Usage: tiling_bench <op_type> <min_seconds> <vector_cores> <ub_bytes> name:dtype:d0,d1,... ...
// Prints: "ns_per_call <median of 7 batches> calls <n> block_dim <b> tiling_bytes <t>".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "exe_graph/runtime/tiling_context.h"
#include "opgen_twin/host_call_state.h"
#include "opgen_twin/host_dtypes.h"
#include "opgen_twin/host_plan.h"
#include "opgen_twin/host_platform.h"
#include "opgen_twin/host_registry.h"
#include "opgen_twin/runtime.h"

namespace {

using namespace opgen_twin;

[[noreturn]] void die(const std::string& message) {
    std::fprintf(stderr, "tiling_bench: %s\n", message.c_str());
    std::exit(2);
}

TensorArg parse_input(const std::string& text) {
    const size_t a = text.find(':');
    const size_t b = a == std::string::npos ? a : text.find(':', a + 1);
    if (b == std::string::npos) die("input '" + text + "' is not name:dtype:dims");
    TensorArg arg;
    arg.name = text.substr(0, a);
    if (!parse_ge_dtype(text.substr(a + 1, b - a - 1), arg.dtype)) die("unknown dtype in '" + text + "'");
    std::string dims = text.substr(b + 1);
    if (dims != "scalar") {
        size_t start = 0;
        while (start <= dims.size()) {
            const size_t end = std::min(dims.find(',', start), dims.size());
            arg.dims.push_back(std::strtoll(dims.substr(start, end - start).c_str(), nullptr, 10));
            start = end + 1;
        }
    }
    return arg;
}

HostTensor make_tensor(const RegisteredParam& param, size_t column, ge::DataType dtype,
                       const std::vector<int64_t>& dims) {
    HostTensor tensor;
    tensor.name = param.name;
    tensor.tensor.SetDataType(dtype);
    tensor.tensor.SetOriginFormat(param.formats[column]);
    tensor.tensor.SetStorageFormat(param.formats[column]);
    for (int64_t dim : dims) {
        tensor.tensor.MutableOriginShape().AppendDim(dim);
        tensor.tensor.MutableStorageShape().AppendDim(dim);
    }
    tensor.desc.SetDataType(dtype);
    tensor.desc.SetOriginFormat(param.formats[column]);
    tensor.desc.SetStorageFormat(param.formats[column]);
    return tensor;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6) die("usage: tiling_bench <op_type> <min_seconds> <vector_cores> <ub_bytes> name:dtype:dims ...");
    SocConfig soc_config;
    soc_config.vector_cores = uint32_t(std::strtoul(argv[3], nullptr, 10));
    soc_config.ub_bytes = std::strtoull(argv[4], nullptr, 10);
    set_soc(soc_config);
    const double min_seconds = std::strtod(argv[2], nullptr);

    // Plan once the way the runner does: this checks the request and fills in attrs, output
    // shapes and the reference tiling bytes.
    PlanRequest request;
    request.op_type = argv[1];
    for (int i = 5; i < argc; ++i) request.inputs.push_back(parse_input(argv[i]));
    const PlanResult planned = plan_op(request);
    if (planned.status != PlanStatus::Ok) die("planning failed: " + planned.message);
    const HostPlan& plan = planned.plan;
    const RegisteredOp* op = plan.op;

    size_t column = 0;
    for (size_t c = 0; c < op->column_count(); ++c) {
        bool match = true;
        for (size_t i = 0; i < op->inputs.size(); ++i) match = match && op->inputs[i].data_types[c] == plan.inputs[i].dtype;
        if (match) {
            column = c;
            break;
        }
    }

    HostCallState state;
    state.op_type = op->type;
    state.node_name = op->type;
    for (size_t i = 0; i < op->inputs.size(); ++i) {
        state.inputs.push_back(make_tensor(op->inputs[i], column, plan.inputs[i].dtype, plan.inputs[i].dims));
    }
    for (size_t i = 0; i < op->outputs.size(); ++i) {
        state.outputs.push_back(make_tensor(op->outputs[i], column, plan.outputs[i].dtype, plan.outputs[i].dims));
    }
    state.attr_values = plan.attrs;
    std::vector<uint8_t> buffer(64 * 1024, 0);
    gert::TilingData raw(buffer.data(), buffer.size());
    fe::PlatFormInfos platform(soc());
    state.raw_tiling = &raw;
    state.platform = &platform;
    gert::TilingContext context(&state);

    const auto call = [&] {
        if (op->tiling(&context) != ge::GRAPH_SUCCESS) die("the TilingFunc failed");
    };
    call();
    if (raw.GetDataSize() != plan.tiling.size() ||
        !std::equal(plan.tiling.begin(), plan.tiling.end(), buffer.begin())) {
        die("the benchmark's context gives different tiling bytes than the runner's plan");
    }

    // Batches of n calls, n doubled until a batch takes min_seconds / 7; the median batch wins.
    using clock = std::chrono::steady_clock;
    uint64_t n = 1;
    for (;;) {
        const auto t0 = clock::now();
        for (uint64_t i = 0; i < n; ++i) call();
        const double s = std::chrono::duration<double>(clock::now() - t0).count();
        if (s >= min_seconds / 7.0 || n >= (uint64_t(1) << 34)) break;
        n *= 2;
    }
    std::vector<double> per_call;
    for (int batch = 0; batch < 7; ++batch) {
        const auto t0 = clock::now();
        for (uint64_t i = 0; i < n; ++i) call();
        per_call.push_back(std::chrono::duration<double, std::nano>(clock::now() - t0).count() / double(n));
    }
    std::sort(per_call.begin(), per_call.end());
    std::printf("ns_per_call %.2f calls %llu block_dim %u tiling_bytes %zu\n", per_call[3],
                static_cast<unsigned long long>(n) * 7, state.block_dim, raw.GetDataSize());
    return 0;
}
