// Runs the generated extension's schema and Meta side in real libtorch, without an NPU:
// built from the generated torch/opgen_schema.cpp (which needs no torch_npu) and this file,
// linked against the torch wheel's libc10/libtorch_cpu. Loading registers every op, so a
// schema torch cannot parse fails here; then each op must have a Meta kernel, and the row_norm
// ops are called on meta tensors: output shapes and dtypes, and the argument checks' messages.
//
// Then each case of the refusals file (python/opgen_torch/tests/host_refusals.txt: the shapes the
// generated op_host code refuses, with its message word for word; the CPU build's test checks
// the same file against the twin-compiled op_host) must be refused by the Meta kernel with exactly
// that message: the NPU build has no op_host code in-process, its Meta kernels run the op_host's
// shared checks (opgen_torch.h).
//
// Usage: meta_check [--refusals FILE] OP...   (the catalogue's op names, from kernels/*.toml:
//                              exactly these ops must be registered; exit 0: all passed; prints
//                              "N passed, 0 failed")
// A case whose op is missing fails (op() throws, the case reports it); nothing is skipped.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace {

int passed = 0;
int failed = 0;

void check(bool ok, const std::string& what)
{
    if (ok) {
        ++passed;
    } else {
        ++failed;
        std::cout << "FAILED: " << what << "\n";
    }
}

// Runs `f`, which must throw c10::Error whose message contains `needle`.
void expect_error(const std::string& what, const std::string& needle, const std::function<void()>& f)
{
    try {
        f();
        check(false, what + ": no error (expected one containing \"" + needle + "\")");
    } catch (const c10::Error& e) {
        const std::string msg = e.what_without_backtrace();
        check(msg.find(needle) != std::string::npos, what + ": message \"" + msg + "\" lacks \"" + needle + "\"");
    }
}

at::Tensor meta(std::vector<int64_t> shape, at::ScalarType dtype)
{
    return at::empty(shape, at::TensorOptions().device(at::kMeta).dtype(dtype));
}

c10::OperatorHandle op(const char* name)
{
    auto handle = c10::Dispatcher::singleton().findSchema({name, ""});
    TORCH_CHECK(handle.has_value(), name, " is not registered");
    return *handle;
}

void row_norm_cases()
{
    // rms_norm(x, gamma, epsilon, rounding): rounding "once" (npu_rms_norm) or "hf" (HF's order).
    auto rms = op("opgen::rms_norm")
                   .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, double, c10::string_view)>();
    for (auto dt : {at::kHalf, at::kBFloat16, at::kFloat}) {
        auto [y, rstd] = rms.call(meta({2, 3, 8}, dt), meta({8}, dt), 1e-6, "once");
        check(y.sizes() == at::IntArrayRef({2, 3, 8}) && y.scalar_type() == dt, "rms_norm y shape/dtype");
        check(rstd.sizes() == at::IntArrayRef({2, 3, 1}) && rstd.scalar_type() == at::kFloat,
              "rms_norm rstd is float32 with x's rank and 1 over gamma's dims");
        check(y.device().is_meta(), "rms_norm output on meta");
    }
    auto [y2, rstd2] = rms.call(meta({4, 5, 6}, at::kHalf), meta({5, 6}, at::kHalf), 1e-6, "once");
    check(rstd2.sizes() == at::IntArrayRef({4, 1, 1}), "rms_norm 2-D gamma: rstd [4, 1, 1]");
    // Shapes the op_host refuses, in its words (row_norm_checks.j2); host_refusals.txt has more.
    expect_error("rms_norm wrong gamma", "OpgenRmsNorm: gamma dim 0 is 4 but x dim 1 is 8: gamma must equal the trailing dims of x",
                 [&] { rms.call(meta({2, 8}, at::kHalf), meta({4}, at::kHalf), 1e-6, "once"); });
    expect_error("rms_norm gamma rank", "OpgenRmsNorm: gamma has rank 3; it must cover 1 to 2 trailing dims of x",
                 [&] { rms.call(meta({2, 8}, at::kHalf), meta({1, 2, 8}, at::kHalf), 1e-6, "once"); });
    expect_error("rms_norm mixed dtypes", "no registered dtype combination for (x=float16, gamma=float32)",
                 [&] { rms.call(meta({2, 8}, at::kHalf), meta({8}, at::kFloat), 1e-6, "once"); });
    expect_error("rms_norm int input", "x=int32", [&] { rms.call(meta({2, 8}, at::kInt), meta({8}, at::kInt), 1e-6, "once"); });

    auto add = op("opgen::add_rms_norm")
                   .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                                          const at::Tensor&, double, c10::string_view)>();
    auto [y, rstd, x_sum] = add.call(meta({3, 16}, at::kBFloat16), meta({3, 16}, at::kBFloat16),
                                     meta({16}, at::kBFloat16), 1e-6, "hf");
    check(x_sum.sizes() == at::IntArrayRef({3, 16}) && x_sum.scalar_type() == at::kBFloat16, "add_rms_norm x_sum");
    check(rstd.sizes() == at::IntArrayRef({3, 1}) && rstd.scalar_type() == at::kFloat, "add_rms_norm rstd");
    expect_error("add_rms_norm residual shape", "OpgenAddRmsNorm: x1 and x2 must have the same shape",
                 [&] { add.call(meta({3, 16}, at::kHalf), meta({2, 16}, at::kHalf), meta({16}, at::kHalf), 1e-6, "hf"); });
}

