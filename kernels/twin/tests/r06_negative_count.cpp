// expect: negative count
// Rule 6: a negative count (e.g. from a tiling underflow) is rejected.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void negative_count(int32_t tail) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 0.0f, 64);
    Adds(x, x, 1.0f, tail - 64);
}

int main() {
    twin_test::launch(1, [] { negative_count(48); });
    return twin_test::not_stopped();
}
