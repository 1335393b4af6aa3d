// Tests of the op_host half of the CPU twin: what OP_ADD and REGISTER_TILING_DATA_CLASS
// recorded, the tiling layout, the strictness rules, the planner, and the runner binary.
// Usage: host_registry_test <path of a runner built with host_sample/>  (see run_host_tests.sh)
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "opgen_twin/host_call_state.h"
#include "opgen_twin/host_plan.h"
#include "opgen_twin/host_platform.h"
#include "opgen_twin/host_registry.h"
#include "opgen_twin/host_report.h"
#include "opgen_twin/json_writer.h"
#include "opgen_twin/runtime.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "twin_sample_norm_tiling.h"

namespace {

int g_failures = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            ++g_failures;                                                        \
        }                                                                        \
    } while (0)

#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        const auto& check_a = (a);                                                       \
        const auto& check_b = (b);                                                       \
        if (!(check_a == check_b)) {                                                     \
            std::fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s\n", __FILE__, __LINE__, #a, \
                         #b);                                                            \
            ++g_failures;                                                                \
        }                                                                                \
    } while (0)

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

#define CHECK_CONTAINS(text, part)                                                          \
    do {                                                                                    \
        const std::string check_text = (text);                                              \
        if (!contains(check_text, (part))) {                                                \
            std::fprintf(stderr, "%s:%d: expected to find\n  %s\nin\n  %s\n", __FILE__, __LINE__, \
                         std::string(part).c_str(), check_text.c_str());                   \
            ++g_failures;                                                                   \
        }                                                                                   \
    } while (0)

// Runs fn in a child process and checks that it stops through opgen_twin::fail (exit code
// EXIT_TWIN_RULE) with `expected` in its stderr.
void check_fails(const char* what, const std::function<void()>& fn, const std::string& expected) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) {
        std::perror("pipe");
        std::exit(1);
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid == 0) {
        close(pipe_fds[0]);
        dup2(pipe_fds[1], 2);
        fn();
        _exit(0);
    }
    close(pipe_fds[1]);
    std::string err;
    char buffer[4096];
    ssize_t got = 0;
    while ((got = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) {
        err.append(buffer, static_cast<size_t>(got));
    }
    close(pipe_fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    const bool exited_by_rule = WIFEXITED(status) && WEXITSTATUS(status) == opgen_twin::EXIT_TWIN_RULE;
    if (!exited_by_rule || !contains(err, expected)) {
        std::fprintf(stderr, "check_fails(%s): status %d, stderr:\n%s\nexpected: %s\n", what, status,
                     err.c_str(), expected.c_str());
        ++g_failures;
    }
}

void use_soc(const char* name, uint32_t cores) {
    opgen_twin::SocConfig soc;
    soc.name = name;
    soc.vector_cores = cores;
    soc.ub_bytes = 196608;
    opgen_twin::set_soc(soc);
}

opgen_twin::PlanRequest sample_request(ge::DataType x, ge::DataType gamma,
                                       std::vector<int64_t> dims) {
    opgen_twin::PlanRequest request;
    request.op_type = "TwinSampleNorm";
    request.inputs.push_back({"x", x, dims});
    request.inputs.push_back({"gamma", gamma, {dims.empty() ? 1 : dims.back()}});
    return request;
}

// ---------------------------------------------------------------- registry

void test_registry_contents() {
    const std::vector<std::string> ops = opgen_twin::registered_ops();
    CHECK_EQ(ops, (std::vector<std::string>{"TwinAttrOp", "TwinBadDtypeOp", "TwinBrokenOp",
                                            "TwinRuleOp", "TwinSampleNorm"}));
    CHECK(opgen_twin::find_op("Nope") == nullptr);

    const opgen_twin::RegisteredOp* op = opgen_twin::find_op("TwinSampleNorm");
    CHECK(op != nullptr);
    if (op == nullptr) {
        return;
    }
    CHECK(op->problems.empty());
    CHECK_EQ(op->column_count(), size_t(3));
    CHECK_EQ(op->inputs.size(), size_t(2));
    CHECK_EQ(op->outputs.size(), size_t(2));
    CHECK_EQ(op->inputs[0].name, std::string("x"));
    CHECK_EQ(op->inputs[1].name, std::string("gamma"));
    CHECK_EQ(op->outputs[0].name, std::string("y"));
    CHECK_EQ(op->outputs[1].name, std::string("rstd"));
    CHECK(op->inputs[0].param_type == opgen_twin::ParamKind::Required);
    CHECK(op->inputs[0].auto_contiguous);
    CHECK(!op->inputs[1].auto_contiguous);
    CHECK_EQ(op->inputs[0].data_types,
             (std::vector<ge::DataType>{ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT}));
    CHECK_EQ(op->outputs[1].data_types,
             (std::vector<ge::DataType>{ge::DT_FLOAT, ge::DT_FLOAT, ge::DT_FLOAT}));
    CHECK_EQ(op->inputs[0].formats.size(), size_t(3));
    CHECK_EQ(op->inputs[0].unknown_shape_formats.size(), size_t(3));
    CHECK_EQ(op->attrs.size(), size_t(1));
    CHECK_EQ(op->attrs[0].name, std::string("epsilon"));
    CHECK(!op->attrs[0].required);
    CHECK(op->attrs[0].has_default);
    CHECK(op->attrs[0].default_value.kind == opgen_twin::AttrKind::Float);
    CHECK_EQ(op->attrs[0].default_value.f, 1e-6f);
    CHECK(op->infer_shape != nullptr);
    CHECK(op->infer_data_type != nullptr);
    CHECK(op->tiling != nullptr);
    CHECK_EQ(op->aicore_configs, (std::vector<std::string>{"ascend910b", "ascend910_93"}));

    const opgen_twin::RegisteredOp* attr_op = opgen_twin::find_op("TwinAttrOp");
    CHECK(attr_op != nullptr && attr_op->problems.empty());
    if (attr_op != nullptr) {
        CHECK_EQ(attr_op->aicore_configs, std::vector<std::string>{"ascend910b"});
        CHECK(attr_op->attrs[0].required && !attr_op->attrs[0].has_default);
        CHECK(attr_op->attrs[1].default_value.kind == opgen_twin::AttrKind::String);
        CHECK_EQ(attr_op->attrs[1].default_value.s, std::string("half"));
        CHECK(!attr_op->attrs[3].required);  // a default without AttrType makes it optional
        CHECK(attr_op->inputs[0].formats ==
              (std::vector<ge::Format>{ge::FORMAT_ND, ge::FORMAT_ND}));  // filled in
    }
}

void test_registry_problems() {
    const opgen_twin::RegisteredOp* op = opgen_twin::find_op("TwinBrokenOp");
    CHECK(op != nullptr);
    if (op == nullptr) {
        return;
    }
    std::string all;
    for (const std::string& problem : op->problems) {
        all += problem + "\n";
    }
    CHECK_CONTAINS(all, "name 'y' is declared more than once");
    CHECK_CONTAINS(all, "ref output 'x' (named like an input: updated in place) has another DataType list than input 'x'");
    CHECK_CONTAINS(all, "DataType lists differ in length: 'x' has 2, 'y' has 1");
    CHECK_CONTAINS(all, "'x': Format list length 1 differs from its DataType list length 2");
    CHECK_CONTAINS(all, "attr 'alpha': OPTIONAL without a default value");
    CHECK_CONTAINS(all, "attr 'beta' has no type");
    CHECK_CONTAINS(all, "attr 'gamma': type given twice");
    CHECK_CONTAINS(all, "SetInferShape was not called");
    CHECK_CONTAINS(all, "SetInferDataType was not called");
    CHECK_CONTAINS(all, "AICore().SetTiling was not called");
    CHECK_CONTAINS(all, "AddConfig(\"ascend910c\") names no known compute unit");

    use_soc("Ascend910B2", 48);
    opgen_twin::PlanRequest request;
    request.op_type = "TwinBrokenOp";
    const opgen_twin::PlanResult result = opgen_twin::plan_op(request);
    CHECK(result.status == opgen_twin::PlanStatus::Rule);
    CHECK_EQ(result.rule, std::string("definition rejected"));
    CHECK_CONTAINS(result.message, "TwinBrokenOp: attr 'alpha': OPTIONAL without a default value; ");
    CHECK_CONTAINS(result.message, "; name 'y' is declared more than once; ");
}

// ---------------------------------------------------------------- tiling data

void test_tiling_layout() {
    const opgen_twin::TilingClass* tiling = opgen_twin::find_tiling_class("TwinSampleNorm");
    CHECK(tiling != nullptr);
    if (tiling == nullptr) {
        return;
    }
    CHECK(tiling->problems.empty());  // this file includes the header too: same class, no clash
    CHECK_EQ(tiling->class_name, std::string("TwinSampleNormTilingData"));
    CHECK_EQ(tiling->data_size, size_t(32));
    const char* names[] = {"rowNum", "colNum", "rowsPerCore", "epsilon",
                           "totalLength", "isFloat32", "coreSplit"};
    const size_t offsets[] = {0, 4, 8, 12, 16, 24, 26};
    const size_t sizes[] = {4, 4, 4, 4, 8, 1, 2};
    CHECK_EQ(tiling->fields.size(), size_t(7));
    for (size_t i = 0; i < tiling->fields.size() && i < 7; ++i) {
        CHECK_EQ(tiling->fields[i].name, std::string(names[i]));
        CHECK_EQ(tiling->fields[i].offset, offsets[i]);
        CHECK_EQ(tiling->fields[i].elem_size, sizes[i]);
    }
    CHECK_EQ(tiling->fields[3].c_type, std::string("float"));
    CHECK(tiling->fields[3].kind == opgen_twin::ScalarKind::Float);
    CHECK(tiling->fields[6].array && tiling->fields[6].count == 3);
    CHECK(opgen_twin::find_tiling_class("TwinBadDtypeOp") == nullptr);

    optiling::TwinSampleNormTilingData data;
    CHECK_EQ(data.GetDataSize(), size_t(32));
    CHECK_EQ(std::string(data.GetTilingClassName()), std::string("TwinSampleNormTilingData"));
    CHECK_EQ(data.get_rowNum(), 0u);  // fields start at zero
    data.set_rowNum(7);
    data.set_epsilon(0.25f);
    data.set_totalLength(0x1122334455667788ULL);
    uint16_t split[3] = {1, 2, 3};
    data.set_coreSplit(split);
    CHECK_EQ(data.get_rowNum(), 7u);
    CHECK_EQ(data.get_epsilon(), 0.25f);
    CHECK_EQ(data.get_coreSplit()[2], uint16_t(3));
    uint8_t bytes[32];
    std::memset(bytes, 0xEE, sizeof(bytes));
    data.SaveToBuffer(bytes, sizeof(bytes));
    uint32_t row_num = 0;
    uint64_t total = 0;
    uint16_t third = 0;
    std::memcpy(&row_num, bytes + 0, 4);
    std::memcpy(&total, bytes + 16, 8);
    std::memcpy(&third, bytes + 30, 2);
    CHECK_EQ(row_num, 7u);
    CHECK_EQ(total, 0x1122334455667788ULL);
    CHECK_EQ(third, uint16_t(3));
    CHECK_EQ(bytes[20 + 5], uint8_t(0));  // padding after isFloat32 is zero, not left over

    check_fails("SaveToBuffer too small", [] {
        optiling::TwinSampleNormTilingData small;
        uint8_t buffer[16];
        small.SaveToBuffer(buffer, sizeof(buffer));
    }, "opgen-twin: host: TilingDef::SaveToBuffer: tiling data larger than the buffer: class "
       "TwinSampleNormTilingData needs 32 bytes, capacity 16");
    check_fails("SetDataSize above capacity", [] {
        uint8_t buffer[16];
        gert::TilingData raw(buffer, sizeof(buffer));
        raw.SetDataSize(17);
    }, "TilingData::SetDataSize: tiling data larger than the buffer");
}

// ---------------------------------------------------------------- strictness of gert types

void test_shape_rules() {
    gert::Shape shape{2, 3};
    CHECK_EQ(shape.GetDimNum(), size_t(2));
    CHECK_EQ(shape.GetShapeSize(), int64_t(6));
    shape.AppendDim(4);
    CHECK_EQ(shape.GetDim(2), int64_t(4));
    gert::Shape copy = shape;
    CHECK(copy == shape);
    copy.SetDim(0, 5);
    CHECK(copy != shape);
    gert::Shape scalar;
    CHECK(scalar.IsScalar());
    CHECK_EQ(scalar.GetShapeSize(), int64_t(1));
    check_fails("GetDim past the rank", [] {
        gert::Shape s{2, 3};
        (void)s.GetDim(2);
    }, "Shape::GetDim: dim index not below GetDimNum(): index 2, rank 2");
    check_fails("SetDim on an empty shape", [] {
        gert::Shape s;
        s.SetDim(0, 1);
    }, "Shape::SetDim: dim index not below GetDimNum()");
    check_fails("rank 26", [] {
        gert::Shape s;
        s.SetDimNum(26);
    }, "Shape::SetDimNum: rank above 25");
}

void test_context_rules() {
    use_soc("Ascend910B2", 48);
    check_fails("input index", [] {
        opgen_twin::HostCallState state;
        state.inputs.resize(2);
        gert::TilingContext context(&state);
        (void)context.GetInputShape(2);
    }, "TilingContext::GetInputShape: input index out of range: index 2, the op has 2 inputs");
    check_fails("workspace count", [] {
        opgen_twin::HostCallState state;
        gert::TilingContext context(&state);
        (void)context.GetWorkspaceSizes(2);
    }, "GetWorkspaceSizes: workspace count other than 1");
    check_fails("attr C type", [] {
        opgen_twin::HostCallState state;
        opgen_twin::AttrValue value;
        value.name = "epsilon";
        value.kind = opgen_twin::AttrKind::Float;
        state.attr_values.push_back(value);
        (void)state.attrs.GetAttrPointer<int64_t>(0);
    }, "RuntimeAttrs::GetAttrPointer: attr read with the wrong C type: attr 0 'epsilon' is "
       "float, read as int64_t");
    check_fails("attr C type int", [] {
        opgen_twin::HostCallState state;
        opgen_twin::AttrValue value;
        value.name = "count";
        value.kind = opgen_twin::AttrKind::Int;
        state.attr_values.push_back(value);
        (void)state.attrs.GetAttrPointer<int>(0);
    }, "attr read with the wrong C type: attr 0 'count' is int, read as a type no attribute has");
    check_fails("attr index", [] {
        opgen_twin::HostCallState state;
        (void)state.attrs.GetFloat(0);
    }, "attr index out of range: index 0, the op has 0 attrs");
    check_fails("null platform", [] {
        platform_ascendc::PlatformAscendC platform(nullptr);
        (void)platform.GetCoreNum();
    }, "PlatformAscendC::GetCoreNum: null platform info");
    check_fails("output index", [] {
        opgen_twin::HostCallState state;
        state.outputs.resize(1);
        gert::TilingContext context(&state);
        (void)context.GetOutputShape(1);
    }, "TilingContext::GetOutputShape: output index out of range: index 1, the op has 1 outputs");
    check_fails("SaveToBuffer null", [] {
        optiling::TwinSampleNormTilingData data;
        data.SaveToBuffer(nullptr, 64);
    }, "TilingDef::SaveToBuffer: null buffer: class TwinSampleNormTilingData");
    check_fails("store from null", [] {
        optiling::TwinSampleNormTilingData data;
        data.set_coreSplit(nullptr);
    }, "TilingDef::set_: null source");
}

void test_platform() {
    opgen_twin::SocConfig soc;
    soc.name = "Ascend910B3";
    soc.vector_cores = 40;
    soc.ub_bytes = 196608;
    fe::PlatFormInfos info(soc);
    platform_ascendc::PlatformAscendC platform(&info);
    CHECK_EQ(platform.GetCoreNum(), 40u);
    CHECK_EQ(platform.GetCoreNumAiv(), 40u);
    CHECK_EQ(platform.GetCoreNumAic(), 20u);
    CHECK_EQ(platform.GetCoreNumVector(), 0u);
    CHECK(platform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND910B);
    uint64_t size = 0;
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, size);
    CHECK_EQ(size, uint64_t(196608));
    platform.GetCoreMemSize(platform_ascendc::CoreMemType::L2, size);
    CHECK_EQ(size, uint64_t(192) * 1024 * 1024);
    CHECK_EQ(platform.GetLibApiWorkSpaceSize(), 16u * 1024 * 1024);

    CHECK(opgen_twin::soc_family("Ascend910_9392") == opgen_twin::SocFamily::A3);
    CHECK(opgen_twin::soc_family("ascend910b4-1") == opgen_twin::SocFamily::A2);
    CHECK(opgen_twin::soc_family("Ascend910B") == opgen_twin::SocFamily::Unknown);
    CHECK(opgen_twin::soc_family("Ascend310P3") == opgen_twin::SocFamily::Ascend310P);
    check_fails("L2 of an unknown part size", [] {
        opgen_twin::SocConfig other;
        other.name = "Ascend310P3";
        fe::PlatFormInfos other_info(other);
        platform_ascendc::PlatformAscendC p(&other_info);
        uint64_t l2 = 0;
        p.GetCoreMemSize(platform_ascendc::CoreMemType::L2, l2);
    }, "PlatformAscendC::GetCoreMemSize: memory kind not modelled: CoreMemType 4 on Ascend310P3");
    check_fails("system workspace of a 310P", [] {
        opgen_twin::SocConfig other;
        other.name = "Ascend310P3";
        fe::PlatFormInfos other_info(other);
        platform_ascendc::PlatformAscendC p(&other_info);
        (void)p.GetLibApiWorkSpaceSize();
    }, "PlatformAscendC::GetLibApiWorkSpaceSize: SoC not modelled");
}

