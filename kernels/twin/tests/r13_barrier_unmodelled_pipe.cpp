// expect: pipe not modelled
// Rule 13: a barrier on a pipe the twin does not model (MTE4/MTE5 are not A2 vector-core pipes
// in the AscendC docs) stops the run rather than ordering nothing and passing.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void kernel() {
    TPipe pipe;
    PipeBarrier<PIPE_MTE4>();
}

int main() {
    twin_test::launch(1, [&] { kernel(); });
    return twin_test::not_stopped();
}
