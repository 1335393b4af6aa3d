// Runs the generated extension's schema and Meta side in real libtorch, without an NPU:
// built from the generated torch/opgen_schema.cpp (which needs no torch_npu) and this file,
// linked against the torch wheel's libc10/libtorch_cpu. Loading registers every op, so a
// schema torch cannot parse fails here; then each op must have a Meta kernel, and the row_norm
// ops are called on meta tensors: output shapes and dtypes, and the argument checks' messages.
//
// Usage: meta_check OP...      (the catalogue's op names, from kernels/*.toml: exactly these ops
//                              must be registered; exit 0: all passed; prints "N passed, 0 failed")
// A case whose op is missing fails (op() throws, the case reports it); nothing is skipped.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

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
    expect_error("rms_norm wrong gamma", "`gamma` must equal the trailing dims of `x`",
                 [&] { rms.call(meta({2, 8}, at::kHalf), meta({4}, at::kHalf), 1e-6, "once"); });
    expect_error("rms_norm gamma rank", "`gamma` must have 1 to 2 dims",
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
    expect_error("add_rms_norm residual shape", "`x2` must have the shape of `x1`",
                 [&] { add.call(meta({3, 16}, at::kHalf), meta({2, 16}, at::kHalf), meta({16}, at::kHalf), 1e-6, "hf"); });
}

void rotary_cases()
{
    auto rot = op("opgen::rotary_mul")
                   .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, c10::string_view)>();
    for (auto dt : {at::kHalf, at::kBFloat16}) {
        at::Tensor y = rot.call(meta({2, 4, 3, 8}, dt), meta({1, 4, 1, 8}, dt), meta({1, 4, 1, 8}, dt), "half");
        check(y.sizes() == at::IntArrayRef({2, 4, 3, 8}) && y.scalar_type() == dt, "rotary_mul y like x");
    }
    expect_error("rotary_mul mixed dtypes", "no registered dtype combination", [&] {
        rot.call(meta({2, 4, 3, 8}, at::kHalf), meta({1, 4, 1, 8}, at::kFloat), meta({1, 4, 1, 8}, at::kFloat), "half");
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

}  // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::cout << "usage: meta_check OP... (the catalogue's op names)\n";
        return 2;
    }
    const std::vector<std::string> expected(argv + 1, argv + argc);
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
    std::cout << passed << " passed, " << failed << " failed\n";
    return failed == 0 ? 0 : 1;
}