// ---------------------------------------------------------------- planner

const char* const kSamplePlan =
    "{\"op\":\"TwinSampleNorm\",\"soc\":\"Ascend910B2\",\"block_dim\":5,\"tiling_key\":1,"
    "\"workspace_bytes\":4096,\"tiling_data_bytes\":32,\"tiling\":{\"rowNum\":5,\"colNum\":40,"
    "\"rowsPerCore\":1,\"epsilon\":1e-06,\"totalLength\":200,\"isFloat32\":1,"
    "\"coreSplit\":[5,1,1]},\"outputs\":[{\"name\":\"y\",\"dtype\":\"float32\",\"shape\":[5,40]},"
    "{\"name\":\"rstd\",\"dtype\":\"float32\",\"shape\":[5,1]}],\"launched\":false}";

void test_plan_ok() {
    use_soc("Ascend910B2", 48);
    opgen_twin::PlanResult result =
        opgen_twin::plan_op(sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {5, 40}));
    CHECK(result.status == opgen_twin::PlanStatus::Ok);
    CHECK_EQ(result.message, std::string());
    CHECK_EQ(opgen_twin::plan_json(result.plan, "Ascend910B2", false, nullptr),
             std::string(kSamplePlan));
    CHECK_EQ(result.plan.outputs[1].bytes(), size_t(20));

    // fp16 column: y follows x, rstd stays fp32; the key tells the dtypes apart.
    result = opgen_twin::plan_op(sample_request(ge::DT_FLOAT16, ge::DT_FLOAT16, {2, 3, 8}));
    CHECK(result.status == opgen_twin::PlanStatus::Ok);
    CHECK(result.plan.outputs[0].dtype == ge::DT_FLOAT16);
    CHECK(result.plan.outputs[1].dtype == ge::DT_FLOAT);
    CHECK_EQ(result.plan.outputs[1].dims, (std::vector<int64_t>{2, 3, 1}));
    CHECK_EQ(result.plan.tiling_key, uint64_t(2));
    CHECK_EQ(result.plan.block_dim, 6u);

    // Fewer cores than rows: several rows per core.
    use_soc("Ascend910_9392", 4);
    result = opgen_twin::plan_op(sample_request(ge::DT_BF16, ge::DT_BF16, {10, 16}));
    CHECK(result.status == opgen_twin::PlanStatus::Ok);
    CHECK_CONTAINS(opgen_twin::plan_json(result.plan, "Ascend910_9392", false, nullptr),
                   "\"block_dim\":4,\"tiling_key\":2");
    CHECK_CONTAINS(opgen_twin::plan_json(result.plan, "Ascend910_9392", false, nullptr),
                   "\"rowsPerCore\":3,\"epsilon\":1e-06,\"totalLength\":160,\"isFloat32\":0,"
                   "\"coreSplit\":[4,3,1]");

    // An attr given on the request overrides the default.
    use_soc("Ascend910B2", 48);
    opgen_twin::PlanRequest request = sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {5, 40});
    request.attrs.push_back({"epsilon", "float", "0.5"});
    result = opgen_twin::plan_op(request);
    CHECK_CONTAINS(opgen_twin::plan_json(result.plan, "Ascend910B2", false, nullptr),
                   "\"epsilon\":0.5,");

    // Empty rows: the TilingFunc plans block dim 0; planning itself succeeds.
    result = opgen_twin::plan_op(sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {0, 40}));
    CHECK(result.status == opgen_twin::PlanStatus::Ok);
    CHECK_EQ(result.plan.block_dim, 0u);
    CHECK(result.plan.block_dim_set);
}

