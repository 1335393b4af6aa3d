// expect: RAW across pipes without synchronisation: UB [0x00400, 0x00800) of VECCALC TBuf #1: written by V (Muls at r13_v_mte3_flag_removed.cpp:21), then read by MTE3 (DataCopy at r13_v_mte3_flag_removed.cpp:22)
// Rule 13: the vector result in a TBuf goes to GM through MTE3 without its V_MTE3 pair (the
// MTE2_V pair in front is present): MTE3 may copy out the buffer before Muls wrote it.
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
    DataCopy(t, xGm, 256);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    LocalTensor<float> o = out.Get<float>();
    Muls(o, t, 2.0f, 256);
    DataCopy(yGm, o, 256);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
