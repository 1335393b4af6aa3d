// expect: index does not fit in T
// Rule 6: ReduceMax stores the index in the bits of T; a half result holds 16 bits, so an
// index past 65535 cannot be returned.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void reduce_index_half() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> s, d, w;
    pipe.InitBuffer(s, 65600 * 2);
    pipe.InitBuffer(d, 64);
    pipe.InitBuffer(w, 8192);
    LocalTensor<half> src = s.Get<half>();
    LocalTensor<half> dst = d.Get<half>();
    LocalTensor<half> work = w.Get<half>();
    Duplicate(src, half(0.0f), 65600);
    PipeBarrier<PIPE_ALL>();  // the scalar store waits for Duplicate (this test is about ReduceMax)
    src.SetValue(65599, half(1.0f));
    PipeBarrier<PIPE_ALL>();
    ReduceMax(dst, src, work, 65600, true);
}

int main() {
    twin_test::launch(1, [] { reduce_index_half(); });
    return twin_test::not_stopped();
}
