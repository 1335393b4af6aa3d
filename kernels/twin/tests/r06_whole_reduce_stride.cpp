// expect: negative stride
// Rule 6: WholeReduceSum strides are unsigned fields; a negative one is refused.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void whole_reduce_stride() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 256);
    WholeReduceSum(x, x, 64, 1, 1, -1, 8);
}

int main() {
    twin_test::launch(1, [] { whole_reduce_stride(); });
    return twin_test::not_stopped();
}
