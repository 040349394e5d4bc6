//! `hintq proxy`: the non-caching HTTP/1.1 reverse proxy Banga, Mogul & Druschel measured
//! their event API with, in front of one upstream server.
//!
//! Each request is relayed to the upstream and its response back, without caching, over
//! persistent upstream connections that every client of a thread shares (an idle pool per
//! thread). What it guarantees, by row of RELIABILITY.md:
//!
//! | row | what the proxy does |
//! |---|---|
//! | S1–S10, P5 | the request head is parsed by `hintq-http`; ambiguous or invalid framing is answered 4xx/5xx and the connection closed, never forwarded |
//! | S11, S12 | a header deadline (`408`) and an idle deadline (silent close) per connection |
//! | P1 | upstream refused or reset before a response → `502`; no response within the upstream timeout → `504` |
//! | P2 | an invalid upstream response (CL, CL+TE, bad TE, bad bytes) → `502`, that upstream connection closed |
//! | P3 | an upstream body cut short is cut short downstream: no last chunk, or fewer bytes than the Content-Length, then a close |
//! | P4 | bytes after the response (or a body to HEAD/204/304) are dropped and that upstream connection is not reused |
//! | P6 | hop-by-hop fields (and those `Connection` names) stripped both ways; `Via: 1.1 hintq` added |
//! | P7 | CR, LF or NUL in a field value from either side is refused (400 / 502), never forwarded |
//! | P8 | `Expect: 100-continue`: the head is forwarded at once, the upstream's `100` relayed, then the body |
//! | P9 | a request that failed on the upstream is never sent again, except an idempotent request without body whose *reused* connection failed before any response byte: that one is sent once more on a new connection |
//!
//! Bodies of any size stream through fixed buffers ([`BUF_SIZE`] each, at most four per
//! client connection, none while it is idle): interest in reading is declared only while
//! there is room, so a fast sender waits for a slow receiver. Bodies keep their framing
//! (Content-Length stays Content-Length with the same length, chunked stays chunked); a body
//! delimited by the upstream's close is chunked for HTTP/1.1 clients, and HTTP/1.0 clients
//! get chunked or close-delimited bodies de-chunked with a close.
//!
//! A Content-Length body with more than [`Config::splice_above`] (16 KiB by default) bytes
//! still to come after the response's first read goes from the
//! upstream's socket to the client's by `splice(2)` through a pipe (a per-thread pool of
//! [`PIPE_SIZE`] pipes, one per session while its body crosses), on every backend (on
//! io_uring unless [`Config::uring_splice`] is off: then the upstream is polled and read as on
//! epoll, not received by the ring): each splice asks for no more than the length has left,
//! and the pipe empties into the client only after what was copied before it. The first read
//! of a response takes no more than the threshold and room for a head, so a large body that
//! came with its head in one write is copied only that far, and one with little more left
//! than that read took is copied whole (a few KiB cost less to copy than two splices).
//!
//! # Threads: `reactor`, `sharded` and `sharded-shared`, and why not the pools
//!
//! A proxied exchange has two descriptors, the client's and the upstream's, and both need
//! readiness: the session state machine must run when either becomes ready, and never on
//! two threads at once. The proxy is an ordinary [`hintq_patterns::Handler`] on the one
//! runtime `hintq serve` runs on (listeners, accept with its `EMFILE` back-off, deadlines,
//! drain): a session is the connection's state, the client's socket its own descriptor,
//! and the upstream socket is attached to the connection ([`hintq_patterns::Fds::attach`])
//! in the queue of the thread that owns it, so its events run the same handler on the same
//! session, behind the same in-flight flag. Each thread's idle upstream pool is its
//! [`Handler::Local`] state; an idle upstream socket is parked with the thread
//! ([`hintq_patterns::Fds::park`]), still watched, so an upstream's close while it is idle
//! reaches the thread ([`Handler::local_event`]) and drops it from the pool.
//!
//! * `--pattern reactor`: one thread, one queue, one listener (the paper's Figure 3 loop).
//! * `--pattern sharded`: N such threads, each with its own `SO_REUSEPORT` listener (the
//!   kernel spreads connections), its own queue and its own idle upstream pool.
//! * `--pattern sharded-shared`: N such threads, each with its own queue, sessions and idle
//!   upstream pool, taking connections from one shared listener declared in a
//!   [`hintq::Group`] with [`Delivery::One`](hintq::Delivery::One) (the paper's process-wide
//!   interest, §9): each readiness of the listener goes to exactly one thread, which accepts
//!   one connection and keeps it; the group re-arms the listener at that thread's next wait,
//!   so the next pending connection goes to whichever thread is waiting. The member queues
//!   run on the chosen backend (the group's shared set is an epoll set every member's
//!   backend watches); every backend can be a member.
//!
//! Leader/Followers and Half-Sync/Half-Async are refused ([`start`] fails with
//! `InvalidInput`): they share one queue in hand-off mode and hand each event to whichever
//! thread is free, so the runtime attaches descriptors only where a thread owns its queue
//! (it refuses `attach` there), and an idle pool per thread could not be told of its
//! sockets' closes, which would reach any thread. Both could be built (a shared pool, re-arms
//! for attached descriptors), but each request would then pay the cross-core wake-up
//! (30–40 µs here, PERF.md) those patterns cost, against a few µs of proxy work. Per-thread
//! queues never hand off a session: only the accept is shared, in `sharded-shared`.
//!
//! # Graceful drain
//!
//! [`Proxy::drain`] (SIGINT/SIGTERM in [`run`]) stops accepting through the runtime's
//! [`Server::drain`] (every thread revokes and closes its listener, or its share of the
//! shared one: new connections are refused), closes each thread's idle upstream pool, lets every exchange in flight finish (its response carries
//! `Connection: close` if its head was not sent yet; the connection closes after it), closes
//! idle client connections (a write shutdown, then the usual linger for the client's close),
//! and after the grace period closes what is left, returning how many.

