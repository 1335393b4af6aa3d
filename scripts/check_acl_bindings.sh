#!/usr/bin/env bash
# The ACL bindings without CANN: bindgen runs over the ACL headers the torch_npu wheel ships
# (torch_npu/include/acl), the cfg(opgen_acl) code (src/acl, opgen run --device npu) is
# compiled, linted and tested against them. In its own target directory, so the default build
# keeps its cache. Idempotent: the wheel is downloaded once (see check_torch_extension.sh).
# Usage: scripts/check_acl_bindings.sh
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/wheels.sh"

total=$(opgen_now)
"$OPGEN_REPO/scripts/setup-host.sh" libclang-dev
opgen_wheels

export OPGEN_ACL_INCLUDE="$TORCH_NPU_PATH/include"
export CARGO_TARGET_DIR="$OPGEN_REPO/target/acl"
cd "$OPGEN_REPO"
echo "== ACL bindings from $OPGEN_ACL_INCLUDE (target dir $CARGO_TARGET_DIR)"
opgen_run "cargo build (bindgen + cfg(opgen_acl))" cargo build --workspace --all-targets
bindings=$(ls -t "$CARGO_TARGET_DIR"/debug/build/ascend-opgen-*/out/acl_bindings.rs 2>/dev/null | head -n 1)
[ -n "$bindings" ] || opgen_fail "the build did not generate acl_bindings.rs (bindgen skipped?)"
echo "  $bindings: $(grep -c 'pub unsafe fn acl' "$bindings") ACL functions bound"
opgen_run "cargo clippy (cfg(opgen_acl))" cargo clippy --workspace --all-targets -- -D warnings
opgen_run "cargo test --lib acl::" cargo test --lib acl::
echo "    $(grep '^test result' <<<"$OPGEN_LAST_LOG" | head -n 1)"
opgen_run "cargo test --test it run_npu::" cargo test --test it run_npu::
echo "    $(grep '^test result' <<<"$OPGEN_LAST_LOG" | head -n 1)"
echo "check-acl-bindings: passed in $(opgen_elapsed "$total") s"
