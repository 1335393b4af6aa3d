#!/usr/bin/env bash
# The torch CPU backend in a real PyTorch: makes (once, cached) the torch + transformers venv
# (scripts/torch-venv.sh), builds the opgen_torch package for it with the generated kernels on
# the CPU twin (`cargo xtask torch-cpu`), and runs python/opgen_torch/tests/test_cpu_backend.py
# in it: opcheck on every op, forward numerics against float64 math, the op_host refusals under
# FakeTensorMode, autograd (the row norms' gradients, refusals) eager and compiled; then
# test_hf_rounding.py (rounding="hf" against transformers' Qwen2RMSNorm and SiLU, bit for bit)
# and the tiny-Qwen training-step and several-models tests (scripts/check_torch_train.sh), which
# also runs the training steps with the oldest supported transformers (4.53.2); the venv's own is
# the newest (5.25.0).
#
# OPGEN_SKIP_TORCH_CPU=1 skips it on a developer machine (the venv is ~7 GB); it is never
# skipped in CI (CI=true).
# Usage: scripts/check_torch_cpu.sh [OUT_DIR]   (default: target/opgen-torch-cpu)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

if [ "${OPGEN_SKIP_TORCH_CPU:-}" = 1 ]; then
    if [ "${CI:-}" = true ]; then
        echo "OPGEN_SKIP_TORCH_CPU=1 is ignored in CI (CI=true): the torch CPU backend tests always run there"
    else
        # The marker line `cargo xtask test` counts as one skipped check (src/app/test_suite.rs).
        echo "OPGEN-STEP-SKIPPED: OPGEN_SKIP_TORCH_CPU=1 (the torch CPU backend tests did not run)"
        exit 0
    fi
fi

total=$(opgen_now)
out=${1:-$OPGEN_REPO/target/opgen-torch-cpu}
python=$("$OPGEN_REPO/scripts/torch-venv.sh" | tail -n 1)

echo "== build the CPU package with the generated kernels"
cd "$OPGEN_REPO"
start=$(opgen_now)
cargo xtask torch-cpu --python "$python" --out "$out"
echo "  torch-cpu: $(opgen_elapsed "$start") s"

# Inductor's compile cache (default /tmp/torchinductor_<user>) keys on the traced graph, not on
# the ops' Meta kernels: after a change of an op's output shapes it replays stale code (seen when
# rms_norm_grad's dgamma went from [48, D] partials to [D]). One cache per build of the package.
schema_hash=$(cat "$out"/opgen_torch/ops.py "$out"/opgen_torch/*.so 2>/dev/null | sha256sum | cut -c1-16)
export TORCHINDUCTOR_CACHE_DIR="$out/inductor-cache-$schema_hash"

echo "== python/opgen_torch/tests/test_cpu_backend.py"
start=$(opgen_now)
# The package must import from the build alone: no torch_npu, no CANN, nothing from the repo.
# OPGEN_TWIN_INCLUDE: the twin headers, for the test that builds a rule-breaking kernel.
PYTHONPATH="$out" OPGEN_TWIN_INCLUDE="$OPGEN_REPO/kernels/twin/include" \
    "$python" "$OPGEN_REPO/python/opgen_torch/tests/test_cpu_backend.py"
echo "  tests: $(opgen_elapsed "$start") s"
echo "== two projects' wheels in one process (scripts/check_two_packages.sh)"
start=$(opgen_now)
"$OPGEN_REPO/scripts/check_two_packages.sh"
echo "  two packages: $(opgen_elapsed "$start") s"

echo "== python/opgen_torch/tests/test_hf_rounding.py"
start=$(opgen_now)
# rounding="hf" against transformers' own Qwen2RMSNorm and SiLU: the fraction bit-exact.
PYTHONPATH="$out" "$python" "$OPGEN_REPO/python/opgen_torch/tests/test_hf_rounding.py"
echo "  tests: $(opgen_elapsed "$start") s"
# The tiny-Qwen training step (issue 13), on the package just built.
OPGEN_TORCH_CPU_BUILT=1 "$OPGEN_REPO/scripts/check_torch_train.sh" "$out"
echo "== torch CPU backend: ok in $(opgen_elapsed "$total") s"
