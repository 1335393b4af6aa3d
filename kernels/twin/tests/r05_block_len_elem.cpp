// expect: blockLen not a multiple of sizeof(T)
// Rule 5: DataCopyPad's byte length must hold whole elements (3 bytes of half).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void block_len_elem(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 64);
    GlobalTensor<half> xGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, 16);
    LocalTensor<half> t = in.AllocTensor<half>();
    DataCopyExtParams copy{1, 3, 0, 0, 0};
    DataCopyPadExtParams<half> pad{false, 0, 0, (half)0};
    DataCopyPad(t, xGm, copy, pad);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 16 * sizeof(half));
    twin_test::launch(1, [&] { block_len_elem(x); });
    return twin_test::not_stopped();
}
