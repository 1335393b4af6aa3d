#!/usr/bin/env bash
# Builds and runs the op_host tests of the CPU twin under AddressSanitizer and
# UndefinedBehaviorSanitizer:
#   1. a runner for the hand-written sample op (host_sample/), linked like a real op's runner;
#   2. host_registry_test, which checks the registry, the rules and the planner, then drives (1);
#   3. when a CANN toolkit is given (CANN_TOOLKIT=<.../ascend-toolkit/8.1.RC1>, else
#      ASCEND_HOME_PATH: the directory that holds <arch>-linux/include), the sample op_host file
#      is compiled against the real headers with -std=c++11, which shows the twin's op_host API
#      has the real names and types for what the sample uses.
# Environment: CXX (default g++), OPGEN_TWIN_BUILD_DIR (default: a temporary directory).
set -euo pipefail

tests_dir=$(cd "$(dirname "$0")" && pwd)
twin_dir=$(dirname "$tests_dir")
sample_dir=$tests_dir/host_sample
cxx=${CXX:-g++}
build_dir=${OPGEN_TWIN_BUILD_DIR:-}
if [[ -z $build_dir ]]; then
    build_dir=$(mktemp -d)
    trap 'rm -rf "$build_dir"' EXIT
fi
mkdir -p "$build_dir"

if [[ ! -f $twin_dir/src/runtime.cpp ]]; then
    echo "run_host_tests.sh: $twin_dir/src/runtime.cpp (the twin runtime) is missing" >&2
    exit 1
fi

# The twin library: every source of src/ except the runner's own (runner*.cpp: main, command
# line, launch through the per-op shim).
lib_srcs=()
runner_srcs=()
for src in "$twin_dir"/src/*.cpp; do
    case $(basename "$src") in
        runner*.cpp) runner_srcs+=("$src") ;;
        *) lib_srcs+=("$src") ;;
    esac
done

# -ffp-contract=off: the stand-in kernel and the test compute the same float expressions and
# compare them bit for bit.
# The twin's flags (C++17, no FMA contraction, the sanitizers) are defined once.
source "$twin_dir/cxxflags.sh"
# shellcheck disable=SC2206 # word splitting of the flag lists is meant
flags=($OPGEN_TWIN_CXXFLAGS -g -O1 -Wall -Wextra -fno-omit-frame-pointer
       $OPGEN_TWIN_SANITIZE -fno-sanitize-recover=all
       -I"$twin_dir/include" -I"$sample_dir/op_host")

echo "== building the sample runner and host_registry_test"
# Through the suites' compile cache (cached_cxx.sh): unchanged sources are not rebuilt.
root=$(dirname "$(dirname "$twin_dir")")
source "$tests_dir/cached_cxx.sh"
# Each source is compiled once, in parallel, then linked into both programs.
all_srcs=("${lib_srcs[@]}" "${runner_srcs[@]}" "$sample_dir/op_host/twin_sample_norm.cpp"
          "$sample_dir/twin_sample_norm_launch.cpp" "$tests_dir/host_registry_test.cpp"
          "$tests_dir/host_test_ops.cpp")
obj() { echo "$build_dir/obj/$(basename "$1" .cpp).o"; }
mkdir -p "$build_dir/obj"
pids=()
for src in "${all_srcs[@]}"; do
    cached_cxx "$(obj "$src")" "${flags[@]}" -c "$src" &
    pids+=($!)
    if (( ${#pids[@]} >= $(nproc 2>/dev/null || echo 2) )); then
        wait "${pids[0]}"
        pids=("${pids[@]:1}")
    fi
done
for pid in "${pids[@]}"; do
    wait "$pid"
done
lib_objs=()
for src in "${lib_srcs[@]}"; do
    lib_objs+=("$(obj "$src")")
done
runner_objs=()
for src in "${runner_srcs[@]}"; do
    runner_objs+=("$(obj "$src")")
done
cached_cxx "$build_dir/twin_sample_runner" "${flags[@]}" "${runner_objs[@]}" "${lib_objs[@]}" \
    "$(obj twin_sample_norm.cpp)" "$(obj twin_sample_norm_launch.cpp)"
cached_cxx "$build_dir/host_registry_test" "${flags[@]}" "$(obj host_registry_test.cpp)" \
    "$(obj host_test_ops.cpp)" "${lib_objs[@]}" "$(obj twin_sample_norm.cpp)"

echo "== running host_registry_test"
ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:exitcode=90 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=91 \
    "$build_dir/host_registry_test" "$build_dir/twin_sample_runner"

echo "== compiling the sample op_host file against the twin as C++11 (what generated code is)"
"$cxx" -fsyntax-only -std=c++11 -Wall -Wextra -I"$twin_dir/include" -I"$sample_dir/op_host" \
    "$sample_dir/op_host/twin_sample_norm.cpp"

cann_root=${CANN_TOOLKIT:-${ASCEND_HOME_PATH:-}}
checked=0
if [[ -n $cann_root ]]; then
    for arch_dir in "$cann_root"/*-linux; do
        [[ -d $arch_dir/include ]] || continue
        echo "== compiling the sample op_host file against $arch_dir (C++11)"
        "$cxx" -fsyntax-only -std=c++11 -D_GLIBCXX_USE_CXX11_ABI=0 \
            -I"$arch_dir/include" -I"$arch_dir/ascendc/include/highlevel_api" \
            -I"$sample_dir/op_host" "$sample_dir/op_host/twin_sample_norm.cpp"
        checked=1
        break
    done
fi
if [[ $checked == 0 ]]; then
    echo "== no CANN toolkit given (CANN_TOOLKIT / ASCEND_HOME_PATH): real-header check skipped"
fi
echo "run_host_tests.sh: ok"