void test_plan_attrs() {
    use_soc("Ascend910B2", 48);
    opgen_twin::PlanRequest request;
    request.op_type = "TwinAttrOp";
    request.inputs.push_back({"x", ge::DT_INT32, {3}});
    opgen_twin::PlanResult result = opgen_twin::plan_op(request);
    CHECK(result.status == opgen_twin::PlanStatus::Usage);
    CHECK_EQ(result.message, std::string("required attr 'count' (int) not given"));

    request.attrs.push_back({"count", "int", "-42"});
    request.attrs.push_back({"flag", "bool", "true"});
    result = opgen_twin::plan_op(request);
    CHECK(result.status == opgen_twin::PlanStatus::Ok);
    CHECK_EQ(result.plan.workspace_bytes, size_t(0));
    CHECK_CONTAINS(opgen_twin::plan_json(result.plan, "Ascend910B2", false, nullptr),
                   "\"tiling_data_bytes\":32,\"tiling\":{\"flag\":1,\"count\":-42,\"scale\":2,"
                   "\"modeIsHalf\":true,\"minusOne\":-1}");

    request.attrs.push_back({"mode", "string", "interleave"});
    request.attrs.push_back({"scale", "float", "-0.125"});
    result = opgen_twin::plan_op(request);
    CHECK_CONTAINS(opgen_twin::plan_json(result.plan, "Ascend910B2", false, nullptr),
                   "\"scale\":-0.125,\"modeIsHalf\":false");

    request.attrs.push_back({"scale", "float", "1"});
    CHECK_EQ(opgen_twin::plan_op(request).message, std::string("attr 'scale' given twice"));
    request.attrs.pop_back();
    request.attrs.push_back({"nope", "int", "1"});
    CHECK_EQ(opgen_twin::plan_op(request).message,
             std::string("TwinAttrOp has no attr 'nope' (attrs: count, mode, flag, scale)"));
    request.attrs.pop_back();
    request.attrs[0] = {"count", "float", "1"};
    CHECK_EQ(opgen_twin::plan_op(request).message,
             std::string("attr 'count' is int, given as 'float'"));
    request.attrs[0] = {"count", "int", "1.5"};
    CHECK_EQ(opgen_twin::plan_op(request).message, std::string("attr 'count': '1.5' is not a int"));
}

