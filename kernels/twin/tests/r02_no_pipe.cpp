// expect: no TPipe
// Rule 2: GetTPipePtr with no TPipe alive on the core.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void no_pipe() {
    TPipe* pipe = GetTPipePtr();
    (void)pipe;
}

int main() {
    twin_test::launch(1, [] { no_pipe(); });
    return twin_test::not_stopped();
}
