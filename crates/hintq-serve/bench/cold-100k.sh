#!/usr/bin/env bash
# Issue 13: hintq serve holding $COLD (100,000) cold connections beside a hot load, on a machine
# where one process may hold at most 20,000 descriptors: `--processes $PROCS` workers, each
# with its own SO_REUSEPORT listener.
#
# $ROUNDS rounds of two hot runs of `hintq load` (closed loop, $HOT keep-alive connections, 1 KB
# file, $DUR s each): without cold connections, then with $COLD cold ones (opened before the
# hot phase by the generator's cold threads, spread over its processes and 127.0.0.x
# sources, held all run). Each run's figure is its steady reply rate: the median of its
# per-second replies after the first $SETTLE seconds (the first second of a run with cold
# connections can still see the server accepting them, and one second can be cut by a stall
# of this shared machine: the mean over the whole run swung by ±15% between runs). The
# figure of the issue is the median over the rounds of the cold run's rate, ÷ the median of
# the runs without (and, beside it, the median of each round's own ratio).
#
# Both sides fill their core in both runs, so the reply rate follows whichever is slower
# and the machine's phase. What the cold connections cost is read more directly from CPU:
# the server's and the generator's CPU, sampled once a second, over the steady seconds of
# the hot phase (after its first $SETTLE, without its last), per hot reply in those
# seconds (steady_*_cpu_us_per_req), apart from the warm-up's accepts.

# Counted from the server side, every $SAMPLE s during each run: the descriptors the workers
# hold beyond their baseline (their listeners and the queue's own), that is the connections
# (the generator counts its cold connections second by second itself: cold_held_min/max).
# Reading 100,000 descriptors costs about 0.25 s of CPU, which the cold run pays and the run
# without does not: sampled once a second it took the cold runs' reply rate down to 0.8 of
# the others', every 6 s it costs about 2%. Memory per idle connection:
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
#   [env: BACKEND=epoll COLD=100000 PROCS=6 LOAD_PROCS=6 HOT=50 DUR=12 ROUNDS=3 SETTLE=2 SAMPLE=6 PORT=18410
#         SRV_CPU=0 LOAD_CPU=1 HINTQ=... OUT=...]
set -euo pipefail

BACKEND=${BACKEND:-epoll}
COLD=${COLD:-100000}
PROCS=${PROCS:-6}
HOT=${HOT:-50}
DUR=${DUR:-12}
ROUNDS=${ROUNDS:-3}
SETTLE=${SETTLE:-2}
SAMPLE=${SAMPLE:-6}
PORT=${PORT:-18410}
# The generator's processes, the same in both runs (as many as the cold run needs), so that
# the hot connections are laid out alike and the ratio compares the server, not the generator.
LOAD_PROCS=${LOAD_PROCS:-6}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_hintq
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
# The workers' descriptors, by reading the directories' names only: about 40 ms per 16,000
# (find's readlink of each costs 2.5 times that, and a sample a second took a third of a CPU
# from the run it watched).
fds() { local n=0 w; for w in "${WORKERS[@]}"; do n=$((n + $(ls -f "/proc/$w/fd" 2>/dev/null | wc -l) - 2)); done; echo "$n"; }
rss() { local n=0 w; for w in "${WORKERS[@]}"; do n=$((n + $(rss_kb "$w"))); done; echo "$n"; }
cpu() { cpu_of "${WORKERS[@]}"; }
slab_kb() { awk '/^Slab:/ { print $2 }' /proc/meminfo; }
sock_pages() { awk '$1 == "TCP:" { for (i = 2; i < NF; i++) if ($i == "mem") print $(i + 1) }' /proc/net/sockstat; }

# The generator's processes (its first process and the workers it starts), by their pids.
load_pids() { pgrep -f "^$HINTQ (load|__load-worker)" || true; }
load_cpu() { local p=(); mapfile -t p < <(load_pids); cpu_of "${p[@]}"; }

