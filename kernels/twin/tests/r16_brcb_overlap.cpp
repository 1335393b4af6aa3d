// expect: Brcb src0 and dst overlap
// Rule B4 (ext_quant.h): Brcb must not write the memory it reads (x[8] is inside the 8 blocks written from x).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void r16_brcb_overlap_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 2048);
    pipe.InitBuffer(b, 2048);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> y = b.Get<float>();
    Duplicate(x, 1.0f, 512);
    Duplicate(y, 2.0f, 512);
    PipeBarrier<PIPE_V>();
    Brcb(x, x[8], 1, BrcbRepeatParams(1, 8));
}

int main() {
    twin_test::launch(1, [] { r16_brcb_overlap_kernel(); });
    return twin_test::not_stopped();
}
