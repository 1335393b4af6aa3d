// expect: FreeTensor of a tensor not allocated from this queue
// Rule 3: TBuf tensors are never freed, and a queue frees only its own buffers.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void free_foreign() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> work;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(work, 256);
    LocalTensor<float> t = work.Get<float>();
    in.FreeTensor(t);
}

int main() {
    twin_test::launch(1, [] { free_foreign(); });
    return twin_test::not_stopped();
}