mod buf;
mod session;
mod settings;
mod stats;
mod sys;

pub use buf::{BUF_SIZE, PIPE_SIZE};
pub use hintq_patterns::Pattern;
pub use stats::ProxyStats;

use crate::access_log::AccessLog;
use crate::args::ServerArgs;
use crate::lifecycle::Lifecycle;
use crate::sys::set_nodelay;
use hintq::{Backend, Interest, State};
use hintq_http::{DateCache, Limits};
use hintq_patterns::{Cx, Handler, Next, Server, Why};
use session::{Ctx, End, Session, Spare, Upstream};
use settings::Settings;
use stats::Stats;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The patterns `hintq proxy` runs on; see the module docs for why not the others.
pub const PATTERNS: [Pattern; 3] = [Pattern::Reactor, Pattern::Sharded, Pattern::ShardedShared];

/// How to run the proxy.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to listen (port 0: any free port, see [`Proxy::local_addr`]).
    pub listen: SocketAddr,
    /// Listen with `SO_REUSEPORT` whatever the pattern (a worker of `--processes`; see
    /// [`hintq_patterns::Config::reuseport`]).
    pub reuseport: bool,
    /// The upstream server.
    pub upstream: SocketAddr,
    /// The event backend.
    pub backend: Backend,
    /// One of [`PATTERNS`]: [`Pattern::Reactor`], [`Pattern::Sharded`] or
    /// [`Pattern::ShardedShared`].
    pub pattern: Pattern,
    /// Threads for `sharded` and `sharded-shared` (the reactor has one).
    pub threads: usize,
    /// Longest wait for the upstream (connect, response, each body read) before `504`, and
    /// for the client to take or send body bytes during an exchange.
    pub upstream_timeout: Duration,
    /// An idle client connection (no request begun) is closed after this.
    pub idle_timeout: Duration,
    /// A request head must be complete this long after its first byte, else `408` (S11).
    pub header_timeout: Duration,
    /// A client that takes no response byte for this long is disconnected.
    pub send_timeout: Duration,
    /// Idle upstream connections kept per thread.
    pub max_idle_upstream: usize,
    /// One line per response, when set.
    pub access_log: Option<Arc<AccessLog>>,
    /// The most events one `get_next_event` call returns
    /// ([`hintq_patterns::Config::array_max`]).
    pub array_max: usize,
    /// Measure the event API inside the proxy ([`hintq_patterns::Config::measure`] and
    /// [`hintq_patterns::Config::probe_waits`]): see [`Proxy::counters`].
    pub measure: bool,
    /// A response body with a Content-Length and more than this many bytes still to come
    /// after the response's first read (which takes at most this and 1 KiB for the head) goes
    /// from the upstream's socket to the client's by `splice(2)` through a pipe, never
    /// entering user space;
    /// `None`: every body is copied. Default [`SPLICE_ABOVE`]. On io_uring only with
    /// [`Config::uring_splice`].
    pub splice_above: Option<u64>,
    /// On io_uring, splice as [`Config::splice_above`] says too (default true). The upstream
    /// connections are then polled and read with `recv(2)` and `splice(2)` as on epoll; with
    /// false the ring receives every upstream byte into its buffers and the proxy copies
    /// bodies (fewer system calls, more CPU: `crates/hintq-serve/bench/sizes-vs-nginx.sh`,
    /// 2026-11-28, CPU per request ÷ nginx's with false then true: 1 KiB 0.76 / 0.77,
    /// 64 KiB 0.93 / 0.88, 256 KiB 1.25 / 0.71, 1 MiB 1.08 / 0.58).
    pub uring_splice: bool,
}

