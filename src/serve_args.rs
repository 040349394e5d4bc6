//! `hintq serve`'s and `hintq proxy`'s flags: the clap types, turned into hintq-serve's
//! plain options ([`hintq_serve::args::ServerArgs`], [`hintq_serve::serve::ServeArgs`],
//! [`hintq_serve::proxy::ProxyArgs`]), with the parsers of their values.

use clap::{ArgAction, Args};
use hintq::Backend;
use hintq_load::parse_duration;
use hintq_patterns::{Config, Pattern};
use hintq_serve::processes::{WorkerOf, MAX_PROCESSES};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!("bad thread count {s:?}: expected 1 to 1024")),
    }
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("bad switch {s:?}: expected on or off")),
    }
}

fn parse_array_max(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=65_536).contains(&n) => Ok(n),
        _ => Err(format!("bad array_max {s:?}: expected 1 to 65536")),
    }
}

fn parse_processes(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_PROCESSES).contains(&n) => Ok(n),
        _ => Err(format!("bad process count {s:?}: expected 1 to {MAX_PROCESSES}")),
    }
}

/// `--splice-above`: `off`, or bytes with an optional `k` (KiB) or `m` (MiB).
fn parse_splice_above(s: &str) -> Result<Option<u64>, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let (digits, unit) = match s.as_bytes().last() {
        Some(b'k' | b'K') => (&s[..s.len() - 1], 1 << 10),
        Some(b'm' | b'M') => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .map(Some)
        .ok_or_else(|| format!("bad size {s:?}: bytes, with k or m for KiB or MiB, or off"))
}

/// [`ProxyCli::splice_above`]: a size, or `None` for off. (An alias, so that clap takes the
/// parser's `Option` as the value rather than the flag as optional.)
pub type SpliceAbove = Option<u64>;

