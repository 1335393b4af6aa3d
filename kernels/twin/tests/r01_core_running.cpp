// expect: core already running
// Rule 1: cores run one after another; starting a core before the previous one ended would
// mix their UB and queue state.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

int main() {
    opgen_twin::begin_core(0, 2);
    opgen_twin::begin_core(1, 2);
    return twin_test::not_stopped();
}