void test_plan_rejections() {
    use_soc("Ascend910B2", 48);
    opgen_twin::PlanResult result =
        opgen_twin::plan_op(sample_request(ge::DT_FLOAT16, ge::DT_FLOAT, {5, 40}));
    CHECK(result.status == opgen_twin::PlanStatus::Rejected);
    CHECK_EQ(result.message,
             std::string("TwinSampleNorm: input dtypes (float16, float32) are not registered; "
                         "(x, gamma) accepts (float16, float16), (bfloat16, bfloat16), "
                         "(float32, float32)"));

    result = opgen_twin::plan_op(sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {2, 20000}));
    CHECK(result.status == opgen_twin::PlanStatus::Rejected);
    CHECK_EQ(result.message, std::string("TwinSampleNorm: TilingFunc returned GRAPH_FAILED"));

    result = opgen_twin::plan_op(sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {}));
    CHECK(result.status == opgen_twin::PlanStatus::Rejected);
    CHECK_EQ(result.message, std::string("TwinSampleNorm: TilingFunc returned GRAPH_FAILED"));

    opgen_twin::PlanRequest request = sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {5, 40});
    request.op_type = "Nope";
    result = opgen_twin::plan_op(request);
    CHECK(result.status == opgen_twin::PlanStatus::Usage);
    CHECK_EQ(result.message, std::string("unknown op 'Nope'; registered ops: TwinAttrOp, "
                                         "TwinBadDtypeOp, TwinBrokenOp, TwinRuleOp, TwinSampleNorm"));

    request = sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {5, 40});
    request.inputs[1].name = "weight";
    CHECK_EQ(opgen_twin::plan_op(request).message,
             std::string("input 1 of TwinSampleNorm is 'gamma', got 'weight'"));
    request.inputs.pop_back();
    CHECK_EQ(opgen_twin::plan_op(request).message,
             std::string("TwinSampleNorm takes 2 inputs (x, gamma), got 1"));

    use_soc("Ascend310P3", 8);
    result = opgen_twin::plan_op(sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {5, 40}));
    CHECK(result.status == opgen_twin::PlanStatus::Rejected);
    CHECK_EQ(result.message, std::string("TwinSampleNorm: no AICore config for ascend310p "
                                         "(Ascend310P3); AddConfig was called for: ascend910b, "
                                         "ascend910_93"));
    use_soc("Ascend999", 8);
    result = opgen_twin::plan_op(sample_request(ge::DT_FLOAT, ge::DT_FLOAT, {5, 40}));
    CHECK(result.status == opgen_twin::PlanStatus::Usage);

    use_soc("Ascend910B2", 48);
    request = opgen_twin::PlanRequest();
    request.op_type = "TwinBadDtypeOp";
    request.inputs.push_back({"x", ge::DT_FLOAT, {4}});
    result = opgen_twin::plan_op(request);
    CHECK(result.status == opgen_twin::PlanStatus::Rule);
    CHECK_EQ(result.rule_api, std::string("InferDataType"));
    CHECK_EQ(result.rule, std::string("output dtypes match no registered column"));
    CHECK_EQ(result.message, std::string("TwinBadDtypeOp chose (int32) for (y); registered "
                                         "(x, y): (float32, float32)"));

    // TwinRuleOp makes the mistake its attr names: each planner rule stops the plan.
    const auto mistake = [](int n) {
        opgen_twin::PlanRequest r;
        r.op_type = "TwinRuleOp";
        r.inputs.push_back({"x", ge::DT_FLOAT, {4, 8}});
        r.attrs.push_back({"mistake", "int", std::to_string(n)});
        return opgen_twin::plan_op(r);
    };
    CHECK(mistake(0).status == opgen_twin::PlanStatus::Ok);
    result = mistake(1);
    CHECK(result.status == opgen_twin::PlanStatus::Rule);
    CHECK_EQ(result.rule, std::string("negative output dim"));
    CHECK_EQ(result.message, std::string("TwinRuleOp gave output 'y' dim 0 = -1"));
    result = mistake(2);
    CHECK_EQ(result.rule, std::string("output dtype not set"));
    result = mistake(3);
    CHECK_EQ(result.rule, std::string("output too large"));
    result = mistake(4);
    CHECK_EQ(result.rule, std::string("no tiling data"));
    result = mistake(5);
    CHECK_EQ(result.rule, std::string("tiling data size differs from its class"));
    CHECK_EQ(result.message, std::string("TwinRuleOp: 16 bytes declared, TwinRuleOpTilingData has 8"));
}

