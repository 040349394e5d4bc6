#!/usr/bin/env bash
# hintq at every body size against nginx, same run: CPU per request of hintq ÷ nginx's for
# bodies of 1 KiB, 16 KiB, 64 KiB, 256 KiB and 1 MiB, as a static server and as a reverse
# proxy (issue 29, "What done looks like": static <= 0.75 at every size; proxy <= 0.75 at
# every size and <= 0.5 at 256 KiB and 1 MiB).
#
#   static: wrk -> hintq serve --threads 1           | wrk -> nginx, 1 worker (static template)
#   proxy:  wrk -> hintq proxy --threads 1 -> up     | wrk -> nginx, 1 worker (proxy template) -> up
#   up:     one hintq serve, behind both proxies
#
# nginx is configured from the lab's templates (crates/hintq-lab/peers/, bench/lib.sh's
# nginx_template), as its users tune it by size: an open-file cache, `sendfile off` for files
# up to 16 KiB and `on` above (two nginx processes, one of each, the one matching the size
# measured; each idle while the other runs); as a proxy, an upstream keep-alive pool, and for
# bodies above 16 KiB a second nginx proxy streaming through 64 KiB buffers instead of spilling
# the body to a temporary file (bench/lib.sh's NGINX_PROXY_LARGE; the default buffers cost
# nginx 2-3x the CPU per request at 256 KiB and 1 MiB here). Every configuration is written
# whole into the raw rows' header.
#
# Pinning: the server under test (hintq serve, hintq proxy, either nginx) on $SRV_CPU; wrk
# and the upstream hintq serve on $LOAD_CPU (this machine has two cores). Load: wrk -t1
# -c$C -d${DUR}s, keep-alive, GET of one file of the size. CPU: user + system of the measured
# process (hintq: all its threads; nginx: the worker) from /proc/PID/stat across the wrk run,
# over the requests wrk completed, and its user-space part apart (utime: hintq's own code, whose
# removal would leave the kernel's work for it; the table's "without its user space" is that
# floor); beside it the whole machine's busy CPU (/proc/stat, both cores) over the same
# requests. The second matters for large bodies: on loopback the receive processing of the
# bytes a server sends runs in the sender's context or the receiver's depending on timing (a receiver busy in recv(2) takes it from its socket's backlog), and
# the server that keeps wrk busier is charged less of it: static 256 KiB on epoll measured
# hintq 47 / nginx 31 µs of its own per request, but 107 / 130 µs for the machine.
# Rounds: per size and kind, one run of each server, their
# order turned each round; the figure is the median of each round's own ratio hintq ÷ nginx
# (the two ran in the same phase of the machine), with a verdict of the rounds against the goal,
# the lab's rule for a bound (Verdict::under): met when every round is under it, missed when
# every round is over it, cannot say otherwise. Bounded: 2 x KINDS x SIZES x RUNS wrk runs of DUR
# seconds, plus a 1 s warm-up per server and size (about 6 min with the defaults).
#
# nginx runs from configurations of ours in a temporary directory (the system's nginx config
# and service are never touched); only processes started here are stopped. Reported, not
# asserted (the machine is shared: see the loadavg lines). Raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/sizes-vs-nginx.sh
#   [env: SIZES="1k 16k 64k 256k 1m" KINDS="static proxy" C=50 RUNS=3 DUR=5 PORT=18400 SRV_CPU=0 LOAD_CPU=1
#    BACKEND= (hintq's default) HINTQ=path/to/hintq OUT=rows.csv
#    PROXY_ARGS= (more flags for hintq proxy, e.g. "--splice-above off" to copy every body)
#    NGINX_PROXY_LARGE= (nginx directives for bodies above 16 KiB; default in bench/lib.sh)]
set -euo pipefail

SIZES=${SIZES:-1k 16k 64k 256k 1m}
KINDS=${KINDS:-static proxy}
C=${C:-50}
RUNS=${RUNS:-3}
DUR=${DUR:-5}
PORT=${PORT:-18400}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
BACKEND=${BACKEND:-}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

# bytes SIZE: 1k -> 1024, 1m -> 1048576.
bytes() {
    case $1 in
    *k) echo $((${1%k} * 1024)) ;;
    *m) echo $((${1%m} * 1024 * 1024)) ;;
    *) echo "$1" ;;
    esac
}

bench_tools
bench_hintq
bench_tmp sizes-bench
for s in $SIZES; do
    head -c "$(bytes "$s")" /dev/zero | tr '\0' 'x' >"$TMP/www/$s.html"
done
backend_flag=()
if [ -n "$BACKEND" ]; then backend_flag=(--backend "$BACKEND"); fi

