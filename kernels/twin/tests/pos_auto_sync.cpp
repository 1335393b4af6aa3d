// expect: ok
// Positive test of the auto-sync switch: the kernels of r13_strict_v_v.cpp (a vector op reading
// the previous one's result without PipeBarrier<PIPE_V>) and r13_strict_s_v.cpp (a SetValue read
// by a vector op without S_V) pass once compiler auto-sync is assumed (bisheng --cce-auto-sync
// inserts exactly those: V->V barriers, S<->V waits), and compute the right values. Strict mode,
// the default, refuses both (the r13 tests).
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void auto_sync(GM_ADDR y) {
    TPipe pipe;
    GlobalTensor<float> yGm;
    yGm.SetGlobalBuffer((__gm__ float*)y, 16);
    TBuf<TPosition::VECCALC> buf, out;
    pipe.InitBuffer(buf, 1024);
    pipe.InitBuffer(out, 1024);
    LocalTensor<float> t = buf.Get<float>();
    LocalTensor<float> o = out.Get<float>();
    Duplicate(t, 1.5f, 256);
    Muls(o, t, 2.0f, 256);  // V -> V without PipeBarrier<PIPE_V>
    t.SetValue(0, 3.0f);    // S after V, then V after S: no V_S, no S_V
    Muls(o[64], t, 2.0f, 8);
    yGm.SetValue(0, o.GetValue(0));
    yGm.SetValue(1, o.GetValue(64));
}

int main() {
    opgen_twin::set_auto_sync(true);
    GM_ADDR y = opgen_twin::gm_alloc("y", 16 * sizeof(float));
    twin_test::launch(1, [&] { auto_sync(y); });
    float ys[2];
    std::memcpy(ys, y, sizeof ys);
    if (ys[0] != 3.0f || ys[1] != 6.0f) {
        std::fprintf(stderr, "y = %g %g, want 3 6\n", ys[0], ys[1]);
        return 1;
    }
    return 0;
}
