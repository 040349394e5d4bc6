//! One worker thread: its own [`Queue`], its share of the hot or of the cold connections
//! ([`Role`]), its own counters and histograms. Nothing is shared with other workers but the
//! progress atomics and, for a cold worker, the count of its process's hot workers still
//! running.
//!
//! Hot and cold connections never share a thread: opening a cold connection can cost a long
//! kernel port search (and closing one leaves a TIME_WAIT behind), and on the hot thread that
//! time would be taken from requests due to be sent (issue 13). A cold thread's turns cost
//! the hot threads nothing but CPU, which the self-check reports.
//!
//! Interest follows the DESIGN contract: a connecting socket is watched for `WRITE` (the
//! connect's completion); a connected one for `READ` only, for its whole life. `WRITE` is
//! added only while a request could not be written at once, so a closed-loop run makes no
//! interest change per request.

use crate::config::{ColdLifetime, ColdMode, Config};
use crate::lifetime::Rng;
use crate::plan::Plan;
use crate::stats::{histogram, Cold, ColdSecond, Errors, Hot, Pairs};
use crate::sys::{self, Connect};
use hdrhistogram::Histogram;
use hintq::timer::Timers;
use hintq::{Backend, Event, Interest, Queue, State};
use hintq_http::{parse_response, BodyDecoder, HeadWriter, Limits, Side, Version};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Pause before retrying a connect that failed (refused, no port, timed out).
pub const RETRY_AFTER: Duration = Duration::from_millis(20);

/// Cold connects one worker has in flight at once while it opens its cold connections. All
/// at once (16,700 a process for 100,000 over six) overflowed the server's listen backlogs
/// (`somaxconn` 4096): the kernel dropped SYNs and retried them 1 s, 3 s, 7 s later, every
/// connect outlived `--timeout` and was opened again, and the warm-up took two minutes
/// with 100,000 connect timeouts.
const WARMUP_IN_FLIGHT: usize = 512;
/// Events taken per `get_next_event` call.
const BATCH: usize = 256;
/// Due requests an open-loop worker takes into its backlog per turn: a rate beyond what the
/// thread can send must not keep it from reading responses and sweeping timeouts (the ones
/// left wait for the next turn, their intended send times kept).
const SCHEDULE_BATCH: usize = 1024;
/// Bytes read per `read(2)`.
const READ_SIZE: usize = 64 * 1024;
const NONE: u32 = u32::MAX;

/// Figures a worker publishes while it runs, for the progress bar.
#[derive(Debug, Default)]
pub struct Progress {
    /// Successful responses so far.
    pub successes: AtomicU64,
    /// Errors so far (hot and cold).
    pub errors: AtomicU64,
    /// Cold connections established now.
    pub cold_held: AtomicU64,
}

/// Which connections a worker thread drives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Hot worker `w` of `processes × threads`: the hot connections `i` with
    /// `i % (processes × threads) == w`, and that share of `--rate` and `--requests`.
    #[default]
    Hot,
    /// Cold worker `w`, one per process: the cold connections `i` with `i % processes == w`.
    Cold,
}

/// What one worker (thread) measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerResult {
    /// Which connections it drove.
    pub role: Role,
    /// Hot counters.
    pub hot: Hot,
    /// Cold counters.
    pub cold: Cold,
    /// Latency of successful responses, µs.
    pub latency: Pairs,
    /// Time to establish hot connections, µs.
    pub connect: Pairs,
    /// Seconds of the hot phase.
    pub hot_seconds: f64,
    /// Seconds spent opening cold connections before the hot phase.
    pub warmup_seconds: f64,
    /// Backend the queue actually used.
    pub backend: String,
    /// Successful responses in each second of the hot phase, from its start (the last
    /// second may be partial).
    #[serde(default)]
    pub replies_per_second: Vec<u64>,
    /// Hot: how late each request was written, µs, past the moment it could have gone: in
    /// open loop the later of its intended send time and the moment a connection was free
    /// for it; in closed loop the moment the previous response (or the connect) was taken
    /// from the queue.
    pub send_lag: Pairs,
    /// Hot: how long each complete response waited in its socket before the worker read
    /// it, µs: from the kernel's arrival stamp of its last segment (`SO_TIMESTAMPNS`).
    pub receive_lag: Pairs,
    /// Hot: send lag plus receive lag of each successful request, µs: the part of its
    /// latency that was the generator's own delay.
    pub own_delay: Pairs,
    /// Hot: from the write of each successful request to the arrival of its response's last
    /// segment, µs: the server's time (and the loopback's).
    pub server_time: Pairs,
    /// CPU time of this thread during the hot phase over the phase's wall time, less the
    /// time it spun waiting for a send's moment (`--spin`).
    pub busy: f64,
    /// Share of the hot phase this thread spun waiting for a send's moment (`--spin`).
    #[serde(default)]
    pub spun: f64,
    /// Cold: the connections held at the end of each whole second of the hot phase, and
    /// those opened and closed during it.
    pub cold_per_second: Vec<ColdSecond>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Hot(usize),
    Cold(usize),
}