/// The default of [`Config::splice_above`]: bodies larger than 16 KiB (HAProxy's buffer, past
/// which it splices too). A response's first read stops at the threshold and a little room for
/// the head, so a larger body is copied only as far as that read took it and spliced from
/// there on, even when it came with its head in one write. Measured with
/// `crates/hintq-serve/bench/sizes-vs-nginx.sh` (KINDS=proxy RUNS=3 DUR=4, 2026-11-29), CPU
/// per request ÷ nginx's, this default then `--splice-above 64k` (the old default, whose
/// first read took a whole buffer), 1 KiB / 16 KiB / 64 KiB / 256 KiB / 1 MiB: io_uring
/// 0.77 / 0.66 / 0.67 / 0.49 / 0.65 then 0.77 / 0.65 / 1.24 / 0.67 / 0.52 (256 KiB and 1 MiB
/// again, two runs each: 0.53, 0.77 / 0.49, 0.55 then 0.62, 0.65 / 0.59, 0.53: within the
/// noise); epoll 0.84 / 0.70 / 0.72 / 0.58 / 0.45 then 0.96 / 0.71 / 0.95 / 0.75 / 0.54.
/// Splicing 64 KiB bodies without the shorter first read changed nothing (0.93, 0.94): that
/// read had taken the whole body.
pub const SPLICE_ABOVE: u64 = 16 * 1024;

impl Config {
    /// Defaults: reactor, 60 s upstream timeout, 60 s idle, 10 s header, 30 s send (those of
    /// `hintq serve`), 64 idle upstream connections, no access log.
    pub fn new(listen: SocketAddr, upstream: SocketAddr, backend: Backend) -> Config {
        Config {
            listen,
            reuseport: false,
            upstream,
            backend,
            pattern: Pattern::Reactor,
            threads: 1,
            upstream_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            header_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(30),
            max_idle_upstream: 64,
            access_log: None,
            array_max: hintq_patterns::Config::ARRAY_MAX,
            measure: false,
            splice_above: Some(SPLICE_ABOVE),
            uring_splice: true,
        }
    }
}

/// A running proxy. Dropping it without [`Proxy::shutdown`] shuts it down too.
pub struct Proxy {
    server: Server,
    relay: Arc<Relay>,
}

