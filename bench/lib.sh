# Shared by the benchmark scripts that measure against nginx and wrk
# (crates/hintq-serve/bench/*.sh, crates/hintq-load/bench/vs-wrk.sh). Source it; it defines
# functions only and starts nothing by itself.
#
# nginx always runs from a config of ours in a temporary directory: the system's nginx
# config and service are never touched, and only processes these scripts start are stopped
# (each start adds its pid to PIDS; `bench_cleanup` runs on exit).

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PIDS=()

# Installs nginx and wrk from the system packages if either is missing.
bench_tools() {
    if ! command -v nginx >/dev/null || ! command -v wrk >/dev/null; then
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light wrk
    fi
}

# Sets HINTQ to a release build of the hintq binary unless HINTQ is already set; builds in
# $CARGO_TARGET_DIR, or else target-bench beside the workspace's target (not to disturb it),
# one build for every script (cargo locks it against two at once).
bench_hintq() {
    if [ -z "${HINTQ:-}" ]; then
        local target=${CARGO_TARGET_DIR:-$BENCH_ROOT/target-bench}
        (cd "$BENCH_ROOT" && CARGO_TARGET_DIR=$target cargo build --release -q -p hintq-cli)
        HINTQ=$target/release/hintq
    fi
}

# Makes TMP (a fresh directory named after $1) with www/1k.html (1,024 bytes) and logs/,
# readable by nginx's unprivileged worker; OUT defaults to $TMP/rows.csv.
bench_tmp() {
    TMP=$(mktemp -d "/tmp/hintq-$1.XXXXXX")
    OUT=${OUT:-$TMP/rows.csv}
    chmod 755 "$TMP"
    mkdir -p "$TMP/www" "$TMP/logs"
    head -c 1024 /dev/zero | tr '\0' 'x' >"$TMP/www/1k.html"
}

# The lab's nginx templates (crates/hintq-lab/peers/nginx-{static,proxy}.conf.in): nginx as
# its users tune it, one text for the lab and for these scripts.
NGINX_TEMPLATES=$BENCH_ROOT/crates/hintq-lab/peers
# Files up to this size are served by nginx with `sendfile off` (one writev from the open-file
# cache costs less), larger ones with `sendfile on`: the lab's SENDFILE_ABOVE.
NGINX_SENDFILE_ABOVE=16384
# Responses above this size are proxied by an nginx tuned for large bodies (NGINX_PROXY_LARGE,
# added to the proxy template's http block): with the template's default buffers (8 x 4 KiB)
# nginx writes a body that does not fit them to a temporary file on disk and reads it back,
# which its users avoid for large responses by streaming through a larger buffer.
NGINX_LARGE_ABOVE=16384
NGINX_PROXY_LARGE=${NGINX_PROXY_LARGE:-proxy_buffering off; proxy_buffer_size 64k; proxy_buffers 4 64k; proxy_busy_buffers_size 128k;}

# Prints the lab's template $1 (static or proxy) filled in, comment lines left out: one
# worker listening on 127.0.0.1:$2, allowed $3 descriptors and connections, its pid, logs
# ($TMP/error-$2.log) and temporary files under $TMP. static: serving $TMP/www with sendfile
# $4 (default off, as for small files); proxy: to the upstream $4 (host:port) through a
# keep-alive pool. $NGINX_EXTRA, if set, is added to the http block (more server blocks).
nginx_template() {
    local kind=$1 port=$2 conns=$3 value=${4:-}
    case $kind in
    static) value=${value:-off} ;;
    proxy) [ -n "$value" ] || { echo "nginx_template proxy: no upstream" >&2; exit 1; } ;;
    *) echo "nginx_template: no template '$kind'" >&2; exit 1 ;;
    esac
    grep -v '^#' "$NGINX_TEMPLATES/nginx-$kind.conf.in" |
        sed -e "s|@DIR@|$TMP|g" -e "s|@PORT@|$port|g" -e "s|@CONNECTIONS@|$conns|g" \
            -e "s|@ROOT@|$TMP/www|g" -e "s|@SENDFILE@|$value|g" -e "s|@UPSTREAM@|$value|g" |
        awk -v extra="${NGINX_EXTRA:-}" '{ if (last != "") print last; last = $0 }
            END { if (extra != "") print extra; print last }'
}

# Prints the first line of a rows file: "# <UTC time> <kernel> <n> cpus; ...; commit <id>",
# with nginx's version if "nginx" is an argument and hintq's ($HINTQ) if "hintq" is.
rows_stamp() {
    local line a
    line="# $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus;"
    for a in "$@"; do
        case $a in
        nginx) line+=" $(nginx -v 2>&1);" ;;
        hintq) line+=" $("$HINTQ" --version);" ;;
        esac
    done
    echo "$line commit $(git -C "$BENCH_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
}

