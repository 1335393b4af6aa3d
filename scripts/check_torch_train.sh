#!/usr/bin/env bash
# The tiny-Qwen training-step test on a CPU-only machine, in one command: makes (once, cached) the
# torch + transformers venv (scripts/torch-venv.sh), builds the opgen_torch package with the
# generated kernels on the CPU twin (`cargo xtask torch-cpu`, cached objects), and runs
# python/opgen_torch/tests/test_train_qwen.py: one training step of a tiny random Qwen2 and Qwen3
# (float32, bfloat16) patched with opgen_torch.transformers against the unpatched model; prints
# the loss delta, the worst gradient cosine (and its parameter) and the time per case; then
# python/opgen_torch/tests/test_rl_models.py (an RL actor, reference and critic in one process);
# python/opgen_torch/tests/test_distributed.py (two gloo processes: FSDP2, tensor/sequence parallel);
# python/opgen_torch/tests/test_train_qwen3_vl.py (a tiny Qwen3-VL's step with an image; not with
# 4.53.2, which has no Qwen3-VL);
# then the training steps again with transformers 4.53.2 (the oldest supported, the field
# report's, cached under target/). The venv's own transformers is the newest supported (5.25.0,
# scripts/torch-venv.sh), so every test above runs on the newest and the training steps on the
# oldest. OPGEN_TRANSFORMERS_EXTRA=<V> also runs every HF test with transformers V (an overlay
# venv of scripts/torch-venv.sh, made once), e.g. 4.57.1, the last 4.x.
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
PYTHONPATH="$out" OPGEN_EXPECT_TRANSFORMERS="$("$python" -c 'import transformers; print(transformers.__version__)')" \
    "$python" "$OPGEN_REPO/python/opgen_torch/tests/test_train_qwen.py"
echo "  training-step test: $(opgen_elapsed "$start") s"
echo "== python/opgen_torch/tests/test_rl_models.py"
start=$(opgen_now)
PYTHONPATH="$out" "$python" "$OPGEN_REPO/python/opgen_torch/tests/test_rl_models.py"
echo "  several-models test: $(opgen_elapsed "$start") s"
echo "== python/opgen_torch/tests/test_distributed.py"
start=$(opgen_now)
# Two processes over gloo: FSDP2 and tensor/sequence parallelism through the sharding rules.
PYTHONPATH="$out" "$python" "$OPGEN_REPO/python/opgen_torch/tests/test_distributed.py"
echo "  distributed test: $(opgen_elapsed "$start") s"
echo "== python/opgen_torch/tests/test_train_qwen3_vl.py"
start=$(opgen_now)
PYTHONPATH="$out" "$python" "$OPGEN_REPO/python/opgen_torch/tests/test_train_qwen3_vl.py"
echo "  Qwen3-VL training-step test: $(opgen_elapsed "$start") s"

# The field report's transformers 4.53.2 too, on the same torch: installed once (--no-deps, with
# the tokenizers and huggingface_hub it pins — the venv's 5.x has a hub >= 1.0, which 4.53.2's
# import-time dependency check refuses; the venv's other packages serve both versions) into a directory under
# target/ that goes first on PYTHONPATH. The tiny-Qwen training steps (Qwen2 float32 with
# generate, Qwen2 bfloat16, Qwen3 float32, gradient checkpointing) and the several-models test
# run with it; the compiled steps do not, to keep the step's cost small.
alt_version=4.53.2
alt="$OPGEN_REPO/target/torch-transformers-$alt_version"
# requests (and its dependencies) and kernels 0.6 (4.53.2 imports it when installed, and the venv's
# kernels needs hub 1.x): what huggingface_hub 0.x and 4.53.2 need; the venv's 5.x (hub 1.x,
# httpx) does not.
alt_want="transformers==$alt_version tokenizers==0.21.4 huggingface_hub==0.36.2 kernels==0.6.2 requests==2.34.2 urllib3==2.8.0 charset-normalizer==3.5.3 certifi==2026.10.19.post1"
if [ ! -f "$alt/.opgen-stamp" ] || [ "$(cat "$alt/.opgen-stamp")" != "$alt_want" ]; then
    rm -rf "$alt"
    opgen_run "pip install --target (transformers $alt_version)" "$python" -m pip install --disable-pip-version-check \
        --no-input --no-deps --target "$alt" $alt_want
    echo "$alt_want" >"$alt/.opgen-stamp"
fi
echo "== python/opgen_torch/tests/test_train_qwen.py with transformers $alt_version"
start=$(opgen_now)
PYTHONPATH="$alt:$out" OPGEN_EXPECT_TRANSFORMERS="$alt_version" "$python" \
    "$OPGEN_REPO/python/opgen_torch/tests/test_train_qwen.py" TrainingStep.test_transformers_version \
    TrainingStep.test_qwen2_float32 TrainingStep.test_qwen2_bfloat16 TrainingStep.test_qwen3_float32 \
    TrainingStep.test_gradient_checkpointing_recomputes_the_patched_layers
echo "  training-step test (transformers $alt_version): $(opgen_elapsed "$start") s"
echo "== python/opgen_torch/tests/test_rl_models.py with transformers $alt_version"
start=$(opgen_now)
PYTHONPATH="$alt:$out" "$python" "$OPGEN_REPO/python/opgen_torch/tests/test_rl_models.py"
echo "  several-models test (transformers $alt_version): $(opgen_elapsed "$start") s"

# A third version on request (not in `cargo xtask test`): every HF test in an overlay venv with
# the same torch and Python.
extra=${OPGEN_TRANSFORMERS_EXTRA:-}
if [ -n "$extra" ]; then
    extra_python=$(OPGEN_TRANSFORMERS_VERSION=$extra "$OPGEN_REPO/scripts/torch-venv.sh" | tail -n 1)
    for test in test_train_qwen.py test_train_qwen3_vl.py test_rl_models.py test_hf_rounding.py "test_cpu_backend.py Transformers"; do
        echo "== python/opgen_torch/tests/$test with transformers $extra"
        start=$(opgen_now)
        # shellcheck disable=SC2086 # "file [test class]" splits into the script and its argument
        PYTHONPATH="$out" OPGEN_EXPECT_TRANSFORMERS="$extra" OPGEN_TWIN_INCLUDE="$OPGEN_REPO/kernels/twin/include" \
            "$extra_python" "$OPGEN_REPO/python/opgen_torch/tests/"$test
        echo "  $test (transformers $extra): $(opgen_elapsed "$start") s"
    done
fi
