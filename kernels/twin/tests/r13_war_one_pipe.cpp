// expect: WAR on one pipe without PipeBarrier
// Rule 13 (strict mode): a vector op overwrites the bytes the previous vector op read, with no
// PipeBarrier<PIPE_V> between them (the twin's strict mode assumes no compiler auto-sync).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x) {
    TPipe pipe;
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    TBuf<TPosition::VECCALC> buf, out;
    pipe.InitBuffer(buf, 1024);
    pipe.InitBuffer(out, 1024);
    LocalTensor<float> t = buf.Get<float>();
    LocalTensor<float> o = out.Get<float>();
    Duplicate(t, 1.5f, 256);
    PipeBarrier<PIPE_V>();
    Muls(o, t, 2.0f, 256);
    Duplicate(t, 3.0f, 256);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x); });
    return twin_test::not_stopped();
}
