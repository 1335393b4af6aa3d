// expect: EnQue of a tensor not allocated from this queue
// Rule 3: a queue hands over only the buffers it allocated.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void enque_foreign() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TQue<QuePosition::VECOUT, 1> out;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(out, 1, 256);
    LocalTensor<float> x = in.AllocTensor<float>();
    out.EnQue(x);
}

int main() {
    twin_test::launch(1, [] { enque_foreign(); });
    return twin_test::not_stopped();
}
