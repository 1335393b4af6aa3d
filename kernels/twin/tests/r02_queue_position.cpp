// expect: more than 8 buffers in one queue position
// Rule 2: A2 has 8 event ids per queue position, so at most 8 VECIN buffers.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void queue_position() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> a, b, c, d, e;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(out, 2, 256);  // VECOUT is counted separately
    pipe.InitBuffer(a, 2, 256);
    pipe.InitBuffer(b, 2, 256);
    pipe.InitBuffer(c, 2, 256);
    pipe.InitBuffer(d, 2, 256);
    pipe.InitBuffer(e, 2, 256);  // the 9th and 10th VECIN buffers
}

int main() {
    twin_test::launch(1, [] { queue_position(); });
    return twin_test::not_stopped();
}