impl Slot {
    fn encode(self) -> u32 {
        match self {
            Slot::Hot(i) => (i as u32) << 1,
            Slot::Cold(i) => ((i as u32) << 1) | 1,
        }
    }
    fn decode(v: u32) -> Slot {
        if v & 1 == 0 {
            Slot::Hot((v >> 1) as usize)
        } else {
            Slot::Cold((v >> 1) as usize)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Down,
    Connecting,
    Up,
}

/// Where the parse of the current response stands.
enum Resp {
    Head,
    Body { dec: BodyDecoder, status: u16, keep_alive: bool },
}

/// What a piece of input did to the response in progress.
#[derive(Debug, PartialEq, Eq)]
enum Feed {
    NeedMore,
    Complete { status: u16, keep_alive: bool, extra: bool },
    Bad,
    Unsolicited,
}

/// What ended a request or a connection.
#[derive(Clone, Copy, Debug)]
enum End {
    Reset,
    ClosedBeforeResponse,
    Truncated,
    Parse,
    Timeout,
}

struct Conn {
    /// Index among all hot (or all cold) connections of the run: picks target and source.
    index: usize,
    fd: RawFd,
    gen: u32,
    phase: Phase,
    since: Instant,
    /// The (intended) start time of the request in flight.
    req: Option<Instant>,
    /// Hot: when the loop learned the connection was free for a request (connected, or its
    /// response complete): the start of the send lag.
    ready: Instant,
    /// Hot: the send lag of the request in flight.
    sent_late: Duration,
    /// Hot: when the last bytes read arrived at the socket (`SO_TIMESTAMPNS`).
    arrived: Option<Duration>,
    /// Hot: when the request in flight was written (`CLOCK_REALTIME`, as `arrived`).
    sent_real: Duration,
    written: usize,
    want_write: bool,
    got_any: bool,
    /// Cold: established or failed once (the warm-up waits for every one).
    settled: bool,
    resp: Resp,
    carry: Vec<u8>,
}

impl Conn {
    fn new(index: usize, now: Instant) -> Conn {
        Conn {
            index,
            fd: -1,
            gen: 0,
            phase: Phase::Down,
            since: now,
            req: None,
            ready: now,
            sent_late: Duration::ZERO,
            arrived: None,
            sent_real: Duration::ZERO,
            written: 0,
            want_write: false,
            got_any: false,
            settled: false,
            resp: Resp::Head,
            carry: Vec::new(),
        }
    }
}

enum Timer {
    Retry(Slot, u32),
    Expire(usize, u32),
}

/// One worker's state.
pub struct Worker<'a> {
    cfg: &'a Config,
    plan: &'a Plan,
    role: Role,
    progress: &'a Progress,
    /// Hot workers of this process still running: a cold worker stops when they are done.
    hot_running: &'a AtomicUsize,
    q: Queue,
    limits: Limits,
    requests: Vec<Vec<u8>>,
    partial: Vec<Vec<u8>>,
    hot: Vec<Conn>,
    cold: Vec<Conn>,
    by_fd: Vec<u32>,
    idle: Vec<(usize, u32)>,
    /// Cold connections that were connecting when last seen: the only cold ones a sweep
    /// looks at (an established cold connection has no request that could time out, and
    /// walking all of them, 16,700 a process at 100,000, cost the generator a tenth of its
    /// core at ten sweeps a second).
    connecting: Vec<usize>,
    backlog: VecDeque<Instant>,
    timers: Timers<Timer>,
    rng: Rng,
    quota: Option<u64>,
    rate: Option<f64>,
    sent_on_schedule: u64,
    next_send: Option<Instant>,
    t0: Instant,
    deadline: Instant,
    next_sweep: Instant,
    in_flight: usize,
    cold_held: u64,
    cold_settled: usize,
    stats_hot: Hot,
    stats_cold: Cold,
    latency: Histogram<u64>,
    connect: Histogram<u64>,
    replies_per_second: Vec<u64>,
    send_lag: Histogram<u64>,
    receive_lag: Histogram<u64>,
    own_delay: Histogram<u64>,
    server_time: Histogram<u64>,
    /// When the loop learned of the events (or timers) it is handling now.
    woke: Instant,
    /// Thread CPU time at the start of the hot phase.
    cpu0: Duration,
    /// Open loop, hot: wake this long before a send is due and poll until it is (`--spin`).
    spin: Duration,
    /// Time spent in turns that spun and found nothing to do.
    spun: Duration,
    cold_per_second: Vec<ColdSecond>,
    /// Cold connections opened and closed since the last whole second, and when it ends
    /// (`None` before the hot phase: the warm-up is not counted in seconds).
    this_second: ColdSecond,
    next_second: Option<Instant>,
    scratch: Box<[u8]>,
    /// States returned by `declare_interest`, handled after the batch of events, with when
    /// they were learned.
    again: Vec<(Slot, u32, State, Instant)>,
}

fn micros(d: Duration) -> u64 {
    d.as_micros().clamp(1, u128::from(u64::MAX)) as u64
}

fn share(total: u64, w: usize, workers: usize) -> u64 {
    total / workers as u64 + u64::from((w as u64) < total % workers as u64)
}

/// CPU time of the calling thread, user and system.
fn thread_cpu() -> Duration {
    let (user, system) = hintq_sys::cpu_time(hintq_sys::Usage::Thread);
    user + system
}

impl<'a> Worker<'a> {
    /// Worker `w` of its role (see [`Role`]). `hot_running` counts the hot workers of this
    /// process still running; a hot worker's caller decrements it when [`Worker::run`]
    /// returns, and a cold worker stops once it is zero.
    ///
    /// # Errors
    /// Creating the queue.
    pub fn new(
        cfg: &'a Config,
        plan: &'a Plan,
        (role, w): (Role, usize),
        progress: &'a Progress,
        hot_running: &'a AtomicUsize,
    ) -> io::Result<Worker<'a>> {
        let backend = match &cfg.backend {
            Some(name) => name
                .parse::<Backend>()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?,
            None => Backend::from_env()?,
        };
        let workers = match role {
            Role::Hot => plan.hot_workers(),
            Role::Cold => plan.cold_workers(),
        };
        let now = Instant::now();
        let mine = |n: usize| (w..n).step_by(workers).map(|i| Conn::new(i, now)).collect::<Vec<_>>();
        let (hot, cold) = match role {
            Role::Hot => (mine(cfg.connections), Vec::new()),
            Role::Cold => (Vec::new(), mine(cfg.cold)),
        };
        let drives_hot = role == Role::Hot;
        let requests =
            cfg.targets.iter().map(|t| request_bytes(&t.host, &t.path, cfg.new_conn_per_request)).collect();
        let partial = cfg.targets.iter().map(|t| {
            let mut full = request_bytes(&t.host, &t.path, false);
            full.truncate(full.len() - 2);
            full
        });
        let stats_cold = Cold { target: cold.len() as u64, ..Cold::default() };
        Ok(Worker {
            cfg,
            plan,
            role,
            progress,
            hot_running,
            q: Queue::new(backend)?,
            limits: Limits::default(),
            requests,
            partial: partial.collect(),
            hot,
            cold,
            by_fd: Vec::new(),
            idle: Vec::new(),
            connecting: Vec::new(),
            backlog: VecDeque::new(),
            timers: Timers::new(),
            rng: Rng::new(0x5EED ^ ((w as u64) << 32) ^ u64::from(std::process::id())),
            quota: cfg.requests.filter(|_| drives_hot).map(|n| share(n, w, workers)),
            rate: cfg.rate.filter(|_| drives_hot).map(|r| r / workers as f64),
            sent_on_schedule: 0,
            next_send: None,
            t0: now,
            deadline: now,
            next_sweep: now,
            in_flight: 0,
            cold_held: 0,
            cold_settled: 0,
            stats_hot: Hot::default(),
            stats_cold,
            latency: histogram(),
            connect: histogram(),
            replies_per_second: Vec::new(),
            send_lag: histogram(),
            receive_lag: histogram(),
            own_delay: histogram(),
            server_time: histogram(),
            woke: now,
            cpu0: Duration::ZERO,
            spin: cfg.spin.filter(|_| drives_hot && cfg.rate.is_some()).unwrap_or_default(),
            spun: Duration::ZERO,
            cold_per_second: Vec::new(),
            this_second: ColdSecond::default(),
            next_second: None,
            scratch: vec![0; READ_SIZE].into_boxed_slice(),
            again: Vec::new(),
        })
    }