impl Proxy {
    /// The address the listener(s) are bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        self.relay.stats.snapshot()
    }

    /// Client connections open now.
    pub fn open_connections(&self) -> usize {
        self.relay.life.open()
    }

    /// The runtime's counters per thread so far (times only with [`Config::measure`]).
    pub fn counters(&self) -> Vec<hintq_patterns::Counters> {
        self.server.stats()
    }

    /// Stops every thread, closes every connection and listener, returns the final counters.
    pub fn shutdown(self) -> ProxyStats {
        self.server.shutdown();
        self.relay.stats.snapshot()
    }

    /// Graceful shutdown (see the module docs): stop accepting, finish the exchanges in
    /// flight, close idle connections, wait up to `grace` for every client connection to
    /// close, then stop. Returns the connections still open then, closed by force.
    pub fn drain(self, grace: Duration) -> usize {
        self.relay.life.drain(self.server, grace)
    }

    /// [`Proxy::drain`], with the runtime's final counters per thread, cut short when `stop`
    /// says so ([`Lifecycle::drain_counted`]).
    pub fn drain_counted(
        self,
        grace: Duration,
        stop: &mut dyn FnMut(Duration) -> bool,
    ) -> (usize, Vec<hintq_patterns::Counters>) {
        self.relay.life.drain_counted(self.server, grace, stop)
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("server", &self.server).finish()
    }
}

/// Starts the proxy.
///
/// # Errors
/// A pattern not in [`PATTERNS`] (`InvalidInput`), binding the listener(s), creating the
/// group or the queues, spawning threads.
pub fn start(cfg: Config) -> io::Result<Proxy> {
    if !PATTERNS.contains(&cfg.pattern) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "pattern {} is not offered for the proxy (only reactor, sharded and \
                 sharded-shared): a proxied connection's upstream descriptor is attached to it \
                 in the queue of the thread that owns it, and the thread-pool patterns hand \
                 events of one shared queue to any thread",
                cfg.pattern
            ),
        ));
    }
    let shortest = cfg.upstream_timeout.min(cfg.idle_timeout).min(cfg.header_timeout).min(cfg.send_timeout);
    let mut pc = hintq_patterns::Config::new(cfg.pattern, cfg.threads, cfg.backend, cfg.listen);
    pc.reuseport = cfg.reuseport;
    pc.array_max = cfg.array_max;
    (pc.measure, pc.probe_waits) = (cfg.measure, cfg.measure);
    pc.tick = (shortest / 4).clamp(Duration::from_millis(5), Duration::from_millis(100));
    let relay = Arc::new(Relay {
        cfg: Settings {
            short_read_drains: cfg.backend != Backend::Rtsig,
            upstream: cfg.upstream,
            upstream_host: cfg.upstream.to_string(),
            limits: Limits { max_body: None, ..Limits::default() },
            upstream_timeout: cfg.upstream_timeout,
            idle_timeout: cfg.idle_timeout,
            header_timeout: cfg.header_timeout,
            send_timeout: cfg.send_timeout,
            max_idle_upstream: cfg.max_idle_upstream,
            access_log: cfg.access_log,
            splice_above: cfg.splice_above,
            uring_splice: cfg.uring_splice,
        },
        stats: Stats::default(),
        life: Lifecycle::default(),
    });
    let server = hintq_patterns::start(pc, Arc::clone(&relay))?;
    Ok(Proxy { server, relay })
}

/// What `hintq proxy`'s flags asked for: those both servers take, plus the upstream's. `--pattern` and
/// `--threads` say what they mean for the proxy (see the module docs for the patterns).
#[derive(Clone, Debug)]
pub struct ProxyArgs {
    /// The upstream server, e.g. 127.0.0.1:8080.
    pub upstream: SocketAddr,
    /// No upstream progress for this long: 504 (or a cut-short response once it started).
    pub upstream_timeout: Duration,
    /// Idle upstream connections kept per thread.
    pub max_idle_upstream: usize,
    /// Response bodies with a Content-Length and more than this many bytes still to come
    /// after the response's first read (k and m for KiB and MiB; that read takes at most this
    /// and 1 KiB for the head) go from the upstream to the client by splice(2), never entering
    /// the proxy's memory; off: every body is copied. Chunked bodies are always copied, and so
    /// is every body on io_uring with --uring-splice off.
    pub splice_above: Option<u64>,
    /// io_uring: splice bodies as --splice-above says, upstreams read as on epoll (off: the
    /// ring receives every upstream byte and the proxy copies bodies: fewer system calls,
    /// more CPU per large body).
    pub uring_splice: bool,
    pub server: ServerArgs,
}

