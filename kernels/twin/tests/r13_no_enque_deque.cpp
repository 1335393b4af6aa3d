// expect: RAW across pipes without synchronisation: UB [0x00000, 0x00400) of VECIN queue #0 buffer 0/1: written by MTE2 (DataCopy at r13_no_enque_deque.cpp:18), then read by V (Muls at r13_no_enque_deque.cpp:20)
// Rule 13: a VECIN tensor used by the vector pipe right after its copy-in, without the
// EnQue/DeQue hand-off that carries the MTE2_V event.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    yGm.SetGlobalBuffer((__gm__ float*)y, 256);
    TQue<QuePosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> out;
    pipe.InitBuffer(in, 1, 1024);
    pipe.InitBuffer(out, 1024);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopy(t, xGm, 256);
    LocalTensor<float> o = out.Get<float>();
    Muls(o, t, 2.0f, 256);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
