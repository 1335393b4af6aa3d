// expect: blockLen out of range
// Rule 5: DataCopyExtParams::blockLen is at most 2097151 bytes.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void block_len(GM_ADDR y) {
    TPipe pipe;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(out, 1, 256);
    GlobalTensor<float> yGm;
    yGm.SetGlobalBuffer((__gm__ float*)y);
    LocalTensor<float> t = out.AllocTensor<float>();
    DataCopyExtParams copy{1, 2097152, 0, 0, 0};
    DataCopyPad(yGm, t, copy);
    out.FreeTensor(t);
}

int main() {
    GM_ADDR y = opgen_twin::gm_alloc("y", 256);
    twin_test::launch(1, [&] { block_len(y); });
    return twin_test::not_stopped();
}
