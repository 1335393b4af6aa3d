// expect: ok
// Positive test of ext_quant.h: level-0 Max folding strided rows, level-0 Sub (src0 - src1), (mask, block and repeat
// strides, NaN first), WholeReduceMax in both modelled orders (value-only results at
// dstRepStride elements, value/index pairs at pairs), ties keeping the lowest index, and Brcb
// (8 elements per repeat, one 32-byte block each, dstBlkStride and dstRepStride in blocks).
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

int g_bad = 0;

void expect(bool ok, const char* what, uint32_t i) {
    if (!ok && g_bad++ < 5) std::fprintf(stderr, "pos_quant_batch: %s wrong at %u\n", what, i);
}

extern "C" __global__ __aicore__ void quant_batch() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> rowsBuf, foldBuf, outBuf, pairBuf, srcBuf, brcbBuf, halfBuf, hOutBuf;
    pipe.InitBuffer(rowsBuf, 3 * 160 * sizeof(float));  // 3 rows of 136 at a stride of 160 floats (20 blocks)
    pipe.InitBuffer(foldBuf, 3 * 64 * sizeof(float));
    pipe.InitBuffer(outBuf, 64 * sizeof(float));
    pipe.InitBuffer(pairBuf, 64 * sizeof(float));
    pipe.InitBuffer(srcBuf, 16 * sizeof(float));
    pipe.InitBuffer(brcbBuf, 32 * 8 * sizeof(float));
    pipe.InitBuffer(halfBuf, 2 * 128 * sizeof(half));
    pipe.InitBuffer(hOutBuf, 32 * sizeof(half));
    LocalTensor<float> x = rowsBuf.Get<float>();
    LocalTensor<float> fold = foldBuf.Get<float>();
    LocalTensor<float> out = outBuf.Get<float>();
    for (uint32_t i = 0; i < 3 * 160; ++i) x.SetValue(i, -1000.0f);  // the gaps: never the max
    // Row r's max sits in chunk r (0, 1 or the short third chunk of 8 lanes).
    for (uint32_t r = 0; r < 3; ++r) {
        for (uint32_t j = 0; j < 136; ++j) x.SetValue(r * 160 + j, float(j % 13));
        x.SetValue(r * 160 + (r == 0 ? 5 : r == 1 ? 70 : 130), 99.0f + float(r));
    }
    // fold = max(chunk 0, chunk 1), then the 8-lane third chunk; gaps past 136 are masked off.
    Max(fold, x, x[64], 64, 3, BinaryRepeatParams(1, 1, 1, 8, 20, 20));
    Max(fold, fold, x[128], 8, 3, BinaryRepeatParams(1, 1, 1, 8, 8, 20));
    for (uint32_t r = 0; r < 3; ++r) {
        for (uint32_t j = 0; j < 64; ++j) {
            float want = std::fmax(float(j % 13), float((j + 64) % 13));
            if (j < 8) want = std::fmax(want, float((j + 128) % 13));
            if (r == 0 && j == 5) want = 99.0f;
            if (r == 1 && j == 6) want = 100.0f;
            if (r == 2 && j == 2) want = 101.0f;
            expect(fold.GetValue(r * 64 + j) == want, "level-0 Max fold", r * 64 + j);
        }
    }
    // level-0 Sub: row r's lanes 64..71 minus lanes 0..7 of the same row (8-lane mask, rows 20
    // blocks apart in both sources, dst rows one block apart); src0 - src1, not the reverse.
    LocalTensor<float> diff = pairBuf.Get<float>();
    Sub(diff, x[64], x, 8, 3, BinaryRepeatParams(1, 1, 1, 1, 20, 20));
    for (uint32_t r = 0; r < 3; ++r) {
        for (uint32_t j = 0; j < 8; ++j) {
            expect(diff.GetValue(r * 8 + j) == x.GetValue(r * 160 + 64 + j) - x.GetValue(r * 160 + j), "level-0 Sub",
                   r * 8 + j);
        }
    }
    // Value-only maxima, one per row, at dstRepStride 2 (elements).
    Duplicate(out, -7.0f, 64);
    WholeReduceMax(out, fold, 64, 3, 2, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    for (uint32_t r = 0; r < 3; ++r) {
        expect(out.GetValue(2 * r) == 99.0f + float(r), "only value", r);
        expect(out.GetValue(2 * r + 1) == -7.0f, "only value stride", r);
    }
    // A mask of 5 sees only lanes 0..4 of each row of x (row 0's 99 is lane 5).
    WholeReduceMax(out, x, 5, 1, 1, 1, 20, ReduceOrder::ORDER_ONLY_VALUE);
    expect(out.GetValue(0) == 4.0f, "mask", 0);
    // Value/index pairs; a tie keeps the lowest index, a NaN wins.
    LocalTensor<float> pairs = pairBuf.Get<float>();
    for (uint32_t j = 0; j < 64; ++j) fold.SetValue(j, j == 10 || j == 20 ? 50.0f : 1.0f);
    for (uint32_t j = 0; j < 64; ++j) fold.SetValue(64 + j, j == 30 ? NAN : float(j));
    WholeReduceMax(pairs, fold, 64, 2, 1, 1, 8, ReduceOrder::ORDER_VALUE_INDEX);
    uint32_t index = 0;
    expect(pairs.GetValue(0) == 50.0f, "pair value", 0);
    float bits = pairs.GetValue(1);
    std::memcpy(&index, &bits, sizeof index);
    expect(index == 10, "pair index (tie)", 0);
    expect(std::isnan(pairs.GetValue(2)), "pair NaN", 1);
    bits = pairs.GetValue(3);
    std::memcpy(&index, &bits, sizeof index);
    expect(index == 30, "pair index (NaN)", 1);
    // half: 128 lanes per repeat.
    LocalTensor<half> h = halfBuf.Get<half>();
    LocalTensor<half> ho = hOutBuf.Get<half>();
    for (uint32_t i = 0; i < 256; ++i) h.SetValue(i, half(float(i % 128 == 77 ? 9 : 1) * (i < 128 ? 1.0f : 2.0f)));
    WholeReduceMax(ho, h, 128, 2, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);
    expect(float(ho.GetValue(0)) == 9.0f && float(ho.GetValue(1)) == 18.0f, "half", 0);

    // Brcb: 16 values, 2 repeats; block j of repeat r at (r * dstRepStride + j * dstBlkStride) blocks.
    LocalTensor<float> s = srcBuf.Get<float>();
    LocalTensor<float> bb = brcbBuf.Get<float>();
    for (uint32_t i = 0; i < 16; ++i) s.SetValue(i, float(i) + 0.5f);
    Duplicate(bb, -1.0f, 32 * 8);
    Brcb(bb, s, 2, BrcbRepeatParams(1, 8));
    for (uint32_t i = 0; i < 16 * 8; ++i) expect(bb.GetValue(i) == float(i / 8) + 0.5f, "brcb contiguous", i);
    Duplicate(bb, -1.0f, 32 * 8);
    Brcb(bb, s, 2, BrcbRepeatParams(2, 16));
    for (uint32_t blk = 0; blk < 32; ++blk) {
        const bool written = blk % 2 == 0;
        const float want = written ? float(blk / 2) + 0.5f : -1.0f;
        for (uint32_t e = 0; e < 8; ++e) expect(bb.GetValue(blk * 8 + e) == want, "brcb strided", blk * 8 + e);
    }
    // repeatTimes 0 writes nothing.
    Brcb(bb, s, 0, BrcbRepeatParams(1, 8));
    expect(bb.GetValue(8) == -1.0f, "brcb repeat 0", 8);
}

}  // namespace

int main() {
    // A numeric test: its vector and scalar steps lean on compiler auto-sync (V->V barriers,
    // S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { quant_batch(); });
    if (g_bad != 0) {
        std::fprintf(stderr, "pos_quant_batch: %d wrong elements\n", g_bad);
        return 1;
    }
    return 0;
}
