// The API sample of the twin's acceptance check, as one kernel: it must compile unchanged
// against the twin and against the real CANN 8.1 headers.
#include "kernel_operator.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void accept_sample(GM_ADDR x, GM_ADDR out) {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> q;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(q, 2, 1024);
    pipe.InitBuffer(b, 1024);
    GlobalTensor<half> xg;
    xg.SetGlobalBuffer((__gm__ half*)x, 100);
    LocalTensor<half> t = q.AllocTensor<half>();
    DataCopyExtParams p{1, 14, 0, 0, 0};
    DataCopyPadExtParams<half> pp{false, 0, 0, (half)0};
    DataCopyPad(t, xg, p, pp);
    q.EnQue(t);
    LocalTensor<half> u = q.DeQue<half>();
    LocalTensor<float> f = b.Get<float>();
    Cast(f, u, RoundMode::CAST_NONE, 16);
    PipeBarrier<PIPE_V>();
    Muls(f, f, 2.0f, 16);
    ReduceSum(f, f, f, 16);
    event_t ev = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(ev);
    WaitFlag<HardEvent::V_S>(ev);
    float s = f.GetValue(0);
    Cast(u, f, RoundMode::CAST_RINT, 16);
    q.FreeTensor(u);
    GlobalTensor<float> outGm;
    outGm.SetGlobalBuffer((__gm__ float*)out, 1);
    outGm.SetValue(0, s);
}
