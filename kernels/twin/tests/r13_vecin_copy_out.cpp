// expect: RAW across pipes without synchronisation: UB [0x00000, 0x00400) of VECIN queue #0 buffer 0/1: written by V (Muls at r13_vecin_copy_out.cpp:20), then read by MTE3 (DataCopy at r13_vecin_copy_out.cpp:21)
// Rule 13 (queue positions mean pipes): the vector result is written in place into a VECIN
// tensor and sent to copy-out through its own queue. A VECIN queue's EnQue/DeQue is the MTE2_V
// event (CANN GetQueEvt), which orders nothing between V and MTE3.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    yGm.SetGlobalBuffer((__gm__ float*)y, 256);
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 1024);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopy(t, xGm, 256);
    in.EnQue(t);
    t = in.DeQue<float>();
    Muls(t, t, 2.0f, 256);
    DataCopy(yGm, t, 256);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
