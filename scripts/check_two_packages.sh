#!/usr/bin/env bash
# Two generated projects with different names (project.toml: torch library, Python package,
# vendor, op-type prefix), each built for the CPU (`cargo xtask torch-cpu --wheel`) into a wheel,
# both wheels pip-installed into one throwaway venv (the cached torch venv's packages reached
# through a .pth file: `--system-site-packages` would only reach the base interpreter's), then
# python/opgen_torch/tests/test_two_packages.py loads both into one process, with no PYTHONPATH
# and no exported variables, and calls both projects' ops. Prints each wheel's file list.
# Run by scripts/check_torch_cpu.sh (the torch step of `cargo xtask test`).
# Usage: scripts/check_two_packages.sh [WORK_DIR]   (default: target/opgen-two-packages)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"

work=${1:-$OPGEN_REPO/target/opgen-two-packages}
python=$("$OPGEN_REPO/scripts/torch-venv.sh" | tail -n 1)
cd "$OPGEN_REPO"
total=$(opgen_now)
mkdir -p "$work"
rm -rf "$work/dist"
for name in acme beta; do
    specs="$work/specs-$name"
    rm -rf "$specs"
    mkdir -p "$specs"
    cp kernels/rms_norm.toml kernels/rms_norm_grad.toml "$specs/"  # rms_norm names its backward op
    # beta has one op more: a package must not see the other's ops.
    if [ "$name" = beta ]; then cp kernels/gelu_tanh.toml "$specs/"; fi
    prefix="$(tr '[:lower:]' '[:upper:]' <<<"${name:0:1}")${name:1}"
    printf 'library = "%s"\npackage = "%s_torch"\nvendor = "%s_ops"\nop_type_prefix = "%s"\n' \
        "$name" "$name" "$name" "$prefix" >"$specs/project.toml"
    # One object cache for both builds: the twin runtime is compiled once.
    mkdir -p "$work/cache" "$work/build-$name"
    ln -sfn "$work/cache" "$work/build-$name/.build"
    start=$(opgen_now)
    cargo xtask torch-cpu --python "$python" --specs "$specs" --out "$work/build-$name" --wheel "$work/dist"
    echo "  $name: $(opgen_elapsed "$start") s"
done

echo "== the wheels' files"
"$python" - "$work"/dist/*.whl <<'PY'
import sys, zipfile
for path in sys.argv[1:]:
    print(path.rsplit("/", 1)[-1])
    for info in zipfile.ZipFile(path).infolist():
        print(f"  {info.file_size:>9}  {info.filename}")
PY

echo "== install both into a throwaway venv and load them into one process"
venv="$work/venv"
rm -rf "$venv"
"$python" -m venv "$venv"
site=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" | {
    read -r own
    echo "$site" >"$own/opgen-torch-venv.pth"
}
"$venv/bin/python" -m pip install --quiet --no-deps --no-index "$work"/dist/*.whl
# From / with no PYTHONPATH: only the installed wheels can satisfy the imports.
(cd / && env -u PYTHONPATH -u OPGEN_INSTALL_DIR -u ASCEND_CUSTOM_OPP_PATH \
    "$venv/bin/python" "$OPGEN_REPO/python/opgen_torch/tests/test_two_packages.py")
echo "== two packages: ok in $(opgen_elapsed "$total") s"
