// expect: empty buffer
// Rule 2: a queue of zero-byte buffers is a planning bug (a tile length of 0), not a no-op.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void empty_buffer() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 2, 0);
}

int main() {
    twin_test::launch(1, [] { empty_buffer(); });
    return twin_test::not_stopped();
}
