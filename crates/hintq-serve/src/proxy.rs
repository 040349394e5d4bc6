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
//! # Threads: `reactor`, `sharded` and `sharded-shared`, and why not the pools
//!
//! A proxied exchange has two descriptors, the client's and the upstream's, and both need
//! readiness: the session state machine must run when either becomes ready, and never on
//! two threads at once. The thread patterns of `hintq-patterns` deliver readiness for one
//! descriptor per connection (the [`hintq_patterns::Handler`] gets the client's) and have no
//! way to have a second descriptor watched for the same connection. So the proxy runs its own
//! event loop directly on [`hintq::Queue`], one reactor per thread, with both descriptors of a
//! session in the queue of the thread that owns the session:
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
//! Leader/Followers and Half-Sync/Half-Async are not offered: they hand one descriptor's
//! event to whichever thread is free, so the two descriptors of a session could be handled
//! by two threads at once, and re-arming would have to cover a pair of registrations in a
//! shared queue. Both could be built, but a pool would need a per-session lock (an in-flight
//! flag over both descriptors) and each request would then pay the cross-core wake-up
//! (30–40 µs here, PERF.md) those patterns cost, against a few µs of proxy work. Per-thread
//! reactors never hand off a session: only the accept is shared, in `sharded-shared`.
//!
//! # Graceful drain
//!
//! [`Proxy::drain`] (SIGINT/SIGTERM in [`run`]) stops accepting (every thread revokes and
//! closes its listener, or its share of the shared one: new connections are refused), closes
//! the idle upstream pool, lets every exchange in flight finish (its response carries
//! `Connection: close` if its head was not sent yet; the connection closes after it), closes
//! idle client connections (a write shutdown, then the usual linger for the client's close),
//! and after the grace period closes what is left, returning how many.

mod buf;
mod session;
mod sys;

pub use buf::BUF_SIZE;
pub use hintq_patterns::Pattern;

use crate::common::{parse_duration, set_nodelay, AccessLog, ServerArgs, ShutdownSignals};
use hintq::{Accepted, Acceptor, Backend, Delivery, Event, Group, Interest, Queue, Waker};
use hintq_http::{DateCache, Limits};
use session::{Ctx, End, Session, Upstream};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The patterns `hintq proxy` runs on; see the module docs for why not the others.
pub const PATTERNS: [Pattern; 3] = [Pattern::Reactor, Pattern::Sharded, Pattern::ShardedShared];

/// How to run the proxy.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to listen (port 0: any free port, see [`Proxy::local_addr`]).
    pub listen: SocketAddr,
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
}

impl Config {
    /// Defaults: reactor, 60 s upstream timeout, 60 s idle, 10 s header, 30 s send (those of
    /// `hintq serve`), 64 idle upstream connections, no access log.
    pub fn new(listen: SocketAddr, upstream: SocketAddr, backend: Backend) -> Config {
        Config {
            listen,
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
        }
    }
}

/// What every session reads: the configuration in the form the state machine uses.
pub(crate) struct Settings {
    /// A short read means the socket is drained, and a close still to come arrives as an
    /// event or as `HUP` in one. Not on `rtsig`: its signal for a close says only "readable"
    /// and coalesces with the data's, so there the proxy reads until `EAGAIN`.
    short_read_drains: bool,
    upstream: SocketAddr,
    upstream_host: String,
    limits: Limits,
    upstream_timeout: Duration,
    idle_timeout: Duration,
    header_timeout: Duration,
    send_timeout: Duration,
    max_idle_upstream: usize,
    access_log: Option<Arc<AccessLog>>,
}

/// Counters over all threads (see [`Proxy::stats`]).
#[derive(Default)]
pub(crate) struct Stats {
    accepted: AtomicU64,
    requests: AtomicU64,
    upstream_connects: AtomicU64,
    upstream_reused: AtomicU64,
    stale_idle: AtomicU64,
    retries: AtomicU64,
    bad_gateway: AtomicU64,
    gateway_timeout: AtomicU64,
    client_errors: AtomicU64,
    truncated: AtomicU64,
    /// Client connections open now.
    open: AtomicUsize,
    peak_buffers: AtomicUsize,
    peak_buffered: AtomicUsize,
}

