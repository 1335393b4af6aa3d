// expect: TBuf initialised twice
// Rule 2: InitBuffer on a TBuf that already has a buffer.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void tbuf_twice() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(a, 256);
}

int main() {
    twin_test::launch(1, [] { tbuf_twice(); });
    return twin_test::not_stopped();
}
