#!/usr/bin/env bash
# hintq load against wrk, in the same run, against nginx with one worker serving a 1 KB file.
#
# nginx runs from a config of ours in a temporary directory (the system's nginx config and
# service are never touched; only the nginx started here is stopped), pinned to one core;
# the load generator runs pinned to the other. Each tool runs RUNS times, alternating; the
# script prints throughput and load-side CPU per request (user + system of the load process,
# from bash's `time`) for both, their ratios (hintq / wrk), the server's CPU per request,
# and then a run of hintq holding COLD cold connections while driving the same hot load.
#
# Report, do not assert: the machine is shared and noisy. Raw rows go to $OUT (CSV).
#
# Usage: crates/hintq-load/bench/vs-wrk.sh   [env: N=50 RUNS=3 DUR=10 COLD=15000 PORT=18089
#                                             SERVER_CPU=0 LOAD_CPU=1 BACKEND= HINTQ=path/to/hintq]
set -euo pipefail

N=${N:-50}
RUNS=${RUNS:-3}
DUR=${DUR:-10}
COLD=${COLD:-15000}
PORT=${PORT:-18089}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BACKEND=${BACKEND:-} # hintq load's --backend; empty: its default
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
bench_tmp vs-wrk
backend_flag=()
if [ -n "$BACKEND" ]; then backend_flag=(--backend "$BACKEND"); fi
nginx_template static "$PORT" 50000 on >"$TMP/nginx.conf"
nginx_start "$SERVER_CPU" "127.0.0.1:$PORT"
WORKER=$NGINX_WORKER
URL="http://127.0.0.1:$PORT/1k.html"

# CPU seconds (user + system) of the nginx worker so far.
server_cpu() { cpu_of "$WORKER"; }

# Runs a command pinned to the load core; sets REQS, RPS, LOAD_CPU_S, SRV_CPU_S.
measure() {
    local tool=$1; shift
    local s0 t
    s0=$(server_cpu)
    /usr/bin/time -o "$TMP/time.txt" -f '%U %S' taskset -c "$LOAD_CPU" "$@" >"$TMP/out.txt" 2>"$TMP/err.txt"
    t=$(tail -1 "$TMP/time.txt")
    SRV_CPU_S=$(awk -v a="$s0" -v b="$(server_cpu)" 'BEGIN { printf "%.4f", b - a }')
    LOAD_CPU_S=$(echo "$t" | awk '{ printf "%.4f", $1 + $2 }')
    if [ "$tool" = wrk ]; then
        REQS=$(awk '/requests in/ { print $1 }' "$TMP/out.txt")
        RPS=$(awk '/Requests\/sec/ { print $2 }' "$TMP/out.txt")
        local errs; errs=$(awk '/Socket errors|Non-2xx/ { print }' "$TMP/out.txt")
        if [ -n "$errs" ]; then echo "  wrk: $errs"; fi
    else
        read -r REQS RPS < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
e = r["hot"]["errors"]
bad = {k: v for k, v in e.items() if v}
if bad: print("  hintq errors:", bad, file=sys.stderr)
print(r["hot"]["successes"] + sum(e.values()), r["throughput"])' "$TMP/load.json")
    fi
}

echo "tool,run,connections,cold,requests,req_per_s,load_cpu_s,load_cpu_us_per_req,server_cpu_us_per_req" >"$OUT"
row() {
    local us srv
    us=$(awk -v c="$LOAD_CPU_S" -v n="$REQS" 'BEGIN { printf "%.2f", c * 1e6 / n }')
    srv=$(awk -v c="$SRV_CPU_S" -v n="$REQS" 'BEGIN { printf "%.2f", c * 1e6 / n }')
    echo "$1,$2,$N,$3,$REQS,$RPS,$LOAD_CPU_S,$us,$srv" >>"$OUT"
    printf '  %-6s run %s: %9.0f req/s  load %5.2f us/req  nginx %5.2f us/req\n' "$1" "$2" "$RPS" "$us" "$srv"
}

echo "machine: $(uname -sr), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); nginx $(nginx -v 2>&1 | cut -d/ -f2), 1 worker on CPU $SERVER_CPU; load on CPU $LOAD_CPU"
echo "load: $N keep-alive connections, 1 thread, ${DUR}s, GET 1 KB; $RUNS runs each, alternating"
echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
wrk -t1 -c"$N" -d2s "$URL" >/dev/null # warm-up
for i in $(seq "$RUNS"); do
    measure wrk wrk -t1 -c"$N" -d"${DUR}s" "$URL"
    row wrk "$i" 0
    measure hintq "$HINTQ" load "${backend_flag[@]}" --threads 1 --connections "$N" --duration "${DUR}s" --max-error-rate 100% --quiet --json "$TMP/load.json" "$URL"
    row hintq "$i" 0
done
echo "with $COLD cold connections held:"
measure hintq "$HINTQ" load "${backend_flag[@]}" --threads 1 --connections "$N" --cold "$COLD" --duration "${DUR}s" --max-error-rate 100% --quiet --json "$TMP/load.json" "$URL"
row hintq-cold 1 "$COLD"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
c, l = r["cold"], r["latency_us"]
print("  cold held at end %d of %d, opened in %.2f s; hot p99 %d us, max %d us"
      % (c["held_at_end"], c["target"], r["warmup_seconds"], l["p99"], l["max"]))' "$TMP/load.json"
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$OUT" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def col(tool, k): return [float(r[k]) for r in rows if r["tool"] == tool]
w, h = col("wrk", "req_per_s"), col("hintq", "req_per_s")
wc, hc = col("wrk", "load_cpu_us_per_req"), col("hintq", "load_cpu_us_per_req")
ratios = [a / b for a, b in zip(h, w)]
cratios = [a / b for a, b in zip(hc, wc)]
print("summary (median, [min, max] over runs):")
m = lambda v: f"{statistics.median(v):.3g} [{min(v):.3g}, {max(v):.3g}]"
print(f"  throughput req/s   wrk {m(w)}   hintq {m(h)}   hintq/wrk {m(ratios)}")
print(f"  load CPU us/req    wrk {m(wc)}   hintq {m(hc)}   hintq/wrk {m(cratios)}")
print(f"raw rows: {sys.argv[1]}")
EOF
