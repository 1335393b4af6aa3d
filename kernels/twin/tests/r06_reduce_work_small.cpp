// expect: sharedTmpBuffer too small
// Rule 6: ReduceMax writes its first round, a (value, index) pair per 256-byte repeat, into the
// work tensor: 1024 floats are 16 repeats, so work needs 32 floats; 16 let the hardware write past it.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void reduce_work_small() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a, w, d;
    pipe.InitBuffer(a, 1024 * 4);
    pipe.InitBuffer(w, 16 * 4);
    pipe.InitBuffer(d, 32);
    LocalTensor<float> x = a.Get<float>();
    LocalTensor<float> work = w.Get<float>();
    LocalTensor<float> dst = d.Get<float>();
    Duplicate(x, 1.0f, 1024);
    PipeBarrier<PIPE_V>();
    ReduceMax(dst, x, work, 1024);
}

int main() {
    twin_test::launch(1, [] { reduce_work_small(); });
    return twin_test::not_stopped();
}
