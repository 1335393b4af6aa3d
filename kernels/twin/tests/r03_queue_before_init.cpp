// expect: queue used before InitBuffer
// Rule 3: AllocTensor on a TQue that InitBuffer never gave buffers.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void queue_before_init() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    LocalTensor<float> t = in.AllocTensor<float>();
    in.FreeTensor(t);
}

int main() {
    twin_test::launch(1, [] { queue_before_init(); });
    return twin_test::not_stopped();
}
