// expect: index out of bounds
// Rule 7: LocalTensor::GetValue is bounded by the tensor's size (64 floats: index 64 is out).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void local_index() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 256);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 0.0f, 64);
    float last = x.GetValue(63);
    x.SetValue(0, last);
    float past = x.GetValue(64);
    (void)past;
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { local_index(); });
    return twin_test::not_stopped();
}
