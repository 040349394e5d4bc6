#!/usr/bin/env bash
# hintq serve (one thread) against nginx (one worker), same run, same 1 KB file, keep-alive,
# at 0 and $IDLE idle connections: the issue's static-server benchmark.
#
# nginx runs as its users tune it for small static files (PERF.md, "Peers as their users run
# them"): `open_file_cache max=10000 inactive=60s; open_file_cache_valid 60s; sendfile off`,
# unlimited keep-alive requests (rows named `nginx`). A second server block of the same worker
# keeps the distribution's settings for these two (no open-file cache, `sendfile on`): rows
# named `nginx-untuned`, so the tuning's effect shows. The configuration is written into the
# raw rows' header. hintq serve runs with its defaults (open-file cache valid 1 s).
#
# System calls per request: with SYSCALLS=1 (the default), `strace -c -f` is attached to each
# server for one short wrk run at the end (strace slows the server; only the counts are
# used), written as `# syscalls` lines.
# The server under test is pinned to $SRV_CPU, wrk and the idle-connection holder to
# $LOAD_CPU. CPU is user + system of the server process from /proc/PID/stat (hintq: all its
# threads; nginx: the worker) across the wrk run, divided by the requests wrk completed.
# Rounds: one wrk run per server, the servers' order turned each round; the summary gives the
# medians and each round's own ratio ours/nginx (their median is the figure least moved by the
# machine's drift). At $IDLE idle both servers hold their idle connections at once.
# Memory per idle connection: VmRSS of that process after the idle connections are open,
# minus before, divided by their number (a Python helper holds them; with IDLE_ASK=1, the
# default, each first makes one request and reads the reply, so that buffers a request left
# with its connection are counted; IDLE_ASK=0: they connect and never send a byte, and nginx
# closes those after its client_header_timeout, 60 s: keep RUNS x 2 x DUR well under it). Reported, not asserted: goals are CPU per request ours/tuned nginx
# <= 0.75 on uring and <= 0.85 on epoll, and our throughput at $IDLE idle >= 0.95 x ours at 0.
#
# nginx runs from a config of ours in a temporary directory (the system's config and
# service are never touched); only processes started here are stopped. Raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/serve-vs-nginx.sh
#   [env: C=50 RUNS=3 DUR=8 IDLE=10000 IDLE_ASK=1 PORT=18290 SRV_CPU=0 LOAD_CPU=1 BACKEND=epoll HINTQ=path/to/hintq OUT=rows.csv]
set -euo pipefail

C=${C:-50}
RUNS=${RUNS:-3}
DUR=${DUR:-8}
IDLE=${IDLE:-10000}
# 1: each idle connection made one request first (keep-alive, idle between requests); 0: none.
IDLE_ASK=${IDLE_ASK:-1}
if [ "$IDLE_ASK" = 1 ]; then IDLE_WHAT="each made one request first"; else IDLE_WHAT="none made a request"; fi
PORT=${PORT:-18290}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BACKEND=${BACKEND:-epoll}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
bench_tmp serve-bench
OURS=127.0.0.1:$PORT
NGINX=127.0.0.1:$((PORT + 1))
NGINX_UNTUNED=127.0.0.1:$((PORT + 2))
SYSCALLS=${SYSCALLS:-1}
NGINX_EXTRA="    server { listen $NGINX_UNTUNED backlog=4096; root $TMP/www; open_file_cache off; sendfile on; }" \
    nginx_template static "${NGINX#*:}" 19000 >"$TMP/nginx.conf"

cat >"$TMP/idle.py" <<'EOF'
# Holds N idle connections to HOST:PORT until killed. With ASK=1 each first makes one
# request and reads the reply (a keep-alive connection idle between requests, which may hold
# the buffers its request used); with ASK=0 it sends nothing.
import resource, socket, sys, time
host, port, n, ready, ask = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for i in range(n):
    s = socket.socket()
    s.connect((host, port))
    if ask:
        s.sendall(b"GET /1k.html HTTP/1.1\r\nHost: bench\r\n\r\n")
        got = b""
        while b"\r\n\r\n" not in got or len(got) < 1024 + got.index(b"\r\n\r\n") + 4:
            chunk = s.recv(4096)
            if not chunk:
                sys.exit(f"connection {i} closed before its reply")
            got += chunk
    held.append(s)
