// expect: UB address not 32-byte aligned
// Rule G2 (ext_rotary.h): Gather's operands start on 32-byte boundaries; src[4] starts 16 B in.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gather_misaligned() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, o;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(o, 256);
    LocalTensor<float> src = a.Get<float>();
    LocalTensor<uint32_t> off = o.Get<uint32_t>();
    Duplicate(src, 1.0f, 64);
    Duplicate(off, uint32_t(0), 8);
    Gather(b.Get<float>(), src[4], off, 0, 8);
}

int main() {
    twin_test::launch(1, [] { gather_misaligned(); });
    return twin_test::not_stopped();
}
