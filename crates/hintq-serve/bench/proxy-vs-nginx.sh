#!/usr/bin/env bash
# hintq proxy in front of hintq serve, against nginx as a reverse proxy in front of the same
# hintq serve, and against hintq serve alone: CPU per proxied request, in the same run.
#
#   direct:  wrk -> hintq serve (CPU $PROXY_CPU)
#   hintq:   wrk -> hintq proxy (CPU $PROXY_CPU) -> hintq serve (CPU $UP_CPU)
#   nginx:   wrk -> nginx, 1 worker, proxy_pass with upstream keepalive (CPU $PROXY_CPU) -> hintq serve
#   relay:   wrk -> hintq bench floor --relay (CPU $PROXY_CPU) -> hintq serve: the floor under a
#            proxy, each connection's bytes relayed to an upstream connection of its own and
#            back, nothing parsed (io_uring, or epoll with BACKEND=epoll)
#
# wrk runs pinned to $LOAD_CPU (beside the upstream: this machine has two cores). CPU is
# user + system of the measured process from /proc/PID/stat (all its threads; nginx: the
# worker). Reported: requests/s, CPU µs per request of the middle box, and the ratios
# hintq proxy / hintq serve (goal <= 2.2), hintq proxy / nginx proxy and relay / nginx proxy
# (means, and the median of each round's own ratio).
#
# nginx runs from a config of ours in a temporary directory (the system's nginx config and
# service are never touched); only processes started here are stopped. Report, do not
# assert: the machine is shared and noisy (check the loadavg lines). Raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/proxy-vs-nginx.sh
#   [env: N=50 RUNS=3 DUR=10 PORT=18190 PROXY_CPU=0 UP_CPU=1 LOAD_CPU=1 BACKEND= HINTQ=path/to/hintq OUT=rows.csv]
set -euo pipefail

N=${N:-50}
RUNS=${RUNS:-3}
DUR=${DUR:-10}
PORT=${PORT:-18190}
PROXY_CPU=${PROXY_CPU:-0}
UP_CPU=${UP_CPU:-1}
LOAD_CPU=${LOAD_CPU:-1}
BACKEND=${BACKEND:-}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
backend_flag=()
if [ -n "$BACKEND" ]; then backend_flag=(--backend "$BACKEND"); fi

bench_tmp proxy-bench

UP=127.0.0.1:$PORT             # hintq serve behind the proxies
DIRECT=127.0.0.1:$((PORT + 1)) # hintq serve alone
OURS=127.0.0.1:$((PORT + 2))   # hintq proxy
NGINX=127.0.0.1:$((PORT + 3))  # nginx proxy
RELAY=127.0.0.1:$((PORT + 4))  # the relay floor
mechanism=uring
if [ "$BACKEND" = epoll ]; then mechanism=epoll; fi

nginx_template proxy "${NGINX#*:}" 50000 "$UP" >"$TMP/nginx.conf"

taskset -c "$UP_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$UP" "${backend_flag[@]}" 2>"$TMP/logs/up.log" &
UP_PID=$!
PIDS+=("$UP_PID")
taskset -c "$PROXY_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$DIRECT" "${backend_flag[@]}" 2>"$TMP/logs/direct.log" &
DIRECT_PID=$!
PIDS+=("$DIRECT_PID")
taskset -c "$PROXY_CPU" "$HINTQ" proxy --listen "$OURS" --upstream "$UP" "${backend_flag[@]}" 2>"$TMP/logs/proxy.log" &
OURS_PID=$!
PIDS+=("$OURS_PID")
taskset -c "$PROXY_CPU" "$HINTQ" bench floor --relay "$UP" --listen "$RELAY" --mechanism "$mechanism" \
    2>"$TMP/logs/relay.log" &
RELAY_PID=$!
PIDS+=("$RELAY_PID")
for a in "$UP" "$DIRECT" "$OURS" "$RELAY"; do wait_port "$a"; done
nginx_start "$PROXY_CPU" "$NGINX"

