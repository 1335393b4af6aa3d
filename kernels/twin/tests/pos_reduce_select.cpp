// expect: ok
// Positive test of reductions and masks: half ReduceSum in the documented order (tree inside
// each 128-lane repeat, repeats in sequence, every addition rounded to half), ReduceMax/Min with
// the index in T's bits and ties to the lowest index, WholeReduceSum over strided rows, and
// Compare / CompareScalar / Select with LSB-first masks.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

constexpr uint32_t kHalves = 300;
constexpr uint32_t kFloats = 128;

struct Results {
    float half_sum;
    float max_value;
    uint32_t max_index;
    float min_value;
    uint32_t min_index;
    float half_max;
    uint16_t half_max_index;
    float rows[4];
    uint8_t lt_mask[16];
    uint8_t ge_scalar_mask[16];
    float selected[kFloats];
    float selected_scalar[kFloats];
    float selected_repeating[kFloats];
};

extern "C" __global__ __aicore__ void reduce_select(GM_ADDR hx, GM_ADDR fx, Results* res) {
    TPipe pipe;
    TBuf<TPosition::VECCALC> hb, fb, gb, work, out, mask, sel;
    pipe.InitBuffer(hb, 640);
    pipe.InitBuffer(fb, kFloats * 4);
    pipe.InitBuffer(gb, kFloats * 4);
    pipe.InitBuffer(work, 1024);
    pipe.InitBuffer(out, 64);
    pipe.InitBuffer(mask, 32);
    pipe.InitBuffer(sel, kFloats * 4);
    GlobalTensor<half> hGm;
    GlobalTensor<float> fGm;
    hGm.SetGlobalBuffer((__gm__ half*)hx, 320);
    fGm.SetGlobalBuffer((__gm__ float*)fx, kFloats);
    LocalTensor<half> h = hb.Get<half>();
    LocalTensor<float> f = fb.Get<float>(), g = gb.Get<float>(), w = work.Get<float>(), o = out.Get<float>();
    LocalTensor<float> s = sel.Get<float>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(h, hGm, 320);
    PipeBarrier<PIPE_ALL>();
    DataCopy(f, fGm, kFloats);
    PipeBarrier<PIPE_ALL>();
    event_t ev = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));

    LocalTensor<half> ho = out.Get<half>();
    ReduceSum(ho, h, work.Get<half>(), kHalves);
    SetFlag<HardEvent::V_S>(ev);
    WaitFlag<HardEvent::V_S>(ev);
    res->half_sum = float(ho.GetValue(0));

    ReduceMax(o, f, w, kFloats, true);
    res->max_value = o.GetValue(0);
    res->max_index = o.ReinterpretCast<uint32_t>().GetValue(1);
    ReduceMin(o, f, w, kFloats, true);
    res->min_value = o.GetValue(0);
    res->min_index = o.ReinterpretCast<uint32_t>().GetValue(1);
    ReduceMax(ho, h, work.Get<half>(), kHalves, true);
    res->half_max = float(ho.GetValue(0));
    res->half_max_index = ho.ReinterpretCast<uint16_t>().GetValue(1);

    // 4 rows of 32 floats (4 blocks) each; sum the first 20 lanes of every row.
    WholeReduceSum<float>(o, f, 20, 4, 1, 1, 4);
    for (int r = 0; r < 4; ++r) res->rows[r] = o.GetValue(r);

    Duplicate(g, 0.0f, kFloats);
    PipeBarrier<PIPE_ALL>();
    LocalTensor<uint8_t> m = mask.Get<uint8_t>();
    Compare(m, f, g, CMPMODE::LT, kFloats);
    for (int i = 0; i < 16; ++i) res->lt_mask[i] = m.GetValue(i);
    Select(s, m, f, g, SELMODE::VSEL_TENSOR_TENSOR_MODE, kFloats);
    for (uint32_t i = 0; i < kFloats; ++i) res->selected[i] = s.GetValue(i);
    Select(s, m, f, -1.0f, SELMODE::VSEL_TENSOR_SCALAR_MODE, kFloats);
    for (uint32_t i = 0; i < kFloats; ++i) res->selected_scalar[i] = s.GetValue(i);
    Select(s, m, f, g, SELMODE::VSEL_CMPMASK_SPR, kFloats);
    for (uint32_t i = 0; i < kFloats; ++i) res->selected_repeating[i] = s.GetValue(i);
    CompareScalar(m, f, 0.5f, CMPMODE::GE, kFloats);
    for (int i = 0; i < 16; ++i) res->ge_scalar_mask[i] = m.GetValue(i);
}

