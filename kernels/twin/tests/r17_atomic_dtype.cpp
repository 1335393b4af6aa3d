// expect: atomic dtype not supported on A2: T = uint32_t
// Rule 17: dav_c220 SetAtomicAdd<T> supports half, float, int16_t, int32_t, int8_t and
// bfloat16_t only (the ASCENDC_ASSERT of SetAtomicAddImpl; the API reference's A2 list).
#include "kernels/atomic.h"
#include "twin_test.h"
using namespace AscendC;
using atomic_test::TILE_BYTES;

extern "C" __global__ __aicore__ void kernel() { SetAtomicAdd<uint32_t>(); }

int main() {
    twin_test::launch(1, [&] { kernel(); });
    return twin_test::not_stopped();
}
