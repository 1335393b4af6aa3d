// expect: called outside a core
// Rule 1: every kernel API runs on a simulated core (begin_core .. end_core); a kernel called
// without one (a runner that forgot begin_core) has no UB to use.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void outside_core() {
    TPipe pipe;
}

int main() {
    outside_core();
    return twin_test::not_stopped();
}
