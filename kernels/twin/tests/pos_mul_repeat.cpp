// expect: ok
// Positive test of level-0 Mul (ext_rotary.h): mask counts the elements of each 256-byte
// repeat, repeat strides and block strides are in 32-byte blocks, src1RepStride = 0 reuses one
// row for every repeat (a cos row broadcast over heads), in place with equal strides is allowed,
// and repeatTimes = 0 writes nothing.
#include <cstdio>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

int g_bad = 0;

void expect(bool ok, const char* what, uint32_t i) {
    if (!ok && g_bad++ < 5) std::fprintf(stderr, "pos_mul_repeat: %s wrong at %u\n", what, i);
}

extern "C" __global__ __aicore__ void mul_repeat() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> xBuf, cBuf, hBuf, hcBuf;
    pipe.InitBuffer(xBuf, 4 * 96 * sizeof(float));  // 4 rows of 96 floats (12 blocks)
    pipe.InitBuffer(cBuf, 96 * sizeof(float));      // one table row
    pipe.InitBuffer(hBuf, 2 * 160 * sizeof(half));  // 2 rows of 160 halves
    pipe.InitBuffer(hcBuf, 160 * sizeof(half));
    LocalTensor<float> x = xBuf.Get<float>();
    LocalTensor<float> c = cBuf.Get<float>();
    for (uint32_t i = 0; i < 4 * 96; ++i) x.SetValue(i, float(i));
    for (uint32_t j = 0; j < 96; ++j) c.SetValue(j, float(j % 7) - 3.0f);

    // Every row times the table row, in place: columns [0, 64) then [64, 96) (mask 32).
    const BinaryRepeatParams rows(1, 1, 1, 12, 12, 0);
    Mul(x, x, c, 64, 4, rows);
    Mul(x[64], x[64], c[64], 32, 4, rows);
    for (uint32_t i = 0; i < 4 * 96; ++i) expect(x.GetValue(i) == float(i) * (float(i % 96 % 7) - 3.0f), "broadcast", i);

    // Block stride 2: the 4 lanes-of-8 blocks read are 0, 2, 4, 6 (mask 32 = 4 blocks).
    for (uint32_t i = 0; i < 96; ++i) x.SetValue(i, 2.0f);
    for (uint32_t i = 96; i < 192; ++i) x.SetValue(i, -1.0f);
    Mul(x[96], x, c, 32, 1, BinaryRepeatParams(1, 2, 2, 8, 8, 8));
    for (uint32_t e = 0; e < 32; ++e) {
        const uint32_t src = (e / 8) * 16 + e % 8;
        expect(x.GetValue(96 + e) == 2.0f * (float(src % 7) - 3.0f), "block stride", e);
    }
    expect(x.GetValue(96 + 32) == -1.0f, "mask end", 32);

    // half: 128 lanes per repeat; rows of 160 halves (10 blocks).
    LocalTensor<half> h = hBuf.Get<half>();
    LocalTensor<half> hc = hcBuf.Get<half>();
    for (uint32_t i = 0; i < 320; ++i) h.SetValue(i, half(float(i % 50) * 0.5f));
    for (uint32_t j = 0; j < 160; ++j) hc.SetValue(j, half(2.0f));
    Mul(h, h, hc, 128, 2, BinaryRepeatParams(1, 1, 1, 10, 10, 0));
    for (uint32_t i = 0; i < 320; ++i) {
        const bool mul = i % 160 < 128;
        expect(float(h.GetValue(i)) == float(i % 50) * 0.5f * (mul ? 2.0f : 1.0f), "half", i);
    }

    // repeatTimes = 0 is a no-op.
    x.SetValue(0, 5.0f);
    Mul(x, x, c, 64, 0, rows);
    expect(x.GetValue(0) == 5.0f, "repeat 0", 0);
}

}  // namespace

int main() {
    // A numeric test: its vector and scalar steps lean on compiler auto-sync (V->V barriers,
    // S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { mul_repeat(); });
    if (g_bad != 0) {
        std::fprintf(stderr, "pos_mul_repeat: %d wrong elements\n", g_bad);
        return 1;
    }
    return 0;
}
