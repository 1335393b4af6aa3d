// expect: WAW on one pipe without PipeBarrier: GM 'y' bytes [256, 512): written by MTE3 (DataCopy at r13_mte3_overlap_no_barrier.cpp:26), then written by MTE3 (DataCopy at r13_mte3_overlap_no_barrier.cpp:27)
// Rule 13: two copy-outs whose GM destinations overlap (bytes 256..511 of y) complete in any
// order on MTE3 unless PipeBarrier<PIPE_MTE3> separates them (DataCopy 约束说明); the barrier
// was deleted. pos_pipe_sync.cpp has the same copies with the barrier.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    yGm.SetGlobalBuffer((__gm__ float*)y, 256);
    TQue<QuePosition::VECIN, 1> in;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 1, 1024);
    pipe.InitBuffer(out, 1, 1024);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopy(t, xGm, 256);
    in.EnQue(t);
    t = in.DeQue<float>();
    LocalTensor<float> o = out.AllocTensor<float>();
    Muls(o, t, 2.0f, 256);
    out.EnQue(o);
    o = out.DeQue<float>();
    DataCopy(yGm, o, 128);
    DataCopy(yGm[64], o, 128);
    out.FreeTensor(o);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x, y); });
    return twin_test::not_stopped();
}
