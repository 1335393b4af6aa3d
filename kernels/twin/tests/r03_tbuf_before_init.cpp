// expect: TBuf used before InitBuffer
// Rule 3: Get on a TBuf that InitBuffer never gave a buffer.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void tbuf_before_init() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    LocalTensor<float> t = a.Get<float>();
    (void)t;
}

int main() {
    twin_test::launch(1, [] { tbuf_before_init(); });
    return twin_test::not_stopped();
}
