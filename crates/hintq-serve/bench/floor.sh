#!/usr/bin/env bash
# How far above the floor: hintq serve's CPU per request beside tuned nginx's and beside the
# floor (`hintq bench floor`: a server that only receives each request and sends a response
# prepared once, on epoll and on io_uring). What lies under the floor (the kernel's TCP work
# on loopback, both ends of which run on the sending side's CPU) no server can save; the
# difference serve - floor is serve's own cost, the part a change to hintq can shrink.
#
# Five servers, all on $SRV_CPU (one is loaded at a time): nginx (one worker, tuned for small
# static files as its users tune it: open_file_cache, sendfile off), hintq serve on uring and
# on epoll (one thread), floor on uring and on epoll. wrk -t1 -c$C on $LOAD_CPU, $DUR s per run,
# $RUNS rounds, the servers' order turned each round so drift falls on all alike. CPU per
# request: user + system of the server process from /proc/PID/stat across its wrk run, over the
# requests wrk completed. Reported: the medians, each ÷ nginx's, and serve ÷ floor per
# mechanism. Only processes started here are stopped; raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/floor.sh
#   [env: C=50 RUNS=9 DUR=3 PORT=18560 SRV_CPU=0 LOAD_CPU=1 HINTQ=path/to/hintq OUT=rows.csv]
set -euo pipefail

C=${C:-50}
RUNS=${RUNS:-9}
DUR=${DUR:-3}
PORT=${PORT:-18560}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
bench_tmp floor

NAMES=(nginx serve-uring serve-epoll floor-uring floor-epoll)
declare -A ADDR PID
for i in "${!NAMES[@]}"; do ADDR[${NAMES[$i]}]=127.0.0.1:$((PORT + i)); done

nginx_template static "${ADDR[nginx]#*:}" 19000 >"$TMP/nginx.conf"
nginx_start "$SRV_CPU" "${ADDR[nginx]}"
PID[nginx]=$NGINX_WORKER
for b in uring epoll; do
    taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "${ADDR[serve-$b]}" --threads 1 --backend "$b" \
        --idle-timeout 3600s 2>"$TMP/logs/serve-$b.log" &
    PID[serve-$b]=$!
    PIDS+=("$!")
    taskset -c "$SRV_CPU" "$HINTQ" bench floor --listen "${ADDR[floor-$b]}" --mechanism "$b" --file "$TMP/www/1k.html" \
        2>"$TMP/logs/floor-$b.log" &
    PID[floor-$b]=$!
    PIDS+=("$!")
done
for n in "${NAMES[@]}"; do wait_port "${ADDR[$n]}"; done

{
    rows_stamp nginx hintq
    echo "# servers on cpu $SRV_CPU, wrk -t1 -c$C -d${DUR}s on cpu $LOAD_CPU; 1 KB file; loadavg $(cat /proc/loadavg)"
    echo "# nginx config: $(tr -s ' \n' ' ' <"$TMP/nginx.conf")"
    echo "# serve: hintq serve --threads 1 --backend uring|epoll --idle-timeout 3600s; floor: hintq bench floor --mechanism uring|epoll"
    echo "server,rep,requests,cpu_us_per_req"
} | tee "$OUT"

for rep in $(seq "$RUNS"); do
    for n in $(turned "$rep" "${NAMES[@]}"); do
        r=$(wrk_cpu_per_request "${PID[$n]}" "${ADDR[$n]}")
        echo "$n,$rep,$r" | tee -a "$OUT"
    done
done
echo "# loadavg after: $(cat /proc/loadavg)" | tee -a "$OUT"

python3 - "$OUT" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))][1:]
med = {}
for s in ("nginx", "serve-uring", "serve-epoll", "floor-uring", "floor-epoll"):
    v = sorted(float(r[3]) for r in rows if r[0] == s)
    med[s] = statistics.median(v)
    print(f"{s:12} median {med[s]:.2f} us per request ({' '.join(f'{x:.2f}' for x in v)}); / nginx {med[s] / med['nginx']:.3f}")
for m in ("uring", "epoll"):
    s, f = med[f"serve-{m}"], med[f"floor-{m}"]
    print(f"{m}: serve / floor {s / f:.3f} (serve's own cost {s - f:.2f} us per request); floor / nginx {f / med['nginx']:.3f}")
# Each round's servers ran within seconds of one another: the median of the rounds' own
# ratios is not moved by a round in which the machine was slower for all of them.
by = {(r[0], r[1]): float(r[3]) for r in rows}
for s in ("serve-uring", "serve-epoll", "floor-uring", "floor-epoll"):
    per = sorted(by[(s, k)] / by[("nginx", k)] for (n, k) in by if n == s and ("nginx", k) in by)
    print(f"{s:12} / nginx per round: {' '.join(f'{x:.3f}' for x in per)}; median {statistics.median(per):.3f}")
EOF
echo "raw rows: $OUT"