SERVE=127.0.0.1:$PORT             # hintq serve under test
NGINX_OFF=127.0.0.1:$((PORT + 1)) # nginx static, sendfile off (files up to 16 KiB)
NGINX_ON=127.0.0.1:$((PORT + 2))  # nginx static, sendfile on (larger files)
UP=127.0.0.1:$((PORT + 3))        # hintq serve behind both proxies
PROXY=127.0.0.1:$((PORT + 4))     # hintq proxy under test
NGINX_PROXY=127.0.0.1:$((PORT + 5))
NGINX_LARGE=127.0.0.1:$((PORT + 6)) # nginx proxy for bodies above NGINX_LARGE_ABOVE

nginx_template static "${NGINX_OFF#*:}" 1024 off >"$TMP/nginx-off.conf"
nginx_template static "${NGINX_ON#*:}" 1024 on >"$TMP/nginx-on.conf"
nginx_template proxy "${NGINX_PROXY#*:}" 1024 "$UP" >"$TMP/nginx-proxy.conf"
NGINX_EXTRA="    $NGINX_PROXY_LARGE" nginx_template proxy "${NGINX_LARGE#*:}" 1024 "$UP" >"$TMP/nginx-large.conf"

taskset -c "$LOAD_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$UP" "${backend_flag[@]}" \
    --idle-timeout 3600s 2>"$TMP/logs/up.log" &
UP_PID=$!
PIDS+=("$UP_PID")
taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$SERVE" --threads 1 "${backend_flag[@]}" \
    --idle-timeout 3600s 2>"$TMP/logs/serve.log" &
SERVE_PID=$!
PIDS+=("$SERVE_PID")
# shellcheck disable=SC2086 # PROXY_ARGS: flags split as written
taskset -c "$SRV_CPU" "$HINTQ" proxy --upstream "$UP" --listen "$PROXY" --threads 1 "${backend_flag[@]}" \
    --idle-timeout 3600s ${PROXY_ARGS:-} 2>"$TMP/logs/proxy.log" &
PROXY_PID=$!
PIDS+=("$PROXY_PID")
for a in "$UP" "$SERVE" "$PROXY"; do wait_port "$a"; done
declare -A WORKER
nginx_start "$SRV_CPU" "$NGINX_OFF" "$TMP/nginx-off.conf"
WORKER[off]=$NGINX_WORKER
nginx_start "$SRV_CPU" "$NGINX_ON" "$TMP/nginx-on.conf"
WORKER[on]=$NGINX_WORKER
nginx_start "$SRV_CPU" "$NGINX_PROXY" "$TMP/nginx-proxy.conf"
WORKER[proxy]=$NGINX_WORKER
nginx_start "$SRV_CPU" "$NGINX_LARGE" "$TMP/nginx-large.conf"
WORKER[large]=$NGINX_WORKER

{
    rows_stamp nginx hintq
    echo "# server under test on cpu $SRV_CPU; wrk -t1 -c$C -d${DUR}s (keep-alive) and the upstream hintq serve on cpu $LOAD_CPU; backend ${BACKEND:-default}; sizes $SIZES; kinds $KINDS"
    echo "# hintq: serve --threads 1 --idle-timeout 3600s; proxy --threads 1 --idle-timeout 3600s ${PROXY_ARGS:-} --upstream (hintq serve, defaults); defaults otherwise"
    for k in off on proxy large; do
        echo "# nginx config ($k): $(tr -s ' \n' ' ' <"$TMP/nginx-$k.conf")"
    done
    echo "# loadavg before: $(cat /proc/loadavg)"
    echo "kind,size,server,nginx_config,round,requests,req_per_s,cpu_us_per_req,machine_us_per_req,user_us_per_req"
} | tee "$OUT"

