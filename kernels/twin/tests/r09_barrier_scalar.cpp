// expect: PipeBarrier<PIPE_S> is not allowed
// Rule 9: the scalar pipe has no barrier.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void barrier_scalar() {
    TPipe pipe;
    PipeBarrier<PIPE_S>();
}

int main() {
    twin_test::launch(1, [] { barrier_scalar(); });
    return twin_test::not_stopped();
}