open(ready, "w").write(str(len(held)))
while True:
    time.sleep(60)
EOF

taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$OURS" --threads 1 --backend "$BACKEND" \
    --idle-timeout 3600s 2>"$TMP/logs/hintq.log" &
OURS_PID=$!
PIDS+=("$OURS_PID")
wait_port "$OURS"
nginx_start "$SRV_CPU" "$NGINX"
NGINX_PID=$NGINX_WORKER

# run NAME ADDR PID IDLE_COUNT -> one CSV row
run() {
    local name=$1 addr=$2 pid=$3 idle=$4 rep=$5
    local t0 t1 out reqs
    t0=$(cpu_of "$pid")
    out=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$C" -d"${DUR}s" --latency "http://$addr/1k.html")
    t1=$(cpu_of "$pid")
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    local rps p99 errs
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p99=$(echo "$out" | awk '$1 == "99%" {print $2}')
    errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ {printf "%s ", $0}')
    local us
    us=$(awk -v a="$t0" -v b="$t1" -v n="$reqs" 'BEGIN { printf "%.2f", (b - a) * 1e6 / n }')
    echo "$name,$idle,$rep,$reqs,$rps,$us,$p99,\"$errs\"" | tee -a "$OUT"
}

rows_stamp nginx hintq | tee "$OUT"
echo "# server on cpu $SRV_CPU, wrk -t1 -c$C -d${DUR}s and the idle holder on cpu $LOAD_CPU; backend $BACKEND; 1 KB file" | tee -a "$OUT"
echo "# nginx config: $(tr -s ' \n' ' ' <"$TMP/nginx.conf")" | tee -a "$OUT"
echo "# hintq: serve --threads 1 --backend $BACKEND --idle-timeout 3600s, defaults otherwise" | tee -a "$OUT"
echo "# loadavg before: $(cat /proc/loadavg)" | tee -a "$OUT"
echo "server,idle,rep,requests,req_per_s,cpu_us_per_req,p99,errors" | tee -a "$OUT"

# rounds IDLE_COUNT SERVER... -> RUNS rounds of one wrk run per server, the servers' order
# turned each round (`turned`).
rounds() {
    local idle=$1
    shift
    local rep n
    for rep in $(seq "$RUNS"); do
        for n in $(turned "$rep" "$@"); do
            case $n in
                hintq) run hintq "$OURS" "$OURS_PID" "$idle" "$rep" ;;
                nginx) run nginx "$NGINX" "$NGINX_PID" "$idle" "$rep" ;;
                nginx-untuned) run nginx-untuned "$NGINX_UNTUNED" "$NGINX_PID" "$idle" "$rep" ;;
            esac
        done
    done
}

rounds 0 hintq nginx nginx-untuned

# Both servers hold $IDLE idle connections at once (a holder process each), so that their
# runs at $IDLE idle alternate too; each one's memory is read as its holder fills it.
declare -A RSS_DELTA
HOLDERS=()
for srv in hintq nginx; do
    if [ "$srv" = hintq ]; then addr=$OURS pid=$OURS_PID; else addr=$NGINX pid=$NGINX_PID; fi
    before=$(rss_kb "$pid")
    rm -f "$TMP/ready.$srv"
    taskset -c "$LOAD_CPU" python3 "$TMP/idle.py" "${addr%:*}" "${addr#*:}" "$IDLE" "$TMP/ready.$srv" "$IDLE_ASK" &
    HOLDERS+=("$!")
    PIDS+=("$!")
    for _ in $(seq 300); do [ -s "$TMP/ready.$srv" ] && break; sleep 0.2; done
    sleep 1
    after=$(rss_kb "$pid")
    RSS_DELTA[$srv]=$(awk -v a="$after" -v b="$before" -v n="$IDLE" 'BEGIN { printf "%.0f", (a - b) * 1024 / n }')
    echo "# $srv: RSS $before kB -> $after kB with $(cat "$TMP/ready.$srv" 2>/dev/null || echo '?') idle: ${RSS_DELTA[$srv]} bytes per idle connection ($IDLE_WHAT)" | tee -a "$OUT"