# measure KIND SIZE SERVER ROUND: one wrk run against SERVER (hintq or nginx) -> one row.
measure() {
    local kind=$1 size=$2 server=$3 round=$4 addr pid conf out
    if [ "$kind" = static ] && [ "$server" = hintq ]; then
        addr=$SERVE pid=$SERVE_PID conf=-
    elif [ "$kind" = static ]; then
        conf=off
        if [ "$(bytes "$size")" -gt "$NGINX_SENDFILE_ABOVE" ]; then conf=on; fi
        addr=$NGINX_OFF
        if [ $conf = on ]; then addr=$NGINX_ON; fi
        pid=${WORKER[$conf]}
    elif [ "$server" = hintq ]; then
        addr=$PROXY pid=$PROXY_PID conf=-
    else
        conf=proxy addr=$NGINX_PROXY
        if [ "$(bytes "$size")" -gt "$NGINX_LARGE_ABOVE" ]; then conf=large addr=$NGINX_LARGE; fi
        pid=${WORKER[$conf]}
    fi
    if [ "$round" = 0 ]; then # warm-up: caches, the upstream pools
        taskset -c "$LOAD_CPU" wrk -t1 -c"$C" -d1s "http://$addr/$size.html" >/dev/null
        return
    fi
    local m0 m1 u0 u1 reqs machine user
    m0=$(machine_busy)
    u0=$(user_of "$pid")
    out=$(wrk_cpu_per_request "$pid" "$addr" "$size.html")
    u1=$(user_of "$pid")
    m1=$(machine_busy)
    reqs=${out%,*}
    per_req() { awk -v a="$1" -v b="$2" -v n="$reqs" 'BEGIN { printf "%.3f", (b - a) * 1e6 / n }'; }
    machine=$(per_req "$m0" "$m1")
    user=$(per_req "$u0" "$u1")
    echo "$kind,$size,$server,$conf,$round,$reqs,$((reqs / DUR)),${out#*,},$machine,$user" | tee -a "$OUT"
}

for size in $SIZES; do
    for kind in $KINDS; do
        measure "$kind" "$size" hintq 0
        measure "$kind" "$size" nginx 0
        for round in $(seq "$RUNS"); do
            for server in $(turned "$round" hintq nginx); do
                measure "$kind" "$size" "$server" "$round"
            done
        done
    done
done
echo "# loadavg after: $(cat /proc/loadavg)" | tee -a "$OUT"

python3 - "$OUT" "$SIZES" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
cpu = {(r["kind"], r["size"], r["server"], r["round"]): float(r["cpu_us_per_req"]) for r in rows}
# Older rows have no user column: their cells leave the figure out.
user = {(r["kind"], r["size"], r["server"], r["round"]): float(r["user_us_per_req"])
        for r in rows if r.get("user_us_per_req")}
machine = {(r["kind"], r["size"], r["server"], r["round"]): float(r["machine_us_per_req"]) for r in rows}
goal = {"static": lambda s: 0.75, "proxy": lambda s: 0.5 if s in ("256k", "1m") else 0.75}
def ratios(d, kind, size):
    return sorted(d[(kind, size, "hintq", k)] / d[(kind, size, "nginx", k)]
                  for (kd, sz, srv, k) in d if (kd, sz, srv) == (kind, size, "hintq")
                  and (kind, size, "nginx", k) in d)
print("| body | static: hintq ÷ nginx | proxy: hintq ÷ nginx |")
print("|---|---|---|")
missed = []
for size in sys.argv[2].split():
    cells = []
    for kind in ("static", "proxy"):
        per = ratios(cpu, kind, size)
        if not per:
            cells.append("—")
            continue
        m = statistics.median(per)
        us = lambda srv: statistics.median(v for (kd, sz, s, _), v in cpu.items() if (kd, sz, s) == (kind, size, srv))
        mach = statistics.median(ratios(machine, kind, size))
        g = goal[kind](size)
        # The verdict of the rounds, not of their median alone, by the lab's rule for a bound:
        # met when every round is under the goal, missed when every one is over it, and
        # "cannot say" when the rounds fall on both sides.
        verdict = "met" if per[-1] < g else "missed" if per[0] > g else "cannot say"
        # What the ratio would be if hintq's own code cost nothing at all (its user-space CPU
        # taken off, the kernel's work for it kept): the floor of anything done in user space.
        bare = ratios({k: cpu[k] - user[k] if k[2] == "hintq" else cpu[k] for k in user}, kind, size)
        floor = f"; without its user space {statistics.median(bare):.2f}" if bare else ""
        cells.append(f"{m:.2f} {verdict} ({us('hintq'):.1f} / {us('nginx'):.1f} µs{floor}; rounds {' '.join(f'{x:.2f}' for x in per)}; machine {mach:.2f})")
        if verdict != "met":
            missed.append(f"{kind} {size}: {verdict}, rounds {per[0]:.3f}-{per[-1]:.3f} against {g}")
    print(f"| {size} | {cells[0]} | {cells[1]} |")
print("(the server's own CPU per request, hintq ÷ nginx, median of the rounds; machine: the whole")
print(" machine's busy CPU per request, server, wrk, upstream and kernel together, same ratio;")
print(" without its user space: the ratio with hintq's user-space CPU taken off, the floor of any")
print(" change to hintq's own code)")
print("goals: static <= 0.75 at every size; proxy <= 0.75 at every size, <= 0.5 at 256k and 1m;")
print(" met: every round under the goal; missed: every round over it; cannot say: rounds on both sides")
print("not met: " + ("; ".join(missed) if missed else "none"))
EOF
echo "raw rows: $OUT"
