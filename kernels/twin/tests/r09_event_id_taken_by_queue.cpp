// expect: event id collides with a TQue's: HardEvent::MTE2_V id 0: set by SetFlag at r09_event_id_taken_by_queue.cpp:19, then taken by the TQue's TQue::EnQue at r09_event_id_taken_by_queue.cpp:22
// Rule 9: the other order. The kernel sets MTE2_V id 0 itself (a constant, not from
// AllocEventID), then a TQue's EnQue takes id 0 from the pool, which the kernel never reserved,
// and sets the same flag a second time.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void event_id_taken_by_queue(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> side;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(side, 256);
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 64);
    LocalTensor<float> s = side.Get<float>();
    DataCopy(s, xGm, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopy(t, xGm, 64);
    in.EnQue(t);
    WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<float> u = in.DeQue<float>();
    in.FreeTensor(u);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 64 * sizeof(float));
    twin_test::launch(1, [&] { event_id_taken_by_queue(x); });
    return twin_test::not_stopped();
}