# hot NAME COLD -> one CSV row from hintq load's JSON and the CPU samples of $TMP/NAME.cpu
# (written by watch_run: time, server CPU, generator CPU, once a second).
hot() {
    local name=$1 cold=$2 c0 c1 t0
    c0=$(cpu)
    t0=$(date +%s.%N)
    taskset -c "$LOAD_CPU" "$HINTQ" load "$URL" --connections "$HOT" --cold "$cold" --duration "${DUR}s" \
        --processes "$LOAD_PROCS" --max-error-rate 100% --quiet --json "$TMP/$name.json" >"$TMP/$name.txt" 2>&1
    c1=$(cpu)
    python3 - "$TMP/$name.json" "$name" "$cold" "$c0" "$c1" "$SETTLE" "$t0" "$TMP/$name.cpu" >>"$OUT" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
settle = int(sys.argv[6])
per_second = r["reply_rate"]["per_second"]
steady = per_second[settle:] or per_second
steady = round(statistics.median(steady)) if steady else 0
# Server CPU over the whole load run (warm-up included) per hot response.
server_us = (float(sys.argv[5]) - float(sys.argv[4])) * 1e6 / max(r["hot"]["successes"], 1)
# Both sides' CPU per hot response in the steady part alone: whole seconds $SETTLE.. of the
# hot phase but the last, which starts once the cold connections are open (the warm-up).
samples = [tuple(map(float, l.split())) for l in open(sys.argv[8]) if len(l.split()) == 3]
def at(t, col):
    # CPU at time t, interpolated between the samples around it.
    for a, b in zip(samples, samples[1:]):
        if a[0] <= t <= b[0]:
            return a[col] + (b[col] - a[col]) * (t - a[0]) / max(b[0] - a[0], 1e-9)
    return None
start = float(sys.argv[7]) + r["warmup_seconds"]
last = min(len(per_second), int(r["hot_seconds"])) - 1
window = (start + settle, start + last)
replies = sum(per_second[settle:last])
steady_cpu = ["", ""]
if replies and last > settle:
    for k, col in enumerate((1, 2)):
        a, b = at(window[0], col), at(window[1], col)
        if a is not None and b is not None:
            steady_cpu[k] = round((b - a) * 1e6 / replies, 2)
held = [s["held"] for s in r.get("cold_per_second", [])]
hot_err = sum(r["hot"]["errors"].values())
cold_err = sum(r["cold"]["errors"].values()) + r["cold"]["closed_by_server"]
print(",".join(str(x) for x in [sys.argv[2], sys.argv[3], round(r["throughput"]), steady, r["latency_us"]["p99"],
      hot_err, cold_err, min(held) if held else "", max(held) if held else "",
      r["self_check"]["generator_lagged"], round(server_us, 2), round(r["cpu"]["per_request_us"], 2),
      *steady_cpu]))
PY
}

{
    rows_stamp hintq
    echo "# hintq serve --processes $PROCS --threads 1 --backend $BACKEND --idle-timeout 3600s on cpu $SRV_CPU;" \
        "hintq load -c $HOT --duration ${DUR}s --processes $LOAD_PROCS [--cold $COLD] on cpu $LOAD_CPU; 1 KB file; loadavg $(cat /proc/loadavg)"
    echo "run,cold,req_per_s,steady_req_per_s,p99_us,hot_errors,cold_errors_or_closed,cold_held_min,cold_held_max,generator_lagged,server_cpu_us_per_req,generator_cpu_us_per_req,steady_server_cpu_us_per_req,steady_generator_cpu_us_per_req"
} | tee "$OUT"

base_sockets=$(sockets) base_fds=$(fds) base_rss=$(rss) base_slab=$(slab_kb) base_pages=$(sock_pages)
max_held=0 samples=""
# watch_run PID LABEL NAME: samples the server's descriptors beyond the baseline every
# $SAMPLE s until PID ends, keeping the most held and the memory at that moment, and both
# sides' CPU every second into $TMP/NAME.cpu. The runs without cold connections are watched
# alike, so that the sampling costs both sides the same.
watch_run() {
    local n t=0
    samples+="$2:"
    : >"$TMP/$3.cpu"
    while kill -0 "$1" 2>/dev/null; do
        echo "$(date +%s.%N) $(cpu) $(load_cpu)" >>"$TMP/$3.cpu"
        if [ $((t % SAMPLE)) -eq 0 ]; then
            n=$(($(fds) - base_fds))
            samples+=" $n"
            if [ "$n" -gt "$max_held" ]; then
                max_held=$n
                held_rss=$(rss) held_slab=$(slab_kb) held_pages=$(sock_pages)
            fi
        fi
        sleep 1
        t=$((t + 1))
    done
    wait "$1"
    samples+="; "
}

