#!/usr/bin/env bash
# Issue 13: hintq serve holding $COLD (100,000) cold connections beside a hot load, on a machine
# where one process may hold at most 20,000 descriptors: `--processes $PROCS` workers, each
# with its own SO_REUSEPORT listener.
#
# Two hot runs of `hintq load` (closed loop, $HOT keep-alive connections, 1 KB file, $DUR s),
# servers alternated within the run: without cold connections, then with $COLD cold ones
# (opened before the hot phase by the generator's cold threads, spread over its processes and
# 127.0.0.x sources, held all run). Throughput at $COLD ÷ throughput at 0 is the figure.
#
# Counted from the server side, once a second during the cold run: the sockets the workers
# hold (descriptors in /proc/PID/fd that are sockets, over all workers, minus the listeners
# and the queue's own). Memory per idle connection:
#   user space: the workers' summed VmRSS with the cold connections held, minus after the hot
#               run without cold ones (the workers warmed up), ÷ the connections held; and minus
#               at start, which adds what a worker holds once it serves at all;
#   kernel:     /proc/meminfo Slab plus /proc/net/sockstat TCP `mem` (pages) with them held,
#               minus before, ÷ $COLD: both ends of each connection (client and server socket,
#               their files, dentries, inodes, epoll or io_uring entries), not the server's alone.
# After the load: descriptors and RSS again (back to baseline?), and the workers' CPU over 3 s
# idle (no worker spinning).
#
# Pinning: the server's workers on $SRV_CPU, the generator on $LOAD_CPU. Raw rows to $OUT.
#
# Usage: crates/hintq-serve/bench/cold-100k.sh
#   [env: BACKEND=epoll COLD=100000 PROCS=6 LOAD_PROCS=6 HOT=50 DUR=15 PORT=18410 SRV_CPU=0 LOAD_CPU=1 HINTQ=... OUT=...]
set -euo pipefail

BACKEND=${BACKEND:-epoll}
COLD=${COLD:-100000}
PROCS=${PROCS:-6}
HOT=${HOT:-50}
DUR=${DUR:-15}
PORT=${PORT:-18410}
# The generator's processes, the same in both runs (as many as the cold run needs), so that
# the hot connections are laid out alike and the ratio compares the server, not the generator.
LOAD_PROCS=${LOAD_PROCS:-6}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_hintq serve
bench_tmp cold-100k
ADDR=127.0.0.1:$PORT
URL=http://$ADDR/1k.html

taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "$ADDR" --processes "$PROCS" --threads 1 \
    --backend "$BACKEND" --idle-timeout 3600s 2>"$TMP/logs/serve.log" &
SUP=$!
PIDS+=("$SUP")
wait_port "$ADDR"
sleep 1
mapfile -t WORKERS < <(pgrep -P "$SUP")
if [ "${#WORKERS[@]}" -ne "$PROCS" ]; then
    echo "expected $PROCS workers, found ${#WORKERS[@]}" >&2
    exit 1
fi

sockets() { local n=0 w; for w in "${WORKERS[@]}"; do n=$((n + $(find "/proc/$w/fd" -lname 'socket:*' 2>/dev/null | wc -l))); done; echo "$n"; }
fds() { local n=0 w; for w in "${WORKERS[@]}"; do n=$((n + $(find "/proc/$w/fd" -mindepth 1 2>/dev/null | wc -l))); done; echo "$n"; }
rss() { local n=0 w; for w in "${WORKERS[@]}"; do n=$((n + $(rss_kb "$w"))); done; echo "$n"; }
cpu() { local w; for w in "${WORKERS[@]}"; do cpu_of "$w"; echo; done | awk '{ s += $1 } END { printf "%.3f", s }'; }
slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }
sock_pages() { awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat; }

# hot NAME COLD -> one CSV row from hintq load's JSON
hot() {
    local name=$1 cold=$2 c0 c1
    c0=$(cpu)
    taskset -c "$LOAD_CPU" "$HINTQ" load "$URL" --connections "$HOT" --cold "$cold" --duration "${DUR}s" \
        --processes "$LOAD_PROCS" --quiet --json "$TMP/$name.json" >"$TMP/$name.txt" 2>&1
    c1=$(cpu)
    python3 - "$TMP/$name.json" "$name" "$cold" "$c0" "$c1" >>"$OUT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
# Server CPU over the whole load run (warm-up included) per hot response.
server_us = (float(sys.argv[5]) - float(sys.argv[4])) * 1e6 / max(r["hot"]["successes"], 1)
held = [s["held"] for s in r.get("cold_per_second", [])]
hot_err = sum(r["hot"]["errors"].values())
cold_err = sum(r["cold"]["errors"].values()) + r["cold"]["closed_by_server"]
print(",".join(str(x) for x in [sys.argv[2], sys.argv[3], round(r["throughput"]), r["latency_us"]["p99"],
      hot_err, cold_err, min(held) if held else "", max(held) if held else "",
      r["self_check"]["generator_lagged"], round(server_us, 2), round(r["cpu"]["per_request_us"], 2)]))
PY
}

