// expect: Brcb dstBlkStride 0
// Rule B3 (ext_quant.h): the NPU treats dstBlkStride 0 as 1; the twin refuses the ambiguity.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void r16_brcb_blk_stride_zero_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 2048);
    pipe.InitBuffer(b, 2048);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> y = b.Get<float>();
    Duplicate(x, 1.0f, 512);
    Duplicate(y, 2.0f, 512);
    PipeBarrier<PIPE_V>();
    Brcb(y, x, 1, BrcbRepeatParams(0, 8));
}

int main() {
    twin_test::launch(1, [] { r16_brcb_blk_stride_zero_kernel(); });
    return twin_test::not_stopped();
}
