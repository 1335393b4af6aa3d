// expect: RAW across pipes without synchronisation: UB [0x00000, 0x00400) of VECCALC TBuf #0: written by MTE2 (DataCopy at r13_mte2_v_flag_removed.cpp:18), then read by V (Muls at r13_mte2_v_flag_removed.cpp:20)
// Rule 13 (pipe ordering): a TBuf filled by MTE2 and read by the vector pipe needs a MTE2_V
// SetFlag/WaitFlag pair (a TBuf has no queue to imply one); here the pair was deleted, so on a
// 910B Muls may read the buffer before the copy has landed.
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
    LocalTensor<float> o = out.Get<float>();
    Muls(o, t, 2.0f, 256);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
