// expect: operand is not a UB tensor
// Rule 6: operands must be UB tensors; a default-constructed LocalTensor points nowhere.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void not_ub() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> nowhere;
    Duplicate(x, 0.0f, 64);
    Exp(nowhere, x, 64);
}

int main() {
    twin_test::launch(1, [] { not_ub(); });
    return twin_test::not_stopped();
}
