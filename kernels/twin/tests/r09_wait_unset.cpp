// expect: WaitFlag without a matching SetFlag
// Rule 9: waiting on an event nobody set hangs the NPU.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void wait_unset() {
    TPipe pipe;
    event_t ev = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(ev);
    WaitFlag<HardEvent::V_S>(ev);
    WaitFlag<HardEvent::S_V>(ev);
}

int main() {
    twin_test::launch(1, [] { wait_unset(); });
    return twin_test::not_stopped();
}
