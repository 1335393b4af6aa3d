// expect: invalid HardEvent
// Rule 9: a HardEvent value outside the enum (a cast from a bad integer).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void invalid_event() {
    TPipe pipe;
    SetFlag<static_cast<HardEvent>(200)>(0);
}

int main() {
    twin_test::launch(1, [] { invalid_event(); });
    return twin_test::not_stopped();
}
