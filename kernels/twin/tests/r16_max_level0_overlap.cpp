// expect: partial overlap of dst and src
// Rule M3 via ext_quant.h's level-0 Max: dst x[8] and src0 x overlap without being the same start (in place).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void r16_max_level0_overlap_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 2048);
    pipe.InitBuffer(b, 2048);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> y = b.Get<float>();
    Duplicate(x, 1.0f, 512);
    Duplicate(y, 2.0f, 512);
    PipeBarrier<PIPE_V>();
    Max(x[8], x, y, 64, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 8));
}

int main() {
    twin_test::launch(1, [] { r16_max_level0_overlap_kernel(); });
    return twin_test::not_stopped();
}