/// The flags `hintq serve` and `hintq proxy` share.
#[derive(Args, Clone, Debug)]
pub(crate) struct ServerCli {
    /// Address to listen on, e.g. 127.0.0.1:8080 (port 0: any free port).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Event backend [default: $HINTQ_BACKEND, else uring where it works, else epoll].
    #[arg(long, value_name = "NAME")]
    pub backend: Option<Backend>,
    /// Thread pattern: reactor, leader-followers, half-sync, sharded, sharded-shared.
    #[arg(long, value_name = "NAME", default_value = "reactor")]
    pub pattern: Pattern,
    /// Threads (Half-Sync: workers; ignored by the reactor).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_threads)]
    pub threads: usize,
    /// Worker processes, each running the pattern and threads above with its own SO_REUSEPORT
    /// listener on the same address; the kernel spreads connections over them by hashing.
    /// Each process has its own descriptor limit (RLIMIT_NOFILE), so N processes hold N times
    /// the connections of one. SIGINT/SIGTERM drain them all.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_processes)]
    pub processes: usize,
    /// Internal: run as a worker process of a `--processes` supervisor (see
    /// `hintq_serve::processes`).
    #[arg(long, hide = true, value_name = "PID,FD,ADDR")]
    pub worker: Option<WorkerOf>,
    /// Access log file, or - for standard output [default: none].
    #[arg(long, value_name = "FILE|-")]
    pub access_log: Option<String>,
    /// Close a keep-alive connection after this long without a request.
    #[arg(long, value_name = "D", default_value = "60s", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// Total time a client has to send a request head, from its first byte (slowloris: 408).
    #[arg(long, value_name = "D", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: Duration,
    /// Close a connection whose response made no progress for this long.
    #[arg(long, value_name = "D", default_value = "30s", value_parser = parse_duration)]
    pub send_timeout: Duration,
    /// On SIGINT/SIGTERM: no new connections, idle keep-alive connections closed at once,
    /// responses in flight finished for up to this long; then what is left is closed. A
    /// second SIGINT/SIGTERM closes everything at once.
    #[arg(long, value_name = "D", default_value = "10s", value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// rtsig only: RT signals alone, as Provos & Lever's phhttpd, never switching to
    /// polling under load (a signal-queue overflow still recovers with one poll scan). By
    /// default rtsig is their hybrid, which polls while the load is heavy.
    #[arg(long)]
    pub no_hybrid: bool,
    /// The most events one get_next_event call returns (Banga's array_max): the length of
    /// each waiting thread's event array. Leader-followers takes one per call whatever this
    /// says.
    #[arg(long, value_name = "N", default_value_t = Config::ARRAY_MAX, value_parser = parse_array_max)]
    pub array_max: usize,
    /// io_uring: a thread that waits for events sleeps through this window for a batch
    /// (returning early only once 64 completions are in), unless its first event comes after
    /// the window. Fewer, larger batches cost less CPU per request while the server has idle
    /// time, and each event waits up to the window longer: a trade of latency for CPU, which
    /// loses throughput where few clients wait on each reply (see the README). Needs Linux
    /// 6.12; ignored by other backends [default: 0, off].
    #[arg(long, value_name = "D", default_value = "0", hide_default_value = true, value_parser = parse_duration)]
    pub coalesce: Duration,
    /// io_uring: the ring sends the replies where the kernel has IORING_OP_SEND (reactor and
    /// sharded patterns); off leaves sending to the server (sendmsg, as on the other
    /// backends; for hintq serve, with their default file-cache hold too). Ignored by other
    /// backends.
    #[arg(long, value_name = "on|off", default_value = "on", action = ArgAction::Set, value_parser = parse_on_off)]
    pub uring_sends: bool,
    /// io_uring: the ring receives the requests (multishot receive, Linux 6.0) for the
    /// connections that ask; off leaves reading to the server (read, as on the other
    /// backends). Ignored by other backends.
    #[arg(long, value_name = "on|off", default_value = "on", action = ArgAction::Set, value_parser = parse_on_off)]
    pub uring_receive: bool,
    /// io_uring: a ring entered by one thread only, whose completion work the kernel runs
    /// when that thread waits (SINGLE_ISSUER | DEFER_TASKRUN, Linux 6.1); off builds a ring
    /// any thread may enter (COOP_TASKRUN). Ignored by other backends.
    #[arg(long, value_name = "on|off", default_value = "on", action = ArgAction::Set, value_parser = parse_on_off)]
    pub uring_defer: bool,
    /// Measure the event API inside the server and write the runtime's counters per thread
    /// as JSON to FILE when it exits (after the drain; with --processes, one FILE.<pid> per
    /// worker): get_next_event calls, events and ns, split into waits whose first,
    /// zero-timeout call found events (ready_*: no blocking, Banga's Fig. 6) and the others
    /// (blocked_*: sleep included); declares (declares_new: descriptors added to the interest
    /// set) and revokes with their ns (Fig. 7). Costs two clock reads per operation and one
    /// more get_next_event call per wait that blocks; - for standard output [default: off].
    #[arg(long, value_name = "FILE|-")]
    pub stats: Option<String>,
}

/// `hintq serve`'s flags.
#[derive(Args, Clone, Debug)]
#[command(after_help = hintq_serve::serve::HELP_FEATURES)]
pub(crate) struct ServeCli {
    /// Directory to serve; nothing outside it is ever read.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    #[command(flatten)]
    pub server: ServerCli,
    /// Open-file cache: how long a cached file (descriptor, metadata, and the bytes of a small
    /// file) is served before it is opened again; a change to a file shows within this
    /// period (0: no cache).
    #[arg(long, value_name = "D", default_value = "1s", value_parser = parse_duration)]
    pub file_cache_valid: Duration,
    /// Open-file cache: most paths held.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub file_cache_entries: usize,
    /// Open-file cache: the largest file whose bytes are held in memory and sent with its
    /// head in one system call; larger files go by `sendfile` (0: every non-empty file).
    /// 64 MiB of bodies in all [default: 32768 where io_uring sends the replies (reactor and
    /// sharded patterns), else 16384].
    #[arg(long, value_name = "BYTES")]
    pub file_cache_hold: Option<u64>,
}

