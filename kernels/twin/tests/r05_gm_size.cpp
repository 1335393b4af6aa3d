// expect: GM access beyond the GlobalTensor size
// Rule 5: core 1 writes past the 32 elements its GlobalTensor was given (into the next core's rows).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gm_size(GM_ADDR y) {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(out, 1, 256);
    GlobalTensor<float> yGm;
    yGm.SetGlobalBuffer((__gm__ float*)y + 32 * GetBlockIdx(), 32);
    LocalTensor<float> t = out.AllocTensor<float>();
    Duplicate(t, 1.0f, 64);
    out.EnQue(t);
    LocalTensor<float> u = out.DeQue<float>();
    DataCopy(yGm, u, GetBlockIdx() == 0 ? 32 : 40);
    out.FreeTensor(u);
}

int main() {
    GM_ADDR y = opgen_twin::gm_alloc("y", 128 * sizeof(float));
    twin_test::launch(2, [&] { gm_size(y); });
    return twin_test::not_stopped();
}
