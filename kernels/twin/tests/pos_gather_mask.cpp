// expect: ok
// Positive test of GatherMask (user pattern, counter mode, one repeat): the int32 indices and the
// float values whose CompareScalar bit is set are compacted in order and rsvdCnt counts them;
// a count that is not a multiple of 32 (the pattern's last word partly used), an all-clear and
// an all-set pattern, in-place compaction, and half with a uint16_t pattern.
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

constexpr uint32_t kN = 128;
constexpr uint32_t kPart = 77;  // elements gathered from the 128 compared

struct Results {
    uint64_t count_idx;
    uint64_t count_part;
    uint64_t count_none;
    uint64_t count_all;
    uint64_t count_half;
    int32_t idx[kN];
    float part[kN];
    float all[kN];
    float halves[kN];
};

extern "C" __global__ __aicore__ void gather_mask(GM_ADDR fx, Results* res) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> fb, ib, ob, mb, zb, hb, hob;
    pipe.InitBuffer(fb, kN * 4);
    pipe.InitBuffer(ib, kN * 4);
    pipe.InitBuffer(ob, kN * 4);
    pipe.InitBuffer(mb, 32);
    pipe.InitBuffer(zb, 32);
    pipe.InitBuffer(hb, kN * 2);
    pipe.InitBuffer(hob, kN * 2);
    GlobalTensor<float> fGm;
    fGm.SetGlobalBuffer((__gm__ float*)fx, kN);
    LocalTensor<float> f = fb.Get<float>();
    LocalTensor<int32_t> idx = ib.Get<int32_t>();
    LocalTensor<uint8_t> m = mb.Get<uint8_t>();
    DataCopy(f, fGm, kN);
    PipeBarrier<PIPE_ALL>();
    for (uint32_t i = 0; i < kN; ++i) idx.SetValue(i, static_cast<int32_t>(i));
    PipeBarrier<PIPE_ALL>();
    CompareScalar(m, f, 0.0f, CMPMODE::GT, kN);
    PipeBarrier<PIPE_V>();
    const GatherMaskParams one(1, 1, 8, 8);
    LocalTensor<int32_t> oi = ob.Get<int32_t>();
    GatherMask(oi, idx, m.ReinterpretCast<uint32_t>(), true, kN, one, res->count_idx);
    for (uint64_t i = 0; i < res->count_idx; ++i) res->idx[i] = oi.GetValue(i);
    LocalTensor<float> of = ob.Get<float>();
    GatherMask(of, f, m.ReinterpretCast<uint32_t>(), true, kPart, one, res->count_part);
    for (uint64_t i = 0; i < res->count_part; ++i) res->part[i] = of.GetValue(i);
    LocalTensor<uint32_t> z = zb.Get<uint32_t>();
    Duplicate(z.ReinterpretCast<int32_t>(), 0, 8);
    PipeBarrier<PIPE_V>();
    GatherMask(of, f, z, true, kN, one, res->count_none);
    Duplicate(z.ReinterpretCast<int32_t>(), -1, 8);
    PipeBarrier<PIPE_V>();
    GatherMask(f, f, z, true, kN, one, res->count_all);  // in place, every element kept
    for (uint64_t i = 0; i < res->count_all; ++i) res->all[i] = f.GetValue(i);
    LocalTensor<half> h = hb.Get<half>();
    LocalTensor<half> ho = hob.Get<half>();
    PipeBarrier<PIPE_ALL>();
    Cast(h, f, RoundMode::CAST_NONE, kN);
    PipeBarrier<PIPE_V>();
    GatherMask(ho, h, m.ReinterpretCast<uint16_t>(), true, kN, one, res->count_half);
    for (uint64_t i = 0; i < res->count_half; ++i) res->halves[i] = float(ho.GetValue(i));
}

int g_bad = 0;
void expect(const char* what, double got, double want) {
    if (got != want && g_bad++ < 12) std::fprintf(stderr, "pos_gather_mask: %s = %.9g, want %.9g\n", what, got, want);
}

}  // namespace

int main() {
    opgen_twin::set_auto_sync(true);
    GM_ADDR fx = opgen_twin::gm_alloc("fx", kN * 4);
    float fv[kN];
    for (uint32_t i = 0; i < kN; ++i) fv[i] = static_cast<float>((i * 37 + 11) % 19) - 9.0f;  // 0.0 is not > 0
    std::memcpy(fx, fv, sizeof fv);
    Results res{};
    twin_test::launch(1, [&] { gather_mask(fx, &res); });
    uint64_t k = 0, kp = 0;
    for (uint32_t i = 0; i < kN; ++i) {
        if (fv[i] > 0.0f) {
            expect("index", res.idx[k], i);
            expect("half", res.halves[k], fv[i]);
            ++k;
            if (i < kPart) expect("part", res.part[kp++], fv[i]);
        }
        expect("all", res.all[i], fv[i]);
    }
    expect("count", double(res.count_idx), double(k));
    expect("count of the first 77", double(res.count_part), double(kp));
    expect("count none", double(res.count_none), 0);
    expect("count all", double(res.count_all), kN);
    expect("count half", double(res.count_half), double(k));
    if (k == 0 || k == kN || kp == k) expect("a pattern with both bits", 0, 1);
    return g_bad == 0 ? 0 : 1;
}
