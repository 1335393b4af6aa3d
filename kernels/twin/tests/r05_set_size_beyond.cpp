// expect: SetSize beyond the buffer
// Rule 5: SetSize may shrink a view or grow it to its buffer's end, never past it.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void set_size_beyond() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 1024);
    LocalTensor<float> t = a.Get<float>(64);
    t.SetSize(257);
}

int main() {
    twin_test::launch(1, [] { set_size_beyond(); });
    return twin_test::not_stopped();
}
