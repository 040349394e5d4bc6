#!/usr/bin/env bash
# What io_uring's receives are worth alone: the same hintq binary serving a 1 KB file twice,
# with the ring receiving (A, the default) and without (B, HINTQ_URING_RECV=0), loaded in
# turn by wrk, $RUNS times each, so drift falls on both alike. CPU per request is user +
# system of each server from /proc/PID/stat across its wrk run, divided by the requests wrk
# completed. Reported: every run, sorted, and the medians' ratio A/B.
#
# Pinning: both servers on $SRV_CPU (one is loaded at a time), wrk on $LOAD_CPU. Only
# processes started here are stopped. Raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/uring-recv-ab.sh
#   [env: C=50 RUNS=14 DUR=2 PORT=18550 SRV_CPU=0 LOAD_CPU=1 HINTQ=path/to/hintq OUT=rows.csv]
set -euo pipefail

C=${C:-50}
RUNS=${RUNS:-14}
DUR=${DUR:-2}
PORT=${PORT:-18550}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq recv-ab
bench_tmp recv-ab
A=127.0.0.1:$PORT
B=127.0.0.1:$((PORT + 1))

taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$A" --threads 1 --backend uring \
    --idle-timeout 3600s 2>"$TMP/logs/a.log" &
A_PID=$!
PIDS+=("$A_PID")
HINTQ_URING_RECV=0 taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$B" --threads 1 \
    --backend uring --idle-timeout 3600s 2>"$TMP/logs/b.log" &
B_PID=$!
PIDS+=("$B_PID")
wait_port "$A"
wait_port "$B"

{
    echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus; $("$HINTQ" --version); commit $(git -C "$ROOT" rev-parse --short HEAD)"
    echo "# A: serve --threads 1 --backend uring (ring receives); B: the same with HINTQ_URING_RECV=0; both on cpu $SRV_CPU, wrk -t1 -c$C -d${DUR}s on cpu $LOAD_CPU; 1 KB file; loadavg $(cat /proc/loadavg)"
    echo "server,rep,requests,cpu_us_per_req"
} | tee "$OUT"

for rep in $(seq "$RUNS"); do
    for s in A B; do
        if [ "$s" = A ]; then addr=$A pid=$A_PID; else addr=$B pid=$B_PID; fi
        c0=$(cpu_of "$pid")
        reqs=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$C" -d"${DUR}s" "http://$addr/1k.html" | awk '/requests in/ { print $1 }')
        c1=$(cpu_of "$pid")
        echo "$s,$rep,$reqs,$(awk -v a="$c0" -v b="$c1" -v n="$reqs" 'BEGIN { printf "%.3f", (b - a) * 1e6 / n }')" | tee -a "$OUT"
    done
done

python3 - "$OUT" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))][1:]
by = {s: sorted(float(r[3]) for r in rows if r[0] == s) for s in ("A", "B")}
for s, v in by.items():
    print(f"{s}: " + " ".join(f"{x:.2f}" for x in v))
a, b = statistics.median(by["A"]), statistics.median(by["B"])
print(f"median CPU per request: ring receives {a:.2f} us, without {b:.2f} us; ratio {a / b:.3f}")
EOF
echo "raw rows: $OUT"
