# The torch wheel lookup of scripts/torch-venv.sh. Fetching and unpacking the torch and
# torch_npu wheels for the extension checks is `cargo xtask fetch-wheels` (src/app/host_checks.rs,
# whose unit test checks that the versions below are its own). Sourced; needs lib/common.sh.

# torch_npu 2.14.0 (the newest on PyPI) is built for torch 2.14.0 (its metadata: torch==2.14.0.*);
# on x86_64 PyPI's torch is the CUDA build: its headers and CPU libraries are the same API, and
# nothing here links its CUDA libraries.
OPGEN_TORCH_VERSION=${OPGEN_TORCH_VERSION:-2.14.0}
OPGEN_TORCH_NPU_VERSION=${OPGEN_TORCH_NPU_VERSION:-2.14.0}
OPGEN_WHEEL_PYTHON=${OPGEN_WHEEL_PYTHON:-311}

# opgen_wheel_file DIST VERSION: the cached wheel of DIST==VERSION, if any.
opgen_wheel_file() {
    local dist=$1 version=$2
    # Wheel names use the distribution name with '_' and may carry a build tag
    # (torch-2.14.0-3-cp311-…).
    compgen -G "$OPGEN_CACHE/wheels/${dist}-${version}-*cp${OPGEN_WHEEL_PYTHON}-*manylinux*_$(uname -m).whl" | head -n 1
}

# opgen_fetch_wheel DIST VERSION: downloads the wheel unless it is cached.
opgen_fetch_wheel() {
    local dist=$1 version=$2 pip_name=${1//_/-}
    if [ -n "$(opgen_wheel_file "$dist" "$version")" ]; then
        echo "  ${pip_name}==${version}: cached ($(basename "$(opgen_wheel_file "$dist" "$version")"))"
        return
    fi
    mkdir -p "$OPGEN_CACHE/wheels"
    opgen_run "download ${pip_name}==${version}" \
        python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
        --python-version "$OPGEN_WHEEL_PYTHON" --implementation cp --abi "cp$OPGEN_WHEEL_PYTHON" \
        --platform "manylinux_2_28_$(uname -m)" -d "$OPGEN_CACHE/wheels" "${pip_name}==${version}"
    [ -n "$(opgen_wheel_file "$dist" "$version")" ] ||
        opgen_fail "pip downloaded ${pip_name}==${version} but no matching wheel is in $OPGEN_CACHE/wheels"
}
