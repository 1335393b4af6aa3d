// expect: RAW across pipes without synchronisation: UB [0x00000, 0x00004) of VECCALC TBuf #0: written by S (LocalTensor::SetValue at r13_strict_s_v.cpp:17), then read by V (Muls at r13_strict_s_v.cpp:18)
// Rule 13 (strict mode): a scalar SetValue consumed by a vector op without the S_V pair.
// Compiler auto-sync would insert it; pos_auto_sync.cpp shows that switch accepting it.
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
    t.SetValue(0, 3.0f);
    Muls(out.Get<float>(), t, 2.0f, 8);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