void test_describe() {
    const std::string json = opgen_twin::describe_ops_json();
    CHECK_CONTAINS(json, "{\"op\":\"TwinSampleNorm\",\"inputs\":[{\"name\":\"x\","
                         "\"param_type\":\"required\",\"dtypes\":[\"float16\",\"bfloat16\","
                         "\"float32\"],\"formats\":[2,2,2],\"auto_contiguous\":true}");
    CHECK_CONTAINS(json, "\"attrs\":[{\"name\":\"epsilon\",\"type\":\"float\",\"required\":false,"
                         "\"default\":1e-06}],\"aicore_configs\":[\"ascend910b\","
                         "\"ascend910_93\"],\"problems\":[],\"tiling_class\":{\"class\":"
                         "\"TwinSampleNormTilingData\",\"bytes\":32,\"fields\":[{\"name\":"
                         "\"rowNum\",\"c_type\":\"uint32_t\",\"offset\":0,\"elem_size\":4,"
                         "\"count\":1,\"array\":false}");
    CHECK_CONTAINS(json, "\"name\":\"count\",\"type\":\"int\",\"required\":true,\"default\":null");
    CHECK_CONTAINS(json, "\"tiling_class\":null");
}

void test_json_writer() {
    opgen_twin::JsonWriter json;
    json.begin_object();
    json.key("a").float32(0.1f);
    json.key("b").float32(std::nanf(""));
    json.key("c").float32(-INFINITY);
    json.key("d").float64(0.1);
    json.key("e").string("q\"b\\n\n\x01");
    json.key("f").begin_array().integer(-1).uint(18446744073709551615ULL).boolean(true).end_array();
    json.key("g").begin_object().end_object();
    json.end_object();
    CHECK_EQ(json.str(), std::string("{\"a\":0.1,\"b\":\"nan\",\"c\":\"-inf\",\"d\":0.1,"
                                     "\"e\":\"q\\\"b\\\\n\\n\\u0001\",\"f\":[-1,"
                                     "18446744073709551615,true],\"g\":{}}"));
}

