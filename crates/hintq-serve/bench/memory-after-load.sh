#!/usr/bin/env bash
# Memory after a load: does one `hintq serve` process give back what a peak of connections
# took? Per build ($HINTQ, or each of $BINARIES in turn, so that a build before a change and
# after run in the same hour) and backend ($BACKENDS): start the server, warm it with a short
# wrk load, read its RSS and descriptors (the baseline), open $CONNS connections that each make
# one request (`hintq load -c $CONNS -n $CONNS`), read RSS at the peak, let them close, and
# read RSS and descriptors again. Reported: baseline, peak, after, and after - baseline (what
# the load left behind), in KiB.
#
# Pinning: the server on $SRV_CPU, the load on $LOAD_CPU. Only processes started here are
# stopped. Raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/memory-after-load.sh
#   [env: HINTQ=path | BINARIES="path path" BACKENDS="uring epoll" CONNS=15000 ROUNDS=2
#         PORT=18650 SRV_CPU=0 LOAD_CPU=1 OUT=rows.csv]
set -euo pipefail

BACKENDS=${BACKENDS:-uring epoll}
CONNS=${CONNS:-15000}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-18650}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
BINARIES=${BINARIES:-$HINTQ}
bench_tmp memory
ulimit -n "$(ulimit -Hn)"

fds() { ls -f "/proc/$1/fd" | grep -c -v '^\.' || true; }
{
    rows_stamp
    echo "# serve --threads 1 on cpu $SRV_CPU; warm-up wrk -t1 -c50 -d1s; load: hintq load -c $CONNS -n $CONNS on cpu $LOAD_CPU; RLIMIT_NOFILE $(ulimit -n); loadavg $(cat /proc/loadavg)"
    echo "binary,backend,round,baseline_kib,peak_kib,after_kib,left_kib,fds_baseline,fds_after,load_errors"
} | tee "$OUT"

for round in $(seq "$ROUNDS"); do
    for bin in $BINARIES; do
        for backend in $BACKENDS; do
            addr=127.0.0.1:$PORT
            taskset -c "$SRV_CPU" "$bin" serve --root "$TMP/www" --listen "$addr" --threads 1 --backend "$backend" \
                2>"$TMP/logs/serve.log" &
            pid=$!
            PIDS+=("$pid")
            wait_port "$addr"
            taskset -c "$LOAD_CPU" wrk -t1 -c50 -d1s "http://$addr/1k.html" >/dev/null
            sleep 1
            base=$(rss_kb "$pid") fds0=$(fds "$pid")
            taskset -c "$LOAD_CPU" "$bin" load "http://$addr/1k.html" -c "$CONNS" -n "$CONNS" -d 30s --quiet \
                --json "$TMP/load.json" >"$TMP/load.txt" 2>&1 &
            lpid=$!
            PIDS+=("$lpid")
            peak=$base
            while kill -0 "$lpid" 2>/dev/null; do
                r=$(rss_kb "$pid")
                ((r > peak)) && peak=$r
                sleep 0.2
            done
            wait "$lpid" || true
            errors=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(r["hot"]["errors"].values()) if isinstance(r["hot"]["errors"], dict) else r["hot"]["errors"])' "$TMP/load.json" 2>/dev/null || echo "?")
            # The server sees each close as its connection's end of stream.
            sleep 2
            after=$(rss_kb "$pid") fds1=$(fds "$pid")
            kill "$pid"
            wait "$pid" 2>/dev/null || true
            echo "$bin,$backend,$round,$base,$peak,$after,$((after - base)),$fds0,$fds1,$errors" | tee -a "$OUT"
        done
    done
done
echo "raw rows: $OUT"
