#!/usr/bin/env bash
# Installs the Debian packages the project's native checks need, only when missing:
#   cmake         builds the generated torch extension (scripts/check_torch_extension.sh)
#   libclang-dev  bindgen's libclang, for the ACL bindings (scripts/check_acl_bindings.sh)
# Usage: scripts/setup-host.sh [PACKAGE...]   (default: all of the above)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

wanted=("$@")
if [ ${#wanted[@]} -eq 0 ]; then
    wanted=(cmake libclang-dev)
fi

installed=$(apt list --installed 2>/dev/null || true)
missing=()
for pkg in "${wanted[@]}"; do
    if ! grep -q "^${pkg}/" <<<"$installed"; then
        missing+=("$pkg")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "setup-host: ${wanted[*]} already installed"
    exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || opgen_fail "setup-host: ${missing[*]} missing and not root (no sudo): install them with apt-get"
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
echo "setup-host: installing ${missing[*]}"
start=$(opgen_now)
# The package lists may be absent or stale on a fresh machine: update once, only if the
# install fails without it.
if ! "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    opgen_run "apt-get update" "${sudo[@]}" apt-get update
    opgen_run "apt-get install ${missing[*]}" "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
echo "setup-host: installed ${missing[*]} in $(opgen_elapsed "$start") s"
