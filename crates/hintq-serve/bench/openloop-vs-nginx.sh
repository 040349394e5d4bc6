#!/usr/bin/env bash
# Open loop: hintq serve (one thread) against nginx (one worker, tuned for small static
# files as its users tune it), same run, same 1 KB file, with cold connections held beside
# the hot load: latency from the intended send time (no coordinated omission) at offered
# rates up to 90% of nginx's capacity on this machine. The issue's goal: our p99 <= nginx's
# at every rate up to 90% of nginx's capacity. Each row also keeps the generator's self-check
# (`hintq load`'s own delay p99, the server's time p99 from write to response arrival, and
# whether it marked the run as lagged), so a tail that was the generator's shows as such.
#
# Capacity: nginx's closed-loop throughput (hintq load, $C connections, $CAP_DUR), measured
# first in the same run; the rates are the fractions $FRACTIONS of it. At each rate the two
# servers are loaded alternately, $RUNS times, so drift of the machine hits both alike.
# Servers are pinned to $SRV_CPU, the load generator to $LOAD_CPU (one thread, one process).
#
# nginx runs from a config of ours in a temporary directory; only processes started here are
# stopped. Raw rows (one per server, rate and repetition) go to $OUT, the configuration in
# their header.
#
# Usage: crates/hintq-serve/bench/openloop-vs-nginx.sh
#   [env: C=50 COLD=750 RUNS=3 DUR=6 CAP_DUR=5 FRACTIONS="0.2 0.4 0.6 0.8 0.9" PORT=18390
#         SRV_CPU=0 LOAD_CPU=1 BACKEND=uring SPIN=50us HINTQ=path/to/hintq OUT=rows.csv]
set -euo pipefail

C=${C:-50}
COLD=${COLD:-750}
RUNS=${RUNS:-3}
DUR=${DUR:-6}
CAP_DUR=${CAP_DUR:-5}
FRACTIONS=${FRACTIONS:-0.2 0.4 0.6 0.8 0.9}
PORT=${PORT:-18390}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BACKEND=${BACKEND:-uring}
# hintq load --spin: poll for the last $SPIN before each send instead of sleeping to it (a
# wake-up from sleep costs and delays tens of µs here); "" sleeps.
SPIN=${SPIN-50us}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
bench_tmp openloop-bench
OURS=127.0.0.1:$PORT
NGINX=127.0.0.1:$((PORT + 1))
nginx_template static "${NGINX#*:}" 19000 >"$TMP/nginx.conf"

taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$OURS" --threads 1 --backend "$BACKEND" \
    --idle-timeout 3600s 2>"$TMP/logs/hintq.log" &
PIDS+=("$!")
wait_port "$OURS"
nginx_start "$SRV_CPU" "$NGINX"

# load ADDR RATE(or "") JSON: one hintq load run.
load() {
    local addr=$1 rate=$2 json=$3 dur=$4
    local args=(--connections "$C" --cold "$COLD" --duration "${dur}s" --threads 1 --processes 1 --max-error-rate 100% --quiet --json "$json")
    [ -n "$rate" ] && args+=(--rate "$rate")
    [ -n "$rate" ] && [ -n "$SPIN" ] && args+=(--spin "$SPIN")
    taskset -c "$LOAD_CPU" "$HINTQ" load "http://$addr/1k.html" "${args[@]}" >"$json.txt" 2>&1
}

field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, d))' "$@"; }

rows_stamp nginx hintq | tee "$OUT"
echo "# servers on cpu $SRV_CPU, hintq load (1 thread, 1 process, $C hot connections, $COLD cold idle, spin ${SPIN:-off}) on cpu $LOAD_CPU; backend $BACKEND; 1 KB file; ${DUR}s per run" | tee -a "$OUT"
echo "# nginx config: $(tr -s ' \n' ' ' <"$TMP/nginx.conf")" | tee -a "$OUT"
echo "# hintq: serve --threads 1 --backend $BACKEND --idle-timeout 3600s, defaults otherwise" | tee -a "$OUT"
echo "# loadavg before: $(cat /proc/loadavg)" | tee -a "$OUT"

load "$NGINX" "" "$TMP/cap.json" "$CAP_DUR"
CAP=$(field "$TMP/cap.json" 'int(throughput)')
echo "# nginx capacity (closed loop, $C connections, $COLD cold): $CAP req/s" | tee -a "$OUT"
echo "server,fraction,rate,rep,requests,errors,p50_us,p90_us,p99_us,p999_us,load_cores_busy,own_delay_p99_us,server_time_p99_us,generator_lagged" | tee -a "$OUT"

for f in $FRACTIONS; do
    rate=$(awk -v c="$CAP" -v f="$f" 'BEGIN { printf "%d", c * f }')
    for rep in $(seq "$RUNS"); do
        for srv in hintq nginx; do
            if [ "$srv" = hintq ]; then addr=$OURS; else addr=$NGINX; fi
            j="$TMP/$srv.$f.$rep.json"
            load "$addr" "$rate" "$j" "$DUR"
            row=$(field "$j" '"%d,%d,%.0f,%.0f,%.0f,%.0f,%.2f,%.0f,%.0f,%d" % (hot["successes"], sum(hot["errors"].values()), latency_us["p50"], latency_us["p90"], latency_us["p99"], latency_us["p999"], cpu["cores_busy"], self_check["own_delay_us"]["p99"], self_check["server_time_us"]["p99"], self_check["generator_lagged"])')
            echo "$srv,$f,$rate,$rep,$row" | tee -a "$OUT"
        done
    done
done
echo "# loadavg after: $(cat /proc/loadavg)" | tee -a "$OUT"

python3 - "$OUT" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))][1:]
fracs = sorted({r[1] for r in rows}, key=float)
worst = 0
for f in fracs:
    p99 = {s: statistics.median(float(r[8]) for r in rows if r[0] == s and r[1] == f) for s in ("hintq", "nginx")}
    rate = next(r[2] for r in rows if r[1] == f)
    ratio = p99["hintq"] / p99["nginx"]
    worst = max(worst, ratio)
    st = {s: statistics.median(float(r[12]) for r in rows if r[0] == s and r[1] == f) for s in ("hintq", "nginx")}
    lagged = {s: sum(r[13] == "1" for r in rows if r[0] == s and r[1] == f) for s in ("hintq", "nginx")}
    print(f"{float(f):.0%} of nginx's capacity ({rate} req/s): p99 hintq {p99['hintq']:.0f} us, nginx {p99['nginx']:.0f} us, ratio {ratio:.2f}; "
          f"server-time p99 (write to response) hintq {st['hintq']:.0f} us, nginx {st['nginx']:.0f} us; runs the generator marked lagged: hintq {lagged['hintq']}, nginx {lagged['nginx']}")
print(f"worst p99 ratio ours/nginx: {worst:.2f} (goal <= 1.00 at every rate)")
EOF
echo "raw rows: $OUT"
