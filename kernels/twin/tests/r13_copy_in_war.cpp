// expect: WAR across pipes without synchronisation: UB [0x00000, 0x00200) of VECCALC TBuf #0: read by V (Muls at r13_copy_in_war.cpp:23), then written by MTE2 (DataCopy at r13_copy_in_war.cpp:20)
// Rule 13: the next copy-in lands in a buffer the vector unit may still be reading. A queue
// would wait for the FreeTensor event (V_MTE2) in AllocTensor; this TBuf needs the V_MTE2 pair
// by hand, and it was deleted.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    yGm.SetGlobalBuffer((__gm__ float*)y, 256);
    TBuf<TPosition::VECCALC> buf, out;
    pipe.InitBuffer(buf, 512);
    pipe.InitBuffer(out, 1024);
    LocalTensor<float> t = buf.Get<float>();
    LocalTensor<float> o = out.Get<float>();
    for (int tile = 0; tile < 2; ++tile) {
        DataCopy(t, xGm[tile * 128], 128);
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        Muls(o[tile * 128], t, 2.0f, 128);
    }
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
