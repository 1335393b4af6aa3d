// expect: compile error: is ambiguous
// CANN declares AlignUp(uint32_t, uint32_t) in namespace AscendC; a kernel helper of the same name
// and parameters, reached through a second using-directive, makes an unqualified call ambiguous
// (check-cann found grpo_advantage's so). The twin declares CANN's, so its build fails alike.
#include "kernel_operator.h"
using namespace AscendC;

namespace helpers {
__aicore__ inline uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }
}  // namespace helpers
using namespace helpers;

extern "C" __global__ __aicore__ void align_up_ambiguous() {
    volatile uint32_t n = AlignUp(100u, 32u);
    (void)n;
}

int main() { return 0; }
