// expect: repeatTimes out of range
// Rule 6: WholeReduceSum repeats at most 255 times (an 8-bit field).
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void whole_reduce_repeat() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 256);
    WholeReduceSum(x, x, 64, 256, 1, 1, 8);
}

int main() {
    twin_test::launch(1, [] { whole_reduce_repeat(); });
    return twin_test::not_stopped();
}