    /// Opens the cold connections, waits (at most `--timeout`) until each is established
    /// or has failed once, meets the other workers at `start`, then drives the hot load (or
    /// keeps the cold connections) until `--duration` passes or `--requests` are done.
    ///
    /// # Errors
    /// A failure of the queue itself (not of a connection: those are counted).
    pub fn run(mut self, start: &Barrier) -> io::Result<WorkerResult> {
        let begin = Instant::now();
        // At most WARMUP_IN_FLIGHT connects at a time; the warm-up ends when every cold
        // connection is up or failed once, or when none has settled for --timeout.
        let (mut next, mut progress) = (0, (begin, 0));
        loop {
            while next < self.cold.len() && next - self.cold_settled < WARMUP_IN_FLIGHT {
                self.open(Slot::Cold(next))?;
                next += 1;
            }
            let now = Instant::now();
            if self.cold_settled > progress.1 {
                progress = (now, self.cold_settled);
            }
            self.deadline = progress.0 + self.cfg.timeout;
            self.next_sweep = self.deadline;
            if self.cold_settled >= self.cold.len() || now >= self.deadline {
                break;
            }
            self.turn()?;
        }
        // Stuck (nothing settled for --timeout): the rest are tried anyway, and counted.
        for i in next..self.cold.len() {
            self.open(Slot::Cold(i))?;
        }
        let warmup = begin.elapsed();
        start.wait();
        self.t0 = Instant::now();
        self.cpu0 = thread_cpu();
        self.deadline = self.t0 + self.cfg.duration;
        self.next_sweep = self.t0;
        self.next_second = Some(self.t0 + Duration::from_secs(1));
        self.this_second = ColdSecond::default();
        self.woke = self.t0;
        if self.rate.is_some() && !self.hot.is_empty() {
            self.next_send = Some(self.t0);
        }
        self.open_hot()?;
        loop {
            #[cfg(feature = "test-hooks")]
            if let Some(d) = self.cfg.stall_hot_turns.filter(|_| self.role == Role::Hot) {
                std::thread::sleep(d);
            }
            let now = Instant::now();
            self.count_seconds(now);
            if now >= self.deadline || self.done() {
                break;
            }
            self.schedule(now)?;
            if now >= self.next_sweep {
                self.sweep(now)?;
            }
            self.turn()?;
        }
        Ok(self.finish(warmup))
    }

