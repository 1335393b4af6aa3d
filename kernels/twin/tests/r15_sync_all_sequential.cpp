// expect: SyncAll: SyncAll outside a concurrent launch
// Rule 15: SyncAll in a launch that runs its cores one after another (a begin_core / end_core
// loop instead of run_cores): no core could wait for the others.
#include "kernels/cross_core.h"
#include "twin_test.h"
using namespace AscendC;

int main() {
    opgen_twin::gm_alloc("workspace", cross_core::SYS_WORKSPACE);
    opgen_twin::begin_core(0, 2);
    SyncAll();
    opgen_twin::end_core();
    return twin_test::not_stopped();
}