done
rounds "$IDLE" hintq nginx
# The idle connections end with their rounds (the system-call counts below are taken without).
for h in "${HOLDERS[@]}"; do kill "$h" 2>/dev/null || true; done
for h in "${HOLDERS[@]}"; do wait "$h" 2>/dev/null || true; done
echo "# loadavg after: $(cat /proc/loadavg)" | tee -a "$OUT"

# syscalls NAME ADDR PID: strace -c -f attached for one 3 s wrk run; calls per request.
syscalls() {
    local name=$1 addr=$2 pid=$3 out reqs
    strace -c -f -p "$pid" -o "$TMP/strace.$name" &
    local tracer=$!
    sleep 0.5
    out=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$C" -d3s "http://$addr/1k.html")
    kill -INT "$tracer"
    wait "$tracer" 2>/dev/null || true
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    awk -v n="$reqs" -v name="$name" '
        $1 ~ /^[0-9.]+$/ && $NF != "total" { total += $4; per = per sprintf(" %s=%.2f", $NF, $4 / n) }
        END { printf "# syscalls %s: %.2f per request (%d requests):%s\n", name, total / n, n, per }' \
        "$TMP/strace.$name" | tee -a "$OUT"
}
if [ "$SYSCALLS" = 1 ] && command -v strace >/dev/null; then
    syscalls hintq "$OURS" "$OURS_PID"
    syscalls nginx "$NGINX" "$NGINX_PID"
fi

# Summary from the raw rows: medians per server and idle count.
python3 - "$OUT" "$IDLE" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))][1:]
idle = sys.argv[2]
def med(srv, idle_n, col):
    v = [float(r[col]) for r in rows if r[0] == srv and r[1] == idle_n]
    return (statistics.median(v), min(v), max(v)) if v else (float("nan"),) * 3
for srv in ("hintq", "nginx", "nginx-untuned"):
    for n in ("0", idle):
        rps, cpu = med(srv, n, 4), med(srv, n, 5)
        print(f"{srv:6} idle={n:>6}: {rps[0]:>9.0f} req/s ({rps[1]:.0f}-{rps[2]:.0f}), {cpu[0]:.2f} us CPU/request ({cpu[1]:.2f}-{cpu[2]:.2f})")
r0 = med("hintq", "0", 5)[0] / med("nginx", "0", 5)[0]
r1 = med("hintq", idle, 5)[0] / med("nginx", idle, 5)[0]
t = med("hintq", idle, 4)[0] / med("hintq", "0", 4)[0]
print(f"CPU per request ours/nginx (tuned): {r0:.2f} at 0 idle, {r1:.2f} at {idle} idle (goals: <= 0.75 on uring, <= 0.85 on epoll)")
print(f"CPU per request ours/nginx-untuned: {med('hintq', '0', 5)[0] / med('nginx-untuned', '0', 5)[0]:.2f} at 0 idle")
print(f"our throughput at {idle} idle / at 0 idle: {t:.3f} (goal >= 0.95)")
# Each round's own ratio: the servers of a round ran within one round (at 0 idle the untuned
# nginx may run between them), in the same phase of the machine.
for n in ("0", idle):
    ours = {r[2]: float(r[5]) for r in rows if r[0] == "hintq" and r[1] == n}
    theirs = {r[2]: float(r[5]) for r in rows if r[0] == "nginx" and r[1] == n}
    per = sorted(ours[k] / theirs[k] for k in ours if k in theirs)
    if per:
        print(f"CPU per request ours/nginx per round at {n} idle: {' '.join(f'{x:.3f}' for x in per)}; median {statistics.median(per):.3f}")
EOF
echo "raw rows: $OUT"
