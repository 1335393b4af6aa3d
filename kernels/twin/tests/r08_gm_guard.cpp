// expect: GM guard damaged
// Rule 8: a raw __gm__ pointer write past a buffer's end bypasses the API checks; the guard
// bytes around every GM buffer catch it when the core ends.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void gm_guard(GM_ADDR y, uint32_t n) {
    __gm__ float* out = (__gm__ float*)y;
    for (uint32_t i = 0; i <= n; ++i) out[i] = 0.0f;  // one element too many
}

int main() {
    GM_ADDR y = opgen_twin::gm_alloc("y", 40 * sizeof(float));
    twin_test::launch(1, [&] { gm_guard(y, 40); });
    return twin_test::not_stopped();
}
