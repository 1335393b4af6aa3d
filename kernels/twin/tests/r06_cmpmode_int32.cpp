// expect: CMPMODE not supported for int32_t
// Rule 6: A2 compares int32_t only for equality; LT on int32 is refused.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void cmpmode_int32() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, m;
    pipe.InitBuffer(a, 1024);
    pipe.InitBuffer(m, 256);
    LocalTensor<int32_t> x = a.Get<int32_t>();
    LocalTensor<uint8_t> mask = m.Get<uint8_t>();
    Duplicate(x, int32_t(1), 64);
    Compare(mask, x, x, CMPMODE::LT, 64);
}

int main() {
    twin_test::launch(1, [] { cmpmode_int32(); });
    return twin_test::not_stopped();
}