_Float16 add16(_Float16 a, _Float16 b) { return static_cast<_Float16>(static_cast<double>(a) + static_cast<double>(b)); }

int g_bad = 0;
void expect(const char* what, double got, double want) {
    if (got != want && g_bad++ < 12) std::fprintf(stderr, "%s = %.9g, want %.9g\n", what, got, want);
}

}  // namespace

int main() {
    // This test is about data layout and numerics, not pipelining: every copy sits between
    // PipeBarrier<PIPE_ALL>s, and the vector/scalar steps lean on compiler auto-sync.
    opgen_twin::set_auto_sync(true);
    GM_ADDR hx = opgen_twin::gm_alloc("hx", 320 * 2);
    GM_ADDR fx = opgen_twin::gm_alloc("fx", kFloats * 4);
    _Float16 hv[320];
    float fv[kFloats];
    for (uint32_t i = 0; i < 320; ++i) hv[i] = static_cast<_Float16>(std::sin(0.7 * i) * 40.0 + 0.013 * i);
    hv[250] = static_cast<_Float16>(60.0);
    hv[251] = static_cast<_Float16>(60.0);  // a tie: the lower index wins
    for (uint32_t i = 0; i < kFloats; ++i) fv[i] = float(std::cos(0.3 * i)) * 3.0f;
    fv[77] = 9.5f;
    fv[12] = -7.25f;
    std::memcpy(hx, hv, sizeof hv);
    std::memcpy(fx, fv, sizeof fv);
    Results res{};
    twin_test::launch(1, [&] { reduce_select(hx, fx, &res); });

    _Float16 total = 0;
    for (uint32_t first = 0; first < kHalves; first += 128) {
        _Float16 lanes[128];
        uint32_t m = kHalves - first < 128 ? kHalves - first : 128;
        for (uint32_t i = 0; i < m; ++i) lanes[i] = hv[first + i];
        while (m > 1) {
            const uint32_t pairs = m / 2;
            for (uint32_t i = 0; i < pairs; ++i) lanes[i] = add16(lanes[2 * i], lanes[2 * i + 1]);
            if (m % 2) lanes[pairs] = lanes[m - 1];
            m = pairs + m % 2;
        }
        total = first == 0 ? lanes[0] : add16(total, lanes[0]);
    }
    expect("half ReduceSum", res.half_sum, double(total));
    expect("ReduceMax value", res.max_value, 9.5);
    expect("ReduceMax index", res.max_index, 77);
    expect("ReduceMin value", res.min_value, -7.25);
    expect("ReduceMin index", res.min_index, 12);
    expect("half ReduceMax value", res.half_max, 60.0);
    expect("half ReduceMax index", res.half_max_index, 250);
    for (int r = 0; r < 4; ++r) {
        float lanes[20];
        for (int j = 0; j < 20; ++j) lanes[j] = fv[32 * r + j];
        uint32_t m = 20;
        while (m > 1) {
            const uint32_t pairs = m / 2;
            for (uint32_t i = 0; i < pairs; ++i) lanes[i] = lanes[2 * i] + lanes[2 * i + 1];
            if (m % 2) lanes[pairs] = lanes[m - 1];
            m = pairs + m % 2;
        }
        expect("WholeReduceSum row", res.rows[r], lanes[0]);
    }
    for (uint32_t i = 0; i < kFloats; ++i) {
        const bool lt = fv[i] < 0.0f;
        expect("Compare bit", (res.lt_mask[i / 8] >> (i % 8)) & 1, lt);
        expect("CompareScalar bit", (res.ge_scalar_mask[i / 8] >> (i % 8)) & 1, fv[i] >= 0.5f);
        expect("Select", res.selected[i], lt ? fv[i] : 0.0f);
        expect("Select scalar", res.selected_scalar[i], lt ? fv[i] : -1.0f);
        const uint32_t k = i % 64;  // the first 64 mask bits repeat for every 256-byte repeat
        expect("Select repeating", res.selected_repeating[i], fv[k] < 0.0f ? fv[i] : 0.0f);
    }
    return g_bad == 0 ? 0 : 1;
}
