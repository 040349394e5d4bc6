#!/usr/bin/env bash
# Issue 13's churn run: hot requests at a fixed rate beside $COLD cold connections whose
# lifetimes follow Banga's heavy tail (most live a fraction of a second, so thousands are
# opened and closed each second), with no --sources: the generator plans its 127.0.0.x
# sources itself, for the churn rate times the TIME_WAIT period as well as for the live
# connections. Before that planning (and before cold connections had a thread of their own),
# this run reported hot p99 in seconds and thousands of timeouts: the generator's own port
# searches, not the server's latency.
#
# Against tuned nginx (one worker, as its users tune it for small files) and `hintq serve`
# (one thread), alternately, $RUNS times each; servers on $SRV_CPU, the generator on
# $LOAD_CPU. One row per run: hot latency, errors, the cold connections held and turned
# over, and the generator's self-check (did it keep up?). The issue's goal: against nginx,
# hot p99 under 5 ms and no timeouts.
#
# Usage: crates/hintq-load/bench/heavy-tail.sh
#   [env: RATE=4000 C=64 COLD=8000 DUR=20 RUNS=2 PORT=18470 SRV_CPU=0 LOAD_CPU=1 BACKEND=uring
#         HINTQ=path/to/hintq OUT=rows.csv]
set -euo pipefail

RATE=${RATE:-4000}
C=${C:-64}
COLD=${COLD:-8000}
DUR=${DUR:-20}
RUNS=${RUNS:-2}
PORT=${PORT:-18470}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BACKEND=${BACKEND:-uring}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
bench_tmp heavy-tail
OURS=127.0.0.1:$PORT
NGINX=127.0.0.1:$((PORT + 1))
nginx_template static "${NGINX#*:}" 20000 >"$TMP/nginx.conf"
taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$OURS" --threads 1 --backend "$BACKEND" \
    2>"$TMP/logs/hintq.log" &
PIDS+=("$!")
wait_port "$OURS"
nginx_start "$SRV_CPU" "$NGINX"

{
    rows_stamp nginx hintq
    echo "# servers on cpu $SRV_CPU; taskset -c $LOAD_CPU hintq load URL --rate $RATE --connections $C --cold $COLD --cold-lifetime heavy-tail --duration ${DUR}s (no --sources); 1 KB file"
    echo "# nginx config: $(tr -s ' \n' ' ' <"$TMP/nginx.conf")"
    echo "# hintq: serve --threads 1 --backend $BACKEND, defaults otherwise; loadavg $(cat /proc/loadavg)"
    echo "server,run,requests,succeeded,timeouts,errors,p50_us,p99_us,p999_us,cold_held_min,cold_opened,sources,own_delay_p99_us,load_cores_busy,generator_lagged"
} | tee "$OUT"

for run in $(seq "$RUNS"); do
    for srv in nginx hintq; do
        if [ "$srv" = hintq ]; then addr=$OURS; else addr=$NGINX; fi
        j="$TMP/$srv.$run.json"
        taskset -c "$LOAD_CPU" "$HINTQ" load "http://$addr/1k.html" --rate "$RATE" --connections "$C" --cold "$COLD" \
            --cold-lifetime heavy-tail --duration "${DUR}s" --max-error-rate 100% --quiet --json "$j" >"$j.txt" 2>&1
        python3 - "$j" "$srv" "$run" <<'PY' | tee -a "$OUT"
import json, sys
r = json.load(open(sys.argv[1]))
h, k = r["hot"], r["self_check"]
held = [s["held"] for s in r.get("cold_per_second", [])]
print(",".join(str(x) for x in [sys.argv[2], sys.argv[3], h["started"], h["successes"], h["errors"].get("timeout", 0),
      sum(h["errors"].values()) + sum(r["cold"]["errors"].values()), round(r["latency_us"]["p50"]),
      round(r["latency_us"]["p99"]), round(r["latency_us"]["p999"]), min(held) if held else "", r["cold"]["opened"],
      r["plan"]["sources"], round(k["own_delay_us"]["p99"]), round(r["cpu"]["cores_busy"], 2), int(k["generator_lagged"])]))
PY
    done
done
echo "raw rows: $OUT"