impl ProxyArgs {
    /// The configuration these flags ask for.
    ///
    /// # Errors
    /// `HINTQ_BACKEND` naming no backend; opening the access log.
    pub fn config(&self) -> io::Result<Config> {
        let s = &self.server;
        let pc = s.pattern_config()?;
        let mut cfg = Config::new(pc.listen, self.upstream, pc.backend);
        cfg.reuseport = pc.reuseport;
        cfg.pattern = s.pattern;
        cfg.threads = s.threads;
        cfg.upstream_timeout = self.upstream_timeout;
        cfg.idle_timeout = s.idle_timeout;
        cfg.header_timeout = s.header_timeout;
        cfg.send_timeout = s.send_timeout;
        cfg.max_idle_upstream = self.max_idle_upstream;
        cfg.splice_above = self.splice_above;
        cfg.uring_splice = self.uring_splice;
        cfg.access_log = s.open_access_log()?.map(Arc::new);
        cfg.array_max = pc.array_max;
        cfg.measure = pc.measure;
        Ok(cfg)
    }
}

impl crate::run::Running for Proxy {
    fn local_addr(&self) -> SocketAddr {
        Proxy::local_addr(self)
    }

    fn drain(
        self,
        grace: Duration,
        stop: &mut dyn FnMut(Duration) -> bool,
    ) -> (usize, Vec<hintq_patterns::Counters>) {
        Proxy::drain_counted(self, grace, stop)
    }
}

/// Runs the proxy until SIGINT or SIGTERM, then drains it gracefully ([`Proxy::drain`]) for
/// up to `--drain-timeout` (a second signal closes everything at once). With `--processes`,
/// the same over worker processes ([`crate::run::run`]). Returns whether everything
/// ended cleanly.
///
/// # Errors
/// As [`start`] and [`ProxyArgs::config`], and starting the worker processes.
pub fn run(args: &ProxyArgs) -> io::Result<bool> {
    let cfg = args.config()?;
    let threads = if cfg.pattern == Pattern::Reactor { 1 } else { cfg.threads.max(1) };
    let shape = args.server.shape(cfg.backend, cfg.pattern, threads);
    let describe = |addr| format!("listening on {addr}, upstream {} ({shape})", args.upstream);
    crate::run::run("proxy", &args.server, describe, || start(cfg))
}

/// The proxy as a handler of the runtime: a connection is a [`Session`], its upstream
/// descriptor attached to it; each thread's [`Local`] holds its idle upstream pool.
struct Relay {
    cfg: Settings,
    stats: Stats,
    life: Lifecycle,
}

/// What each thread keeps: idle upstream connections (parked with the thread, still
/// watched, so an upstream's close while idle is noticed), relay buffers, the Date cache.
#[derive(Default)]
struct Local {
    idle: Vec<Upstream>,
    released: Vec<(Upstream, bool)>,
    pool: buf::Pool,
    date: DateCache,
    spare: Spare,
}

impl Handler for Relay {
    type Conn = Box<Session>;
    type Local = Local;

    /// The client's bytes are taken from the ring where it receives (`Buf::read_from`).
    fn receives(&self) -> bool {
        true
    }

    fn accept(&self, fd: RawFd) -> Option<Box<Session>> {
        let _ = set_nodelay(fd);
        self.stats.accepted.fetch_add(1, Relaxed);
        self.life.opened();
        // An accept is rare next to the requests on a connection: the clock read here costs
        // nothing the batch time would save.
        Some(Box::new(Session::new(fd, Instant::now() + self.cfg.idle_timeout)))
    }

    fn event(&self, cx: &mut Cx<'_, Local>, s: &mut Box<Session>, fd: RawFd, state: State) -> Next {
        if fd == s.client {
            s.client_event(state);
            if cx.fds().draining() {
                s.nudge();
            }
        } else if let Some(up) = s.up.as_mut().filter(|u| u.fd == fd) {
            up.event(state);
        }
        self.drive(cx, s, |_, _| Ok(()))
    }

