#!/usr/bin/env bash
# Builds and runs the kernel-side twin tests (kernels/twin/tests/r*.cpp, pos_*.cpp, cf_*.cpp)
# under AddressSanitizer and UndefinedBehaviorSanitizer. Each test states its expectation on its
# first line: "// expect: ok" must exit 0; "// expect: compile error: <text>" must fail to
# compile with <text> in the compiler's output; "// expect: <text>" must exit 3 (the twin's rule
# exit code) with <text> in stderr. Any sanitizer report fails the test.
#
# Optional: CANN_TOOLKIT=<.../ascend-toolkit/8.1.RC1> also syntax-checks every test against the
# real CANN headers (CPU-debug defines), proving the same kernel source compiles on both.
#
# Usage: kernels/twin/tests/run_negative.sh [test-name-filter]
set -u
export LC_ALL=C  # plain ASCII quotes in compiler messages

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cd "$root" || exit 2
filter="${1:-}"
build="$(mktemp -d "${TMPDIR:-/tmp}/opgen-twin-tests.XXXXXX")"
trap 'rm -rf "$build"' EXIT
jobs_max="$(nproc 2>/dev/null || echo 2)"

tests=()
for t in kernels/twin/tests/r[0-9][0-9]_*.cpp kernels/twin/tests/pos_*.cpp kernels/twin/tests/cf_*.cpp; do
    [[ -e "$t" ]] || continue
    [[ -z "$filter" || "$t" == *"$filter"* ]] || continue
    tests+=("$t")