/// A snapshot of the proxy's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Client connections accepted.
    pub accepted: u64,
    /// Request heads parsed and sent upstream.
    pub requests: u64,
    /// New upstream connections opened.
    pub upstream_connects: u64,
    /// Requests sent on an idle upstream connection from the pool.
    pub upstream_reused: u64,
    /// Idle upstream connections found closed (or talking) and dropped: at the reuse check,
    /// or while idle.
    pub stale_idle: u64,
    /// Idempotent requests sent again after a reused connection failed (P9).
    pub retries: u64,
    /// `502` answers.
    pub bad_gateway: u64,
    /// `504` answers.
    pub gateway_timeout: u64,
    /// Other error answers (4xx/5xx for bad requests, 408).
    pub client_errors: u64,
    /// Responses cut short because the upstream's was (P3).
    pub truncated: u64,
    /// The most relay buffers one thread held at once (each [`BUF_SIZE`] bytes).
    pub peak_buffers: usize,
    /// The most bytes one relay buffer ever held.
    pub peak_buffered: usize,
}

impl Stats {
    fn snapshot(&self) -> ProxyStats {
        let g = |a: &AtomicU64| a.load(Relaxed);
        ProxyStats {
            accepted: g(&self.accepted),
            requests: g(&self.requests),
            upstream_connects: g(&self.upstream_connects),
            upstream_reused: g(&self.upstream_reused),
            stale_idle: g(&self.stale_idle),
            retries: g(&self.retries),
            bad_gateway: g(&self.bad_gateway),
            gateway_timeout: g(&self.gateway_timeout),
            client_errors: g(&self.client_errors),
            truncated: g(&self.truncated),
            peak_buffers: self.peak_buffers.load(Relaxed),
            peak_buffered: self.peak_buffered.load(Relaxed),
        }
    }
}

/// A running proxy. Dropping it without [`Proxy::shutdown`] shuts it down too.
pub struct Proxy {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    draining: Arc<AtomicBool>,
    wakers: Vec<Waker>,
    threads: Vec<JoinHandle<()>>,
    stats: Arc<Stats>,
}

impl Proxy {
    /// The address the listener(s) are bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        self.stats.snapshot()
    }

    /// Client connections open now.
    pub fn open_connections(&self) -> usize {
        self.stats.open.load(SeqCst)
    }

    /// Stops every thread, closes every connection and listener, returns the final counters.
    pub fn shutdown(mut self) -> ProxyStats {
        self.stop_and_join();
        self.stats()
    }

    /// Graceful shutdown (see the module docs): stop accepting, finish the exchanges in
    /// flight, close idle connections, wait up to `grace` for every client connection to
    /// close, then stop. Returns the connections still open then, closed by force.
    pub fn drain(mut self, grace: Duration) -> usize {
        self.draining.store(true, SeqCst);
        for w in &self.wakers {
            let _ = w.wake();
        }
        let end = Instant::now() + grace;
        while self.open_connections() > 0 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        let left = self.open_connections();
        self.stop_and_join();
        left
    }

    fn stop_and_join(&mut self) {
        self.stop.store(true, SeqCst);
        for w in &self.wakers {
            let _ = w.wake();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("addr", &self.addr).field("threads", &self.threads.len()).finish()
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
                 sharded-shared): a proxied connection has two descriptors, and the thread-pool \
                 patterns would hand them to two threads",
                cfg.pattern
            ),
        ));
    }
    let n = if cfg.pattern == Pattern::Reactor { 1 } else { cfg.threads.max(1) };
    let sharded = cfg.pattern == Pattern::Sharded;
    let first = Arc::new(hintq_patterns::listen(cfg.listen, sharded)?);
    let addr = hintq_patterns::local_addr(&first)?;
    let group = if cfg.pattern == Pattern::ShardedShared {
        let g = Group::new(cfg.backend)?;
        g.declare_interest(first.as_raw_fd(), Interest::READ, Delivery::One)?;
        Some(g)
    } else {
        None
    };
    let mut listeners = vec![first];
    for i in 1..n {
        listeners.push(if sharded {
            Arc::new(hintq_patterns::listen(addr, true)?)
        } else {
            Arc::clone(&listeners[i - 1])
        });
    }
    let settings = Arc::new(Settings {
        short_read_drains: cfg.backend != Backend::Rtsig,
        upstream: cfg.upstream,
        upstream_host: cfg.upstream.to_string(),
        limits: Limits { max_body: None, ..Limits::default() },
        upstream_timeout: cfg.upstream_timeout,
        idle_timeout: cfg.idle_timeout,
        header_timeout: cfg.header_timeout,
        send_timeout: cfg.send_timeout,
        max_idle_upstream: cfg.max_idle_upstream,
        access_log: cfg.access_log.clone(),
    });
    let stats = Arc::new(Stats::default());
    let stop = Arc::new(AtomicBool::new(false));
    let draining = Arc::new(AtomicBool::new(false));
    let mut proxy = Proxy {
        addr,
        stop: Arc::clone(&stop),
        draining: Arc::clone(&draining),
        wakers: Vec::new(),
        threads: Vec::new(),
        stats: Arc::clone(&stats),
    };
    for (i, listener) in listeners.into_iter().enumerate() {
        let (tx, rx) = mpsc::channel();
        let (settings, stats, stop, draining, backend, group) = (
            Arc::clone(&settings),
            Arc::clone(&stats),
            Arc::clone(&stop),
            Arc::clone(&draining),
            cfg.backend,
            group.clone(),
        );
        let t = std::thread::Builder::new().name(format!("hintq-proxy-{i}")).spawn(move || {
            // The queue is made on its thread: rtsig directs its signals to the creating thread.
            match Worker::new(backend, group, listener, settings, stats) {
                Ok((mut w, waker)) => {
                    let _ = tx.send(Ok(waker));
                    w.run(&stop, &draining);
                }
                Err(e) => drop(tx.send(Err(e))),
            }
        })?;
        proxy.threads.push(t);
        let waker = rx.recv().map_err(|_| io::Error::other("proxy thread died"))??;
        proxy.wakers.push(waker);
    }
    Ok(proxy)
}