    fn local_event(&self, cx: &mut Cx<'_, Local>, fd: RawFd, _state: State) {
        // An idle upstream connection spoke or closed: it cannot be used any more. The report
        // is a hint: on io_uring one for the last bytes of a spliced body can come after the
        // splice took them and the connection was parked; one with nothing to read and still
        // open is kept (were its interest one-shot and now spent, a later close is found by
        // the peek `Ctx::upstream` makes before reusing a connection idle that long).
        let (local, fds) = cx.split();
        if let Some(i) = local.idle.iter().position(|u| u.fd == fd) {
            if sys::idle_alive(fd) {
                return;
            }
            local.idle.swap_remove(i);
            self.stats.stale_idle.fetch_add(1, Relaxed);
        }
        fds.close(fd);
    }

    fn close_in(&self, local: &mut Local, mut s: Box<Session>, _fd: RawFd, _why: Why) {
        s.release_buffers(&mut local.pool);
        self.life.closed();
    }

    fn deadline(&self, s: &Box<Session>) -> Option<Instant> {
        Some(s.deadline)
    }

    fn expire(&self, cx: &mut Cx<'_, Local>, s: &mut Box<Session>, _fd: RawFd) -> Next {
        self.drive(cx, s, |s, ctx| s.expire(ctx))
    }

    /// The drain begins on this thread: its idle upstream pool is closed (the sessions are
    /// nudged next, so that an idle one closes now: see `Session::nudge`).
    fn draining(&self, cx: &mut Cx<'_, Local>) {
        let (local, fds) = cx.split();
        while let Some(up) = local.idle.pop() {
            fds.close(up.fd);
        }
    }
}

impl Relay {
    /// What an upstream's reading interest adds: the ring's receive, unless bodies are
    /// spliced on io_uring ([`Config::uring_splice`]): then the upstream is polled and read
    /// by `recv(2)` and `splice(2)` as on epoll, so that no body is in the ring's inbox by
    /// the time its head says it is to be spliced.
    fn upstream_receive(&self) -> Interest {
        if self.cfg.uring_splice {
            Interest::empty()
        } else {
            Interest::RECEIVE
        }
    }

    /// Runs `f` on the session, then its pump; settles the upstream connections it gave up
    /// and declares the interest it wants on its upstream descriptor; returns the one it
    /// wants on the client's.
    fn drive(
        &self,
        cx: &mut Cx<'_, Local>,
        s: &mut Session,
        f: impl FnOnce(&mut Session, &mut Ctx<'_, '_>) -> Result<(), End>,
    ) -> Next {
        // One clock read per batch of events, as `hintq serve` does, not one per event
        // (about three a proxied request): deadlines are set at most one batch's handling
        // early.
        let now = cx.now();
        let (local, fds) = cx.split();
        let mut ctx = Ctx {
            now,
            pool: &mut local.pool,
            idle: &mut local.idle,
            released: &mut local.released,
            fds,
            cfg: &self.cfg,
            stats: &self.stats,
            date: &mut local.date,
            spare: &mut local.spare,
        };
        let r = f(s, &mut ctx).and_then(|()| s.pump(&mut ctx));
        let Ctx { fds, idle, released, pool, .. } = ctx;
        // Idle upstream connections into the pool (parked with the thread), the others closed.
        while let Some((up, keep)) = released.pop() {
            let fd = up.fd;
            if keep
                && !fds.draining()
                && idle.len() < self.cfg.max_idle_upstream
                && fds.declare(fd, Interest::READ | self.upstream_receive()).is_ok()
            {
                fds.park(fd);
                idle.push(up);
            } else {
                fds.close(fd);
            }
        }
        self.stats.peak_buffers.fetch_max(pool.peak_out, Relaxed);
        self.stats.peak_buffered.fetch_max(pool.peak_len, Relaxed);
        self.stats.peak_pipes.fetch_max(pool.peak_pipes, Relaxed);
        let r = r.and_then(|()| match s.upstream_fd() {
            Some(ufd) => {
                let receiving = fds.ring_io().is_some_and(|r| r.receiving(ufd));
                fds.declare(ufd, s.upstream_interest(receiving, self.upstream_receive())).map_err(|_| End)
            }
            None => Ok(()),
        });
        match r {
            Ok(()) => {
                Next::from_interest(s.client_interest(fds.ring_io().is_some_and(|r| r.receiving(s.client))))
            }
            Err(End) => Next::Close,
        }
    }
}
