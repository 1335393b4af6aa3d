// expect: ok
// Positive test: the acceptance sample (kernels/accept_sample.h) runs on the twin. It copies 7
// halves into a 32-byte slot (9 dummy lanes repeat the first element), widens 16 of them,
// doubles them and sums: with x[i] = i / 2 the result is 2 * (0 + 0.5 + ... + 3) = 21.
#include <cstdio>
#include <cstring>

#include "kernels/accept_sample.h"
#include "twin_test.h"

int main() {
    // A numeric test: its vector and scalar steps lean on compiler auto-sync (V->V barriers,
    // S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    uint8_t* x = opgen_twin::gm_alloc("x", 100 * sizeof(half));
    uint8_t* out = opgen_twin::gm_alloc("out", sizeof(float));
    for (int i = 0; i < 100; ++i) {
        const half v = half(0.5f * float(i));
        std::memcpy(x + i * sizeof(half), &v, sizeof v);
    }
    twin_test::launch(1, [&] { accept_sample(x, out); });
    float s;
    std::memcpy(&s, out, sizeof s);
    if (s != 21.0f) {
        std::fprintf(stderr, "sample sum %g, want 21\n", double(s));
        return 1;
    }
    return 0;
}
