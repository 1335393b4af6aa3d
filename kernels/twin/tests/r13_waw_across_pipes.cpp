// expect: WAW across pipes without synchronisation
// Rule 13 (pipe ordering): MTE2 fills a TBuf and the vector pipe then overwrites the same bytes
// with no MTE2_V pair between them: on a 910B the copy may land after Duplicate and win.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel(GM_ADDR x) {
    TPipe pipe;
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    TBuf<TPosition::VECCALC> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    DataCopy(t, xGm, 256);
    Duplicate(t, 1.5f, 256);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    twin_test::launch(1, [&] { kernel(x); });
    return twin_test::not_stopped();
}