// ---------------------------------------------------------------- runner binary

struct RunResult {
    int code = -1;
    std::string out;
    std::string err;
};

std::string read_text(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

void write_floats(const std::string& path, const std::vector<float>& values) {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(values.data()),
               static_cast<std::streamsize>(values.size() * sizeof(float)));
}

std::vector<float> read_floats(const std::string& path) {
    const std::string bytes = read_text(path);
    std::vector<float> values(bytes.size() / sizeof(float));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
    return values;
}

class RunnerFixture {
 public:
    RunnerFixture(std::string runner, std::string dir) : runner_(runner), dir_(dir) {}

    RunResult run(const std::string& args) const {
        const std::string cmd = runner_ + " " + args + " >" + dir_ + "/stdout 2>" + dir_ + "/stderr";
        const int status = std::system(cmd.c_str());
        RunResult result;
        result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        result.out = read_text(dir_ + "/stdout");
        result.err = read_text(dir_ + "/stderr");
        // Sanitizer findings in the runner fail the test whatever the exit code.
        if (contains(result.err, "Sanitizer") || contains(result.err, "runtime error")) {
            std::fprintf(stderr, "sanitizer report from the runner:\n%s\n", result.err.c_str());
            ++g_failures;
        }
        return result;
    }
    std::string path(const std::string& name) const { return dir_ + "/" + name; }

