// expect: ok
// Positive test of the counters: the same Muls kernel over 4 tiles per core, written four ways.
// copy_in_overlapped counts the tile fills that go into a different buffer of a >= 2-buffer queue
// than that queue's previous fill: on the NPU, MTE2 can then fill tile i+1 while the vector pipe
// still computes tile i. So the plain CopyIn/Compute/CopyOut loop with BUFFER_NUM = 2 and the
// explicitly prefetching loop both overlap 3 of their 4 fills (the first has nothing to overlap
// with), and the same loop with one buffer overlaps none. A tile gathered by two copies (two
// transfers) is still one fill. All four must produce the same numbers and the same GM bytes.
#include <cstdio>
#include <initializer_list>
#include <cstring>
#include <string>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

constexpr uint32_t kTile = 256;
constexpr uint32_t kTiles = 4;
constexpr int kCores = 2;

class Scale {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t buffers, bool split) {
        split_ = split;
        const uint64_t per_core = kTile * kTiles;
        xGm.SetGlobalBuffer((__gm__ float*)x + per_core * GetBlockIdx(), per_core);
        yGm.SetGlobalBuffer((__gm__ float*)y + per_core * GetBlockIdx(), per_core);
        pipe.InitBuffer(in, buffers, kTile * sizeof(float));
        pipe.InitBuffer(out, buffers, kTile * sizeof(float));
    }
    __aicore__ inline void Plain() {
        for (uint32_t i = 0; i < kTiles; ++i) {
            CopyIn(i);
            LocalTensor<float> x = in.DeQue<float>();
            Compute(i, x);
        }
    }
    __aicore__ inline void Prefetch() {
        CopyIn(0);
        for (uint32_t i = 0; i < kTiles; ++i) {
            LocalTensor<float> x = in.DeQue<float>();
            if (i + 1 < kTiles) CopyIn(i + 1);
            Compute(i, x);
        }
    }

private:
    __aicore__ inline void CopyIn(uint32_t i) {
        LocalTensor<float> x = in.AllocTensor<float>();
        if (split_) {
            DataCopy(x, xGm[i * kTile], kTile / 2);
            DataCopy(x[kTile / 2], xGm[i * kTile + kTile / 2], kTile / 2);
        } else {
            DataCopy(x, xGm[i * kTile], kTile);
        }
        in.EnQue(x);
    }
    __aicore__ inline void Compute(uint32_t i, LocalTensor<float>& x) {
        LocalTensor<float> y = out.AllocTensor<float>();
        Muls(y, x, 3.0f, kTile);
        out.EnQue(y);
        in.FreeTensor(x);
        LocalTensor<float> z = out.DeQue<float>();
        DataCopy(yGm[i * kTile], z, kTile);
        out.FreeTensor(z);
    }

    bool split_ = false;
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TQue<QuePosition::VECOUT, 1> out;
    GlobalTensor<float> xGm, yGm;
};

extern "C" __global__ __aicore__ void scale(GM_ADDR x, GM_ADDR y, bool prefetch, uint32_t buffers, bool split) {
    Scale op;
    op.Init(x, y, buffers, split);
    if (prefetch) {
        op.Prefetch();
    } else {
        op.Plain();
    }
}

std::string run(GM_ADDR x, GM_ADDR y, bool prefetch, uint32_t buffers, bool split) {
    std::memset(y, 0, kCores * kTile * kTiles * sizeof(float));
    opgen_twin::reset_counters();
    twin_test::launch(kCores, [&] { scale(x, y, prefetch, buffers, split); });
    char* text = nullptr;
    size_t size = 0;
    FILE* out = open_memstream(&text, &size);
    opgen_twin::write_counters_json(out);
    std::fclose(out);
    std::string json(text, size);
    std::free(text);
    return json;
}

int g_bad = 0;
void expect_in(const std::string& json, const std::string& part) {
    if (json.find(part) == std::string::npos && g_bad++ < 8) std::fprintf(stderr, "missing %s in\n%s\n", part.c_str(), json.c_str());
}

}  // namespace

int main() {
    const uint32_t n = kCores * kTile * kTiles;
    GM_ADDR x = opgen_twin::gm_alloc("x", n * sizeof(float));
    GM_ADDR y = opgen_twin::gm_alloc("y", n * sizeof(float));
    for (uint32_t i = 0; i < n; ++i) {
        const float v = float(i) * 0.25f - 100.0f;
        std::memcpy(x + 4 * i, &v, 4);
    }
    struct Variant {
        bool prefetch;
        uint32_t buffers;
        bool split;
        const char* overlap;
        const char* ub_high;
    };
    const Variant variants[] = {
        {false, 2, false, "\"copy_in_overlapped\":3,\"copy_in_total\":4,\"copy_in_queues\":1,", "\"ub_high_water_bytes\":4096,"},
        {true, 2, false, "\"copy_in_overlapped\":3,\"copy_in_total\":4,\"copy_in_queues\":1,", "\"ub_high_water_bytes\":4096,"},
        {false, 1, false, "\"copy_in_overlapped\":0,\"copy_in_total\":4,\"copy_in_queues\":1,", "\"ub_high_water_bytes\":2048,"},
        {false, 2, true, "\"copy_in_overlapped\":3,\"copy_in_total\":4,\"copy_in_queues\":1,", "\"ub_high_water_bytes\":4096,"},
    };
    for (const Variant& v : variants) {
        const std::string json = run(x, y, v.prefetch, v.buffers, v.split);
        for (uint32_t i = 0; i < n; ++i) {
            float got;
            std::memcpy(&got, y + 4 * i, 4);
            const float want = (float(i) * 0.25f - 100.0f) * 3.0f;
            if (got != want && g_bad++ < 8) std::fprintf(stderr, "y[%u] = %g, want %g\n", i, double(got), double(want));
        }
        expect_in(json, "\"gm_read_bytes\":{\"x\":4096},\"gm_write_bytes\":{\"y\":4096}");
        expect_in(json, v.split ? "\"transfers_in\":8,\"transfer_in_bytes\":4096,\"transfers_out\":4,\"transfer_out_bytes\":4096"
                                : "\"transfers_in\":4,\"transfer_in_bytes\":4096,\"transfers_out\":4,\"transfer_out_bytes\":4096");
        expect_in(json, "\"vector_instructions\":{\"Muls\":4},\"vector_elements\":{\"Muls\":1024}");
        expect_in(json, v.ub_high);
        expect_in(json, "\"queue_handoffs\":16,\"barriers\":0");
        expect_in(json, v.overlap);
        expect_in(json, v.split ? "\"transfer_in_min_bytes\":512,\"transfer_in_max_bytes\":512,"
                                : "\"transfer_in_min_bytes\":1024,\"transfer_in_max_bytes\":1024,");
        expect_in(json, v.split ? "\"gm_read_transfers\":{\"x\":8},\"gm_write_transfers\":{\"y\":4},\"flag_waits\":{},\"hidden_flag_waits\":{}}"
                                : "\"gm_read_transfers\":{\"x\":4},\"gm_write_transfers\":{\"y\":4},\"flag_waits\":{},\"hidden_flag_waits\":{}}");
        expect_in(json, "{\"core\":1,");
    }
    return g_bad == 0 ? 0 : 1;
}
