// expect: ok
// DataCopyPad with left/right padding and isPad = false leaves the padding lanes random on the
// NPU (DataCopyPad 参数解释). The twin fills them with garbage from a seed (runtime.h
// set_pad_seed): the same seed gives the same bits, another seed other bits, and the data lanes
// are the GM row whatever the seed. A kernel that counted on a fixed filler (the twin's former
// NaN: a Compare(x, x, EQ) mask, say) now sees different values from case to case.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

constexpr uint32_t kRows = 16, kSlot = 8;  // floats: 1 left pad, 5 data, 2 right pad per slot

extern "C" __global__ __aicore__ void pad_garbage(GM_ADDR x, GM_ADDR dump) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, kRows * kSlot * sizeof(float));
    GlobalTensor<float> xGm, dumpGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, kRows * 5);
    dumpGm.SetGlobalBuffer((__gm__ float*)dump, kRows * kSlot);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopyPad(t, xGm, DataCopyExtParams(kRows, 5 * sizeof(float), 0, 0, 0),
                DataCopyPadExtParams<float>(false, 1, 2, 0.0f));
    in.EnQue(t);
    LocalTensor<float> u = in.DeQue<float>();
    PipeBarrier<PIPE_ALL>();
    DataCopy(dumpGm, u, kRows * kSlot);
    PipeBarrier<PIPE_ALL>();
    in.FreeTensor(u);
}

std::vector<uint32_t> run(uint64_t seed) {
    GM_ADDR x = opgen_twin::gm_alloc("x", kRows * 5 * sizeof(float));
    GM_ADDR dump = opgen_twin::gm_alloc("dump", kRows * kSlot * sizeof(float));
    for (uint32_t i = 0; i < kRows * 5; ++i) {
        const float v = float(i + 1);
        std::memcpy(x + 4 * i, &v, 4);
    }
    opgen_twin::set_pad_seed(seed);
    twin_test::launch(1, [&] { pad_garbage(x, dump); });
    std::vector<uint32_t> bits(kRows * kSlot);
    std::memcpy(bits.data(), dump, bits.size() * 4);
    opgen_twin::gm_free_all();
    return bits;
}

int main() {
    const std::vector<uint32_t> a = run(1), b = run(1), c = run(2);
    int bad = 0;
    uint32_t nan = 0, other = 0, differ = 0;
    for (uint32_t i = 0; i < kRows * kSlot; ++i) {
        const uint32_t lane = i % kSlot, row = i / kSlot;
        float v;
        std::memcpy(&v, &a[i], 4);
        if (lane >= 1 && lane <= 5) {
            // Data lanes: the GM row, whatever the seed.
            const float want = float(row * 5 + lane);
            if (v != want || a[i] != c[i]) {
                std::fprintf(stderr, "data lane %u = %g, want %g\n", i, double(v), double(want));
                ++bad;
            }
            continue;
        }
        if (a[i] != b[i]) {
            std::fprintf(stderr, "pad lane %u differs between two runs of seed 1\n", i);
            ++bad;
        }
        differ += a[i] != c[i];
        (std::isnan(v) ? nan : other) += 1;
    }
    // 48 padding lanes: the seeds' garbage differs, and seed 1's holds NaN and other values.
    if (differ == 0 || nan == 0 || other == 0) {
        std::fprintf(stderr, "pad lanes: %u differ between seeds 1 and 2, %u NaN, %u other\n", differ, nan, other);
        ++bad;
    }
    return bad == 0 ? 0 : 1;
}
