#!/usr/bin/env bash
# The tiny-Qwen training-step test on a CPU-only machine, in one command: makes (once, cached) the
# torch + transformers venv (scripts/torch-venv.sh), builds the opgen_torch package with the
# generated kernels on the CPU twin (`cargo xtask torch-cpu`, cached objects), and runs
# python/opgen_torch/tests/test_train_qwen.py: one training step of a tiny random Qwen2 and Qwen3
# (float32, bfloat16) patched with opgen_torch.transformers against the unpatched model; prints
# the loss delta, the worst gradient cosine (and its parameter) and the time per case.
# Also run by scripts/check_torch_cpu.sh (a step of `cargo xtask test`).
# Usage: scripts/check_torch_train.sh [OUT_DIR]   (default: target/opgen-torch-cpu)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

out=${1:-$OPGEN_REPO/target/opgen-torch-cpu}
python=$("$OPGEN_REPO/scripts/torch-venv.sh" | tail -n 1)
cd "$OPGEN_REPO"
if [ "${OPGEN_TORCH_CPU_BUILT:-}" != 1 ]; then
    echo "== build the CPU package with the generated kernels"
    start=$(opgen_now)
    cargo xtask torch-cpu --python "$python" --out "$out"
    echo "  torch-cpu: $(opgen_elapsed "$start") s"
fi
echo "== python/opgen_torch/tests/test_train_qwen.py"
start=$(opgen_now)
PYTHONPATH="$out" "$python" "$OPGEN_REPO/python/opgen_torch/tests/test_train_qwen.py"
echo "  training-step test: $(opgen_elapsed "$start") s"
