#!/usr/bin/env bash
# The NPU-less check of the generated torch extension: generates the project for the whole
# catalogue, then configures, compiles and links its torch/ (the generated CMake recipe)
# against the real torch and torch_npu wheels, and installs it. The library cannot be loaded
# without CANN; linking it with --no-undefined is the check. Then:
#   - its NEEDED entries name torch/torch_npu and no CANN library (CANN's libraries are
#     dependencies of libtorch_npu only);
#   - libtorch (the wheel's libc10/libtorch_cpu, no NPU) loads the generated schemas and runs
#     the Meta kernels on meta tensors (scripts/torch_meta_check/meta_check.cpp), among them every
#     op_host refusal of python/opgen_torch/tests/host_refusals.txt, word for word;
#   - the Python package compiles, and its loader passes its tests with stand-ins for
#     torch/torch_npu (python/opgen_torch/tests).
# Idempotent: the wheels are downloaded once into ${OPGEN_CACHE:-~/.cache/ascend-opgen}.
# Usage: scripts/check_torch_extension.sh [WORK_DIR]   (default: target/opgen-torch-check)
set -euo pipefail
source "$(dirname "$0")/lib/common.sh"
source "$(dirname "$0")/lib/wheels.sh"

total=$(opgen_now)
work=${1:-$OPGEN_REPO/target/opgen-torch-check}
mkdir -p "$work"
work=$(cd "$work" && pwd)

"$OPGEN_REPO/scripts/setup-host.sh" cmake
opgen_wheels

echo "== generate the project (every op of kernels/)"
cd "$OPGEN_REPO"
# --specs keeps gen from refreshing the golden copy: this check never writes into the repository.
opgen_run "opgen gen" cargo run --quiet --bin opgen -- gen --specs "$OPGEN_REPO/kernels" --out "$work/project"
echo "    $OPGEN_LAST_LOG"

echo "== configure, compile and link torch/ against the wheels"
build="$work/build"
rm -rf "$build" "$work/install"
opgen_run "cmake configure" cmake -S "$work/project/torch" -B "$build" \
    -DTORCH_PATH="$TORCH_PATH" -DTORCH_NPU_PATH="$TORCH_NPU_PATH" \
    -DPython3_EXECUTABLE="$(command -v python3)"
opgen_run "compile + link" cmake --build "$build" -j"$(nproc)"
opgen_run "install" cmake --install "$build" --prefix "$work/install"
lib="$work/install/python/opgen_torch/libopgen_torch.so"
[ -f "$lib" ] || opgen_fail "$lib was not installed"
echo "  $(basename "$lib"): $(stat -c %s "$lib") bytes"

echo "== dependencies of the library"
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "  NEEDED: $needed"
grep -qw libtorch_npu.so <<<"$needed" || opgen_fail "$lib does not depend on libtorch_npu.so"
for cann in libascendcl libhccl libge_runner libgraph libacl_op_compiler libnnopbase libopapi libcust_opapi; do
    if grep -q "$cann" <<<"$needed"; then
        opgen_fail "$lib depends on CANN's $cann directly; only libtorch_npu may"
    fi
