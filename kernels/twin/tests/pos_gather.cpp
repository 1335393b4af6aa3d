// expect: ok
// Positive test of Gather (count form, ext_rotary.h): dst[i] = src[(srcBaseAddr + srcOffset[i]) /
// sizeof(T)] with byte offsets, for float and half, repeated and reversed indices, a non-zero
// srcBaseAddr, offsets built with int32 vector arithmetic and reinterpreted as uint32_t (how the
// rotary kernel builds its tables), and count = 0 as a no-op.
#include <cstdio>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

namespace {

int g_bad = 0;

void expect(bool ok, const char* what, uint32_t i) {
    if (!ok && g_bad++ < 5) std::fprintf(stderr, "pos_gather: %s wrong at %u\n", what, i);
}

extern "C" __global__ __aicore__ void gather_kernel() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> srcBuf, dstBuf, offBuf, hsrcBuf, hdstBuf;
    pipe.InitBuffer(srcBuf, 64 * sizeof(float));
    pipe.InitBuffer(dstBuf, 64 * sizeof(float));
    pipe.InitBuffer(offBuf, 64 * sizeof(uint32_t));
    pipe.InitBuffer(hsrcBuf, 64 * sizeof(half));
    pipe.InitBuffer(hdstBuf, 64 * sizeof(half));
    LocalTensor<float> src = srcBuf.Get<float>();
    LocalTensor<float> dst = dstBuf.Get<float>();
    LocalTensor<int32_t> off = offBuf.Get<int32_t>();
    LocalTensor<half> hsrc = hsrcBuf.Get<half>();
    LocalTensor<half> hdst = hdstBuf.Get<half>();
    for (uint32_t i = 0; i < 64; ++i) {
        src.SetValue(i, float(i) + 0.5f);
        hsrc.SetValue(i, half(float(i)));
    }

    // Pair swap (i ^ 1) over 64 floats: 8 offsets by hand, then doubled with Adds.
    for (uint32_t i = 0; i < 8; ++i) off.SetValue(i, int32_t((i ^ 1u) * 4u));
    for (uint32_t len = 8; len < 64; len *= 2) {
        Adds(off[len], off, int32_t(len * 4), int32_t(len));
        PipeBarrier<PIPE_V>();
    }
    Gather(dst, src, off.ReinterpretCast<uint32_t>(), 0, 64);
    for (uint32_t i = 0; i < 64; ++i) expect(dst.GetValue(i) == float(i ^ 1u) + 0.5f, "pair swap", i);

    // Reversed and repeated indices, with srcBaseAddr = 32 bytes (element 8) in front.
    for (uint32_t i = 0; i < 16; ++i) off.SetValue(i, int32_t(((15u - i) / 2u) * 4u));
    Gather(dst, src, off.ReinterpretCast<uint32_t>(), 32, 16);
    for (uint32_t i = 0; i < 16; ++i) expect(dst.GetValue(i) == float(8u + (15u - i) / 2u) + 0.5f, "base", i);

    // half: 2-byte offsets, a rotate-half permutation of 10 elements.
    for (uint32_t i = 0; i < 10; ++i) off.SetValue(i, int32_t(((i + 5u) % 10u) * 2u));
    Gather(hdst, hsrc, off.ReinterpretCast<uint32_t>(), 0, 10);
    for (uint32_t i = 0; i < 10; ++i) expect(float(hdst.GetValue(i)) == float((i + 5u) % 10u), "half", i);

    // count = 0 writes nothing.
    dst.SetValue(0, -7.0f);
    Gather(dst, src, off.ReinterpretCast<uint32_t>(), 0, 0);
    expect(dst.GetValue(0) == -7.0f, "count 0", 0);
}

}  // namespace

int main() {
    // A numeric test: its vector and scalar steps lean on compiler auto-sync (V->V barriers,
    // S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { gather_kernel(); });
    if (g_bad != 0) {
        std::fprintf(stderr, "pos_gather: %d wrong elements\n", g_bad);
        return 1;
    }
    return 0;
}
