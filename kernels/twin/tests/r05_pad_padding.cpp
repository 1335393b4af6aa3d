// expect: padding out of range
// Rule 5: DataCopyPad pads at most one 32-byte block on each side (8 floats); 9 is refused.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void pad_padding(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 1024);
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 64);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopyPad(t, xGm, DataCopyExtParams(1, 16, 0, 0, 0), DataCopyPadExtParams<float>(true, 9, 0, 0.0f));
    in.EnQue(t);
    LocalTensor<float> u = in.DeQue<float>();
    in.FreeTensor(u);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 64 * sizeof(float));
    twin_test::launch(1, [&] { pad_padding(x); });
    return twin_test::not_stopped();
}