void rotary_cases()
{
    // (x, r1, r2, mode, rounding)
    auto rot = op("opgen::rotary_mul")
                   .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, c10::string_view,
                                     c10::string_view)>();
    for (auto dt : {at::kHalf, at::kBFloat16}) {
        for (const char* rounding : {"once", "hf"}) {
            at::Tensor y =
                rot.call(meta({2, 4, 3, 8}, dt), meta({1, 4, 1, 8}, dt), meta({1, 4, 1, 8}, dt), "half", rounding);
            check(y.sizes() == at::IntArrayRef({2, 4, 3, 8}) && y.scalar_type() == dt, "rotary_mul y like x");
        }
    }
    expect_error("rotary_mul mixed dtypes", "no registered dtype combination", [&] {
        rot.call(meta({2, 4, 3, 8}, at::kHalf), meta({1, 4, 1, 8}, at::kFloat), meta({1, 4, 1, 8}, at::kFloat), "half",
                 "once");
    });
}

void dequant_cases()
{
    auto dq = op("opgen::dequant_int8").typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::string_view)>();
    // The output dtype follows out_dtype, not the (always int8, float32) inputs.
    for (auto [name, dt] : {std::pair<const char*, at::ScalarType>{"float16", at::kHalf},
                            {"bfloat16", at::kBFloat16},
                            {"float32", at::kFloat}}) {
        at::Tensor x = dq.call(meta({4, 2, 64}, at::kChar), meta({4, 2}, at::kFloat), name);
        check(x.sizes() == at::IntArrayRef({4, 2, 64}) && x.scalar_type() == dt,
              std::string("dequant_int8 out_dtype=") + name);
    }
    expect_error("dequant_int8 unregistered out_dtype", "out_dtype=\"float64\"",
                 [&] { dq.call(meta({4, 64}, at::kChar), meta({4}, at::kFloat), "float64"); });
}

// "a | b | c" -> {"a", "b", "c"}, at most `fields` fields (the last takes the rest).
std::vector<std::string> split_fields(const std::string& line, size_t fields)
{
    std::vector<std::string> out;
    size_t start = 0;
    while (out.size() + 1 < fields) {
        const size_t at = line.find(" | ", start);
        if (at == std::string::npos) {
            break;
        }
        out.push_back(line.substr(start, at - start));
        start = at + 3;
    }
    out.push_back(line.substr(start));
    return out;
}

// One argument of a refusals-file case: DTYPE[d,d,...] or fake:DTYPE[d,d,...] (a meta tensor),
// str:, float:, int:, bool:.
c10::IValue argument(const std::string& token)
{
    const size_t colon = token.find(':');
    if (colon != std::string::npos) {
        const std::string kind = token.substr(0, colon);
        const std::string value = token.substr(colon + 1);
        if (kind == "str") {
            return c10::IValue(value);
        }
        if (kind == "float") {
            return c10::IValue(std::stod(value));
        }
        if (kind == "int") {
            return c10::IValue(static_cast<int64_t>(std::stoll(value)));
        }
        if (kind == "bool") {
            return c10::IValue(value == "true");
        }
        if (kind == "fake") {
            return argument(value);  // a meta tensor already: no storage, any size
        }
        TORCH_CHECK(false, "refusals file: unknown argument kind in `", token, "`");
    }
    const size_t open = token.find('[');
    TORCH_CHECK(open != std::string::npos && token.back() == ']', "refusals file: bad tensor `", token, "`");
    const std::string dtype = token.substr(0, open);
    const std::vector<std::pair<std::string, at::ScalarType>> dtypes = {
        {"float16", at::kHalf}, {"bfloat16", at::kBFloat16}, {"float32", at::kFloat}, {"int8", at::kChar}, {"int32", at::kInt}};
    at::ScalarType type = at::kFloat;
    bool known = false;
    for (const auto& [name, t] : dtypes) {
        if (name == dtype) {
            type = t;
            known = true;
        }
    }
    TORCH_CHECK(known, "refusals file: unknown dtype in `", token, "`");
    std::vector<int64_t> shape;
    std::string dims = token.substr(open + 1, token.size() - open - 2);
    for (size_t start = 0; start < dims.size();) {
        size_t end = dims.find(',', start);
        end = end == std::string::npos ? dims.size() : end;
        shape.push_back(std::stoll(dims.substr(start, end - start)));
        start = end + 1;
    }
    return c10::IValue(meta(shape, type));
}