    // --soc ... --input x:... --input gamma:...
    std::string sample_args(const std::string& x_dims, const std::string& cols, uint32_t cores = 48,
                            const std::string& x_dtype = "float32") const {
        return "--op TwinSampleNorm --soc Ascend910B2 --vector-cores " + std::to_string(cores) +
               " --ub-bytes 196608 --input x:" + x_dtype + ":" + x_dims + ":" + path("x.bin") +
               " --input gamma:float32:" + cols + ":" + path("gamma.bin");
    }

 private:
    std::string runner_;
    std::string dir_;
};

// The same arithmetic as the stand-in kernel.
void expected_norm(const std::vector<float>& x, const std::vector<float>& gamma, size_t rows,
                   size_t cols, float epsilon, std::vector<float>& y, std::vector<float>& rstd) {
    y.assign(rows * cols, 0.0f);
    rstd.assign(rows, 0.0f);
    for (size_t row = 0; row < rows; ++row) {
        double squares = 0.0;
        for (size_t c = 0; c < cols; ++c) {
            squares += static_cast<double>(x[row * cols + c]) * x[row * cols + c];
        }
        rstd[row] = static_cast<float>(1.0 / std::sqrt(squares / cols + epsilon));
        for (size_t c = 0; c < cols; ++c) {
            y[row * cols + c] = x[row * cols + c] * rstd[row] * gamma[c];
        }
    }
}

