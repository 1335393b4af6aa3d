// expect: Get beyond the TBuf size
// Rule 5: TBuf::Get(len) of more elements than the buffer holds.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void tbuf_get_beyond() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> t = a.Get<float>(257);
    (void)t;
}

int main() {
    twin_test::launch(1, [] { tbuf_get_beyond(); });
    return twin_test::not_stopped();
}
