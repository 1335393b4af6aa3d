// expect: more than 64 buffers in total
// Rule 2: a TPipe holds at most 64 buffers in total.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void total_buffers() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> bufs[65];
    for (auto& buf : bufs) pipe.InitBuffer(buf, 32);
}

int main() {
    twin_test::launch(1, [] { total_buffers(); });
    return twin_test::not_stopped();
}
