// expect: index out of bounds
// Rule 7: GlobalTensor::SetValue is bounded by the size given to SetGlobalBuffer.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void global_index(GM_ADDR y) {
    GlobalTensor<float> yGm;
    yGm.SetGlobalBuffer((__gm__ float*)y + 8 * GetBlockIdx(), 8);
    for (uint64_t i = 0; i <= 8; ++i) yGm.SetValue(i, 1.0f);
}

int main() {
    GM_ADDR y = opgen_twin::gm_alloc("y", 16 * sizeof(float));
    twin_test::launch(2, [&] { global_index(y); });
    return twin_test::not_stopped();
}
