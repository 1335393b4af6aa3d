#!/usr/bin/env bash
# The cached Python venv with a CPU-capable torch and transformers that the torch CPU-backend
# tests run in: ${OPGEN_CACHE:-~/.cache/ascend-opgen}/venv-torch. Idempotent: a venv whose stamp
# names the same versions is kept as it is (seconds); otherwise it is made anew (the torch
# wheel is downloaded once into $OPGEN_CACHE/wheels, shared with check_torch_extension.sh).
#
# PyPI's torch for x86_64 is the CUDA build; it imports and runs on a CPU, but only with
# its NVIDIA runtime wheels installed: libtorch_cpu.so itself NEEDs libcudart and libcupti, and
# libtorch.so / libtorch_python.so NEED libtorch_cuda.so, which NEEDs cuBLAS, cuDNN, cuFFT,
# cuSPARSE(Lt), cuRAND, NCCL, cuFile and NVSHMEM. `--no-deps` plus the pure-Python deps was tried:
# `import torch` fails (libcudart.so.12, then libcublasLt). So the full dependency set is
# installed (about 7 GB, ~3 min here), once.
#
# OPGEN_TRANSFORMERS_VERSION other than the base venv's (5.25.0), e.g. 4.57.1, the last 4.x
# (scripts/check_torch_train.sh's OPGEN_TRANSFORMERS_EXTRA): an overlay venv $OPGEN_CACHE/venv-torch-transformers-<V>
# whose site-packages reads the base venv's through a .pth file (site.addsitedir, so the base's
# own .pth files run too) after its own. pip then sees torch and its NVIDIA wheels as installed
# and puts only transformers and the dependencies it needs newer (huggingface_hub, tokenizers,
# ...) into the overlay, where they shadow the base's copies: torch is not downloaded twice, and
# the overlay is tens of MB.
#
# Prints the venv's python on its last line.
# Usage: scripts/torch-venv.sh   |   OPGEN_TRANSFORMERS_VERSION=4.57.1 scripts/torch-venv.sh
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/wheels.sh"

# The newest transformers on PyPI (the one `pip install transformers` gives); the oldest supported,
# 4.53.2 (the field report's), is tested beside it by scripts/check_torch_train.sh.
base_transformers=5.25.0
# accelerate: what transformers needs to load a model with `tp_plan="auto"` (its own tensor
# parallelism, python/opgen_torch/tests/test_distributed.py); the newest on PyPI.
accelerate_version=1.16.0
OPGEN_TRANSFORMERS_VERSION=${OPGEN_TRANSFORMERS_VERSION:-$base_transformers}
start=$(opgen_now)

if [ "$OPGEN_TRANSFORMERS_VERSION" != "$base_transformers" ]; then
    base_python=$(OPGEN_TRANSFORMERS_VERSION=$base_transformers "$0" | tail -n 1)
    overlay="$OPGEN_CACHE/venv-torch-transformers-$OPGEN_TRANSFORMERS_VERSION"
    want="base=$(cat "$OPGEN_CACHE/venv-torch/.opgen-venv") transformers==$OPGEN_TRANSFORMERS_VERSION"
    if [ -f "$overlay/.opgen-venv" ] && [ "$(cat "$overlay/.opgen-venv")" = "$want" ] && [ -x "$overlay/bin/python" ]; then
        echo "== torch venv overlay: cached ($want) in $(opgen_elapsed "$start") s"
        echo "$overlay/bin/python"
        exit 0
    fi
    echo "== torch venv overlay: making $overlay ($want)"
    rm -rf "$overlay"
    opgen_run "python3 -m venv (overlay)" python3 -m venv "$overlay"
    base_site=$("$base_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    overlay_site=$("$overlay/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "import site; site.addsitedir('$base_site')" >"$overlay_site/opgen-base-venv.pth"
    opgen_run "pip install transformers==$OPGEN_TRANSFORMERS_VERSION (overlay)" \
        "$overlay/bin/python" -m pip install --disable-pip-version-check --no-input \
        "transformers==$OPGEN_TRANSFORMERS_VERSION"
    opgen_run "import check (overlay)" "$overlay/bin/python" -c \
        "import torch, transformers; assert transformers.__version__ == '$OPGEN_TRANSFORMERS_VERSION', transformers.__version__; assert torch.ones(2).add(1).sum().item() == 4.0; print(torch.__version__, transformers.__version__)"
    echo "    $OPGEN_LAST_LOG"
    echo "$want" >"$overlay/.opgen-venv"
    echo "== torch venv overlay: ready in $(opgen_elapsed "$start") s ($(du -sh "$overlay" | cut -f1))"
    echo "$overlay/bin/python"
    exit 0
fi

venv="$OPGEN_CACHE/venv-torch"
want="torch==$OPGEN_TORCH_VERSION transformers==$OPGEN_TRANSFORMERS_VERSION accelerate==$accelerate_version python=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"

if [ -f "$venv/.opgen-venv" ] && [ "$(cat "$venv/.opgen-venv")" = "$want" ] && [ -x "$venv/bin/python" ]; then
    echo "== torch venv: cached ($want) in $(opgen_elapsed "$start") s"
    echo "$venv/bin/python"
    exit 0
fi

echo "== torch venv: making $venv ($want)"
opgen_fetch_wheel torch "$OPGEN_TORCH_VERSION"
rm -rf "$venv"
# The venv's scripts name the directory they were made in, so it is made where it stays; the
# stamp is written last, so an interrupted install is never taken for a complete one.
opgen_run "python3 -m venv" python3 -m venv "$venv"
opgen_run "pip install torch (with its NVIDIA runtime wheels) + transformers + accelerate" \
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input \
    "$(opgen_wheel_file torch "$OPGEN_TORCH_VERSION")" "transformers==$OPGEN_TRANSFORMERS_VERSION" \
    "accelerate==$accelerate_version"
opgen_run "import check" "$venv/bin/python" -c \
    "import torch, transformers, accelerate; assert torch.ones(2).add(1).sum().item() == 4.0; print(torch.__version__, transformers.__version__)"
echo "    $OPGEN_LAST_LOG"
echo "$want" >"$venv/.opgen-venv"
echo "== torch venv: ready in $(opgen_elapsed "$start") s ($(du -sh "$venv" | cut -f1))"
echo "$venv/bin/python"
