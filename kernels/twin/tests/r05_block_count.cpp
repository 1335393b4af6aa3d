// expect: blockCount out of range
// Rule 5: DataCopyPad moves at most 4095 blocks per call.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void block_count(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 4096 * 32);
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 4096);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopyExtParams copy{4096, 4, 0, 0, 0};
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    DataCopyPad(t, xGm, copy, pad);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 4096 * sizeof(float));
    twin_test::launch(1, [&] { block_count(x); });
    return twin_test::not_stopped();
}