/// `hintq proxy`'s flags: those both servers take, plus the upstream's. `--pattern` and
/// `--threads` say what they mean for the proxy (see the module docs for the patterns).
#[derive(clap::Args, Clone, Debug)]
#[command(mut_arg("pattern", |a| a.help(
    "Thread pattern: reactor, sharded (a SO_REUSEPORT listener per thread) or sharded-shared (one \
     listener shared through a hintq::Group); not leader-followers or half-sync: a proxied \
     connection has two descriptors, which a pool would hand to two threads"
)))]
#[command(mut_arg("threads", |a| a.help("Threads for sharded and sharded-shared (the reactor has one)")))]
pub struct ProxyArgs {
    /// The upstream server, e.g. 127.0.0.1:8080.
    #[arg(long, value_name = "ADDR")]
    pub upstream: SocketAddr,
    /// No upstream progress for this long: 504 (or a cut-short response once it started).
    #[arg(long, value_name = "D", default_value = "60s", value_parser = parse_duration)]
    pub upstream_timeout: Duration,
    /// Idle upstream connections kept per thread.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_idle_upstream: usize,
    #[command(flatten)]
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
        let mut cfg = Config::new(s.listen, self.upstream, pc.backend);
        cfg.pattern = s.pattern;
        cfg.threads = s.threads;
        cfg.upstream_timeout = self.upstream_timeout;
        cfg.idle_timeout = s.idle_timeout;
        cfg.header_timeout = s.header_timeout;
        cfg.send_timeout = s.send_timeout;
        cfg.max_idle_upstream = self.max_idle_upstream;
        cfg.access_log = s.open_access_log()?.map(Arc::new);
        Ok(cfg)
    }
}