    fn done(&self) -> bool {
        match self.role {
            Role::Hot => self.quota == Some(0) && self.in_flight == 0 && self.backlog.is_empty(),
            Role::Cold => self.hot_running.load(Ordering::Relaxed) == 0,
        }
    }

    /// Cold: closes the whole seconds of the hot phase that ended by `now`.
    fn count_seconds(&mut self, now: Instant) {
        while let Some(end) = self.next_second.filter(|&end| self.role == Role::Cold && now >= end) {
            let second = ColdSecond { held: self.cold_held, ..std::mem::take(&mut self.this_second) };
            self.cold_per_second.push(second);
            self.next_second = Some(end + Duration::from_secs(1));
        }
    }

    fn finish(mut self, warmup: Duration) -> WorkerResult {
        let hot_seconds = self.t0.elapsed().as_secs_f64();
        let cpu = thread_cpu().saturating_sub(self.cpu0).saturating_sub(self.spun);
        let busy = cpu.as_secs_f64() / hot_seconds.max(1e-9);
        let spun = self.spun.as_secs_f64() / hot_seconds.max(1e-9);
        self.stats_hot.unfinished = (self.in_flight + self.backlog.len()) as u64;
        self.stats_cold.held_at_end = self.cold_held;
        for slot in (0..self.hot.len()).map(Slot::Hot).chain((0..self.cold.len()).map(Slot::Cold)) {
            self.close(slot);
        }
        WorkerResult {
            hot: self.stats_hot,
            cold: self.stats_cold,
            latency: Pairs::of(&self.latency),
            connect: Pairs::of(&self.connect),
            hot_seconds,
            warmup_seconds: warmup.as_secs_f64(),
            backend: self.q.backend().name().to_string(),
            replies_per_second: self.replies_per_second,
            role: self.role,
            send_lag: Pairs::of(&self.send_lag),
            receive_lag: Pairs::of(&self.receive_lag),
            own_delay: Pairs::of(&self.own_delay),
            server_time: Pairs::of(&self.server_time),
            busy,
            spun,
            cold_per_second: self.cold_per_second,
        }
    }

    /// One wait for events and their handling, then due timers and progress.
    fn turn(&mut self) -> io::Result<()> {
        let now = Instant::now();
        let mut limit = self.deadline.min(self.next_sweep.max(now));
        if let Some(at) = self.next_send {
            limit = limit.min(at);
        }
        if let Some(end) = self.next_second.filter(|_| self.role == Role::Cold) {
            limit = limit.min(end.max(now));
        }
        let mut timeout = self.timers.timeout(now, Some(limit.saturating_duration_since(now)));
        // --spin: a wake-up from a sleep costs tens of µs on some machines and arrives late
        // by as much; near a send's moment the queue is polled instead.
        let spinning = !self.spin.is_zero() && timeout.is_some_and(|t| t <= self.spin);
        if spinning {
            timeout = Some(Duration::ZERO);
        } else if let Some(t) = timeout.filter(|_| !self.spin.is_zero()) {
            timeout = Some(t - self.spin);
        }
        let mut events = [Event::default(); BATCH];
        let n = self.q.get_next_event(&mut events, timeout)?;
        if spinning && n == 0 {
            self.spun += now.elapsed();
        }
        self.handle(&events[..n])?;
        let now = Instant::now();
        self.woke = now;
        while let Some((_, t)) = self.timers.pop_expired(now) {
            match t {
                Timer::Retry(slot, gen) if self.conn(slot).gen == gen => self.open(slot)?,
                Timer::Expire(i, gen) if self.cold[i].gen == gen => {
                    self.stats_cold.expired += 1;
                    self.this_second.closed += 1;
                    self.reopen(Slot::Cold(i))?;
                }
                _ => {}
            }
        }
        self.publish();
        Ok(())
    }

    /// Handles the events one wait returned, then the states declarations returned.
    fn handle(&mut self, events: &[Event]) -> io::Result<()> {
        self.woke = Instant::now();
        for ev in events {
            if !self.q.is_current(ev) {
                continue;
            }
            if let Some(&v) = self.by_fd.get(ev.fd() as usize).filter(|&&v| v != NONE) {
                self.dispatch(Slot::decode(v), ev.state(), self.woke)?;
            }
        }
        while let Some((slot, gen, state, seen)) = self.again.pop() {
            if self.conn(slot).gen == gen {
                self.dispatch(slot, state, seen)?;
            }
        }
        Ok(())
    }

