#!/usr/bin/env bash
# Instructions per write, E9's method (PERF.md): callgrind counts (deterministic, not timed)
# of `hintq lab peer-bench` (100 pairs, 1 active, 1000 writes a run) for 20 and for 40 runs;
# the difference over 20 runs x 1000 writes is what one write costs, start-up and teardown
# cancelled out. Prints mio, hintq on epoll-et and hintq on io_uring, and hintq's ratios to mio.
#
# Usage: bench/instructions-per-write.sh   (HINTQ=path/to/release/hintq to skip the build;
#        KEEP=dir keeps the callgrind outputs there, <lib>.20 and <lib>.40, for
#        `callgrind_annotate` of where the instructions go: the difference of the two / 20,000)
# Needs valgrind (installed from the system packages if missing).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if ! command -v valgrind >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind
fi
bench_hintq
OUTDIR=${KEEP:-$(mktemp -d /tmp/hintq-ipw.XXXXXX)}
mkdir -p "$OUTDIR"

# Callgrind's total instructions for `runs` runs of peer-bench with the given library options.
total() {
    local runs=$1 name=$2
    shift 2
    valgrind --tool=callgrind --callgrind-out-file="$OUTDIR/$name.$runs" \
        "$HINTQ" lab peer-bench "$@" -n 100 -a 1 -w 1000 -r "$runs" >/dev/null 2>&1
    grep -E '^(summary|totals):' "$OUTDIR/$name.$runs" | head -1 | awk '{print $2}'
}

# Instructions per write for one library.
per_write() {
    local name=$1
    shift
    local a b
    a=$(total 20 "$name" "$@")
    b=$(total 40 "$name" "$@")
    echo $(((b - a) / 20000))
}

mio=$(per_write mio --lib mio)
et=$(per_write epoll-et --lib hintq --backend epoll-et)
uring=$(per_write uring --lib hintq --backend uring)
ratio() { awk -v x="$1" -v m="$mio" 'BEGIN { printf "%.2f", x / m }'; }
echo "mio:            $mio instructions/write"
echo "hintq epoll-et: $et instructions/write ($(ratio "$et") x mio)"
echo "hintq uring:    $uring instructions/write ($(ratio "$uring") x mio)"
[ -n "${KEEP:-}" ] || rm -rf "$OUTDIR"
