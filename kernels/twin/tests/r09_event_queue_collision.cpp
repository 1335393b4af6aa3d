// expect: event id collides with a TQue's: HardEvent::MTE2_V id 0: held by the TQue's TQue::EnQue at r09_event_queue_collision.cpp:20, then SetFlag at r09_event_queue_collision.cpp:23
// Rule 9: on dav_c220 a TQue's EnQue takes its MTE2_V event id from the TPipe's pool
// (AllocEventID, kernel_tquebind_impl.h). A kernel that hard-codes id 0 for its own MTE2_V
// pair while an EnQue'd tensor still holds id 0 sets one flag twice: the NPU hangs or the
// wrong wait passes.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void event_queue_collision(GM_ADDR x) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> side;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(side, 256);
    GlobalTensor<float> xGm;
    xGm.SetGlobalBuffer((__gm__ float*)x, 64);
    LocalTensor<float> t = in.AllocTensor<float>();
    DataCopy(t, xGm, 64);
    in.EnQue(t);
    LocalTensor<float> s = side.Get<float>();
    DataCopy(s, xGm, 64);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    LocalTensor<float> u = in.DeQue<float>();
    in.FreeTensor(u);
}

int main() {
    GM_ADDR x = opgen_twin::gm_alloc("x", 64 * sizeof(float));
    twin_test::launch(1, [&] { event_queue_collision(x); });
    return twin_test::not_stopped();
}
