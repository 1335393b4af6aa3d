// expect: SELMODE not valid for this overload
// Rule 6: the scalar Select overload needs VSEL_TENSOR_SCALAR_MODE.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void select_mode_scalar() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, m;
    pipe.InitBuffer(a, 1024);
    pipe.InitBuffer(m, 256);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<uint8_t> mask = m.Get<uint8_t>();
    Duplicate(x, 1.0f, 64);
    Duplicate(mask.ReinterpretCast<uint16_t>(), uint16_t(0xFFFF), 64);
    Select(x, mask, x, 0.0f, SELMODE::VSEL_TENSOR_TENSOR_MODE, 64);
}

int main() {
    twin_test::launch(1, [] { select_mode_scalar(); });
    return twin_test::not_stopped();
}