/// `hintq proxy`'s flags: those both servers take, plus the upstream's. `--pattern` and
/// `--threads` say what they mean for the proxy (see the module docs for the patterns).
#[derive(Args, Clone, Debug)]
#[command(mut_arg("pattern", |a| a.help(
    "Thread pattern: reactor, sharded (a SO_REUSEPORT listener per thread) or sharded-shared (one \
     listener shared through a hintq::Group); not leader-followers or half-sync: a proxied \
     connection has two descriptors, which a pool would hand to two threads"
)))]
#[command(mut_arg("threads", |a| a.help("Threads for sharded and sharded-shared (the reactor has one)")))]
#[command(mut_arg("array_max", |a| a.help(
    "The most events one get_next_event call returns (Banga's array_max): the length of each \
     thread's event array"
)))]
pub(crate) struct ProxyCli {
    /// The upstream server, e.g. 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    pub upstream: SocketAddr,
    /// No upstream progress for this long: 504 (or a cut-short response once it started).
    #[arg(long, value_name = "D", default_value = "60s", value_parser = parse_duration)]
    pub upstream_timeout: Duration,
    /// Idle upstream connections kept per thread.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_idle_upstream: usize,
    /// Response bodies with a Content-Length and more than this many bytes still to come
    /// after the response's first read (k and m for KiB and MiB; that read takes at most this
    /// and 1 KiB for the head) go from the upstream to the client by splice(2), never entering
    /// the proxy's memory; off: every body is copied. Chunked bodies are always copied, and so
    /// is every body on io_uring with --uring-splice off.
    #[arg(long, value_name = "BYTES|off", default_value = "16k", value_parser = parse_splice_above)]
    pub splice_above: SpliceAbove,
    /// io_uring: splice bodies as --splice-above says, upstreams read as on epoll (off: the
    /// ring receives every upstream byte and the proxy copies bodies: fewer system calls,
    /// more CPU per large body).
    #[arg(long, value_name = "on|off", default_value = "on", action = ArgAction::Set, value_parser = parse_on_off)]
    pub uring_splice: bool,
    #[command(flatten)]
    pub server: ServerCli,
}

impl From<ServerCli> for hintq_serve::args::ServerArgs {
    fn from(c: ServerCli) -> hintq_serve::args::ServerArgs {
        hintq_serve::args::ServerArgs {
            listen: c.listen,
            backend: c.backend,
            pattern: c.pattern,
            threads: c.threads,
            processes: c.processes,
            worker: c.worker,
            access_log: c.access_log,
            idle_timeout: c.idle_timeout,
            header_timeout: c.header_timeout,
            send_timeout: c.send_timeout,
            drain_timeout: c.drain_timeout,
            no_hybrid: c.no_hybrid,
            array_max: c.array_max,
            coalesce: c.coalesce,
            uring_sends: c.uring_sends,
            uring_receive: c.uring_receive,
            uring_defer: c.uring_defer,
            stats: c.stats,
        }
    }
}

impl From<ServeCli> for hintq_serve::serve::ServeArgs {
    fn from(c: ServeCli) -> hintq_serve::serve::ServeArgs {
        hintq_serve::serve::ServeArgs {
            root: c.root,
            server: c.server.into(),
            file_cache_valid: c.file_cache_valid,
            file_cache_entries: c.file_cache_entries,
            file_cache_hold: c.file_cache_hold,
        }
    }
}

