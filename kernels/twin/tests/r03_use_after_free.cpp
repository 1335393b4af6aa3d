// expect: use of a tensor after FreeTensor
// Rule 3: after FreeTensor the NPU may already refill the buffer with the next tile.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void use_after_free() {
    TPipe pipe;
    TQue<QuePosition::VECIN, 1> in;
    TBuf<TPosition::VECCALC> work;
    pipe.InitBuffer(in, 1, 256);
    pipe.InitBuffer(work, 256);
    LocalTensor<float> t = in.AllocTensor<float>();
    Duplicate(t, 1.0f, 64);
    in.EnQue(t);
    LocalTensor<float> x = in.DeQue<float>();
    in.FreeTensor(x);
    LocalTensor<float> w = work.Get<float>();
    Adds(w, x, 1.0f, 64);
}

int main() {
    twin_test::launch(1, [] { use_after_free(); });
    return twin_test::not_stopped();
}
