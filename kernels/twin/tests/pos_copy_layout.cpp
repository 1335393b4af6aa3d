// expect: ok
// Positive test of the DMA units and layouts: DataCopyPad GM->UB puts each row in its own
// 32-byte-aligned slot (left padding, data, right padding, filler up to the slot end) with the GM
// stride in bytes and the UB stride in blocks; UB->GM writes exactly blockLen bytes per row;
// without isPad, dummy lanes repeat the row's first element, but with left/right padding every
// non-data lane is random (seeded garbage: some NaN, some finite, none the -1 left there); the legacy DataCopyParams forms take blockLen in bytes; strided DataCopy counts blocks on both
// sides; UB->UB DataCopy copies.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

constexpr uint32_t kSrc = 64;    // halves in x
constexpr uint32_t kDump = 128;  // halves per UB dump

extern "C" __global__ __aicore__ void copy_layout(GM_ADDR x, GM_ADDR dump, GM_ADDR rows, GM_ADDR strided) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> other;
    pipe.InitBuffer(in, 1, kDump * 2);
    pipe.InitBuffer(other, kDump * 2);
    GlobalTensor<half> xGm, dumpGm, rowsGm, stridedGm;
    xGm.SetGlobalBuffer((__gm__ half*)x, kSrc);
    dumpGm.SetGlobalBuffer((__gm__ half*)dump, 5 * kDump);
    rowsGm.SetGlobalBuffer((__gm__ half*)rows, 32);
    stridedGm.SetGlobalBuffer((__gm__ half*)strided, 64);

    // 3 rows of 5 halves, 3 halves skipped between rows in GM (6 B), 1 block between UB slots;
    // 2 halves of left padding, 1 of right padding, padding value 7.
    LocalTensor<half> t = in.AllocTensor<half>();
    Duplicate(t, (half)-1.0f, kDump);
    PipeBarrier<PIPE_ALL>();
    DataCopyExtParams copy{3, 10, 6, 1, 0};
    DataCopyPadExtParams<half> pad{true, 2, 1, (half)7.0f};
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(t, xGm, copy, pad);
    PipeBarrier<PIPE_ALL>();
    DataCopy(dumpGm, t, kDump);
    PipeBarrier<PIPE_ALL>();

    // The same rows without isPad: every non-data lane repeats the row's first element.
    Duplicate(t, (half)-1.0f, kDump);
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(t, xGm, copy, DataCopyPadExtParams<half>{false, 0, 0, (half)0.0f});
    PipeBarrier<PIPE_ALL>();
    DataCopy(dumpGm[kDump], t, kDump);
    PipeBarrier<PIPE_ALL>();

    // Without isPad but with padding: the padding and dummy lanes are random.
    Duplicate(t, (half)-1.0f, kDump);
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(t, xGm, copy, DataCopyPadExtParams<half>{false, 2, 1, (half)7.0f});
    PipeBarrier<PIPE_ALL>();
    DataCopy(dumpGm[4 * kDump], t, kDump);
    PipeBarrier<PIPE_ALL>();

    // Legacy form: blockLen in bytes, 64-bit paddingValue holding half's bit pattern (2.0 = 0x4000).
    Duplicate(t, (half)-1.0f, kDump);
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(t, xGm, DataCopyParams{2, 6, 2, 0}, DataCopyPadParams{true, 0, 0, 0x4000});
    PipeBarrier<PIPE_ALL>();
    DataCopy(dumpGm[2 * kDump], t, kDump);
    PipeBarrier<PIPE_ALL>();

    // UB -> GM: rows of 5 halves from slots 2 blocks apart (1 block of stride), 4 B apart in GM.
    in.EnQue(t);
    LocalTensor<half> u = in.DeQue<half>();
    Duplicate(u, (half)0.0f, kDump);
    PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i < kDump; ++i) u.SetValue(i, (half)float(i));
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(rowsGm, u, DataCopyExtParams{3, 10, 1, 4, 0});
    PipeBarrier<PIPE_ALL>();

    // Strided DataCopy: 2 blocks of 32 B, 1 block skipped in GM, 2 skipped in UB.
    LocalTensor<half> o = other.Get<half>();
    Duplicate(o, (half)-1.0f, kDump);
    PipeBarrier<PIPE_ALL>();
    DataCopy(o, xGm, DataCopyParams{2, 1, 1, 2});
    PipeBarrier<PIPE_ALL>();
    DataCopy(dumpGm[3 * kDump], o, kDump);
    PipeBarrier<PIPE_ALL>();
    // ... and back out with the strides swapped, then a UB->UB copy.
    PipeBarrier<PIPE_ALL>();
    DataCopy(stridedGm, o, DataCopyParams{2, 1, 2, 1});
    PipeBarrier<PIPE_ALL>();
    DataCopy(o, u, 32);
    PipeBarrier<PIPE_ALL>();
    DataCopy(stridedGm[48], o, 16);
    PipeBarrier<PIPE_ALL>();
    in.FreeTensor(u);
}

