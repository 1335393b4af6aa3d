// expect: buffer overlaps the API scratch at TMP_UB_OFFSET: VECCALC TBuf #2 [UB 0x2e000, 32 B] covers UB [0x2e000, 0x2e020)
// Rule 14: on dav_c220 Select's tensor-tensor and scalar modes write 32 B of scratch at
// TMP_UB_OFFSET = 184 KiB (CANN 8.1 impl/dav_c220/kernel_operator_vec_cmpsel_impl.h), whatever
// the TPipe put there. This kernel's mask buffer starts at 184 KiB, so Select would clobber it.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void api_scratch() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> low, high, mask, dst;
    pipe.InitBuffer(low, 180 * 1024);
    pipe.InitBuffer(high, 4096);  // [180 KiB, 184 KiB): just below the scratch, fine
    pipe.InitBuffer(mask, 32);
    pipe.InitBuffer(dst, 256);
    LocalTensor<float> a = low.Get<float>(64);
    LocalTensor<uint8_t> m = mask.Get<uint8_t>();
    Duplicate(a, 1.0f, 64);
    Duplicate(m.ReinterpretCast<uint16_t>(), static_cast<uint16_t>(0x5555), 16);
    PipeBarrier<PIPE_V>();
    Select(dst.Get<float>(), m, a, a, SELMODE::VSEL_TENSOR_TENSOR_MODE, 64);
}

int main() {
    twin_test::launch(1, [] { api_scratch(); });
    return twin_test::not_stopped();
}
