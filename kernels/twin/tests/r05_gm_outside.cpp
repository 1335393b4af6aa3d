// expect: GM access outside the registered buffer
// Rule 5: a GM read past the end of the buffer the runner allocated (x holds 60 floats).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gm_outside(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 256);
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x);  // no size: only the registry bounds the access
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopy(t, xGm, 64);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 60 * sizeof(float));
    twin_test::launch(1, [&] { gm_outside(x); });
    return twin_test::not_stopped();
}
