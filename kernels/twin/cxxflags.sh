# The compiler flags of every build against the CPU twin, defined once: read by Rust
# (src/verify/twin_build.rs `TwinFlags`: verify, plan, run, report; src/app/torch_cpu.rs; the
# benches) and sourced by the twin's own suites (kernels/twin/tests/run_*.sh). Each build adds
# only what its purpose needs (optimisation level, -fPIC, -g). One `NAME="flags"` per line.

# C++17; no FMA contraction: the NPU does not fuse multiply-add in these kernels, and the twin's
# numerics are exact-by-construction only without it.
OPGEN_TWIN_CXXFLAGS="-std=c++17 -ffp-contract=off"
# The generated kernels declare what every dtype combination might use.
OPGEN_TWIN_WARNINGS="-Wall -Wno-unused-variable -Wno-unused-but-set-variable -Wno-unused-function"
# AddressSanitizer + UBSan: every rule violation that slips past the twin's own checks still stops.
OPGEN_TWIN_SANITIZE="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
