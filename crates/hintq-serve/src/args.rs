//! [`ServerArgs`]: the command-line flags `hintq serve` and `hintq proxy` share
//! (`--listen`, `--backend`, `--pattern`, `--threads`, `--processes`, `--access-log`, the
//! timeouts), as plain options: the binary's flags (`src/serve_args.rs`) fill them in.

use crate::access_log::AccessLog;
use crate::processes::WorkerOf;
use hintq::Backend;
use hintq_patterns::{Config, Pattern};
use std::fmt::Write as _;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// What the flags `hintq serve` and `hintq proxy` share asked for.
#[derive(Clone, Debug)]
pub struct ServerArgs {
    /// Address to listen on, e.g. 127.0.0.1:8080 (port 0: any free port).
    pub listen: SocketAddr,
    /// Event backend [default: $HINTQ_BACKEND, else uring where it works, else epoll].
    pub backend: Option<Backend>,
    /// Thread pattern: reactor, leader-followers, half-sync, sharded, sharded-shared.
    pub pattern: Pattern,
    /// Threads (Half-Sync: workers; ignored by the reactor).
    pub threads: usize,
    /// Worker processes, each running the pattern and threads above with its own SO_REUSEPORT
    /// listener on the same address; the kernel spreads connections over them by hashing.
    /// Each process has its own descriptor limit (RLIMIT_NOFILE), so N processes hold N times
    /// the connections of one. SIGINT/SIGTERM drain them all.
    pub processes: usize,
    /// Internal: run as a worker process of a `--processes` supervisor (see
    /// `hintq_serve::processes`).
    pub worker: Option<WorkerOf>,
    /// Access log file, or - for standard output [default: none].
    pub access_log: Option<String>,
    /// Close a keep-alive connection after this long without a request.
    pub idle_timeout: Duration,
    /// Total time a client has to send a request head, from its first byte (slowloris: 408).
    pub header_timeout: Duration,
    /// Close a connection whose response made no progress for this long.
    pub send_timeout: Duration,
    /// On SIGINT/SIGTERM: no new connections, idle keep-alive connections closed at once,
    /// responses in flight finished for up to this long; then what is left is closed. A
    /// second SIGINT/SIGTERM closes everything at once.
    pub drain_timeout: Duration,
    /// rtsig only: RT signals alone, as Provos & Lever's phhttpd, never switching to
    /// polling under load (a signal-queue overflow still recovers with one poll scan). By
    /// default rtsig is their hybrid, which polls while the load is heavy.
    pub no_hybrid: bool,
    /// The most events one get_next_event call returns (Banga's array_max): the length of
    /// each waiting thread's event array. Leader-followers takes one per call whatever this
    /// says.
    pub array_max: usize,
    /// io_uring: a thread that waits for events sleeps through this window for a batch
    /// (returning early only once 64 completions are in), unless its first event comes after
    /// the window. Fewer, larger batches cost less CPU per request while the server has idle
    /// time, and each event waits up to the window longer: a trade of latency for CPU, which
    /// loses throughput where few clients wait on each reply (see the README). Needs Linux
    /// 6.12; ignored by other backends [default: 0, off].
    pub coalesce: Duration,
    /// io_uring: the ring sends the replies where the kernel has IORING_OP_SEND (reactor and
    /// sharded patterns); off leaves sending to the server (sendmsg, as on the other
    /// backends; for hintq serve, with their default file-cache hold too). Ignored by other
    /// backends.
    pub uring_sends: bool,
    /// io_uring: the ring receives the requests (multishot receive, Linux 6.0) for the
    /// connections that ask; off leaves reading to the server (read, as on the other
    /// backends). Ignored by other backends.
    pub uring_receive: bool,
    /// io_uring: a ring entered by one thread only, whose completion work the kernel runs
    /// when that thread waits (SINGLE_ISSUER | DEFER_TASKRUN, Linux 6.1); off builds a ring
    /// any thread may enter (COOP_TASKRUN). Ignored by other backends.
    pub uring_defer: bool,
    /// Measure the event API inside the server and write the runtime's counters per thread
    /// as JSON to FILE when it exits (after the drain; with --processes, one `FILE.<pid>` per
    /// worker): get_next_event calls, events and ns, split into waits whose first,
    /// zero-timeout call found events (ready_*: no blocking, Banga's Fig. 6) and the others
    /// (blocked_*: sleep included); declares (declares_new: descriptors added to the interest
    /// set) and revokes with their ns (Fig. 7). Costs two clock reads per operation and one
    /// more get_next_event call per wait that blocks; - for standard output [default: off].
    pub stats: Option<String>,
}

impl ServerArgs {
    /// The pattern configuration these flags ask for.
    ///
    /// # Errors
    /// `HINTQ_BACKEND` naming no backend.
    pub fn pattern_config(&self) -> io::Result<Config> {
        let backend = match self.backend {
            Some(b) => b,
            None => {
                Backend::from_env().map_err(|e| io::Error::new(e.kind(), format!("HINTQ_BACKEND: {e}")))?
            }
        };
        let mut cfg = Config::new(self.pattern, self.threads, backend, self.listen_addr());
        cfg.reuseport = self.worker.is_some();
        cfg.rtsig_hybrid.enabled = !self.no_hybrid;
        cfg.array_max = self.array_max;
        cfg.coalesce = self.coalesce;
        cfg.uring_sends = self.uring_sends;
        cfg.uring_receives = self.uring_receive;
        cfg.uring_defer = self.uring_defer;
        cfg.measure = self.stats.is_some();
        cfg.probe_waits = self.stats.is_some();
        Ok(cfg)
    }

    /// Where this process listens: a worker's concrete address, else `--listen`.
    pub fn listen_addr(&self) -> SocketAddr {
        self.worker.map_or(self.listen, |w| w.listen)
    }

    /// `backend B, pattern P, threads T` and, with `--processes`, `, processes N`: the
    /// shape of the server for its start-up line.
    pub fn shape(&self, backend: Backend, pattern: Pattern, threads: usize) -> String {
        let mut s = format!("backend {backend}, pattern {pattern}, threads {threads}");
        if self.processes > 1 {
            let _ = write!(s, ", processes {}", self.processes);
        }
        s
    }

    /// The access log, if asked for.
    ///
    /// # Errors
    /// Opening the file.
    pub fn open_access_log(&self) -> io::Result<Option<AccessLog>> {
        let open = |p: &str| {
            AccessLog::open(p).map_err(|e| io::Error::new(e.kind(), format!("--access-log {p}: {e}")))
        };
        self.access_log.as_deref().map(open).transpose()
    }
}
