// expect: ok
// Positive test of rule 13 (pipe ordering): the correct forms of the r13_* kernels pass in strict
// mode and compute the right values. A TBuf filled by MTE2 and read by V with a MTE2_V pair, its
// result copied out after a V_MTE3 pair; the next copy-in into that TBuf after a V_MTE2 pair (the
// WAR); overlapping copy-outs separated by PipeBarrier<PIPE_MTE3>; a scalar read of a vector
// result after V_S; a scalar write read by V after S_V; ReduceSum read by GetValue with no V_S of
// the kernel's own (dav_c220 ReduceSum waits V_S inside and ends with S_V/S_MTE3: counted as
// hidden_flag_waits); queue hand-offs VECIN -> V -> VECOUT -> MTE3.
#include <cstdio>
#include <cstring>
#include <string>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void pipe_sync(GM_ADDR x, GM_ADDR y) {
    TPipe pipe;
    GlobalTensor<float> xGm, yGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 256);
    yGm.SetGlobalBuffer((__gm__ float*)y, 512);
    TBuf<TPosition::VECCALC> buf, out, sum;
    pipe.InitBuffer(buf, 512);
    pipe.InitBuffer(out, 1024);
    pipe.InitBuffer(sum, 64);
    LocalTensor<float> t = buf.Get<float>();
    LocalTensor<float> o = out.Get<float>();
    // Two tiles through one TBuf: y[0..256) = 2x.
    for (int tile = 0; tile < 2; ++tile) {
        if (tile > 0) {
            SetFlag<HardEvent::V_MTE2>(EVENT_ID0);  // Muls of tile 0 has read t
            WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
        }
        DataCopy(t, xGm[tile * 128], 128);
        SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
        WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
        Muls(o[tile * 128], t, 2.0f, 128);
    }
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(yGm, o, 256);

    // y[256..320) = 2x[0..64) then y[288..352) = 2x[32..96): overlapping GM bytes, ordered.
    DataCopy(yGm[256], o, 64);
    PipeBarrier<PIPE_MTE3>();
    DataCopy(yGm[288], o[32], 64);

    // The scalar unit reads a vector result after V_S and writes it back for V after S_V.
    PipeBarrier<PIPE_V>();
    LocalTensor<float> s = sum.Get<float>();
    ReduceSum(s, o, s, 256);              // s[0] = sum(2x); its own V_S/S_V/S_MTE3 inside
    const float total = s.GetValue(0);    // no V_S needed (hidden in ReduceSum)
    Duplicate(s[8], 1.0f, 8);
    SetFlag<HardEvent::V_S>(EVENT_ID1);
    WaitFlag<HardEvent::V_S>(EVENT_ID1);
    const float one = s.GetValue(8);
    s.SetValue(8, total + one);
    SetFlag<HardEvent::S_V>(EVENT_ID1);
    WaitFlag<HardEvent::S_V>(EVENT_ID1);
    Muls(s[8], s[8], 0.5f, 8);
    SetFlag<HardEvent::V_S>(EVENT_ID1);
    WaitFlag<HardEvent::V_S>(EVENT_ID1);
    yGm.SetValue(352, s.GetValue(8));

    // Queue hand-offs carry the events: VECIN (MTE2_V), VECOUT (V_MTE3), and FreeTensor's
    // events make the second tile's copy-in wait for the first tile's vector read.
    TQue<QuePosition::VECIN, 1> in;
    TQue<QuePosition::VECOUT, 1> res;
    pipe.InitBuffer(in, 1, 512);
    pipe.InitBuffer(res, 1, 512);
    for (int tile = 0; tile < 2; ++tile) {
        LocalTensor<float> a = in.AllocTensor<float>();
        DataCopy(a, xGm[tile * 128], 128);
        in.EnQue(a);
        a = in.DeQue<float>();
        LocalTensor<float> b = res.AllocTensor<float>();
        Adds(b, a, 1.0f, 128);
        res.EnQue(b);
        in.FreeTensor(a);
        b = res.DeQue<float>();
        DataCopy(yGm[384 + tile * 64], b, 64);  // y[384..512): first halves of x+1 tiles
        res.FreeTensor(b);
    }
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 256 * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", 512 * sizeof(float));
    float xs[256];
    for (int i = 0; i < 256; ++i) {
        xs[i] = float(i % 7) - 2.0f;
        std::memcpy(x + 4 * i, &xs[i], 4);
    }
    opgen_twin::reset_counters();
    twin_test::launch(1, [&] { pipe_sync(x, y); });
    float ys[512];
    std::memcpy(ys, y, sizeof ys);
    int bad = 0;
    const auto expect = [&](int i, float want) {
        if (ys[i] != want && bad++ < 8) std::fprintf(stderr, "y[%d] = %g, want %g\n", i, ys[i], want);
    };
    float total = 0.0f;
    for (int i = 0; i < 256; ++i) {
        expect(i, 2.0f * xs[i]);
        total += 2.0f * xs[i];  // small integers: every order of summation is exact
    }
    for (int i = 0; i < 32; ++i) expect(256 + i, 2.0f * xs[i]);
    for (int i = 0; i < 64; ++i) expect(288 + i, 2.0f * xs[32 + i]);
    expect(352, (total + 1.0f) * 0.5f);
    for (int tile = 0; tile < 2; ++tile) {
        for (int i = 0; i < 64; ++i) expect(384 + tile * 64 + i, xs[tile * 128 + i] + 1.0f);
    }
    char* text = nullptr;
    size_t size = 0;
    FILE* out = open_memstream(&text, &size);
    opgen_twin::write_counters_json(out);
    std::fclose(out);
    const std::string json(text, size);
    std::free(text);
    // One ReduceSum: its three internal waits, apart from the kernel's own flags.
    const std::string hidden = "\"hidden_flag_waits\":{\"S_MTE3\":1,\"S_V\":1,\"V_S\":1}";
    if (json.find(hidden) == std::string::npos) {
        std::fprintf(stderr, "missing %s in %s\n", hidden.c_str(), json.c_str());
        ++bad;
    }
    if (json.find("\"flag_waits\":{\"MTE2_V\":2,\"S_V\":1,\"V_MTE2\":1,\"V_MTE3\":1,\"V_S\":2}") == std::string::npos) {
        std::fprintf(stderr, "kernel flag waits wrong in %s\n", json.c_str());
        ++bad;
    }
    return bad == 0 ? 0 : 1;
}
