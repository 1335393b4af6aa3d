// expect: dtype not supported on A2
// Rule G1 (ext_rotary.h): Gather on A2 moves 16- and 32-bit elements only; int8_t is refused.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gather_dtype() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b, o;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(b, 256);
    pipe.InitBuffer(o, 256);
    LocalTensor<uint32_t> off = o.Get<uint32_t>();
    Duplicate(off, uint32_t(0), 32);
    Gather(b.Get<int8_t>(), a.Get<int8_t>(), off, 0, 32);
}

int main() {
    twin_test::launch(1, [] { gather_dtype(); });
    return twin_test::not_stopped();
}
