// expect: dst start not element-aligned for WholeReduceSum: dst VECCALC TBuf #1 [UB 0x00100, 256 B] at +2 B at r06_whole_reduce_dst_align.cpp:18
// Rule 6: WholeReduceSum's dst must start on an element boundary (4 bytes for float: the
// WholeReduceSum API reference, dstLocal); a float view 2 bytes into a buffer is not.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void whole_reduce_dst_align() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 64 * sizeof(float));
    pipe.InitBuffer(b, 64 * sizeof(float));
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 64);
    LocalTensor<half> words = b.Get<half>();
    LocalTensor<float> odd = words[1].ReinterpretCast<float>();
    PipeBarrier<PIPE_V>();
    WholeReduceSum(odd, x, 64, 1, 1, 1, 8);
}

int main() {
    twin_test::launch(1, [] { whole_reduce_dst_align(); });
    return twin_test::not_stopped();
}
