// expect: RAW on one pipe without PipeBarrier: UB [0x00000, 0x00400) of VECCALC TBuf #0: written by V (Duplicate at r13_strict_v_v.cpp:18), then read by V (Muls at r13_strict_v_v.cpp:19)
// Rule 13 (strict mode): a vector op reads the previous one's result without PipeBarrier<PIPE_V>.
// Compiler auto-sync would insert the barrier; the twin's default assumes none, so the kernel
// must say it. pos_auto_sync.cpp runs the same kernel with auto-sync on and passes.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    yGm.SetGlobalBuffer((__gm__ float*)y, 256);
    TBuf<TPosition::VECCALC> buf, out;
    pipe.InitBuffer(buf, 1024);
    pipe.InitBuffer(out, 1024);
    LocalTensor<float> t = buf.Get<float>();
    Duplicate(t, 1.5f, 256);
    Muls(out.Get<float>(), t, 2.0f, 256);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