/// Runs the proxy until SIGINT or SIGTERM, then drains it gracefully ([`Proxy::drain`]) for
/// up to the longest of the send, header and upstream timeouts: an exchange in flight makes
/// progress within those or is ended by them anyway.
///
/// # Errors
/// As [`start`] and [`ProxyArgs::config`].
pub fn run(args: &ProxyArgs) -> io::Result<ProxyStats> {
    let cfg = args.config()?;
    let grace = cfg.send_timeout.max(cfg.header_timeout).max(cfg.upstream_timeout);
    let (pattern, backend) = (cfg.pattern, cfg.backend);
    let threads = if pattern == Pattern::Reactor { 1 } else { cfg.threads.max(1) };
    let signals = ShutdownSignals::block()?;
    let proxy = start(cfg)?;
    eprintln!(
        "hintq proxy: listening on {}, upstream {} (backend {backend}, pattern {pattern}, threads {threads})",
        proxy.local_addr(),
        args.upstream
    );
    let stats = Arc::clone(&proxy.stats);
    let sig = signals.wait();
    eprintln!("hintq proxy: signal {sig}: finishing responses in flight");
    let forced = proxy.drain(grace);
    if forced > 0 {
        eprintln!("hintq proxy: closed {forced} connections still busy after the grace period");
    }
    Ok(stats.snapshot())
}

/// What a descriptor of a thread's queue is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Free,
    Listener,
    Client,
    /// The upstream connection of the client connection with this descriptor.
    Upstream(RawFd),
    /// An idle upstream connection in the pool.
    Idle,
}

/// One thread: a queue, a listener (its own, or its share of the group's), its sessions and
/// its idle upstream pool.
struct Worker {
    q: Queue,
    /// The shared listener's group (`sharded-shared`): the listener is declared there.
    group: Option<Group>,
    /// Until the drain closes it.
    listener: Option<(Arc<OwnedFd>, Acceptor)>,
    lfd: RawFd,
    route: Vec<Route>,
    sessions: Vec<Option<Box<Session>>>,
    idle: Vec<Upstream>,
    released: Vec<(Upstream, bool)>,
    pool: buf::Pool,
    cfg: Arc<Settings>,
    stats: Arc<Stats>,
    date: DateCache,
    tick: Duration,
    /// Out of descriptors: the listener is not watched until then.
    paused: Option<Instant>,
    /// A graceful drain began (see [`Proxy::drain`]).
    draining: bool,
}

impl Worker {
    fn new(
        backend: Backend,
        group: Option<Group>,
        listener: Arc<OwnedFd>,
        cfg: Arc<Settings>,
        stats: Arc<Stats>,
    ) -> io::Result<(Worker, Waker)> {
        let mut q = match &group {
            Some(g) => g.queue()?,
            None => Queue::new(backend)?,
        };
        let waker = q.waker()?;
        let lfd = listener.as_raw_fd();
        if group.is_none() {
            q.declare(lfd, Interest::READ)?;
        }
        let acc = Acceptor::new(lfd)?;
        let shortest =
            cfg.upstream_timeout.min(cfg.idle_timeout).min(cfg.header_timeout).min(cfg.send_timeout);
        let tick = (shortest / 4).clamp(Duration::from_millis(5), Duration::from_millis(100));
        let mut w = Worker {
            q,
            group,
            listener: Some((listener, acc)),
            lfd,
            route: Vec::new(),
            sessions: Vec::new(),
            idle: Vec::new(),
            released: Vec::new(),
            pool: buf::Pool::default(),
            cfg,
            stats,
            date: DateCache::new(),
            tick,
            paused: None,
            draining: false,
        };
        w.set_route(lfd, Route::Listener);
        Ok((w, waker))
    }

    fn set_route(&mut self, fd: RawFd, r: Route) {
        let i = fd as usize;
        if i >= self.route.len() {
            self.route.resize(i + 1, Route::Free);
        }
        self.route[i] = r;
    }

    fn route(&self, fd: RawFd) -> Route {
        self.route.get(fd as usize).copied().unwrap_or(Route::Free)
    }

    /// Sets (or with an empty interest revokes) interest in the listener: in the group's
    /// shared registration for `sharded-shared`, else in this thread's queue.
    fn watch_listener(&mut self, interest: Interest) {
        let _ = match &self.group {
            Some(g) => g.declare_interest(self.lfd, interest, Delivery::One).map(drop),
            None if interest.is_empty() => self.q.declare_interest(self.lfd, interest).map(drop),
            None => self.q.declare(self.lfd, interest),
        };
    }

