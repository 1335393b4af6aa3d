// expect: access outside the LocalTensor
// Rule 5: DataCopyPad's UB rows take whole 32-byte slots plus dstStride blocks: 3 rows of
// 40 bytes with a 1-block stride need (2 + 1) * 2 + 2 = 8 blocks = 256 B, the buffer has 224 B.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void ub_outside(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 224);
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 30);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopyExtParams copy{3, 40, 0, 1, 0};
    DataCopyPadExtParams<float> pad{true, 0, 0, 0.0f};
    DataCopyPad(t, xGm, copy, pad);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 30 * sizeof(float));
    twin_test::launch(1, [&] { ub_outside(x); });
    return twin_test::not_stopped();
}