impl From<ProxyCli> for hintq_serve::proxy::ProxyArgs {
    fn from(c: ProxyCli) -> hintq_serve::proxy::ProxyArgs {
        hintq_serve::proxy::ProxyArgs {
            upstream: c.upstream,
            upstream_timeout: c.upstream_timeout,
            max_idle_upstream: c.max_idle_upstream,
            splice_above: c.splice_above,
            uring_splice: c.uring_splice,
            server: c.server.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        server: ServerCli,
    }

    #[derive(clap::Parser)]
    struct ProxyOnly {
        #[command(flatten)]
        proxy: ProxyCli,
    }

    fn config(args: &[&str]) -> Config {
        let c = Cli::try_parse_from(args).unwrap();
        hintq_serve::args::ServerArgs::from(c.server).pattern_config().unwrap()
    }

    #[test]
    fn rtsig_is_the_hybrid_unless_no_hybrid_is_given() {
        let cfg = |extra: &[&str]| {
            let args = ["x", "--listen", "127.0.0.1:0", "--backend", "rtsig"];
            config(&[&args[..], extra].concat())
        };
        assert!(cfg(&[]).rtsig_hybrid.enabled);
        assert!(!cfg(&["--no-hybrid"]).rtsig_hybrid.enabled);
    }

    #[test]
    fn array_max_stats_coalesce_and_uring_switches_reach_the_runtime() {
        let cfg = |extra: &[&str]| {
            let args = ["x", "--listen", "127.0.0.1:0", "--backend", "epoll"];
            config(&[&args[..], extra].concat())
        };
        let plain = cfg(&[]);
        assert_eq!(plain.array_max, Config::ARRAY_MAX);
        assert!(!plain.measure && !plain.probe_waits);
        assert_eq!(plain.coalesce, Duration::ZERO, "coalescing is off unless asked for");
        let asked = cfg(&["--array-max", "4", "--stats", "s.json", "--coalesce", "50us"]);
        assert_eq!(asked.array_max, 4);
        assert!(asked.measure && asked.probe_waits);
        assert_eq!(asked.coalesce, Duration::from_micros(50));
        let bad = ["x", "--listen", "127.0.0.1:0", "--array-max", "0"];
        assert!(Cli::try_parse_from(bad).is_err());
        assert!(
            plain.uring_sends && plain.uring_receives && plain.uring_defer,
            "the ring does all by default"
        );
        let off = cfg(&["--uring-sends", "off", "--uring-receive", "off", "--uring-defer", "off"]);
        assert!(!off.uring_sends && !off.uring_receives && !off.uring_defer);
        let on = cfg(&["--uring-sends", "on", "--uring-receive", "on", "--uring-defer", "on"]);
        assert!(on.uring_sends && on.uring_receives && on.uring_defer);
        let bad = ["x", "--listen", "127.0.0.1:0", "--uring-sends", "0"];
        assert!(Cli::try_parse_from(bad).is_err(), "on or off, nothing else");
    }

    /// `--splice-above` reaches the configuration: 16 KiB by default, sizes with k and m,
    /// `off`; anything else is refused.
    #[test]
    fn splice_above_parses_and_reaches_the_config() {
        let parse = |extra: &[&str]| {
            let args = ["x", "--listen", "127.0.0.1:0", "--backend", "epoll", "--upstream", "127.0.0.1:1"];
            ProxyOnly::try_parse_from(args.iter().chain(extra)).map(|c| {
                let a = hintq_serve::proxy::ProxyArgs::from(c.proxy);
                a.config().unwrap().splice_above
            })
        };
        assert_eq!(parse(&[]).unwrap(), Some(hintq_serve::proxy::SPLICE_ABOVE));
        assert_eq!(hintq_serve::proxy::SPLICE_ABOVE, 16 * 1024);
        assert_eq!(parse(&["--splice-above", "off"]).unwrap(), None);
        assert_eq!(parse(&["--splice-above", "256k"]).unwrap(), Some(256 << 10));
        assert_eq!(parse(&["--splice-above", "1M"]).unwrap(), Some(1 << 20));
        assert_eq!(parse(&["--splice-above", "0"]).unwrap(), Some(0));
        for bad in ["", "k", "-1", "1g", "99999999999999999999m", "of"] {
            assert!(parse(&["--splice-above", bad]).is_err(), "{bad:?}");
        }
    }

    /// `--uring-splice` reaches the proxy's configuration: on unless turned off, on or off only.
    #[test]
    fn uring_splice_reaches_the_config() {
        let parse = |extra: &[&str]| {
            let args = ["x", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1"];
            ProxyOnly::try_parse_from(args.iter().chain(extra))
                .map(|c| hintq_serve::proxy::ProxyArgs::from(c.proxy).config().unwrap().uring_splice)
        };
        assert!(parse(&[]).unwrap(), "io_uring splices unless turned off");
        assert!(parse(&["--uring-splice", "on"]).unwrap());
        assert!(!parse(&["--uring-splice", "off"]).unwrap());
        assert!(parse(&["--uring-splice", "yes"]).is_err(), "on or off, nothing else");
    }

    #[test]
    fn help_lists_the_features() {
        let help = ServeCli::augment_args(clap::Command::new("serve")).render_help().to_string();
        for word in ["ETag", "If-None-Match", "Range", "416", "301", "403", "--root"] {
            assert!(help.contains(word), "{word} missing from:\n{help}");
        }
    }
}
