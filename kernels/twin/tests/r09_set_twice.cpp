// expect: SetFlag twice without WaitFlag
// Rule 9: an event id must be waited on before it is set again.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void set_twice() {
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
    SetFlag<HardEvent::MTE2_V>(EVENT_ID1);
}

int main() {
    twin_test::launch(1, [] { set_twice(); });
    return twin_test::not_stopped();
}
