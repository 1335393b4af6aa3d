// expect: ReduceOrder not modelled
// Rule W4 (ext_quant.h): WholeReduceMax's index-first and index-only orders are refused, not guessed.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void r16_whole_reduce_max_order_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 2048);
    pipe.InitBuffer(b, 2048);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> y = b.Get<float>();
    Duplicate(x, 1.0f, 512);
    Duplicate(y, 2.0f, 512);
    PipeBarrier<PIPE_V>();
    WholeReduceMax(y, x, 64, 2, 1, 1, 8, ReduceOrder::ORDER_INDEX_VALUE);
}

int main() {
    twin_test::launch(1, [] { r16_whole_reduce_max_order_kernel(); });
    return twin_test::not_stopped();
}
