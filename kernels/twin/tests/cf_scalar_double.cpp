// expect: compile error: no matching function for call to 'Muls
// Scalar arguments are `const T&` with T deduced from the tensors too, as in CANN: a double
// literal for a float tensor must not compile (write 2.0f).
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void scalar_double() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    LocalTensor<float> x = a.Get<float>();
    Muls(x, x, 2.0, 64);
}

int main() { return 0; }
