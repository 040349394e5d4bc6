#!/usr/bin/env bash
# System calls per proxied response, by kind: hintq proxy under `strace -c -f` in front of a
# hintq serve (epoll), `hintq load -c$C -n$N` of one file of $SIZE through it, then strace's
# count of each call ÷ N. A count, not a time: bounded by N requests, it does not depend on the
# machine's noise (the tracing slows the proxy; what it does per request stays the same), so
# it may run on a busy machine. One line per call and a total, for each PROXY_ARGS variant
# (default: the splice on, then off: "--splice-above 16k" and "--splice-above off").
#
#   load (hintq load, N requests) -> hintq proxy (strace -c -f) -> hintq serve (epoll)
#
# Only processes started here are stopped (SIGINT to the proxy, so strace writes its table).
#
# Usage: crates/hintq-serve/bench/syscalls-per-request.sh
#   [env: BACKEND=uring SIZE=256k N=2000 C=10 PORT=18470 HINTQ=path/to/hintq
#    VARIANTS="--splice-above 16k|--splice-above off" (PROXY_ARGS variants, | apart)]
set -euo pipefail

BACKEND=${BACKEND:-uring}
SIZE=${SIZE:-256k}
N=${N:-2000}
C=${C:-10}
PORT=${PORT:-18470}
VARIANTS=${VARIANTS:---splice-above 16k|--splice-above off}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"
command -v strace >/dev/null || { echo "strace is needed (apt-get install strace)" >&2; exit 1; }

bench_hintq
bench_tmp syscalls
case $SIZE in
*k) bytes=$((${SIZE%k} * 1024)) ;;
*m) bytes=$((${SIZE%m} * 1024 * 1024)) ;;
*) bytes=$SIZE ;;
esac
head -c "$bytes" /dev/urandom >"$TMP/www/body"
UP=127.0.0.1:$PORT
PROXY=127.0.0.1:$((PORT + 1))
"$HINTQ" serve --root "$TMP/www" --listen "$UP" --backend epoll --idle-timeout 3600s 2>"$TMP/logs/serve.log" &
PIDS+=($!)
wait_port "$UP"

echo "# hintq proxy --backend $BACKEND, $N responses of $SIZE ($bytes bytes), hintq load -c$C; $(uname -r); $(cat /proc/loadavg)"
IFS='|' read -r -a variants <<<"$VARIANTS"
for v in "${variants[@]}"; do
    # shellcheck disable=SC2086 # the variant's flags split as written
    strace -c -f -o "$TMP/strace.txt" "$HINTQ" proxy --listen "$PROXY" --upstream "$UP" --backend "$BACKEND" \
        --idle-timeout 3600s $v 2>"$TMP/logs/proxy.log" &
    tracer=$!
    wait_port "$PROXY"
    "$HINTQ" load -c "$C" -n "$N" -d 600s "http://$PROXY/body" >"$TMP/load.txt" 2>&1 ||
        { cat "$TMP/load.txt" >&2; exit 1; }
    grep -q "$N succeeded" "$TMP/load.txt" || { cat "$TMP/load.txt" >&2; exit 1; }
    kill -INT "$(pgrep -P "$tracer")"
    wait "$tracer" || true
    echo "## proxy $v: system calls per response (all of the proxy's calls, start-up and stop included)"
    awk -v n="$N" '$1 ~ /^[0-9.]+$/ && NF >= 5 {
            name = $NF; calls = $4; errs = (NF == 6) ? $5 : 0
            if (name == "total") { total = calls; next }
            if (calls / n >= 0.01) printf "%-18s %8.2f  (%d errors)\n", name, calls / n, errs
        }
        END { printf "%-18s %8.2f\n", "total", total / n }' "$TMP/strace.txt"
done
