// expect: UB capacity exceeded
// Rule 1: the InitBuffer allocations of one core must fit the 192 KiB UB.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void ub_capacity() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> work;
    pipe.InitBuffer(in, 2, 64 * 1024);
    pipe.InitBuffer(work, 64 * 1024 + 1);  // rounds up to 64 KiB + 32 B: 32 B past the UB
}

int main() {
    twin_test::launch(1, [] { ub_capacity(); });
    return twin_test::not_stopped();
}
