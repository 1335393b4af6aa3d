// expect: event id out of range 0..7
// Rule 9: A2 has event ids 0..7 per event type.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void event_range(int32_t id) {
    SetFlag<HardEvent::V_MTE3>(id);
    WaitFlag<HardEvent::V_MTE3>(id);
}

int main() {
    twin_test::launch(1, [] { event_range(8); });
    return twin_test::not_stopped();
}
