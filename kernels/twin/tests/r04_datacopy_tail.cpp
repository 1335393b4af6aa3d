// expect: DataCopy size not a multiple of 32 bytes
// Rule 4: DataCopy's count form moves whole 32-byte blocks only; 10 halves are 20 bytes.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void datacopy_tail(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 64);
    GlobalTensor<half> xGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, 10);
    LocalTensor<half> t = in.AllocTensor<half>();
    DataCopy(t, xGm, 10);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 10 * sizeof(half));
    twin_test::launch(1, [&] { datacopy_tail(x); });
    return twin_test::not_stopped();
}
