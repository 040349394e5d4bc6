#!/usr/bin/env bash
# Instructions per proxied request in hintq proxy's handler, counted by callgrind: a figure
# that does not move with the machine's noise (the same build gives the same count to the
# instruction, where CPU time per request moves by ±5% between runs here), for telling apart
# changes of 1-5% to the user-space path. Counted: everything under the handler's `event`
# (`--toggle-collect`), parsing, relaying, head writing, the queue's calls made from it; not
# the wait itself nor the kernel. Run on epoll (valgrind does not model io_uring), in front of
# a hintq serve run natively (valgrind 3.19 lacks openat2, which serve needs).
#
# For each binary given (default: this tree's release build): the proxy under callgrind,
# `wrk -t1 -c10 -d${DUR}s` through it, then Ir ÷ requests. Only processes started here are
# stopped.
#
# Usage: crates/hintq-serve/bench/proxy-instructions.sh [BINARY...]
#   [env: DUR=4 PORT=18470]
set -euo pipefail

DUR=${DUR:-4}
PORT=${PORT:-18470}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
command -v valgrind >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind; }
if [ "$#" -eq 0 ]; then
    bench_hintq
    set -- "$HINTQ"
fi
bench_tmp proxy-instructions
UP=127.0.0.1:$PORT
PROXY=127.0.0.1:$((PORT + 1))
"$1" serve --root "$TMP/www" --listen "$UP" --backend epoll 2>"$TMP/logs/up.log" &
PIDS+=("$!")
wait_port "$UP"

for bin in "$@"; do
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" \
        --toggle-collect='*Relay as hintq_patterns::Handler>::event*' \
        "$bin" proxy --listen "$PROXY" --upstream "$UP" --backend epoll 2>"$TMP/logs/valgrind.log" &
    pid=$!
    PIDS+=("$pid")
    wait_port "$PROXY"
    wrk -t1 -c10 -d"${DUR}s" "http://$PROXY/1k.html" >"$TMP/wrk.txt"
    kill -INT "$pid"
    wait "$pid" || true
    requests=$(awk '/requests in/ { print $1 }' "$TMP/wrk.txt")
    ir=$(awk '/^summary:/ { print $2 }' "$TMP/cg.out")
    echo "$bin: $requests requests, $ir instructions, $((ir / requests)) per request"
done
