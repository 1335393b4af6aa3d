// expect: GatherMask form not modelled
// Rule 6: the twin models GatherMask in counter mode with one repeat only; normal mode (which
// takes 256 bytes per repeat and ignores mask) is refused rather than guessed.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gather_mask_form() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, c;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(c, 32);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> y = b.Get<float>();
    LocalTensor<uint32_t> m = c.Get<uint32_t>();
    Duplicate(x, 1.0f, 64);
    Duplicate(m.ReinterpretCast<int32_t>(), -1, 8);
    PipeBarrier<PIPE_V>();
    uint64_t kept = 0;
    GatherMask(y, x, m, false, 0, GatherMaskParams(1, 1, 8, 8), kept);
}

int main() {
    twin_test::launch(1, [] { gather_mask_form(); });
    return twin_test::not_stopped();
}