    fn run(&mut self, stop: &AtomicBool, draining: &AtomicBool) {
        let mut evs = [Event::default(); 64];
        let mut next_sweep = Instant::now() + self.tick;
        while !stop.load(Relaxed) {
            if !self.draining && draining.load(Relaxed) {
                self.begin_drain(Instant::now());
            }
            let timeout = next_sweep.saturating_duration_since(Instant::now());
            let n = self.q.get_next_event(&mut evs, Some(timeout)).unwrap_or(0);
            let now = Instant::now();
            for ev in &evs[..n] {
                if self.q.is_current(ev) {
                    self.dispatch(ev, now);
                }
            }
            if self.paused.is_some_and(|t| now >= t) {
                self.paused = None;
                if self.listener.is_some() {
                    self.watch_listener(Interest::READ);
                }
            }
            if now >= next_sweep {
                self.sweep(now);
                next_sweep = now + self.tick;
            }
        }
        self.close_all();
    }

    fn dispatch(&mut self, ev: &Event, now: Instant) {
        let fd = ev.fd();
        match self.route(fd) {
            Route::Listener => self.accept(now),
            Route::Client => self.drive(fd, now, |s, _| {
                s.client_event(ev.state());
                Ok(())
            }),
            Route::Upstream(c) => self.drive(c, now, |s, _| {
                if let Some(up) = s.up.as_mut().filter(|u| u.fd.as_raw_fd() == fd) {
                    up.event(ev.state());
                }
                Ok(())
            }),
            Route::Idle => {
                // An idle upstream connection spoke or closed: it cannot be used any more.
                if let Some(i) = self.idle.iter().position(|u| u.fd.as_raw_fd() == fd) {
                    let up = self.idle.swap_remove(i);
                    self.stats.stale_idle.fetch_add(1, Relaxed);
                    self.close_upstream(up);
                }
            }
            Route::Free => {}
        }
    }

    /// The drain begins: the listener is revoked and closed (this thread's share of it, for
    /// the group's), the idle upstream pool closed, and every session looked at once, so
    /// that an idle one closes now (see `Session::nudge`).
    fn begin_drain(&mut self, now: Instant) {
        self.draining = true;
        if self.listener.is_some() {
            self.watch_listener(Interest::empty());
            self.set_route(self.lfd, Route::Free);
            self.listener = None;
        }
        while let Some(up) = self.idle.pop() {
            self.close_upstream(up);
        }
        for cfd in 0..self.sessions.len() {
            if self.sessions[cfd].is_some() {
                self.drive(cfd as RawFd, now, |s, _| {
                    s.nudge();
                    Ok(())
                });
            }
        }
    }

    fn accept(&mut self, now: Instant) {
        // A shared listener: one connection per readiness, so that `Delivery::One` spreads
        // them over the threads; an own listener is drained (the kernel already spread them).
        let limit = if self.group.is_some() { 1 } else { 64 };
        for _ in 0..limit {
            let Some((_, acc)) = self.listener.as_mut() else { return };
            let fd = match acc.accept() {
                Ok(Accepted::Conn(fd)) => fd,
                Ok(Accepted::Exhausted) => {
                    // Out of descriptors with none to shed with: the listener stays readable,
                    // so it is not watched for a while, or this loop would spin.
                    self.paused = Some(now + Acceptor::BACKOFF);
                    self.watch_listener(Interest::empty());
                    return;
                }
                Ok(Accepted::Drained | Accepted::Shed(_)) | Err(_) => return,
            };
            let raw = fd.as_raw_fd();
            let _ = set_nodelay(raw);
            if self.q.declare(raw, Interest::READ).is_err() {
                continue; // refused by the backend (select above 1024): closed by the drop
            }
            self.stats.accepted.fetch_add(1, Relaxed);
            self.stats.open.fetch_add(1, SeqCst);
            self.set_route(raw, Route::Client);
            let i = raw as usize;
            if i >= self.sessions.len() {
                self.sessions.resize_with(i + 1, || None);
            }
            self.sessions[i] = Some(Box::new(Session::new(fd, Interest::READ, now + self.cfg.idle_timeout)));
        }
        // Connections may still be pending, and an edge-triggered backend (epoll-et,
        // io_uring) would not report them again: declared anew, the listener reports them.
        // (The group re-arms its one-shot registration at the next wait, which reports them.)
        if self.group.is_none() {
            self.watch_listener(Interest::READ);
        }
    }

