// expect: use of a tensor between EnQue and DeQue
// Rule 3: an EnQue'd tensor belongs to the consumer pipe until DeQue; computing into it races.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void use_enqueued() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 256);
    LocalTensor<float> t = in.AllocTensor<float>();
    in.EnQue(t);
    Duplicate(t, 1.0f, 64);
    LocalTensor<float> u = in.DeQue<float>();
    in.FreeTensor(u);
}

int main() {
    twin_test::launch(1, [] { use_enqueued(); });
    return twin_test::not_stopped();
}
