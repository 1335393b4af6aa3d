// expect: position not modelled
// Rule 2: only the UB positions (VECIN, VECOUT, VECCALC) are modelled; an L1 (A1) buffer
// is refused rather than silently placed in UB.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void position() {
    TPipe pipe;
    TBuf<TPosition::A1> l1;
    pipe.InitBuffer(l1, 1024);
}

int main() {
    twin_test::launch(1, [] { position(); });
    return twin_test::not_stopped();
}