# Starts nginx from $3 (default $TMP/nginx.conf, made by nginx_template: in the foreground)
# pinned to CPU $1, waits until it listens on $2 (host:port), and sets NGINX_MASTER and
# NGINX_WORKER (the one worker, which does the work).
nginx_start() {
    taskset -c "$1" nginx -p "$TMP" -c "${3:-$TMP/nginx.conf}" 2>"$TMP/logs/nginx-${2#*:}.stderr" &
    NGINX_MASTER=$!
    PIDS+=("$NGINX_MASTER")
    wait_port "$2"
    NGINX_WORKER=$(pgrep -P "$NGINX_MASTER" | head -1)
    if [ -z "$NGINX_WORKER" ]; then
        echo "nginx did not start:" >&2
        cat "$TMP/logs/nginx-${2#*:}.stderr" "$TMP/error-${2#*:}.log" >&2
        exit 1
    fi
}

# Waits up to 5 s for something to accept connections on $1 (host:port).
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing listens on $1" >&2
    exit 1
}

# CPU seconds (user + system, all threads) the processes PID... have used so far, summed
# (0 for none), read by one awk: samples taken once a second must cost the run they watch next
# to nothing (an awk per process, 13 a sample, had stretched them to 1.7 s apart). A process
# that has ended fails the pipeline (pipefail): an assignment of it stops the script, and a
# sample written with it skips that process.
BENCH_HZ=$(getconf CLK_TCK)
cpu_of() { cpu_fields '$14 + $15' "$@"; }

# The same in user space only (utime): what a server's own code costs, apart from the kernel's
# work on its behalf.
user_of() { cpu_fields '$14' "$@"; }

# cpu_fields EXPR PID...: EXPR of /proc/PID/stat's fields in clock ticks, summed, in seconds.
cpu_fields() {
    local expr=$1
    shift
    if [ $# -eq 0 ]; then echo 0; return; fi
    local stats=("${@/#//proc/}")
    cat "${stats[@]/%//stat}" 2>/dev/null | awk -v hz="$BENCH_HZ" "{ s += $expr } END { printf \"%.4f\", s / hz }"
}

# Seconds of CPU the whole machine has been busy (every CPU: user, system, interrupts), from
# /proc/stat. Around a run, what the server, its client and the kernel on their behalf cost
# together: on loopback the kernel charges a stream's receive processing to the sender or to
# the receiver depending on timing, so a server's own CPU can go up while the machine's goes
# down (large bodies: see crates/hintq-serve/bench/sizes-vs-nginx.sh).
machine_busy() {
    awk -v hz="$BENCH_HZ" '$1 == "cpu" { printf "%.2f", ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}

# Resident memory of process $1, in kB.
rss_kb() { awk '/VmRSS/ { print $2 }' "/proc/$1/status"; }

# Prints the names $2... in round $1's order: turned left by one place a round, so that the
# machine's drift (phases of a quarter slower or faster are seen here) falls on all alike.
turned() {
    local k=$((($1 - 1) % ($# - 1)))
    shift
    local names=("$@")
    echo "${names[@]:$k}" "${names[@]:0:$k}"
}

# Stops what the script started (by pid), then waits for it.
bench_cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap bench_cleanup EXIT

# Loads http://$2/$3 (default 1k.html) with wrk -t1 -c$C -d${DUR}s pinned to $LOAD_CPU and
# prints "REQUESTS,CPU_US_PER_REQ": the requests wrk completed and the user + system CPU of
# process $1 across the run, per request. Stops the script when wrk completed no request or
# got an answer other than 2xx (a missing file would otherwise be timed as a cheap request).
wrk_cpu_per_request() {
    local c0 c1 out reqs
    c0=$(cpu_of "$1")
    out=$(taskset -c "$LOAD_CPU" wrk -t1 -c"$C" -d"${DUR}s" "http://$2/${3:-1k.html}")
    c1=$(cpu_of "$1")
    reqs=$(awk '/requests in/ { print $1 }' <<<"$out")
    if ! [[ $reqs =~ ^[1-9][0-9]*$ ]] || grep -q "Non-2xx" <<<"$out"; then
        echo "wrk against http://$2/${3:-1k.html} failed:" >&2
        echo "$out" >&2
        exit 1
    fi
    echo "$reqs,$(awk -v a="$c0" -v b="$c1" -v n="$reqs" 'BEGIN { printf "%.3f", (b - a) * 1e6 / n }')"
}
