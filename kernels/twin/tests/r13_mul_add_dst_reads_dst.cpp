// expect: RAW on one pipe without PipeBarrier: UB [0x00400, 0x00800) of VECCALC TBuf #1: written by V (Duplicate at r13_mul_add_dst_reads_dst.cpp:20), then read by V (MulAddDst at r13_mul_add_dst_reads_dst.cpp:22)
// Rule 13 (strict mode) for MulAddDst: dst is an input too (dst = src0 * src1 + dst), so a
// MulAddDst right after the vector op that wrote its dst needs PipeBarrier<PIPE_V> like any
// reader; the sources alone being ordered is not enough.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> src, acc;
    pipe.InitBuffer(src, 1024);
    pipe.InitBuffer(acc, 1024);
    LocalTensor<float> s = src.Get<float>();
    LocalTensor<float> d = acc.Get<float>();
    Duplicate(s, 2.0f, 256);
    PipeBarrier<PIPE_V>();
    // The sources are ready; the accumulator is written just before and read without a
    // barrier.
    Duplicate(d, 1.0f, 256);

    MulAddDst(d, s, s, 256);
}

int main() {
    twin_test::launch(1, [] { kernel(); });
    return twin_test::not_stopped();
}
