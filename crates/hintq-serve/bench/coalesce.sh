#!/usr/bin/env bash
# What io_uring coalescing (`--coalesce WINDOW`) trades: CPU per request against latency and
# throughput, at several client counts. For each window in $WINDOWS (0: off) one hintq serve
# on the default backend with that window, all on $SRV_CPU (one loaded at a time), and
# `wrk -t1 -c$C --latency` on $LOAD_CPU for each C in $CONNS, $RUNS rounds with the servers'
# order turned each round. Per run: requests per second, p50 and p99 latency (wrk's), CPU per
# request (user + system from /proc/PID/stat over the requests). Reported: medians per window
# and client count. Only processes started here are stopped; raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/coalesce.sh
#   [env: WINDOWS="0 50us 100us" CONNS="1 10 50" RUNS=3 DUR=3 PORT=18600 SRV_CPU=0 LOAD_CPU=1
#         HINTQ=path/to/hintq OUT=rows.csv]
set -euo pipefail

read -r -a WINDOWS <<<"${WINDOWS:-0 50us 100us}"
read -r -a CONNS <<<"${CONNS:-1 10 50}"
RUNS=${RUNS:-3}
DUR=${DUR:-3}
PORT=${PORT:-18600}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
bench_tmp coalesce

declare -A ADDR PID
for i in "${!WINDOWS[@]}"; do
    w=${WINDOWS[$i]}
    ADDR[$w]=127.0.0.1:$((PORT + i))
    taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "${ADDR[$w]}" --threads 1 \
        --idle-timeout 3600s --coalesce "$w" 2>"$TMP/logs/serve-$w.log" &
    PID[$w]=$!
    PIDS+=("$!")
done
for w in "${WINDOWS[@]}"; do wait_port "${ADDR[$w]}"; done

{
    rows_stamp hintq
    echo "# hintq serve --threads 1 --idle-timeout 3600s --coalesce W (default backend) on cpu $SRV_CPU; wrk -t1 -cC -d${DUR}s --latency on cpu $LOAD_CPU; 1 KB file; loadavg $(cat /proc/loadavg)"
    echo "window,conns,rep,requests,req_per_s,p50_us,p99_us,cpu_us_per_req"
} | tee "$OUT"

# wrk's latency in microseconds ("812.00us", "1.20ms", "2.00s").
to_us() { awk '{ v = $1 + 0; if ($1 ~ /ms$/) v *= 1e3; else if ($1 ~ /[0-9]s$/) v *= 1e6; printf "%.0f", v }' <<<"$1"; }

for w in "${WINDOWS[@]}"; do # warm-up
    taskset -c "$LOAD_CPU" wrk -t1 -c10 -d1s "http://${ADDR[$w]}/1k.html" >/dev/null
done
for rep in $(seq "$RUNS"); do
    for c in "${CONNS[@]}"; do
        order=("${WINDOWS[@]}")
        if [ $((rep % 2)) -eq 0 ]; then mapfile -t order < <(printf '%s\n' "${WINDOWS[@]}" | tac); fi
        for w in "${order[@]}"; do
            c0=$(cpu_of "${PID[$w]}")
            taskset -c "$LOAD_CPU" wrk -t1 -c"$c" -d"${DUR}s" --latency "http://${ADDR[$w]}/1k.html" >"$TMP/wrk.txt"
            c1=$(cpu_of "${PID[$w]}")
            reqs=$(awk '/requests in/ { print $1 }' "$TMP/wrk.txt")
            rate=$(awk '/^Requests\/sec/ { print $2 }' "$TMP/wrk.txt")
            p50=$(to_us "$(awk '$1 == "50%" { print $2 }' "$TMP/wrk.txt")")
            p99=$(to_us "$(awk '$1 == "99%" { print $2 }' "$TMP/wrk.txt")")
            cpu=$(awk -v a="$c0" -v b="$c1" -v n="$reqs" 'BEGIN { printf "%.3f", (b - a) * 1e6 / n }')
            echo "$w,$c,$rep,$reqs,$rate,$p50,$p99,$cpu" | tee -a "$OUT"
        done
    done
done

python3 - "$OUT" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
keys = sorted({(r["conns"], r["window"]) for r in rows}, key=lambda k: (int(k[0]), k[1] != "0", k[1]))
print("conns window   req/s    p50 us   p99 us   cpu us/req   (medians)")
for c, w in keys:
    sel = [r for r in rows if (r["conns"], r["window"]) == (c, w)]
    med = lambda f: statistics.median(float(r[f]) for r in sel)
    print(f"{c:>5} {w:>6} {med('req_per_s'):>9.0f} {med('p50_us'):>8.0f} {med('p99_us'):>8.0f} {med('cpu_us_per_req'):>10.2f}")
PY
echo "raw rows: $OUT"
