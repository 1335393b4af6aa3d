// expect: queue depth out of range
// Rule 2: a TQue needs depth >= 1 (depth 0 could hold no EnQue'd tensor).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void queue_depth() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 0> in;
    pipe.InitBuffer(in, 1, 256);
}

int main() {
    twin_test::launch(1, [] { queue_depth(); });
    return twin_test::not_stopped();
}