    /// Runs `f` on the session of client `cfd`, then its pump, then puts the outcome into
    /// the queue.
    fn drive(
        &mut self,
        cfd: RawFd,
        now: Instant,
        f: impl FnOnce(&mut Session, &mut Ctx<'_>) -> Result<(), End>,
    ) {
        let Some(mut s) = self.sessions.get_mut(cfd as usize).and_then(Option::take) else { return };
        let mut ctx = Ctx {
            now,
            pool: &mut self.pool,
            idle: &mut self.idle,
            released: &mut self.released,
            cfg: &self.cfg,
            stats: &self.stats,
            date: &mut self.date,
            draining: self.draining,
        };
        let r = f(&mut s, &mut ctx).and_then(|()| s.pump(&mut ctx));
        self.settle_released();
        let r = r.and_then(|()| self.sync(cfd, &mut s));
        match r {
            Ok(()) => self.sessions[cfd as usize] = Some(s),
            Err(End) => self.close_session(cfd, s),
        }
        self.stats.peak_buffers.fetch_max(self.pool.peak_out, Relaxed);
        self.stats.peak_buffered.fetch_max(self.pool.peak_len, Relaxed);
    }

    /// Idle upstream connections into the pool, the others revoked and closed.
    fn settle_released(&mut self) {
        while let Some((mut up, keep)) = self.released.pop() {
            if keep && !self.draining && self.idle.len() < self.cfg.max_idle_upstream {
                if up.reg != Interest::READ && self.q.declare(up.fd.as_raw_fd(), Interest::READ).is_err() {
                    self.close_upstream(up);
                    continue;
                }
                up.reg = Interest::READ;
                self.set_route(up.fd.as_raw_fd(), Route::Idle);
                self.idle.push(up);
            } else {
                self.close_upstream(up);
            }
        }
    }

    /// Declares the interest the session wants on both its descriptors.
    fn sync(&mut self, cfd: RawFd, s: &mut Session) -> Result<(), End> {
        let want = s.client_interest();
        if want != s.reg {
            declare(&mut self.q, cfd, want)?;
            s.reg = want;
        }
        if let Some(ufd) = s.upstream_fd() {
            self.set_route(ufd, Route::Upstream(cfd));
            let want = s.upstream_interest();
            let up = s.up.as_mut().expect("has a descriptor");
            if want != up.reg {
                declare(&mut self.q, ufd, want)?;
                up.reg = want;
            }
        }
        Ok(())
    }

    fn close_upstream(&mut self, up: Upstream) {
        let fd = up.fd.as_raw_fd();
        if !up.reg.is_empty() {
            let _ = self.q.declare_interest(fd, Interest::empty());
        }
        self.set_route(fd, Route::Free);
        drop(up);
    }

    fn close_session(&mut self, cfd: RawFd, mut s: Box<Session>) {
        if let Some(up) = s.up.take() {
            self.close_upstream(up);
        }
        s.release_buffers(&mut self.pool);
        if !s.reg.is_empty() {
            let _ = self.q.declare_interest(cfd, Interest::empty());
        }
        self.set_route(cfd, Route::Free);
        drop(s);
        self.stats.open.fetch_sub(1, SeqCst);
    }

    /// Applies the deadlines: every session whose deadline passed is told so.
    fn sweep(&mut self, now: Instant) {
        for cfd in 0..self.sessions.len() {
            if self.sessions[cfd].as_ref().is_some_and(|s| s.deadline <= now) {
                self.drive(cfd as RawFd, now, |s, ctx| s.expire(ctx));
            }
        }
    }

    fn close_all(&mut self) {
        for cfd in 0..self.sessions.len() {
            if let Some(s) = self.sessions[cfd].take() {
                self.close_session(cfd as RawFd, s);
            }
        }
        while let Some(up) = self.idle.pop() {
            self.close_upstream(up);
        }
        if self.listener.is_some() {
            self.watch_listener(Interest::empty());
            self.listener = None;
        }
    }
}

/// Sets or revokes interest; a refusal ends the session.
fn declare(q: &mut Queue, fd: RawFd, want: Interest) -> Result<(), End> {
    let r = if want.is_empty() { q.declare_interest(fd, want).map(drop) } else { q.declare(fd, want) };
    r.map_err(|_| End)
}
