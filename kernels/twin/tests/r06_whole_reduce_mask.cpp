// expect: mask out of range
// Rule 6: WholeReduceSum's mask counts the lanes of one repeat: at most 64 floats.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void whole_reduce_mask() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 256);
    WholeReduceSum(x, x, 65, 1, 1, 1, 8);
}

int main() {
    twin_test::launch(1, [] { whole_reduce_mask(); });
    return twin_test::not_stopped();
}
