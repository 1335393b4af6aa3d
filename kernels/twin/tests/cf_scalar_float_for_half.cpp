// expect: compile error: no matching function for call to 'Adds
// A float scalar for a half tensor must not compile either (write (half)1.5f).
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void scalar_float_for_half() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    LocalTensor<half> x = a.Get<half>();
    Adds(x, x, 1.5f, 128);
}

int main() { return 0; }