{
    echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus; $("$HINTQ" --version); commit $(git -C "$ROOT" rev-parse --short HEAD)"
    echo "# hintq serve --processes $PROCS --threads 1 --backend $BACKEND --idle-timeout 3600s on cpu $SRV_CPU;" \
        "hintq load -c $HOT --duration ${DUR}s --processes $LOAD_PROCS [--cold $COLD] on cpu $LOAD_CPU; 1 KB file; loadavg $(cat /proc/loadavg)"
    echo "run,cold,req_per_s,p99_us,hot_errors,cold_errors_or_closed,cold_held_min,cold_held_max,generator_lagged,server_cpu_us_per_req,generator_cpu_us_per_req"
} | tee "$OUT"

base_sockets=$(sockets) base_fds=$(fds) base_rss=$(rss) base_slab=$(slab_kb) base_pages=$(sock_pages)
hot hot0 0
tail -1 "$OUT"
# The workers warmed up by the hot run: what each holds once whatever connections it serves
# (per-thread buffers, the io_uring receive ring, pools) is counted apart from the cold ones.
warm_rss=$(rss)

# The cold run, sampled from the server side once a second.
hot hot-cold "$COLD" &
LOADER=$!
max_held=0 samples=""
while kill -0 "$LOADER" 2>/dev/null; do
    n=$(($(sockets) - base_sockets))
    samples+="$n "
    if [ "$n" -gt "$max_held" ]; then
        max_held=$n
        held_rss=$(rss) held_slab=$(slab_kb) held_pages=$(sock_pages)
    fi
    sleep 1
done
wait "$LOADER"
tail -1 "$OUT"
echo "# server-side sockets held beyond the baseline, once a second: $samples" | tee -a "$OUT"
page_kb=$(($(getconf PAGESIZE) / 1024))
awk -v n="$max_held" -v r0="$base_rss" -v rw="$warm_rss" -v r1="${held_rss:-0}" -v s0="$base_slab" -v s1="${held_slab:-0}" \
    -v p0="$base_pages" -v p1="${held_pages:-0}" -v pk="$page_kb" 'BEGIN {
    if (n <= 0) { print "# no connection held"; exit }
    printf "# at the most held (%d server-side sockets): user space %.1f B per connection beyond the warmed-up workers (RSS %d -> %d kB; %.1f B counted from their start, %d kB, which includes what each worker holds once it serves at all); ", n, (r1 - rw) * 1024 / n, rw, r1, (r1 - r0) * 1024 / n, r0
    printf "kernel %.0f B per connection, both ends (Slab %d -> %d kB, TCP socket memory %d -> %d pages)\n", ((s1 - s0) + (p1 - p0) * pk) * 1024 / n, s0, s1, p0, p1
}' | tee -a "$OUT"

sleep 3
c0=$(cpu)
sleep 3
c1=$(cpu)
echo "# after the load: server-side sockets $(sockets) (baseline $base_sockets), descriptors $(fds) (baseline $base_fds), workers RSS $(rss) kB (at start $base_rss kB, warmed up by the hot run $warm_rss kB), workers CPU over 3 s idle $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }') s" | tee -a "$OUT"
python3 - "$OUT" <<'PY' | tee -a "$OUT"
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))][1:]
by = {r[0]: r for r in rows}
if "hot0" in by and "hot-cold" in by:
    print(f"# hot throughput at {by['hot-cold'][1]} cold / at 0: {int(by['hot-cold'][2]) / int(by['hot0'][2]):.3f} (goal >= 0.9)")
    print(f"# server CPU per hot request at {by['hot-cold'][1]} cold / at 0: {float(by['hot-cold'][9]) / float(by['hot0'][9]):.3f}"
          f" (includes accepting the cold connections); generator's: {float(by['hot-cold'][10]) / float(by['hot0'][10]):.3f}")
PY
