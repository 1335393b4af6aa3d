// expect: use of a buffer released by TPipe::Reset
// Rule 3: TPipe::Reset releases every buffer; a tensor taken before it points at UB that the
// next plan reuses.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void use_after_reset() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> t = a.Get<float>();
    pipe.Reset();
    Duplicate(t, 1.0f, 64);
}

int main() {
    twin_test::launch(1, [] { use_after_reset(); });
    return twin_test::not_stopped();
}
