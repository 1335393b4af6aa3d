#!/usr/bin/env bash
# Downloads (once) and unpacks the torch and torch_npu wheels the generated extension builds
# against; prints the package directories as shell assignments:
#   eval "$(scripts/fetch-torch-wheels.sh | grep '^export ')"
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/wheels.sh"
opgen_wheels >&2
echo "export TORCH_PATH=$(printf '%q' "$TORCH_PATH")"
echo "export TORCH_NPU_PATH=$(printf '%q' "$TORCH_NPU_PATH")"
