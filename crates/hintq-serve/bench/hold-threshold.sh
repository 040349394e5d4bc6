#!/usr/bin/env bash
# Where holding a file's bytes in memory stops paying: hintq serve's CPU per request for files
# of each size in $SIZES (KiB), answered from memory (`--file-cache-hold` above every size:
# head and body leave in one gathered send) and from the descriptor (`--file-cache-hold 0`:
# the head's send, then `sendfile`), the two servers side by side in the same rounds. The
# size at which the ratio held / sendfile passes 1 is the threshold the default
# (`HOLD_MAX_RING` for io_uring, `HOLD_MAX` for the others, in
# crates/hintq-serve/src/serve/cache.rs) should sit under.
#
# Both servers run one thread on $SRV_CPU with backend $BACKEND (one is loaded at a time);
# wrk -t1 -c$C on $LOAD_CPU, $DUR s a run. Rounds: for each size, one run of each server, the
# order turned each round, $RUNS rounds. CPU per request: user + system of the server process
# from /proc/PID/stat across its wrk run, over the requests wrk completed. Reported: per size,
# each server's median and the median of the rounds' own ratios held / sendfile. Only
# processes started here are stopped; raw rows go to $OUT.
#
# Usage: crates/hintq-serve/bench/hold-threshold.sh
#   [env: SIZES="4 16 64 128 256 512" C=50 RUNS=5 DUR=3 BACKEND=uring PORT=18620 SRV_CPU=0
#         LOAD_CPU=1 HINTQ=path/to/hintq OUT=rows.csv]
set -euo pipefail

SIZES=${SIZES:-4 16 64 128 256 512}
C=${C:-50}
RUNS=${RUNS:-5}
DUR=${DUR:-3}
BACKEND=${BACKEND:-uring}
PORT=${PORT:-18620}
SRV_CPU=${SRV_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=../../../bench/lib.sh
. "$ROOT/bench/lib.sh"

bench_tools
bench_hintq
bench_tmp hold
for k in $SIZES; do head -c $((k * 1024)) /dev/zero | tr '\0' 'x' >"$TMP/www/$k.bin"; done

NAMES=(held sendfile)
declare -A ADDR PID HOLD
ADDR[held]=127.0.0.1:$PORT
ADDR[sendfile]=127.0.0.1:$((PORT + 1))
HOLD[held]=$((1 << 30))
HOLD[sendfile]=0
for n in "${NAMES[@]}"; do
    taskset -c "$SRV_CPU" "$HINTQ" serve --root "$TMP/www" --listen "${ADDR[$n]}" --threads 1 \
        --backend "$BACKEND" --idle-timeout 3600s --file-cache-hold "${HOLD[$n]}" 2>"$TMP/logs/$n.log" &
    PID[$n]=$!
    PIDS+=("$!")
done
for n in "${NAMES[@]}"; do wait_port "${ADDR[$n]}"; done

{
    rows_stamp hintq
    echo "# servers on cpu $SRV_CPU, wrk -t1 -c$C -d${DUR}s on cpu $LOAD_CPU; backend $BACKEND; loadavg $(cat /proc/loadavg)"
    echo "# held: hintq serve --threads 1 --backend $BACKEND --file-cache-hold ${HOLD[held]}; sendfile: the same with --file-cache-hold 0"
    echo "server,size_kib,rep,requests,cpu_us_per_req"
} | tee "$OUT"

for rep in $(seq "$RUNS"); do
    for k in $SIZES; do
        for n in $(turned "$rep" "${NAMES[@]}"); do
            r=$(wrk_cpu_per_request "${PID[$n]}" "${ADDR[$n]}" "$k.bin")
            echo "$n,$k,$rep,$r" | tee -a "$OUT"
        done
    done
done
echo "# loadavg after: $(cat /proc/loadavg)" | tee -a "$OUT"

python3 - "$OUT" <<'EOF'
import csv, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#"))][1:]
cpu = {(r[0], int(r[1]), r[2]): float(r[4]) for r in rows}
for k in sorted({int(r[1]) for r in rows}):
    med = {s: statistics.median(v for (n, kk, _), v in cpu.items() if n == s and kk == k) for s in ("held", "sendfile")}
    per = sorted(cpu[("held", k, rep)] / cpu[("sendfile", k, rep)]
                 for (n, kk, rep) in cpu if n == "held" and kk == k and ("sendfile", k, rep) in cpu)
    print(f"{k:5} KiB: held {med['held']:.2f} us, sendfile {med['sendfile']:.2f} us per request; "
          f"held / sendfile per round {' '.join(f'{x:.3f}' for x in per)}, median {statistics.median(per):.3f}")
EOF
echo "raw rows: $OUT"
