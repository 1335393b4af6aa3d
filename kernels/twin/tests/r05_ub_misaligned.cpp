// expect: UB address not 32-byte aligned
// Rule 5: the UB side of a DataCopy must start on a 32-byte boundary (8 halves = 16 bytes in).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void ub_misaligned(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 128);
    GlobalTensor<half> xGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, 32);
    LocalTensor<half> t = in.AllocTensor<half>();
    DataCopy(t[8], xGm, 16);
    in.FreeTensor(t);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 32 * sizeof(half));
    twin_test::launch(1, [&] { ub_misaligned(x); });
    return twin_test::not_stopped();
}