    /// Opens the hot connections, looking at the queue (without waiting) after each connect:
    /// a connection already up is seen, and given its first request, before the next connect
    /// starts, so that its connect time does not include the others' connects.
    fn open_hot(&mut self) -> io::Result<()> {
        let mut events = [Event::default(); BATCH];
        for i in 0..self.hot.len() {
            self.open(Slot::Hot(i))?;
            let n = self.q.get_next_event(&mut events, Some(Duration::ZERO))?;
            self.handle(&events[..n])?;
        }
        Ok(())
    }

    fn publish(&self) {
        let p = self.progress;
        p.successes.store(self.stats_hot.successes, Ordering::Relaxed);
        p.errors.store(self.stats_hot.errors.total() + self.stats_cold.errors.total(), Ordering::Relaxed);
        p.cold_held.store(self.cold_held, Ordering::Relaxed);
    }

    fn conn(&mut self, slot: Slot) -> &mut Conn {
        match slot {
            Slot::Hot(i) => &mut self.hot[i],
            Slot::Cold(i) => &mut self.cold[i],
        }
    }

    /// Handles `state` of `slot`, learned at `seen`.
    fn dispatch(&mut self, slot: Slot, state: State, seen: Instant) -> io::Result<()> {
        let c = self.conn(slot);
        let (phase, gen) = (c.phase, c.gen);
        match (phase, slot) {
            (Phase::Connecting, _) if state.intersects(State::WRITE | State::ERR | State::HUP) => {
                self.connected(slot, seen)
            }
            (Phase::Up, Slot::Hot(i)) => {
                if state.is_readable() {
                    self.hot_read(i)?;
                }
                let c = &self.hot[i];
                if c.gen == gen && c.want_write && state.is_writable() {
                    self.hot_write(i)?;
                }
                Ok(())
            }
            (Phase::Up, Slot::Cold(i)) if state.is_readable() => self.cold_read(i),
            _ => Ok(()),
        }
    }

    /// Starts a connection. Failures are counted and retried after [`RETRY_AFTER`].
    ///
    /// The connect time runs from here, just before this connection's own `connect(2)`, to
    /// the moment its writability is seen (`connected`): not from the start of the batch of
    /// connects it was opened with, which would count the wait behind the others.
    fn open(&mut self, slot: Slot) -> io::Result<()> {
        let index = self.conn(slot).index;
        let to = self.cfg.targets[index % self.cfg.targets.len()].addr;
        let from = self.plan.source(to, index);
        #[cfg(feature = "test-hooks")]
        if let (Some(d), Slot::Hot(_)) = (self.cfg.stall_hot_connects, slot) {
            std::thread::sleep(d);
        }
        let c = self.conn(slot);
        c.gen = c.gen.wrapping_add(1);
        c.since = Instant::now();
        match sys::connect(to, from, self.cfg.port_range) {
            Ok((fd, how)) => {
                if matches!(slot, Slot::Hot(_)) {
                    // Without arrival stamps the receive lag goes unmeasured, nothing else.
                    let _ = sys::stamp_arrivals(fd);
                }
                let c = self.conn(slot);
                c.fd = fd;
                c.phase = Phase::Connecting;
                if let Slot::Cold(i) = slot {
                    self.connecting.push(i);
                }
                let i = fd as usize;
                if self.by_fd.len() <= i {
                    self.by_fd.resize(i + 1, NONE);
                }
                self.by_fd[i] = slot.encode();
                match how {
                    Connect::Done => self.connected(slot, Instant::now()),
                    Connect::InProgress => self.declare(slot, Interest::WRITE),
                }
            }
            Err(e) => {
                self.connect_failed(slot, &e);
                Ok(())
            }
        }
    }

    fn errors(&mut self, slot: Slot) -> &mut Errors {
        match slot {
            Slot::Hot(_) => &mut self.stats_hot.errors,
            Slot::Cold(_) => &mut self.stats_cold.errors,
        }
    }

    fn connect_failed(&mut self, slot: Slot, e: &io::Error) {
        self.errors(slot).count_connect(e);
        self.settle(slot);
        let gen = self.conn(slot).gen;
        self.timers.insert(Instant::now() + RETRY_AFTER, Timer::Retry(slot, gen));
    }

    /// Cold connections count as settled (for the warm-up) once established or failed.
    fn settle(&mut self, slot: Slot) {
        if let Slot::Cold(i) = slot {
            let c = &mut self.cold[i];
            if !c.settled {
                c.settled = true;
                self.cold_settled += 1;
            }
        }
    }

    /// Declares interest and queues the returned state for handling (no readiness is lost
    /// between a connect or a write and the declaration).
    fn declare(&mut self, slot: Slot, interest: Interest) -> io::Result<()> {
        let c = self.conn(slot);
        let (fd, gen) = (c.fd, c.gen);
        // SAFETY: the slot owns `fd` (opened by `sys::connect`, closed only through the queue).
        let state = self.q.declare_interest(unsafe { BorrowedFd::borrow_raw(fd) }, interest)?;
        if !state.is_empty() {
            self.again.push((slot, gen, state, Instant::now()));
        }
        Ok(())
    }

