// expect: RAW across pipes without synchronisation: UB [0x00000, 0x00004) of VECCALC TBuf #0: written by V (Muls at r13_scalar_read_no_v_s.cpp:20), then read by S (LocalTensor::GetValue at r13_scalar_read_no_v_s.cpp:21)
// Rule 13: the scalar unit reads a vector result (GetValue) without the V_S pair; on a 910B it
// may read the value before Muls wrote it. (ReduceSum needs no V_S: it waits inside, see
// pos_pipe_sync.cpp.)
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    yGm.SetGlobalBuffer((__gm__ float*)y, 256);
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xGm, 256);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Muls(t, t, 2.0f, 256);
    const float v = t.GetValue(0);
    yGm.SetValue(0, v);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