done
missing=$(LD_LIBRARY_PATH="$TORCH_PATH/lib:$TORCH_NPU_PATH/lib" ldd "$lib" | awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')
echo "  not found by ldd (needed by libtorch_npu and torch's CUDA build, absent here): ${missing:-none}"

echo "== the schemas and Meta kernels in real libtorch (no NPU: torch_npu is not involved)"
# The generated opgen_schema.cpp with a test driver, linked to the wheel's libc10/libtorch_cpu:
# torch parses every schema at load, and the Meta kernels run on meta tensors.
opgen_torch_cpu_runtime
meta="$work/meta_check"
mkdir -p "$meta"
flags=(-std=c++17 -O0 -D_GLIBCXX_USE_CXX11_ABI=1 -I"$TORCH_PATH/include"
    -I"$TORCH_PATH/include/torch/csrc/api/include" -I"$work/project/torch")
# opgen_schema.cpp as the extension build compiled it (PIC objects link into an executable too).
schema_obj="$build/CMakeFiles/opgen_torch.dir/opgen_schema.cpp.o"
if [ ! -f "$schema_obj" ]; then
    schema_obj="$meta/opgen_schema.o"
    opgen_run "compile opgen_schema.cpp" g++ "${flags[@]}" -c "$work/project/torch/opgen_schema.cpp" -o "$schema_obj"
fi
opgen_run "compile the Meta check driver" g++ "${flags[@]}" -c "$OPGEN_REPO/scripts/torch_meta_check/meta_check.cpp" \
    -o "$meta/meta_check.o"
# --no-as-needed: the driver only reaches the kernels through static registration in
# opgen_schema.o; libtorch_cpu holds the dispatcher they register with.
opgen_run "link the Meta check" g++ "$schema_obj" "$meta/meta_check.o" -o "$meta/meta_check" \
    -L"$TORCH_PATH/lib" -Wl,--no-as-needed -lc10 -ltorch_cpu -Wl,-rpath-link,"$OPGEN_TORCH_CPU_LD_PATH"
# The catalogue's op names: one kernel per op in the generated project (op_kernel/opgen_<op>.cpp:
# the specs of kernels/*.toml and the backward ops derived from them). The check asserts exactly
# these are registered, so a missing op fails instead of skipping its cases.
catalogue=()
for kernel in "$work"/project/op_kernel/opgen_*.cpp; do
    name=$(basename "$kernel" .cpp)
    catalogue+=("${name#opgen_}")
done
[ "${#catalogue[@]}" -gt 0 ] || opgen_fail "no op kernels in $work/project/op_kernel"
# The op_host's refusals, case by case with its words (the CPU build's test checks the same file
# against the twin-compiled op_host).
refusals="$OPGEN_REPO/python/opgen_torch/tests/host_refusals.txt"
opgen_run "run the Meta check (${#catalogue[@]} catalogue ops)" env LD_LIBRARY_PATH="$TORCH_PATH/lib:$OPGEN_TORCH_CPU_LD_PATH" \
    "$meta/meta_check" --refusals "$refusals" "${catalogue[@]}"
sed 's/^/    /' <<<"$OPGEN_LAST_LOG"
# The mutant: Meta kernels without the shared host checks (the NPU build before them) must fail
# the refusals, naming the case.
sed 's/^\(    opgen_torch::[a-z0-9_]*_host_checks(\)/    if (false) \1/' "$work/project/torch/opgen_schema.cpp" >"$meta/schema_mutant.cpp"
grep -q "if (false) *opgen_torch::rotary_mul_host_checks(" "$meta/schema_mutant.cpp" || opgen_fail "the host-checks mutant did not apply"
opgen_run "compile the host-checks mutant" g++ "${flags[@]}" -c "$meta/schema_mutant.cpp" -o "$meta/schema_mutant.o"
opgen_run "link the host-checks mutant" g++ "$meta/schema_mutant.o" "$meta/meta_check.o" -o "$meta/meta_check_mutant" \
    -L"$TORCH_PATH/lib" -Wl,--no-as-needed -lc10 -ltorch_cpu -Wl,-rpath-link,"$OPGEN_TORCH_CPU_LD_PATH"
if env LD_LIBRARY_PATH="$TORCH_PATH/lib:$OPGEN_TORCH_CPU_LD_PATH" "$meta/meta_check_mutant" --refusals "$refusals" \
    "${catalogue[@]}" >"$meta/host_mutant.log" 2>&1; then
    opgen_fail "the Meta check passed with Meta kernels that skip the op_host's checks"
fi
grep -q 'FAILED: refusal "rotary_mul: a table of S=77 for x of S=4096": the Meta kernel accepted it' "$meta/host_mutant.log" \
    || opgen_fail "the host-checks mutant failed for another reason: $(grep FAILED "$meta/host_mutant.log" | head -n 3)"
echo "  Meta kernels without the host checks fail the refusals: ok ($(grep -c '^FAILED: refusal' "$meta/host_mutant.log") cases)"
# The mutant: an op the library does not register must fail the check (it used to be skipped).
if env LD_LIBRARY_PATH="$TORCH_PATH/lib:$OPGEN_TORCH_CPU_LD_PATH" "$meta/meta_check" "${catalogue[@]}" \
    opgen_not_registered >"$meta/mutant.log" 2>&1; then
    opgen_fail "the Meta check passed with an op the library lacks (opgen_not_registered)"
fi
grep -q "FAILED: catalogue op opgen::opgen_not_registered is registered" "$meta/mutant.log" \
    || opgen_fail "the Meta check did not name the missing op: $(tail -n 5 "$meta/mutant.log")"
echo "  a missing op fails the Meta check: ok"

echo "== the Python package"
opgen_run "py_compile" python3 -m py_compile "$work/install/python/opgen_torch/__init__.py" \
    "$work/install/python/opgen_torch/ops.py"
opgen_run "loader tests" python3 "$OPGEN_REPO/python/opgen_torch/tests/test_package.py" "$work/install/python"
echo "    $(tail -n 1 <<<"$OPGEN_LAST_LOG")"

echo "check-torch-extension: passed in $(opgen_elapsed "$total") s"