    /// The connect finished (seen at `seen`): check `SO_ERROR`, then start using the
    /// connection.
    fn connected(&mut self, slot: Slot, seen: Instant) -> io::Result<()> {
        let fd = self.conn(slot).fd;
        if let Err(e) = sys::take_error(fd) {
            self.close(slot);
            self.connect_failed(slot, &e);
            return Ok(());
        }
        let now = Instant::now();
        let c = self.conn(slot);
        c.phase = Phase::Up;
        let since = c.since;
        self.declare(slot, Interest::READ)?;
        self.settle(slot);
        match slot {
            Slot::Hot(i) => {
                self.stats_hot.connects += 1;
                self.connect.saturating_record(micros(seen.saturating_duration_since(since)));
                self.hot_ready(i, now)
            }
            Slot::Cold(i) => self.cold_up(i, now),
        }
    }

    fn cold_up(&mut self, i: usize, now: Instant) -> io::Result<()> {
        self.stats_cold.opened += 1;
        self.this_second.opened += 1;
        self.cold_held += 1;
        self.stats_cold.peak_held = self.stats_cold.peak_held.max(self.cold_held);
        let c = &self.cold[i];
        if self.cfg.cold_mode == ColdMode::Partial {
            let head = &self.partial[c.index % self.partial.len()];
            // A partial head is far below any socket buffer; a short write only shortens it.
            let _ = sys::write(c.fd, head);
        }
        if self.cfg.cold_lifetime == ColdLifetime::HeavyTail {
            let life = self.rng.banga_lifetime();
            self.timers.insert(now + life, Timer::Expire(i, c.gen));
        }
        Ok(())
    }

    /// Cold connections read only to notice the server closing them.
    fn cold_read(&mut self, i: usize) -> io::Result<()> {
        loop {
            match sys::read(self.cold[i].fd, &mut self.scratch) {
                Ok(READ_SIZE) => continue,
                Ok(n) if n > 0 => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                _ => {
                    self.stats_cold.closed_by_server += 1;
                    self.this_second.closed += 1;
                    return self.reopen(Slot::Cold(i));
                }
            }
        }
    }

    fn close(&mut self, slot: Slot) {
        let c = self.conn(slot);
        let (fd, phase, busy) = (c.fd, c.phase, c.req.is_some());
        c.gen = c.gen.wrapping_add(1);
        c.phase = Phase::Down;
        c.fd = -1;
        c.req = None;
        c.want_write = false;
        c.resp = Resp::Head;
        c.carry.clear();
        if fd < 0 {
            return;
        }
        if busy {
            self.in_flight -= 1;
        }
        if phase == Phase::Up && matches!(slot, Slot::Cold(_)) {
            self.cold_held -= 1;
        }
        self.by_fd[fd as usize] = NONE;
        // SAFETY: the slot owned `fd` (opened by `sys::connect`) and gives it up here.
        let _ = self.q.close(unsafe { OwnedFd::from_raw_fd(fd) });
    }

    fn reopen(&mut self, slot: Slot) -> io::Result<()> {
        self.close(slot);
        self.open(slot)
    }

    /// A hot connection is up with nothing in flight: give it the next request.
    fn hot_ready(&mut self, i: usize, now: Instant) -> io::Result<()> {
        self.hot[i].ready = self.woke.min(now);
        if self.rate.is_some() {
            match self.backlog.pop_front() {
                Some(at) => self.send(i, at),
                None => {
                    self.idle.push((i, self.hot[i].gen));
                    Ok(())
                }
            }
        } else if self.take_request() {
            self.send(i, now)
        } else {
            Ok(())
        }
    }

    fn take_request(&mut self) -> bool {
        match &mut self.quota {
            Some(0) => return false,
            Some(n) => *n -= 1,
            None => {}
        }
        self.stats_hot.started += 1;
        true
    }

    /// Sends a request intended at `intended` and records how late it leaves (see
    /// [`WorkerResult::send_lag`]).
    fn send(&mut self, i: usize, intended: Instant) -> io::Result<()> {
        let c = &mut self.hot[i];
        let could_go = if self.rate.is_some() { intended.max(c.ready) } else { c.ready };
        c.sent_late = Instant::now().saturating_duration_since(could_go);
        c.arrived = None;
        c.sent_real = sys::realtime();
        self.send_lag.saturating_record(micros(c.sent_late));
        c.req = Some(intended);
        c.written = 0;
        c.got_any = false;
        self.in_flight += 1;
        self.hot_write(i)
    }

