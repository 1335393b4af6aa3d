// expect: FreeTensor of a tensor not allocated or dequeued
// Rule 3: freeing a tensor that is still in the queue lets the consumer DeQue a freed buffer.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void free_enqueued() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    pipe.InitBuffer(in, 1, 256);
    LocalTensor<float> t = in.AllocTensor<float>();
    in.EnQue(t);
    in.FreeTensor(t);
}

int main() {
    twin_test::launch(1, [] { free_enqueued(); });
    return twin_test::not_stopped();
}