void test_runner(const std::string& runner) {
    char dir_template[] = "/tmp/opgen_host_test.XXXXXX";
    const char* dir = mkdtemp(dir_template);
    CHECK(dir != nullptr);
    if (dir == nullptr) {
        return;
    }
    const RunnerFixture fx(runner, dir);
    const size_t rows = 5;
    const size_t cols = 40;
    std::vector<float> x(rows * cols);
    std::vector<float> gamma(cols);
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 3.0);
    }
    for (size_t i = 0; i < cols; ++i) {
        gamma[i] = 0.5f + 0.01f * static_cast<float>(i);
    }
    write_floats(fx.path("x.bin"), x);
    write_floats(fx.path("gamma.bin"), gamma);
    const std::string outputs =
        " --output y:" + fx.path("y.bin") + " --output rstd:" + fx.path("rstd.bin");

    // --plan-only prints the plan and launches nothing.
    RunResult r = fx.run(fx.sample_args("5,40", "40") + " --plan-only");
    CHECK_EQ(r.code, 0);
    CHECK_EQ(r.out, std::string(kSamplePlan) + "\n");

    // A full run: outputs equal the reference, the report carries the counters.
    r = fx.run(fx.sample_args("5,40", "40") + outputs + " --report " + fx.path("report.json"));
    CHECK_EQ(r.code, 0);
    CHECK_EQ(r.err, std::string());
    std::vector<float> y;
    std::vector<float> rstd;
    expected_norm(x, gamma, rows, cols, 1e-6f, y, rstd);
    CHECK(read_floats(fx.path("y.bin")) == y);
    CHECK(read_floats(fx.path("rstd.bin")) == rstd);
    const std::string report = read_text(fx.path("report.json"));
    const std::string plan_prefix(kSamplePlan, std::strlen(kSamplePlan) - std::strlen("false}"));
    CHECK_CONTAINS(report, plan_prefix + "true,\"counters\":{");
    CHECK_EQ(report.back(), '\n');

    // Two cores for five rows; the report goes to stdout without --report.
    r = fx.run(fx.sample_args("5,40", "40", 2) + outputs);
    CHECK_EQ(r.code, 0);
    CHECK_CONTAINS(r.out, "\"block_dim\":2,");
    CHECK(read_floats(fx.path("y.bin")) == y);

    // An in-place input is written back (unchanged here, the kernel does not write x).
    r = fx.run(fx.sample_args("5,40", "40") + outputs + " --inplace x");
    CHECK_EQ(r.code, 0);
    CHECK(read_floats(fx.path("x.bin")) == x);

    // The op's host code rejects: exit 2 with its own reason and the runner's line.
    r = fx.run(fx.sample_args("5,40", "40", 48, "float16") + outputs);
    CHECK_EQ(r.code, opgen_twin::EXIT_HOST_REJECTED);
    CHECK_CONTAINS(r.err, "opgen-twin: host: TwinSampleNorm: input dtypes (float16, float32) are "
                          "not registered; (x, gamma) accepts (float16, float16), (bfloat16, "
                          "bfloat16), (float32, float32)\n");
    r = fx.run(fx.sample_args("2,20000", "20000") + " --plan-only");
    CHECK_EQ(r.code, opgen_twin::EXIT_HOST_REJECTED);
    CHECK_CONTAINS(r.err, "TwinSampleNorm: a row of 20000 elements does not fit 196608 UB bytes\n"
                          "opgen-twin: host: TwinSampleNorm: TilingFunc returned GRAPH_FAILED\n");

    // Usage errors: exit 4.
    r = fx.run("--op Nope --soc Ascend910B2 --vector-cores 48 --ub-bytes 196608");
    CHECK_EQ(r.code, opgen_twin::EXIT_USAGE);
    CHECK_EQ(r.err, std::string("opgen-twin: usage: unknown op 'Nope'; registered ops: "
                                "TwinSampleNorm\n"));
    r = fx.run(fx.sample_args("5,41", "40") + outputs);
    CHECK_EQ(r.code, opgen_twin::EXIT_USAGE);
    CHECK_CONTAINS(r.err, "input 'x' file '" + fx.path("x.bin") + "' has 800 bytes, its shape and "
                          "dtype need 820");
    r = fx.run(fx.sample_args("5,40", "40") + " --output y:" + fx.path("y.bin"));
    CHECK_EQ(r.code, opgen_twin::EXIT_USAGE);
    CHECK_CONTAINS(r.err, "no --output for output 'rstd'");
    r = fx.run(fx.sample_args("5,40", "40") + " --attr eps:float:1 --plan-only");
    CHECK_EQ(r.code, opgen_twin::EXIT_USAGE);
    r = fx.run(fx.sample_args("5,x", "40") + " --plan-only");
    CHECK_EQ(r.code, opgen_twin::EXIT_USAGE);
    CHECK_CONTAINS(r.err, "dims must be 'scalar' or decimal numbers");
    r = fx.run("--op TwinSampleNorm");
    CHECK_EQ(r.code, opgen_twin::EXIT_USAGE);
    r = fx.run("");
    CHECK_EQ(r.code, opgen_twin::EXIT_USAGE);
    CHECK_CONTAINS(r.err, "usage: runner --op <OpType>");

    // No rows: skipped with --skip-launch-if-empty, a block-dim error without it.
    write_floats(fx.path("x.bin"), {});
    r = fx.run(fx.sample_args("0,40", "40") + outputs + " --skip-launch-if-empty");
    CHECK_EQ(r.code, 0);
    CHECK_CONTAINS(r.out, "\"block_dim\":0,");
    CHECK_CONTAINS(r.out, "\"launched\":false}");
    CHECK(read_text(fx.path("y.bin")).empty());
    r = fx.run(fx.sample_args("0,40", "40") + outputs);
    CHECK_EQ(r.code, opgen_twin::EXIT_TWIN_RULE);
    CHECK_CONTAINS(r.err, "opgen-twin: host: TilingContext::SetBlockDim: block dim outside "
                          "[1, 65535]: TwinSampleNorm: the TilingFunc set 0");

    r = fx.run("--describe-ops");
    CHECK_EQ(r.code, 0);
    CHECK_CONTAINS(r.out, "{\"ops\":[{\"op\":\"TwinSampleNorm\"");

    std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
    test_registry_contents();
    test_registry_problems();
    test_tiling_layout();
    test_shape_rules();
    test_context_rules();
    test_platform();
    test_plan_ok();
    test_plan_attrs();
    test_plan_rejections();
    test_describe();
    test_json_writer();
    if (argc > 1) {
        test_runner(argv[1]);
    } else {
        std::fprintf(stderr, "host_registry_test: no runner path given, runner tests skipped\n");
    }
    if (g_failures != 0) {
        std::fprintf(stderr, "host_registry_test: %d check(s) failed\n", g_failures);
        return 1;
    }
    std::printf("host_registry_test: all checks passed\n");
    return 0;
}
