// expect: ok
// Positive test of MulAddDst (vector.h): dst = src0 * src1 + dst for float and half, in place
// with src0, a count that is not a whole repeat (the lanes past it untouched), and the two
// roundings the twin assumes (the product rounded to float before the sum).
#include <cstdio>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

int g_bad = 0;

void expect(bool ok, const char* what, uint32_t i) {
    if (!ok && g_bad++ < 5) std::fprintf(stderr, "pos_mul_add_dst: %s wrong at %u\n", what, i);
}

extern "C" __global__ __aicore__ void mul_add_dst() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> aBuf, bBuf, dBuf, hBuf;
    pipe.InitBuffer(aBuf, 128 * sizeof(float));
    pipe.InitBuffer(bBuf, 128 * sizeof(float));
    pipe.InitBuffer(dBuf, 128 * sizeof(float));
    pipe.InitBuffer(hBuf, 3 * 160 * sizeof(half));
    LocalTensor<float> a = aBuf.Get<float>();
    LocalTensor<float> b = bBuf.Get<float>();
    LocalTensor<float> d = dBuf.Get<float>();
    for (uint32_t i = 0; i < 128; ++i) {
        a.SetValue(i, float(i) - 40.0f);
        b.SetValue(i, 0.25f * float(i % 9));
        d.SetValue(i, float(i % 5));
    }
    // 100 of 128 lanes: the last 28 keep their value.
    MulAddDst(d, a, b, 100);
    for (uint32_t i = 0; i < 128; ++i) {
        const float want = i < 100 ? (float(i) - 40.0f) * (0.25f * float(i % 9)) + float(i % 5) : float(i % 5);
        expect(d.GetValue(i) == want, "float", i);
    }
    // In place with src0: a = a * b + a.
    MulAddDst(a, a, b, 128);
    for (uint32_t i = 0; i < 128; ++i) {
        const float x = float(i) - 40.0f;
        expect(a.GetValue(i) == x * (0.25f * float(i % 9)) + x, "in place", i);
    }
    // Two roundings: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 (a tie to even) before
    // -(1 + 2^-11) is added, so the sum is 0; a fused multiply-add would give 2^-24.
    const float u = 1.0f + 1.0f / 4096.0f;
    a.SetValue(0, u);
    b.SetValue(0, u);
    d.SetValue(0, -(1.0f + 1.0f / 2048.0f));
    MulAddDst(d, a, b, 1);
    expect(d.GetValue(0) == 0.0f, "two roundings", 0);
    // half: 160 lanes (a repeat and a quarter), each operation rounded to half.
    LocalTensor<half> h = hBuf.Get<half>();
    for (uint32_t i = 0; i < 160; ++i) {
        h.SetValue(i, half(float(i % 13) * 0.5f));
        h.SetValue(160 + i, half(-3.0f));
        h.SetValue(320 + i, half(float(i)));
    }
    MulAddDst(h[320], h, h[160], 160);
    for (uint32_t i = 0; i < 160; ++i) {
        expect(float(h.GetValue(320 + i)) == float(half(float(i) - 1.5f * float(i % 13))), "half", i);
    }
}

}  // namespace

int main() {
    // The scalar set-up and checks lean on auto-sync (S<->V waits, V->V barriers).
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { mul_add_dst(); });
    if (g_bad != 0) {
        std::fprintf(stderr, "pos_mul_add_dst: %d wrong elements\n", g_bad);
        return 1;
    }
    return 0;
}
