// expect: Compare size not a multiple of 256 bytes
// Rule 6: Compare's count form only computes whole 256-byte repeats (32 floats are 128 B).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void compare_count() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, m;
    pipe.InitBuffer(a, 256);
    pipe.InitBuffer(m, 32);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<uint8_t> mask = m.Get<uint8_t>();
    Duplicate(x, 0.0f, 64);
    Compare(mask, x, x, CMPMODE::EQ, 32);
}

int main() {
    twin_test::launch(1, [] { compare_count(); });
    return twin_test::not_stopped();
}
