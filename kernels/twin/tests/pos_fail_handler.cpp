// expect: ok
// cann: twin only: it tests the twin's set_fail_handler/abandon_launch, which the NPU has no counterpart of
// Positive test of set_fail_handler / abandon_launch, what an in-process host (the torch CPU
// backend) relies on: a broken rule inside a kernel reaches the handler with the line fail()
// would print, the handler's exception unwinds out of the kernel, abandon_launch() leaves the
// twin clean, and the next launch on the same process runs and passes every end-of-core check.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

[[noreturn]] void throw_it(const std::string& message) { throw std::runtime_error(message); }

extern "C" __global__ __aicore__ void double_free() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 2, 256);
    LocalTensor<float> t = in.AllocTensor<float>();
    in.EnQue(t);
    LocalTensor<float> u = in.DeQue<float>();
    in.FreeTensor(u);
    in.FreeTensor(u);
}

extern "C" __global__ __aicore__ void copy_through(uint8_t* src, uint8_t* dst) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 256);
    GlobalTensor<float> s;
    GlobalTensor<float> d;
    s.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(src), 64);
    d.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(dst), 64);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopy(t, s, 64);
    in.EnQue(t);
    LocalTensor<float> u = in.DeQue<float>();
    // A VECIN hand-off orders MTE2 before V only; the copy-out (MTE3) waits for the copy-in.
    PipeBarrier<PIPE_ALL>();
    DataCopy(d, u, 64);
    in.FreeTensor(u);
}

int check(bool ok, const char* what) {
    if (!ok) std::fprintf(stderr, "pos_fail_handler: %s\n", what);
    return ok ? 0 : 1;
}

}  // namespace

int main() {
    opgen_twin::set_fail_handler(&throw_it);
    std::string caught;
    const uint8_t* unused = opgen_twin::gm_alloc("unused", 64);
    try {
        twin_test::launch(2, [] { double_free(); });
    } catch (const std::runtime_error& e) {
        caught = e.what();
    }
    int failures = check(caught.rfind("core 0: ", 0) == 0, "the message does not start with the core");
    failures += check(caught.find("double FreeTensor") != std::string::npos, "the message does not name the rule");
    failures += check(opgen_twin::current_core() == 0, "the interrupted core is still the current one before abandon");
    opgen_twin::abandon_launch();
    failures += check(opgen_twin::current_core() == -1, "abandon_launch left a core running");
    failures += check(opgen_twin::gm_find(unused, 1) == nullptr, "abandon_launch kept GM buffers");

    uint8_t* src = opgen_twin::gm_alloc("src", 256);
    uint8_t* dst = opgen_twin::gm_alloc("dst", 256);
    for (int i = 0; i < 64; ++i) reinterpret_cast<float*>(src)[i] = float(i) * 0.5f;
    twin_test::launch(1, [&] { copy_through(src, dst); });
    failures += check(std::memcmp(src, dst, 256) == 0, "the launch after abandon_launch copied wrongly");
    opgen_twin::gm_free_all();
    return failures == 0 ? 0 : 1;
}
