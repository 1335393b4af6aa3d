// Shared scaffolding of the twin's test programs: launches a kernel on simulated cores the way
// the runner does (run_cores: begin_core / kernel / end_core per core, then the GM guard check). A negative test that
// gets past its launch has not been stopped by the twin, so it exits 1.
#ifndef OPGEN_TWIN_TESTS_TWIN_TEST_H
#define OPGEN_TWIN_TESTS_TWIN_TEST_H

#include <cstdio>
#include <cstdlib>

#include "opgen_twin/runtime.h"

namespace twin_test {

template <typename Kernel>
void launch(int cores, Kernel kernel) {
    opgen_twin::run_cores(cores, kernel);
    opgen_twin::gm_check_guards();
}

// For negative tests: reaching this line means the rule was not enforced.
inline int not_stopped() {
    std::fprintf(stderr, "twin-test: the twin did not stop this kernel\n");
    return 1;
}

}  // namespace twin_test

#endif
