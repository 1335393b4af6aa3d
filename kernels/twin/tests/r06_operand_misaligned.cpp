// expect: UB address not 32-byte aligned
// Rule 6: vector operands start on 32-byte boundaries; x[4] starts 16 bytes in.
#include "kernel_operator.h"
#include "twin_test.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void operand_misaligned() {
    TPipe pipe;
    TBuf<TPosition::VECCALC> a;
    pipe.InitBuffer(a, 512);
    LocalTensor<float> x = a.Get<float>();
    Duplicate(x, 1.0f, 128);
    Muls(x[64], x[4], 2.0f, 32);
}

int main() {
    // This test is about another rule; its vector and scalar steps lean on compiler auto-sync
    // (V->V barriers, S<->V waits) instead of spelling out PipeBarrier<PIPE_V> and V_S/S_V flags.
    opgen_twin::set_auto_sync(true);
    twin_test::launch(1, [] { operand_misaligned(); });
    return twin_test::not_stopped();
}
