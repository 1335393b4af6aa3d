# The twin suites' compile cache (run_negative.sh, run_host_tests.sh): sourced, not run.
#
# A compile or link whose compiler, arguments, input files and twin headers are unchanged reuses
# the earlier output and messages from the per-user cache every clone shares,
# ${OPGEN_CACHE:-~/.cache/ascend-opgen}/twin/suites (under the size cap opgen applies to
# $OPGEN_CACHE/twin: src/toolchain/user_cache.rs), so a suite whose sources did not change runs
# its tests without rebuilding them. Keys hold contents, not paths: the clone's root is written as
# <root> in the arguments, so another clone's build is found too.
#
# Needs: $root (the repository root), $cxx (the compiler).

twin_suite_cache="${OPGEN_CACHE:-$HOME/.cache/ascend-opgen}/twin/suites"
mkdir -p "$twin_suite_cache"

# Every header a suite's sources may include: the twin's, the tests' own and the sample op's.
twin_suite_headers_key="$(
    cd "$root" && find kernels/twin/include kernels/twin/tests kernels/twin/cxxflags.sh \
        -type f \( -name '*.h' -o -name '*.hpp' -o -name 'cxxflags.sh' \) | LC_ALL=C sort | xargs sha256sum
)"
twin_suite_headers_key="$(printf '%s' "$twin_suite_headers_key" | sha256sum | cut -c1-32)"
twin_suite_compiler="$("$cxx" --version 2>&1)"

# cached_cxx OUT ARGS...: "$cxx" ARGS... -o OUT, or its cached result. Prints the compiler's
# messages and returns its exit code either way; OUT (a link into the cache) exists on success.
cached_cxx() {
    local out=$1 arg key dir tmp rc
    shift
    key="$(
        {
            printf '%s\n' "$twin_suite_compiler" "$twin_suite_headers_key"
            for arg in "$@"; do
                printf '%s\n' "${arg//"$root"/<root>}"
                if [[ -f $arg ]]; then sha256sum <"$arg"; fi
            done
        } | sha256sum | cut -c1-32
    )"
    dir="$twin_suite_cache/$key"
    if [[ -f $dir/rc && -f $dir/messages ]] && { [[ $(cat "$dir/rc") != 0 ]] || [[ -f $dir/out ]]; }; then
        touch "$dir/rc" "$dir/messages"  # in use: kept by the size cap
        rc=$(cat "$dir/rc")
    else
        tmp="$(mktemp -d "$twin_suite_cache/.part.XXXXXX")"
        # (`|| rc=$?`: a failing compile is a result to keep, also under `set -e`)
        rc=0
        "$cxx" "$@" -o "$tmp/out" >"$tmp/messages" 2>&1 || rc=$?
        echo "$rc" >"$tmp/rc"
        # An entry the size cap left incomplete is replaced; a concurrent run's complete one wins.
        if [[ -d $dir && ! -f $dir/rc ]] || { [[ $rc == 0 && ! -f $dir/out ]] && [[ -d $dir ]]; }; then
            rm -rf "$dir"
        fi
        mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
    fi
    cat "$dir/messages"
    if [[ $rc == 0 ]]; then
        touch "$dir/out"
        ln -sf "$dir/out" "$out"
    fi
    return "$rc"
}
