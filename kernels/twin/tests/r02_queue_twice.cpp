// expect: queue initialised twice
// Rule 2: InitBuffer on a queue that already has buffers would leak the first reservation.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void queue_twice() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(in, 1, 256);
}

int main() {
    twin_test::launch(1, [] { queue_twice(); });
    return twin_test::not_stopped();
}
