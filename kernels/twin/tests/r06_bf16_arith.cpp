// expect: dtype not supported on A2
// Rule 6: A2 has no bfloat16_t arithmetic (only data movement, Duplicate and Cast).
// cann: compile error (CANN rejects bf16 Add when compiling; the twin rejects it when run)
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void bf16_arith() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 512);
    LocalTensor<bfloat16_t> x = a.Get<bfloat16_t>();
    Duplicate(x, (bfloat16_t)1.0f, 128);
    Add(x, x, x, 128);
}

int main() {
    twin_test::launch(1, [] { bf16_arith(); });
    return twin_test::not_stopped();
}