for round in $(seq "$ROUNDS"); do
    hot "hot0" 0 &
    watch_run "$!" "round $round without" hot0
    tail -1 "$OUT"
    # The workers warmed up by the first hot run: what each holds once whatever connections
    # it serves (per-thread buffers, the io_uring receive ring, pools) is counted apart from
    # the cold ones.
    if [ "$round" -eq 1 ]; then warm_rss=$(rss); fi

    # The cold run, sampled from the server side every $SAMPLE s.
    hot "hot-cold" "$COLD" &
    watch_run "$!" "round $round" hot-cold
    tail -1 "$OUT"
    # The server closes what the generator left before the next round's hot run.
    for _ in $(seq 30); do [ "$(fds)" -le "$base_fds" ] && break; sleep 1; done
done
echo "# server-side connections held (descriptors beyond the baseline), every $SAMPLE s: $samples" | tee -a "$OUT"
page_kb=$(($(getconf PAGESIZE) / 1024))
awk -v n="$max_held" -v r0="$base_rss" -v rw="$warm_rss" -v r1="${held_rss:-0}" -v s0="$base_slab" -v s1="${held_slab:-0}" \
    -v p0="$base_pages" -v p1="${held_pages:-0}" -v pk="$page_kb" 'BEGIN {
    if (n <= 0) { print "# no connection held"; exit }
    printf "# at the most held (%d server-side connections): user space %.1f B per connection beyond the warmed-up workers (RSS %d -> %d kB; %.1f B counted from their start, %d kB, which includes what each worker holds once it serves at all); ", n, (r1 - rw) * 1024 / n, rw, r1, (r1 - r0) * 1024 / n, r0
    printf "kernel %.0f B per connection, both ends (Slab %d -> %d kB, TCP socket memory %d -> %d pages)\n", ((s1 - s0) + (p1 - p0) * pk) * 1024 / n, s0, s1, p0, p1
}' | tee -a "$OUT"

sleep 3
c0=$(cpu)
sleep 3
c1=$(cpu)
echo "# after the load: server-side sockets $(sockets) (baseline $base_sockets), descriptors $(fds) (baseline $base_fds), workers RSS $(rss) kB (at start $base_rss kB, warmed up by the hot run $warm_rss kB), workers CPU over 3 s idle $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }') s" | tee -a "$OUT"
python3 - "$OUT" "$SETTLE" <<'PY' | tee -a "$OUT"
import csv, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))][1:]
med = lambda run, col: statistics.median(float(r[col]) for r in rows if r[0] == run)
if any(r[0] == "hot0" for r in rows) and any(r[0] == "hot-cold" for r in rows):
    cold = next(r[1] for r in rows if r[0] == "hot-cold")
    n = sum(r[0] == "hot-cold" for r in rows)
    print(f"# hot steady reply rate at {cold} cold / at 0 (medians of {n} runs each): {med('hot-cold', 3) / med('hot0', 3):.3f}"
          f" (goal >= 0.9); by whole-run means: {med('hot-cold', 2) / med('hot0', 2):.3f}")
    print(f"# server CPU per hot request at {cold} cold / at 0: {med('hot-cold', 10) / med('hot0', 10):.3f}"
          f" (includes accepting the cold connections); generator's: {med('hot-cold', 11) / med('hot0', 11):.3f}")
    # Per round: the cold run against the run without just before it (a slow phase of the
    # machine hits the pair, not one side of the medians).
    pairs = [(a, b) for a, b in zip(rows, rows[1:]) if a[0] == "hot0" and b[0] == "hot-cold"]
    rates = sorted(float(b[3]) / float(a[3]) for a, b in pairs)
    print(f"# per round, steady reply rate at {cold} cold / at 0: {', '.join(f'{x:.3f}' for x in rates)}; median {statistics.median(rates):.3f}")
    steady = [r for r in rows if len(r) > 13 and r[12] and r[13]]
    if any(r[0] == "hot0" for r in steady) and any(r[0] == "hot-cold" for r in steady):
        sm = lambda run, col: statistics.median(float(r[col]) for r in steady if r[0] == run)
        print(f"# steady state (the seconds after the first {sys.argv[2]} of the hot phase but the last): CPU per hot request"
              f" at {cold} cold / at 0, server {sm('hot-cold', 12) / sm('hot0', 12):.3f} ({sm('hot-cold', 12):.2f} against"
              f" {sm('hot0', 12):.2f} us), generator {sm('hot-cold', 13) / sm('hot0', 13):.3f}"
              f" ({sm('hot-cold', 13):.2f} against {sm('hot0', 13):.2f} us)")
PY
