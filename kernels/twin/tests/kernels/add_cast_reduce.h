// A small vector kernel in the style the generator emits: unaligned rows through DataCopyPad,
// half Add, Cast to float, ReduceSum, results back through DataCopyPad. It includes only
// kernel_operator.h, so it compiles against the twin and against the real CANN headers.
#include "kernel_operator.h"

using namespace AscendC;

class KernelAddCastReduce {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR sum, uint32_t perCore) {
        n = perCore;
        xGm.SetGlobalBuffer((__gm__ half*)x + n * GetBlockIdx(), n);
        yGm.SetGlobalBuffer((__gm__ half*)y + n * GetBlockIdx(), n);
        zGm.SetGlobalBuffer((__gm__ half*)z + n * GetBlockIdx(), n);
        sumGm.SetGlobalBuffer((__gm__ float*)sum + GetBlockIdx(), 1);
        const uint32_t halfBytes = (n * sizeof(half) + 31) / 32 * 32;
        pipe.InitBuffer(inX, 1, halfBytes);
        pipe.InitBuffer(inY, 1, halfBytes);
        pipe.InitBuffer(outZ, 1, halfBytes);
        pipe.InitBuffer(wide, (n * sizeof(float) + 31) / 32 * 32);
        pipe.InitBuffer(total, 32);
    }

    __aicore__ inline void Process() {
        CopyIn();
        Compute();
        CopyOut();
    }

private:
    __aicore__ inline void CopyIn() {
        LocalTensor<half> x = inX.AllocTensor<half>();
        LocalTensor<half> y = inY.AllocTensor<half>();
        DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(half)), 0, 0, 0};
        DataCopyPadExtParams<half> pad{true, 0, 0, (half)0.0f};
        DataCopyPad(x, xGm, copy, pad);
        DataCopyPad(y, yGm, copy, pad);
        inX.EnQue(x);
        inY.EnQue(y);
    }

    __aicore__ inline void Compute() {
        LocalTensor<half> x = inX.DeQue<half>();
        LocalTensor<half> y = inY.DeQue<half>();
        LocalTensor<half> z = outZ.AllocTensor<half>();
        LocalTensor<float> f = wide.Get<float>();
        LocalTensor<float> s = total.Get<float>();
        Add(z, x, y, static_cast<int32_t>(n));
        PipeBarrier<PIPE_V>();
        Cast(f, z, RoundMode::CAST_NONE, n);
        PipeBarrier<PIPE_V>();
        ReduceSum(s, f, s, static_cast<int32_t>(n));
        outZ.EnQue(z);
        inX.FreeTensor(x);
        inY.FreeTensor(y);
    }

    __aicore__ inline void CopyOut() {
        LocalTensor<half> z = outZ.DeQue<half>();
        DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(half)), 0, 0, 0};
        DataCopyPad(zGm, z, copy);
        outZ.FreeTensor(z);
        LocalTensor<float> s = total.Get<float>();
        event_t ev = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));
        SetFlag<HardEvent::V_MTE3>(ev);
        WaitFlag<HardEvent::V_MTE3>(ev);
        DataCopyExtParams one{1, sizeof(float), 0, 0, 0};
        DataCopyPad(sumGm, s, one);
    }

    TPipe pipe;
    TQue<QuePosition::VECIN, 1> inX, inY;
    TQue<QuePosition::VECOUT, 1> outZ;
    TBuf<TPosition::VECCALC> wide, total;
    GlobalTensor<half> xGm, yGm, zGm;
    GlobalTensor<float> sumGm;
    uint32_t n = 0;
};

extern "C" __global__ __aicore__ void add_cast_reduce(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR sum,
                                                      uint32_t perCore) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    KernelAddCastReduce op;
    op.Init(x, y, z, sum, perCore);
    op.Process();
}