done
if [[ ${#tests[@]} -eq 0 ]]; then
    echo "no tests match '$filter'" >&2
    exit 2
fi

# The twin's flags (C++17, no FMA contraction, the sanitizers), defined once.
source kernels/twin/cxxflags.sh
# shellcheck disable=SC2206 # word splitting of the flag lists is meant
flags=($OPGEN_TWIN_CXXFLAGS -g $OPGEN_TWIN_SANITIZE -I kernels/twin/include)
# Compiles and links through the suites' cache (cached_cxx.sh): unchanged tests are not rebuilt.
cxx=g++
source kernels/twin/tests/cached_cxx.sh
# The runtime (runtime*.cpp, with its event trace, src/trace.cpp, and the one JSON writer, src/host_json.cpp)
# is compiled once (it is most of each test's compile time) and linked into every test.
units=()
runtime_objs=()
for src in kernels/twin/src/runtime*.cpp; do
    units+=("$(basename "$src" .cpp)")
    runtime_objs+=("$build/$(basename "$src" .cpp).o")
done
for unit in "${units[@]}" trace host_json; do
    if ! cached_cxx "$build/$unit.o" "${flags[@]}" -c "kernels/twin/src/$unit.cpp" >"$build/$unit.build" 2>&1; then
        echo "FAIL kernels/twin/src/$unit.cpp does not compile"
        sed 's/^/    /' "$build/$unit.build" | head -n 20
        exit 1
    fi
done
compile() {
    local t="$1" name
    name="$(basename "$t" .cpp)"
    cached_cxx "$build/$name" "${flags[@]}" "${runtime_objs[@]}" "$build/trace.o" "$build/host_json.o" "$t" >"$build/$name.build" 2>&1
    echo $? >"$build/$name.build_rc"
}

running=0
for t in "${tests[@]}"; do
    compile "$t" &
    running=$((running + 1))
    if [[ $running -ge $jobs_max ]]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=90"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=91"
pass=0
failed=()
skipped=0
for t in "${tests[@]}"; do
    name="$(basename "$t" .cpp)"
    expect="$(head -n 1 "$t" | sed -n 's|^// expect: ||p')"
    if [[ -z "$expect" ]]; then
        failed+=("$name")
        echo "FAIL $name: first line is not '// expect: ...'"
        continue
    fi
    if [[ "$expect" == "compile error: "* ]]; then
        want="${expect#compile error: }"
        if [[ "$(cat "$build/$name.build_rc")" == 0 ]]; then
            failed+=("$name")
            echo "FAIL $name: compiles, but must not"
        elif ! grep -qF -- "$want" "$build/$name.build"; then
            failed+=("$name")
            echo "FAIL $name: compiler output lacks '$want'"
            sed 's/^/    /' "$build/$name.build" | head -n 20
        else
            pass=$((pass + 1))
            echo "ok   $name: $(grep -m 1 -F -- "$want" "$build/$name.build" | sed 's/^.*error: //')"
        fi
        continue
    fi
    if [[ "$(cat "$build/$name.build_rc")" != 0 ]]; then
        failed+=("$name")
        echo "FAIL $name: does not compile"
        sed 's/^/    /' "$build/$name.build" | head -n 20
        continue
    fi
    "$build/$name" >"$build/$name.out" 2>"$build/$name.err"
    rc=$?
    err="$(cat "$build/$name.err")"
    why=""
    if grep -qE "runtime error:|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer" "$build/$name.err"; then
        why="sanitizer report"
    elif [[ "$expect" == ok ]]; then
        [[ $rc -eq 0 ]] || why="exit $rc, want 0"
    elif [[ $rc -ne 3 ]]; then
        why="exit $rc, want 3"
    elif [[ "$err" != *"$expect"* ]]; then
        why="stderr lacks '$expect'"
    fi
    if [[ -n "$why" ]]; then
        failed+=("$name")
        echo "FAIL $name: $why"
        sed 's/^/    /' "$build/$name.err" | head -n 20
    else
        pass=$((pass + 1))
        if [[ "$expect" == ok ]]; then
            echo "ok   $name"
        else
            echo "ok   $name: $(grep -m 1 'opgen-twin:' "$build/$name.err")"
        fi
    fi
done

if [[ -n "${CANN_TOOLKIT:-}" ]]; then
    # The same test sources against the real headers: kernel_operator.h resolves to CANN's (its
    # include paths come first), opgen_twin/runtime.h and twin_test.h still come from the twin.
    # Code the NPU compiler rejects too is marked "// cann: compile error" (or is a cf_ test). A
    # test of the twin's own machinery (its fail handler, numeric profiles, rounding internals),
    # which has no NPU counterpart to compile against, is marked "// cann: twin only: <why>" and
    # listed as skipped with its reason.
    c="$CANN_TOOLKIT"
    for t in "${tests[@]}"; do
        name="$(basename "$t" .cpp)"
        if grep -q '^// cann: twin only' "$t"; then
            skipped=$((skipped + 1))
            echo "skip CANN 8.1 headers: $name ($(grep -m 1 '^// cann: twin only' "$t" | sed 's|^// cann: ||'))"
            continue
        fi
        want_error=0
        if grep -q '^// cann: compile error' "$t" || head -n 1 "$t" | grep -q '^// expect: compile error'; then
            want_error=1
        fi
        g++ -fsyntax-only -std=c++17 -w -D__CCE_KT_TEST__=1 -DASCENDC_CPU_DEBUG=1 -D__CCE_AICORE__=220 \
            -D__DAV_C220__ -D_GLIBCXX_USE_CXX11_ABI=0 \
            -I"$c/aarch64-linux/ascendc/include/basic_api" -I"$c/aarch64-linux/ascendc/include/basic_api/interface" \
            -I"$c/aarch64-linux/ascendc/include/basic_api/impl" -I"$c/aarch64-linux/ascendc/include/highlevel_api" \
            -I"$c/tools/tikicpulib/lib/include" -I"$c/aarch64-linux/include" -I kernels/twin/include \
            "$t" >"$build/$name.cann" 2>&1
        got_error=$(( $? != 0 ))
        if [[ $got_error -eq $want_error ]]; then
            pass=$((pass + 1))
            echo "ok   CANN 8.1 headers: $name $([[ $want_error -eq 1 ]] && echo '(rejected, as expected)' || echo '(compiles)')"
        else
            failed+=("cann:$name")
            echo "FAIL CANN 8.1 headers: $name $([[ $want_error -eq 1 ]] && echo 'compiles, but must not' || echo 'does not compile')"
            grep -m 5 'error' "$build/$name.cann" | sed 's/^/    /'
        fi
    done
fi

echo "twin tests: $pass passed, ${#failed[@]} failed, $skipped skipped against the CANN headers"
[[ ${#failed[@]} -eq 0 ]]
