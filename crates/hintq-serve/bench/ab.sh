#!/usr/bin/env bash
# A/B of hintq serve (or, with WHAT=proxy, hintq proxy) against itself: two servers serving the
# same 1 KB file, A and B, which
# differ in binary ($A_HINTQ, $B_HINTQ: a build before a change and after) and/or in
# environment ($A_ENV, $B_ENV: for example B_ENV=HINTQ_BACKEND=epoll) and/or in flags ($A_ARGS,
# $B_ARGS: for example B_ARGS="--uring-receive off" or A_ARGS=--coalesce=0), loaded in turn by wrk,
# $RUNS times each, so drift falls on both alike. CPU per request is user + system of each
# server from /proc/PID/stat across its wrk run, divided by the requests wrk completed.
# Reported: every run, sorted, the medians' ratio A/B, and the median of each round's A/B.
#
# Pinning: both servers on $SRV_CPU (one is loaded at a time), wrk on $LOAD_CPU. With
# WHAT=proxy, A and B are proxies in front of one hintq serve ($A_HINTQ's) on $UP_CPU, beside
# wrk as in proxy-vs-nginx.sh; CPU is the proxy's. Only processes started here are stopped.
# Raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/ab.sh
#   [env: A_HINTQ=path B_HINTQ=path (default: this tree's release build) A_ENV="K=V ..." B_ENV="K=V ..."
#         A_ARGS="--flag ..." B_ARGS="--flag ..."
#         WHAT=serve|proxy BACKEND=uring C=50 RUNS=14 DUR=2 PORT=18550 SRV_CPU=0 LOAD_CPU=1 UP_CPU=1
#         OUT=rows.csv]
set -euo pipefail

C=${C:-50}
RUNS=${RUNS:-14}
DUR=${DUR:-2}
PORT=${PORT:-18550}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BACKEND=${BACKEND:-uring}
WHAT=${WHAT:-serve}
UP_CPU=${UP_CPU:-1}
A_ENV=${A_ENV:-}
B_ENV=${B_ENV:-}
A_ARGS=${A_ARGS:-}
B_ARGS=${B_ARGS:-}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
A_HINTQ=${A_HINTQ:-$HINTQ}
B_HINTQ=${B_HINTQ:-$HINTQ}
bench_tmp ab
A=127.0.0.1:$PORT
B=127.0.0.1:$((PORT + 1))

UP=127.0.0.1:$((PORT + 2))
what=(serve --root "$TMP/www" --threads 1)
if [ "$WHAT" = proxy ]; then
    taskset -c "$UP_CPU" "$A_HINTQ" serve --root "$TMP/www" --listen "$UP" --backend "$BACKEND" \
        2>"$TMP/logs/upstream.log" &
    PIDS+=("$!")
    wait_port "$UP"
    what=(proxy --upstream "$UP")
fi

# start NAME BINARY "ENV" ADDR "ARGS": one server (or proxy); sets the pid in PID_<NAME>.
start() {
    # shellcheck disable=SC2086 # the environment and the flags are lists of words
    env $3 taskset -c "$SRV_CPU" "$2" "${what[@]}" --listen "$4" --backend "$BACKEND" \
        --idle-timeout 3600s $5 2>"$TMP/logs/$1.log" &
    PIDS+=("$!")
    printf -v "PID_$1" '%s' "$!"
}
start A "$A_HINTQ" "$A_ENV" "$A" "$A_ARGS"
start B "$B_HINTQ" "$B_ENV" "$B" "$B_ARGS"
wait_port "$A"
wait_port "$B"

{
    rows_stamp
    echo "# A: $A_HINTQ ($("$A_HINTQ" --version)) env [$A_ENV] flags [$A_ARGS]; B: $B_HINTQ ($("$B_HINTQ" --version)) env [$B_ENV] flags [$B_ARGS]"
    echo "# both: ${what[*]} --backend $BACKEND on cpu $SRV_CPU, wrk -t1 -c$C -d${DUR}s on cpu $LOAD_CPU$([ "$WHAT" = proxy ] && echo ", upstream serve on cpu $UP_CPU"); 1 KB file; loadavg $(cat /proc/loadavg)"
    echo "server,rep,requests,cpu_us_per_req"
} | tee "$OUT"

for addr in "$A" "$B"; do # warm-up (and, for proxies, the upstream pools fill)
    taskset -c "$LOAD_CPU" wrk -t1 -c"$C" -d1s "http://$addr/1k.html" >/dev/null
done
for rep in $(seq "$RUNS"); do
    for s in A B; do
        if [ "$s" = A ]; then addr=$A pid=$PID_A; else addr=$B pid=$PID_B; fi
        r=$(wrk_cpu_per_request "$pid" "$addr")
        echo "$s,$rep,$r" | tee -a "$OUT"
    done
done

python3 - "$OUT" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))][1:]
by = {s: sorted(float(r[3]) for r in rows if r[0] == s) for s in ("A", "B")}
for s, v in by.items():
    print(f"{s}: " + " ".join(f"{x:.2f}" for x in v))
a, b = statistics.median(by["A"]), statistics.median(by["B"])
print(f"median CPU per request: A {a:.2f} us, B {b:.2f} us; ratio A/B {a / b:.3f}")
# Each round's A and B ran seconds apart: their ratio survives a change of the machine's
# state between rounds (this shared machine moved from 6.3 to 8.3 us for both in one run).
rep = {(r[0], r[1]): float(r[3]) for r in rows}
paired = sorted(rep[("A", k)] / rep[("B", k)] for (s, k) in rep if s == "A" and ("B", k) in rep)
print(f"paired A/B per round: " + " ".join(f"{x:.3f}" for x in paired) + f"; median {statistics.median(paired):.3f}")
PY
echo "raw rows: $OUT"
