// expect: ok
// WholeReduceSum's dst needs only element alignment (2 bytes for half, 4 for float: the
// WholeReduceSum API reference, dstLocal), unlike src (32 bytes): per-row sums written one
// float apart, starting at a 4-byte offset, are accepted and land where the math says.
#include <cstdio>

#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

int failures = 0;

extern "C" __global__ __aicore__ void whole_reduce_dst() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, b;
    pipe.InitBuffer(a, 2 * 64 * sizeof(float));
    pipe.InitBuffer(b, 64 * sizeof(float));
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> sums = b.Get<float>();
    // Row 0 is all 1, row 1 all 2: sums 64 and 128.
    Duplicate(x, 1.0f, 64);
    Duplicate(x[64], 2.0f, 64);
    Duplicate(sums, 0.0f, 64);
    PipeBarrier<PIPE_V>();
    // dst starts one float (4 bytes) into the buffer.
    WholeReduceSum(sums[1], x, 64, 2, 1, 1, 8);
    SetFlag<HardEvent::V_S>(0);
    WaitFlag<HardEvent::V_S>(0);
    const float want[3] = {0.0f, 64.0f, 128.0f};
    for (int i = 0; i < 3; ++i) {
        if (sums.GetValue(i) != want[i]) {
            std::fprintf(stderr, "sums[%d] = %g, want %g\n", i, double(sums.GetValue(i)), double(want[i]));
            ++failures;
        }
    }
}

int main() {
    twin_test::launch(1, [] { whole_reduce_dst(); });
    return failures == 0 ? 0 : 1;
}
