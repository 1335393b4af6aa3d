// expect: no free event id
// Rule 9: each HardEvent has ids 0..7; a ninth AllocEventID finds none free.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void no_free_event() {
    TPipe pipe;
    for (int i = 0; i < 9; ++i) {
        (void)pipe.AllocEventID<HardEvent::V_MTE3>();
    }
}

int main() {
    twin_test::launch(1, [] { no_free_event(); });
    return twin_test::not_stopped();
}