float h(GM_ADDR base, uint32_t i) {
    half v;
    std::memcpy(&v, base + 2 * i, 2);
    return float(v);
}

int g_bad = 0;
void expect(const char* what, uint32_t i, float got, float want) {
    if (got != want && g_bad++ < 12) std::fprintf(stderr, "%s[%u] = %g, want %g\n", what, i, double(got), double(want));
}

}  // namespace

int main() {
    // This test is about data layout and numerics, not pipelining: every copy sits between
    // PipeBarrier<PIPE_ALL>s, and the vector/scalar steps lean on compiler auto-sync.
    opgen_twin::set_auto_sync(true);
    GM_ADDR x = opgen_twin::gm_alloc("x", kSrc * 2);
    GM_ADDR dump = opgen_twin::gm_alloc("dump", 5 * kDump * 2);
    GM_ADDR rows = opgen_twin::gm_alloc("rows", 32 * 2);
    GM_ADDR strided = opgen_twin::gm_alloc("strided", 64 * 2);
    for (uint32_t i = 0; i < kSrc; ++i) {
        const half v = half(float(i + 100));
        std::memcpy(x + 2 * i, &v, 2);
    }
    twin_test::launch(1, [&] { copy_layout(x, dump, rows, strided); });

    // Ext form: row r reads x[8r .. 8r+5) and fills the 16 lanes at UB lane 32r.
    uint32_t garbage_nan = 0, garbage_finite = 0;
    for (uint32_t r = 0; r < 3; ++r) {
        for (uint32_t lane = 0; lane < 16; ++lane) {
            const bool data = lane >= 2 && lane < 7;
            const float src = float(100 + 8 * r + (lane - 2));
            expect("pad", 32 * r + lane, h(dump, 32 * r + lane), data ? src : 7.0f);
            expect("nopad", 32 * r + lane, h(dump, kDump + 32 * r + lane),
                   lane < 5 ? float(100 + 8 * r + lane) : float(100 + 8 * r));
        }
        for (uint32_t lane = 0; lane < 16; ++lane) {
            const bool data = lane >= 2 && lane < 7;
            const float got = h(dump, 4 * kDump + 32 * r + lane);
            if (data) {
                expect("random pad data", 32 * r + lane, got, float(100 + 8 * r + (lane - 2)));
            } else if (std::isnan(got)) {
                ++garbage_nan;
            } else if (got != -1.0f) {
                ++garbage_finite;  // (or infinite: any bits but NaN's)
            }
        }
        for (uint32_t lane = 16; lane < 32 && r < 2; ++lane) expect("stride gap", 32 * r + lane, h(dump, 32 * r + lane), -1.0f);
    }
    // Legacy form: 2 rows of 3 halves, 2 B (1 half) apart in GM, consecutive slots.
    for (uint32_t r = 0; r < 2; ++r) {
        for (uint32_t lane = 0; lane < 16; ++lane) {
            expect("legacy", 16 * r + lane, h(dump, 2 * kDump + 16 * r + lane),
                   lane < 3 ? float(100 + 4 * r + lane) : 2.0f);
        }
    }
    // UB -> GM rows: row r = u[32r .. 32r+5) lands at GM half 7r (5 halves + 2 halves of gap).
    for (uint32_t i = 0; i < 32; ++i) {
        const uint32_t r = i / 7, col = i % 7;
        const bool data = r < 3 && col < 5;
        expect("rows", i, h(rows, i), data ? float(32 * r + col) : 0.0f);
    }
    // Strided in: blocks x[0..16) and x[32..48) at UB lanes 0 and 48.
    for (uint32_t lane = 0; lane < 80; ++lane) {
        const float want = lane < 16 ? float(100 + lane) : (lane >= 48 && lane < 64) ? float(100 + 32 + lane - 48) : -1.0f;
        expect("strided in", lane, h(dump, 3 * kDump + lane), want);
    }
    // Strided out: UB lanes 0..16 and 48..64 (2 blocks apart) land at GM 0 and 32 (1 block gap);
    // then the UB->UB copy of u[0..32) and its first 16 lanes at GM 48.
    for (uint32_t i = 0; i < 64; ++i) {
        const float want = i < 16 ? float(100 + i) : i < 32 ? 0.0f : i < 48 ? float(132 + i - 32) : float(i - 48);
        expect("strided out", i, h(strided, i), want);
    }
    // 33 random lanes (with the default seed 0): the garbage has both kinds.
    if (garbage_nan == 0 || garbage_finite == 0) {
        std::fprintf(stderr, "random pad lanes: %u NaN, %u other, want both\n", garbage_nan, garbage_finite);
        ++g_bad;
    }
    return g_bad == 0 ? 0 : 1;
}
