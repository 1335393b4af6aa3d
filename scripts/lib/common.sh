# Shared by the scripts in scripts/: the cache location, timing, and the one way they run a
# command, which on failure prints the command line, its exit code and its output, then exits
# with that code. Sourced, not run.

OPGEN_CACHE=${OPGEN_CACHE:-$HOME/.cache/ascend-opgen}
OPGEN_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# Seconds since the epoch with microseconds (bash 5).
opgen_now() { echo "${EPOCHREALTIME/,/.}"; }

# opgen_elapsed START: seconds since START, one decimal.
opgen_elapsed() { awk -v a="$1" -v b="$(opgen_now)" 'BEGIN { printf "%.1f", b - a }'; }

# opgen_run LABEL CMD...: runs CMD with its output in a log; prints LABEL and how long it took.
# On failure: the command line (shell-quoted), the working directory, the exit code and the
# last 200 lines of output; then exits with the command's exit code.
opgen_run() {
    local label=$1
    shift
    local log start rc
    log=$(mktemp "${TMPDIR:-/tmp}/opgen-run.XXXXXX")
    start=$(opgen_now)
    set +e
    "$@" >"$log" 2>&1
    rc=$?
    set -e
    if [ "$rc" -ne 0 ]; then
        {
            echo "FAILED: $label"
            printf '  command: '
            printf '%q ' "$@"
            echo
            echo "  cwd: $PWD"
            echo "  exit code: $rc"
            echo "  output (last 200 lines of $(wc -l <"$log")):"
            tail -n 200 "$log" | sed 's/^/    /'
        } >&2
        rm -f "$log"
        exit "$rc"
    fi
    echo "  $label: $(opgen_elapsed "$start") s"
    OPGEN_LAST_LOG=$(cat "$log")
    rm -f "$log"
}

opgen_fail() {
    echo "error: $*" >&2
    exit 1
}