    fn hot_write(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.hot[i];
        let req = &self.requests[c.index % self.requests.len()];
        while c.written < req.len() {
            match sys::write(c.fd, &req[c.written..]) {
                Ok(n) => c.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if !c.want_write {
                        c.want_write = true;
                        return self.declare(Slot::Hot(i), Interest::READ | Interest::WRITE);
                    }
                    return Ok(());
                }
                Err(_) => return self.hot_end(i, End::Reset),
            }
        }
        if c.want_write {
            c.want_write = false;
            return self.declare(Slot::Hot(i), Interest::READ);
        }
        Ok(())
    }

    fn hot_read(&mut self, i: usize) -> io::Result<()> {
        let gen = self.hot[i].gen;
        loop {
            match sys::read_stamped(self.hot[i].fd, &mut self.scratch) {
                Ok((0, _)) => return self.hot_eof(i),
                Ok((n, arrived)) => {
                    self.hot[i].arrived = arrived.or(self.hot[i].arrived);
                    let feed = feed(&mut self.hot[i], &self.scratch[..n], &self.limits);
                    self.hot_fed(i, feed)?;
                    if n < READ_SIZE || self.hot[i].gen != gen {
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(_) => return self.hot_end(i, End::Reset),
            }
        }
    }

    fn hot_fed(&mut self, i: usize, feed: Feed) -> io::Result<()> {
        match feed {
            Feed::NeedMore => Ok(()),
            Feed::Bad => self.hot_end(i, End::Parse),
            Feed::Unsolicited => {
                self.stats_hot.errors.unsolicited += 1;
                self.reopen(Slot::Hot(i))
            }
            Feed::Complete { status, keep_alive, extra } => {
                let now = Instant::now();
                let c = &mut self.hot[i];
                let intended = c.req.take().expect("a response completes a request in flight");
                self.in_flight -= 1;
                if status < 400 {
                    self.stats_hot.successes += 1;
                    let second = now.saturating_duration_since(self.t0).as_secs() as usize;
                    if self.replies_per_second.len() <= second {
                        self.replies_per_second.resize(second + 1, 0);
                    }
                    self.replies_per_second[second] += 1;
                    self.latency.saturating_record(micros(now.saturating_duration_since(intended)));
                    if let Some(at) = c.arrived {
                        let waited = sys::realtime().saturating_sub(at);
                        self.receive_lag.saturating_record(micros(waited));
                        self.own_delay.saturating_record(micros(c.sent_late + waited));
                        self.server_time.saturating_record(micros(at.saturating_sub(c.sent_real)));
                    }
                } else {
                    self.stats_hot.errors.status += 1;
                }
                if extra {
                    self.stats_hot.errors.unsolicited += 1;
                    self.reopen(Slot::Hot(i))
                } else if !keep_alive {
                    self.stats_hot.connection_close += 1;
                    self.reopen(Slot::Hot(i))
                } else if self.cfg.new_conn_per_request {
                    self.reopen(Slot::Hot(i))
                } else {
                    self.hot_ready(i, now)
                }
            }
        }
    }

    fn hot_eof(&mut self, i: usize) -> io::Result<()> {
        let c = &mut self.hot[i];
        if c.req.is_none() {
            self.stats_hot.closed_idle += 1;
            return self.reopen(Slot::Hot(i));
        }
        if let Resp::Body { dec, status, .. } = &mut c.resp {
            if dec.finish().is_ok() {
                let f = Feed::Complete { status: *status, keep_alive: false, extra: false };
                return self.hot_fed(i, f);
            }
        }
        let end = if c.got_any { End::Truncated } else { End::ClosedBeforeResponse };
        self.hot_end(i, end)
    }

    /// A request failed (or, with none in flight, the server dropped an idle connection):
    /// count it and re-open the connection at once.
    fn hot_end(&mut self, i: usize, end: End) -> io::Result<()> {
        if self.hot[i].req.is_none() {
            self.stats_hot.closed_idle += 1;
        } else {
            let e = &mut self.stats_hot.errors;
            match end {
                End::Reset => e.reset += 1,
                End::ClosedBeforeResponse => e.closed_before_response += 1,
                End::Truncated => e.truncated += 1,
                End::Parse => e.parse += 1,
                End::Timeout => e.timeout += 1,
            }
        }
        self.reopen(Slot::Hot(i))
    }

    /// Open loop: requests due by now join the backlog; idle connections take them.
    fn schedule(&mut self, now: Instant) -> io::Result<()> {
        let Some(rate) = self.rate else { return Ok(()) };
        for _ in 0..SCHEDULE_BATCH {
            let Some(at) = self.next_send.filter(|&at| at <= now) else { break };
            if !self.take_request() {
                self.next_send = None;
                break;
            }
            self.backlog.push_back(at);
            self.sent_on_schedule += 1;
            let next = self.t0 + Duration::from_secs_f64(self.sent_on_schedule as f64 / rate);
            self.next_send = (next < self.deadline).then_some(next);
        }
        while !self.backlog.is_empty() {
            let Some((i, gen)) = self.idle.pop() else { break };
            let c = &self.hot[i];
            if c.gen == gen && c.phase == Phase::Up && c.req.is_none() {
                let at = self.backlog.pop_front().expect("not empty");
                self.send(i, at)?;
            }
        }
        Ok(())
    }

    /// Timeouts: connects and requests older than `--timeout` (requests from their intended
    /// send time, including those still waiting in the open-loop backlog).
    fn sweep(&mut self, now: Instant) -> io::Result<()> {
        let timeout = self.cfg.timeout;
        self.woke = now;
        self.next_sweep = now + (timeout / 8).clamp(Duration::from_millis(1), Duration::from_millis(100));
        while self.backlog.front().is_some_and(|&at| now.saturating_duration_since(at) >= timeout) {
            self.backlog.pop_front();
            self.stats_hot.errors.timeout += 1;
        }
        let late = |t: Instant| now.saturating_duration_since(t) >= timeout;
        for i in 0..self.hot.len() {
            let c = &self.hot[i];
            if c.phase == Phase::Connecting && late(c.since) {
                self.connect_timeout(Slot::Hot(i))?;
            } else if c.req.is_some_and(late) {
                self.hot_end(i, End::Timeout)?;
            }
        }
        // A cold connection reopened here joins the list again through `open`.
        for i in std::mem::take(&mut self.connecting) {
            let c = &self.cold[i];
            if c.phase != Phase::Connecting {
                continue;
            }
            if late(c.since) {
                self.connect_timeout(Slot::Cold(i))?;
            } else {
                self.connecting.push(i);
            }
        }
        self.connecting.sort_unstable();
        self.connecting.dedup();
        Ok(())
    }

    /// A connect older than `--timeout`: counted, and tried again.
    fn connect_timeout(&mut self, slot: Slot) -> io::Result<()> {
        self.errors(slot).connect_timeout += 1;
        self.close(slot);
        self.settle(slot);
        self.open(slot)
    }
}

/// The request every hot connection sends to a target (and, without its final CRLF, what
/// a partial cold connection sends).
fn request_bytes(host: &str, path: &str, close: bool) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = HeadWriter::request(&mut buf, "GET", path, Version::Http11);
    w.header("Host", host.as_bytes()).header("User-Agent", b"hintq-load");
    if close {
        w.connection_close();
    }
    w.finish();
    buf
}

