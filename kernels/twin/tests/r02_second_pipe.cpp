// expect: second TPipe while one is alive
// Rule 2: A2 kernels have one TPipe per core; a second one would re-plan UB under the first.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void second_pipe() {
    TPipe pipe;
    TPipe other;
}

int main() {
    twin_test::launch(1, [] { second_pipe(); });
    return twin_test::not_stopped();
}
