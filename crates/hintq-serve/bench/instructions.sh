#!/usr/bin/env bash
# Instructions per request of the whole hintq serve or hintq proxy process, counted by
# callgrind: a figure that does not move with the machine's noise (the same build gives about
# the same count, where CPU time per request moves by ±5% between runs here), for telling
# apart changes of 1-10% to the user-space path, such as a build setting. Counted: every
# instruction of the process's threads (the event loop, parsing, responses, the queue and its
# backend), not the kernel's. With SCOPE=handler (WHAT=proxy only) just what runs under the
# runtime's call of the proxy's handler (`Core::call`, callgrind's `--toggle-collect`):
# parsing, relaying, head writing, the queue's calls made from there and the runtime's
# bookkeeping around the call, not the wait. (The handler's own `event` is no boundary:
# release builds, with link-time optimisation, inline it into `Core::call`.)
#
# For each binary given (default: this tree's release build): the server under callgrind
# (WHAT=serve) or the proxy under callgrind in front of a hintq serve run natively
# (WHAT=proxy), `wrk -t1 -c10 -d${DUR}s` against it, then instructions ÷ requests.
# hintq serve opens files with openat2, which valgrind knows from 3.20 on (Debian bookworm
# ships 3.19: serve then fails at its first request, reported below); $VALGRIND names
# another build. io_uring runs under valgrind 3.24 (the ring's memory is the kernel's; only
# instructions are counted here). Only processes started here are stopped.
#
# Usage: crates/hintq-serve/bench/instructions.sh [BINARY...]
#   [env: WHAT=serve|proxy SCOPE=process|handler BACKEND=uring|epoll DUR=4 PORT=18480
#         VALGRIND=valgrind FILE=1k (the file asked for: 1k, or a size such as 16k or 64k)
#         KEEP=path (the last binary's callgrind output kept there, for callgrind_annotate)]
set -euo pipefail

WHAT=${WHAT:-serve}
BACKEND=${BACKEND:-uring}
DUR=${DUR:-4}
PORT=${PORT:-18480}
VALGRIND=${VALGRIND:-valgrind}
SCOPE=${SCOPE:-process}
case $WHAT/$SCOPE in
    serve/process | proxy/process) toggle=() ;;
    proxy/handler) toggle=(--toggle-collect='hintq_patterns::dispatch::Core<H>::call') ;;
    *) echo "WHAT=$WHAT SCOPE=$SCOPE: expected serve or proxy, and process (or handler for proxy)" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
if [ "$VALGRIND" = valgrind ] && ! command -v valgrind >/dev/null; then
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind
fi
if [ "$#" -eq 0 ]; then
    bench_hintq
    set -- "$HINTQ"
fi
bench_tmp instructions
FILE=${FILE:-1k}
case $FILE in
    1k) ;;
    *k) head -c $((${FILE%k} * 1024)) /dev/zero | tr '\0' x >"$TMP/www/$FILE.html" ;;
    *) echo "FILE=$FILE: expected a size in KiB such as 16k" >&2; exit 2 ;;
esac
UP=127.0.0.1:$PORT
AT=127.0.0.1:$((PORT + 1))
echo "# $("$VALGRIND" --version); $WHAT on $BACKEND, counting the $SCOPE; wrk -t1 -c10 -d${DUR}s; file $FILE.html"
if [ "$WHAT" = proxy ]; then
    "$1" serve --root "$TMP/www" --listen "$UP" --backend "$BACKEND" 2>"$TMP/logs/up.log" &
    PIDS+=("$!")
    wait_port "$UP"
fi

for bin in "$@"; do
    case $WHAT in
        serve) args=(serve --root "$TMP/www" --listen "$AT" --backend "$BACKEND") ;;
        proxy) args=(proxy --listen "$AT" --upstream "$UP" --backend "$BACKEND") ;;
    esac
    "$VALGRIND" --tool=callgrind --callgrind-out-file="$TMP/cg.out" "${toggle[@]}" "$bin" "${args[@]}" \
        2>"$TMP/logs/valgrind.log" &
    pid=$!
    PIDS+=("$pid")
    # Under valgrind the server takes seconds to start (it reads the binary's debug info).
    for _ in $(seq 150); do curl -sf -o /dev/null "http://$AT/1k.html" && break; sleep 0.2; done
    if ! curl -sf -o /dev/null "http://$AT/1k.html"; then
        echo "$bin: no reply under $VALGRIND (serve needs a valgrind that knows openat2):" >&2
        tail -5 "$TMP/logs/valgrind.log" >&2
        exit 1
    fi
    wrk -t1 -c10 -d"${DUR}s" "http://$AT/$FILE.html" >"$TMP/wrk.txt"
    kill -INT "$pid"
    wait "$pid" || true
    [ -z "${KEEP:-}" ] || cp "$TMP/cg.out" "$KEEP"
    requests=$(awk '/requests in/ { print $1 }' "$TMP/wrk.txt")
    ir=$(awk '/^summary:/ { print $2 }' "$TMP/cg.out")
    if [ "${ir:-0}" -eq 0 ]; then
        # The function named for SCOPE=handler was renamed or inlined away: say so, not "0".
        echo "$bin: callgrind counted nothing (SCOPE=$SCOPE: ${toggle[*]:-the whole process})" >&2
        exit 1
    fi
    echo "$bin: $requests requests, $ir instructions, $((ir / requests)) per request"
done