/// Hands `input` to the response in progress on `c`; keeps an incomplete head in `c.carry`.
fn feed(c: &mut Conn, input: &[u8], limits: &Limits) -> Feed {
    if c.req.is_none() {
        return Feed::Unsolicited;
    }
    c.got_any = true;
    let mut carry = std::mem::take(&mut c.carry);
    let from_carry = !carry.is_empty();
    if from_carry {
        carry.extend_from_slice(input);
    }
    let data = if from_carry { &carry[..] } else { input };
    let (feed, keep_from) = step(&mut c.resp, data, limits);
    if from_carry {
        carry.drain(..keep_from);
    } else {
        carry.extend_from_slice(&input[keep_from..]);
    }
    c.carry = carry;
    feed
}

/// Parses heads (skipping 1xx) and decodes the body. Returns what happened and from where
/// the input must be kept for the next call (the start of an incomplete head).
fn step(resp: &mut Resp, data: &[u8], limits: &Limits) -> (Feed, usize) {
    let mut pos = 0;
    loop {
        match resp {
            Resp::Head => match parse_response(&data[pos..], limits, false) {
                Err(_) => return (Feed::Bad, data.len()),
                Ok(None) => return (Feed::NeedMore, pos),
                Ok(Some(h)) => {
                    pos += h.head_len;
                    if !h.is_informational() {
                        let dec = BodyDecoder::new(h.framing, Side::Response, limits);
                        *resp = Resp::Body { dec, status: h.status, keep_alive: h.keep_alive };
                    }
                }
            },
            Resp::Body { dec, status, keep_alive } => {
                if dec.is_done() {
                    let f =
                        Feed::Complete { status: *status, keep_alive: *keep_alive, extra: pos < data.len() };
                    *resp = Resp::Head;
                    return (f, data.len());
                }
                if pos == data.len() {
                    return (Feed::NeedMore, data.len());
                }
                match dec.decode(&data[pos..]) {
                    Err(_) => return (Feed::Bad, data.len()),
                    Ok(d) if d.consumed == 0 && !d.done => return (Feed::NeedMore, data.len()),
                    Ok(d) => pos += d.consumed,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Conn {
        let mut c = Conn::new(0, Instant::now());
        c.req = Some(Instant::now());
        c
    }

    fn feed_all(c: &mut Conn, parts: &[&[u8]]) -> Vec<Feed> {
        parts.iter().map(|p| feed(c, p, &Limits::default())).collect()
    }

    #[test]
    fn byte_by_byte_content_length_and_chunked() {
        for resp in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"[..],
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        ] {
            let mut c = conn();
            let parts: Vec<&[u8]> = resp.chunks(1).collect();
            let got = feed_all(&mut c, &parts);
            let (last, rest) = got.split_last().unwrap();
            assert!(rest.iter().all(|f| *f == Feed::NeedMore), "{rest:?}");
            assert_eq!(*last, Feed::Complete { status: 200, keep_alive: true, extra: false });
        }
    }

    #[test]
    fn extra_bytes_bad_lines_and_unsolicited() {
        let mut c = conn();
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\n";
        assert_eq!(feed_all(&mut c, &[two]), [Feed::Complete { status: 200, keep_alive: true, extra: true }]);
        let mut c = conn();
        assert_eq!(feed_all(&mut c, &[b"HTTX/1.1 200 OK\r\n\r\n"]), [Feed::Bad]);
        let mut c = Conn::new(0, Instant::now());
        assert_eq!(feed_all(&mut c, &[b"HTTP/1.1"]), [Feed::Unsolicited]);
    }
}
