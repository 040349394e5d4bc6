#!/usr/bin/env bash
# The tests, ending with what they did not check on this machine.
#
#   ./test.sh                      every test of the workspace (cargo test --workspace)
#   ./test.sh -p hintq-serve --test clients    any other cargo test arguments instead
#
# A test whose outside program is missing (a C compiler, pkg-config, valgrind, curl, httperf,
# python3 with h11) or whose kernel feature is refused (io_uring) skips through hintq-testkit,
# which appends the case, the reason and the remedy to a log (HINTQ_SKIP_LOG). The harness
# hides a passing test's output, so this script prints that log at the end: each case not
# run, then each install command with the number of cases it would let run.
# With HINTQ_REQUIRE_TOOLS=1 (as .ci/run sets it) a skip fails its test instead, and this
# script fails too if any case was skipped.
# Exit status: cargo test's, or 1 when skips were required to fail and some were logged.
set -uo pipefail
cd "$(dirname "$0")"

target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target"
# Absolute: each test program runs in its own crate's directory.
log="$(cd "$target" && pwd)/hintq-skips.tsv"
: >"$log"

if (($#)); then args=("$@"); else args=(--workspace); fi
# --no-fail-fast: a failing test program does not hide what the others would not check.
HINTQ_SKIP_LOG="$log" cargo test --no-fail-fast "${args[@]}"
status=$?

count=$(grep -c . "$log")
echo
if ((count == 0)); then
    echo "test.sh: every case ran (no skips)."
else
    echo "test.sh: $count case(s) NOT checked on this machine:"
    sort "$log" | awk -F'\t' '{ print "  SKIP " $1 ": " $2 }' | uniq -c | awk '{ n = $1; sub(/^ *[0-9]+ /, ""); print $0 (n > 1 ? " (" n " times)" : "") }'
    echo "test.sh: what would let them run (then run ./test.sh again):"
    cut -f3 "$log" | sort | uniq -c | sort -rn | while read -r n fix; do
        printf '  %-40s (%s case(s))\n' "${fix:-(no known remedy: see the reason above)}" "$n"
    done
    if [ -n "${HINTQ_REQUIRE_TOOLS:-}" ]; then
        echo "test.sh: HINTQ_REQUIRE_TOOLS is set, so these skips are failures."
        ((status == 0)) && status=1
    fi
fi
exit "$status"