// Every case of `path`: the op called on meta tensors must raise exactly the case's message.
void refusal_cases(const std::string& path)
{
    std::ifstream in(path);
    check(static_cast<bool>(in), "the refusals file " + path + " opens");
    std::string line;
    int cases = 0;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') {
            continue;
        }
        const std::vector<std::string> f = split_fields(line, 4);
        if (f.size() != 4) {
            check(false, "refusals file: `" + line + "` is not \"title | op | arguments | message\"");
            continue;
        }
        ++cases;
        const std::string& title = f[0];
        const std::string& message = f[3];
        try {
            auto handle = c10::Dispatcher::singleton().findSchema({"opgen::" + f[1], ""});
            TORCH_CHECK(handle.has_value(), "opgen::", f[1], " is not registered");
            torch::jit::Stack stack;
            std::string tokens = f[2];
            for (size_t start = 0; start < tokens.size();) {
                size_t end = tokens.find(' ', start);
                end = end == std::string::npos ? tokens.size() : end;
                if (end > start) {
                    stack.push_back(argument(tokens.substr(start, end - start)));
                }
                start = end + 1;
            }
            const auto& arguments = handle->schema().arguments();
            for (size_t i = stack.size(); i < arguments.size(); ++i) {
                TORCH_CHECK(arguments[i].default_value().has_value(), "refusals file: ", title, ": argument `",
                            arguments[i].name(), "` has no default");
                stack.push_back(*arguments[i].default_value());
            }
            try {
                handle->callBoxed(stack);
                check(false, "refusal \"" + title + "\": the Meta kernel accepted it (expected \"" + message + "\")");
            } catch (const c10::Error& e) {
                std::string got = e.what_without_backtrace();
                got = got.substr(0, got.find('\n'));
                check(got == message, "refusal \"" + title + "\": the Meta kernel says \"" + got + "\", the op_host \"" + message + "\"");
            }
        } catch (const c10::Error& e) {
            check(false, "refusal \"" + title + "\": " + e.what_without_backtrace());
        }
    }
    check(cases >= 10, "the refusals file has " + std::to_string(cases) + " cases (at least 10)");
    std::cout << "refusals: " << cases << " cases from " << path << "\n";
}

}  // namespace

int main(int argc, char** argv)
{
    std::string refusals;
    int first = 1;
    if (argc >= 3 && std::string(argv[1]) == "--refusals") {
        refusals = argv[2];
        first = 3;
    }
    if (argc <= first) {
        std::cout << "usage: meta_check [--refusals FILE] OP... (the catalogue's op names)\n";
        return 2;
    }
    const std::vector<std::string> expected(argv + first, argv + argc);
    // Every op of the library: its schema parsed (or loading would have failed) and a Meta kernel.
    size_t ops = 0;
    for (const auto& name : c10::Dispatcher::singleton().getAllOpNames()) {
        if (name.name.rfind("opgen::", 0) != 0) {
            continue;
        }
        ++ops;
        auto handle = c10::Dispatcher::singleton().findSchema(name);
        std::cout << "registered: " << handle->schema() << "\n";
        check(handle->hasKernelForDispatchKey(c10::DispatchKey::Meta), name.name + " has a Meta kernel");
    }
    check(ops == expected.size(), "the opgen library registered " + std::to_string(ops) + " ops, the catalogue has " +
                                      std::to_string(expected.size()));
    for (const std::string& name : expected) {
        check(c10::Dispatcher::singleton().findSchema({"opgen::" + name, ""}).has_value(),
              "catalogue op opgen::" + name + " is registered");
    }
    // A case that throws where it should not is a failure, not an abort.
    for (auto [name, cases] : {std::pair<const char*, void (*)()>{"row_norm", row_norm_cases}, {"rotary", rotary_cases}, {"dequant", dequant_cases}}) {
        try {
            cases();
        } catch (const c10::Error& e) {
            check(false, std::string(name) + " cases: unexpected error: " + e.what_without_backtrace());
        }
    }
    if (!refusals.empty()) {
        refusal_cases(refusals);
    }
    std::cout << passed << " passed, " << failed << " failed\n";
    return failed == 0 ? 0 : 1;
}
