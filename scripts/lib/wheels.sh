# The torch and torch_npu wheels the generated extension is checked against, downloaded once
# into $OPGEN_CACHE/wheels and unpacked (headers and libraries only) into $OPGEN_CACHE/unpacked.
# Sourced; needs lib/common.sh. After opgen_wheels: TORCH_PATH and TORCH_NPU_PATH point at the
# unpacked package directories (…/torch, …/torch_npu), as a site-packages would have them.

# torch_npu 2.10.0.post7 is built for torch 2.10.0. On x86_64 its metadata pins the CPU build
# (torch==2.10.0+cpu, not on PyPI); with --no-deps the PyPI build (cu128) is used instead: its
# headers and CPU libraries are the same API, and nothing here links its CUDA libraries.
OPGEN_TORCH_VERSION=${OPGEN_TORCH_VERSION:-2.10.0}
OPGEN_TORCH_NPU_VERSION=${OPGEN_TORCH_NPU_VERSION:-2.10.0.post7}
OPGEN_WHEEL_PYTHON=${OPGEN_WHEEL_PYTHON:-311}

# opgen_wheel_file DIST VERSION: the cached wheel of DIST==VERSION, if any.
opgen_wheel_file() {
    local dist=$1 version=$2
    # Wheel names use the distribution name with '_' and may carry a build tag
    # (torch-2.10.0-3-cp311-…).
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

# opgen_unpack_wheel WHEEL PACKAGE DEST: extracts PACKAGE/include/ and PACKAGE/lib/ (less the
# CUDA libraries) into DEST, atomically; skipped when DEST was unpacked from the same file.
opgen_unpack_wheel() {
    local wheel=$1 package=$2 dest=$3
    local stamp="$dest/.unpacked-from"
    local id
    id="$(basename "$wheel") $(stat -c %s "$wheel")"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$id" ]; then
        echo "  $package: already unpacked in $dest"
        return
    fi
    rm -rf "$dest" "$dest.partial"
    opgen_run "unpack $package include/ and lib/" python3 - "$wheel" "$package" "$dest.partial" <<'PY'
import re
import sys
import zipfile

wheel, package, dest = sys.argv[1:4]
# The CUDA libraries of torch's PyPI build (1.2 GB) are never linked by the extension.
cuda = re.compile(r"cuda|nvrtc|nvshmem|cudnn|cublas|cufft|cusparse|nccl")
wanted = (f"{package}/include/", f"{package}/lib/")
count = size = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if not name.startswith(wanted) or name.endswith("/"):
            continue
        if name.startswith(f"{package}/lib/") and cuda.search(name.rsplit("/", 1)[-1]):
            continue
        z.extract(info, dest)
        count += 1
        size += info.file_size
print(f"{count} files, {size / 1e6:.0f} MB")
if count == 0:
    sys.exit(f"no {package}/include or {package}/lib in {wheel}")
PY
    echo "    $OPGEN_LAST_LOG"
    echo "$id" >"$dest.partial/.unpacked-from"
    mv "$dest.partial" "$dest"
}

opgen_wheels() {
    local start
    start=$(opgen_now)
    echo "== torch ${OPGEN_TORCH_VERSION} and torch_npu ${OPGEN_TORCH_NPU_VERSION} wheels (cache: $OPGEN_CACHE)"
    opgen_fetch_wheel torch "$OPGEN_TORCH_VERSION"
    opgen_fetch_wheel torch_npu "$OPGEN_TORCH_NPU_VERSION"
    local unpacked="$OPGEN_CACHE/unpacked"
    mkdir -p "$unpacked"
    opgen_unpack_wheel "$(opgen_wheel_file torch "$OPGEN_TORCH_VERSION")" torch "$unpacked/torch-$OPGEN_TORCH_VERSION"
    opgen_unpack_wheel "$(opgen_wheel_file torch_npu "$OPGEN_TORCH_NPU_VERSION")" torch_npu \
        "$unpacked/torch_npu-$OPGEN_TORCH_NPU_VERSION"
    TORCH_PATH="$unpacked/torch-$OPGEN_TORCH_VERSION/torch"
    TORCH_NPU_PATH="$unpacked/torch_npu-$OPGEN_TORCH_NPU_VERSION/torch_npu"
    export TORCH_PATH TORCH_NPU_PATH
    echo "  wheels ready in $(opgen_elapsed "$start") s: TORCH_PATH=$TORCH_PATH TORCH_NPU_PATH=$TORCH_NPU_PATH"
}

# opgen_torch_cpu_runtime: the two CUDA runtime libraries torch's PyPI build needs just to be
# loaded (libtorch_cpu.so NEEDs libcudart.so.12 and libcupti.so.12; nothing calls them on a
# CPU), at the versions torch's own metadata pins, downloaded once and unpacked. Sets
# OPGEN_TORCH_CPU_LD_PATH: what LD_LIBRARY_PATH needs to run a program linked to libtorch_cpu.
opgen_torch_cpu_runtime() {
    local wheel pins
    wheel=$(opgen_wheel_file torch "$OPGEN_TORCH_VERSION")
    pins=$(python3 - "$wheel" <<'PY'
import re
import sys
import zipfile

with zipfile.ZipFile(sys.argv[1]) as z:
    meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    for line in z.read(meta).decode().splitlines():
        m = re.match(r"Requires-Dist: (nvidia-cuda-(?:runtime|cupti)-cu\d+)==([\w.]+)", line)
        if m:
            print(f"{m.group(1)}=={m.group(2)}")
PY
)
    OPGEN_TORCH_CPU_LD_PATH=""
    if [ -z "$pins" ]; then
        echo "  torch's metadata pins no CUDA runtime: nothing to add"
        return
    fi
    local pin dist version dest lib
    for pin in $pins; do
        dist=${pin%%==*}
        version=${pin##*==}
        dest="$OPGEN_CACHE/unpacked/${dist}-${version}"
        if [ ! -f "$dest/.complete" ]; then
            if [ -z "$(compgen -G "$OPGEN_CACHE/wheels/${dist//-/_}-${version}-*.whl")" ]; then
                opgen_run "download $pin" python3 -m pip download --no-deps --only-binary=:all: \
                    --disable-pip-version-check --python-version "$OPGEN_WHEEL_PYTHON" --implementation cp \
                    --abi "cp$OPGEN_WHEEL_PYTHON" --abi none --platform "manylinux_2_28_$(uname -m)" \
                    --platform "manylinux2014_$(uname -m)" --platform "manylinux_2_17_$(uname -m)" \
                    -d "$OPGEN_CACHE/wheels" "$pin"
            else
                echo "  $pin: cached"
            fi
            rm -rf "$dest"
            opgen_run "unpack $pin lib/" python3 - "$(compgen -G "$OPGEN_CACHE/wheels/${dist//-/_}-${version}-*.whl" | head -n 1)" "$dest" <<'PY'
import sys
import zipfile

wheel, dest = sys.argv[1:3]
with zipfile.ZipFile(wheel) as z:
    libs = [n for n in z.namelist() if "/lib/" in n and ".so" in n.rsplit("/", 1)[-1]]
    for n in libs:
        z.extract(n, dest)
print(f"{len(libs)} libraries")
PY
            touch "$dest/.complete"
        else
            echo "  $pin: already unpacked"
        fi
        for lib in "$dest"/nvidia/*/lib; do
            OPGEN_TORCH_CPU_LD_PATH="${OPGEN_TORCH_CPU_LD_PATH:+$OPGEN_TORCH_CPU_LD_PATH:}$lib"
        done
    done
    export OPGEN_TORCH_CPU_LD_PATH
}