{
    rows_stamp nginx hintq
    echo "# proxy, relay or direct server on cpu $PROXY_CPU, upstream hintq serve on cpu $UP_CPU, wrk -t1 -c$N -d${DUR}s on cpu $LOAD_CPU; backend ${BACKEND:-default}; relay: hintq bench floor --relay --mechanism $mechanism; 1 KB file"
    echo "# nginx config: $(tr -s ' \n' ' ' <"$TMP/nginx.conf")"
    echo "# loadavg before: $(cat /proc/loadavg)"
    echo "case,run,connections,requests,req_per_s,box_cpu_us_per_req,upstream_cpu_us_per_req,errors"
} >"$OUT"
declare -A SUM
run_case() { # name url pid-of-the-middle-box run
    local name=$1 url=$2 pid=$3 run=$4 c0 u0 reqs rps box up errs
    c0=$(cpu_of "$pid")
    u0=$(cpu_of "$UP_PID")
    taskset -c "$LOAD_CPU" wrk -t1 -c"$N" -d"${DUR}s" "$url" >"$TMP/out.txt" 2>&1
    reqs=$(awk '/requests in/ { print $1 }' "$TMP/out.txt")
    rps=$(awk '/Requests\/sec/ { print $2 }' "$TMP/out.txt")
    errs=$(awk '/Socket errors|Non-2xx/ { printf "%s ", $0 }' "$TMP/out.txt")
    box=$(awk -v a="$c0" -v b="$(cpu_of "$pid")" -v n="$reqs" 'BEGIN { printf "%.2f", (b - a) * 1e6 / n }')
    up=$(awk -v a="$u0" -v b="$(cpu_of "$UP_PID")" -v n="$reqs" 'BEGIN { printf "%.2f", (b - a) * 1e6 / n }')
    echo "$name,$run,$N,$reqs,$rps,$box,$up,\"$errs\"" >>"$OUT"
    printf '  %-7s run %s: %9.0f req/s  middle box %6.2f us/req  upstream %5.2f us/req %s\n' "$name" "$run" "$rps" "$box" "$up" "$errs"
    SUM[$name]=$(awk -v s="${SUM[$name]:-0}" -v x="$box" 'BEGIN { print s + x }')
}

echo "machine: $(uname -sr), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); nginx $(nginx -v 2>&1 | cut -d/ -f2)"
echo "pinning: proxy or direct server on CPU $PROXY_CPU; upstream hintq serve on CPU $UP_CPU; wrk on CPU $LOAD_CPU"
echo "backend: ${BACKEND:-default}; load: wrk -t1 -c$N, ${DUR}s, GET 1 KB, keep-alive; $RUNS runs each, alternating"
echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
for url in "http://$DIRECT/1k.html" "http://$OURS/1k.html" "http://$NGINX/1k.html" "http://$RELAY/1k.html"; do
    wrk -t1 -c"$N" -d1s "$url" >/dev/null # warm-up (and the upstream pools fill)
done
for i in $(seq "$RUNS"); do
    run_case direct "http://$DIRECT/1k.html" "$DIRECT_PID" "$i"
    run_case hintq "http://$OURS/1k.html" "$OURS_PID" "$i"
    run_case nginx "http://$NGINX/1k.html" "$NGINX_WORKER" "$i"
    run_case relay "http://$RELAY/1k.html" "$RELAY_PID" "$i"
done
echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# loadavg after: $(cat /proc/loadavg)" >>"$OUT"
awk -v d="${SUM[direct]}" -v h="${SUM[hintq]}" -v g="${SUM[nginx]}" -v f="${SUM[relay]}" -v r="$RUNS" 'BEGIN {
    printf "mean CPU per request: hintq serve %.2f us, hintq proxy %.2f us, nginx proxy %.2f us, relay %.2f us\n", d / r, h / r, g / r, f / r
    printf "hintq proxy / hintq serve = %.2fx (goal <= 2.2x); hintq proxy / nginx proxy = %.2fx; relay / nginx proxy = %.2fx\n", h / d, h / g, f / g
}'
python3 - "$OUT" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
cpu = {(r["case"], r["run"]): float(r["box_cpu_us_per_req"]) for r in rows}
for a, b in (("hintq", "nginx"), ("relay", "nginx"), ("hintq", "relay")):
    per = sorted(cpu[(a, k)] / cpu[(b, k)] for (c, k) in cpu if c == a and (b, k) in cpu)
    print(f"{a} / {b} per round: " + " ".join(f"{x:.3f}" for x in per) + f"; median {statistics.median(per):.3f}")
PY
echo "raw rows: $OUT"
