//! The runtime: the connection table, the dispatch every pattern shares, and one thread
//! loop per pattern.

use crate::attach::{self, Cx, Extra, Fds, NONE, PARKED};
use crate::handoff::{Gate, InFlight, Leadership, WorkQueue};
use crate::net::{self, Claim};
use crate::{Config, Handler, Next, Pattern, Role, Why};
use hintq::{Accepted, Acceptor, Delivery, Event, Group, Interest, Queue, Rearm, State, Waker, Wheel};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Per-thread counters, read by [`Server::stats`].
#[derive(Default)]
struct ThreadStats {
    handled: AtomicU64,
    again: AtomicU64,
    accepted: AtomicU64,
    closed: AtomicU64,
    waits: AtomicU64,
    wait_ns: AtomicU64,
    events: AtomicU64,
    most_events: AtomicU64,
    ready_waits: AtomicU64,
    ready_ns: AtomicU64,
    ready_events: AtomicU64,
    blocked_waits: AtomicU64,
    blocked_ns: AtomicU64,
    declares: AtomicU64,
    declare_ns: AtomicU64,
    declares_new: AtomicU64,
    declare_new_ns: AtomicU64,
    revokes: AtomicU64,
    revoke_ns: AtomicU64,
    inserts: AtomicU64,
    insert_ns: AtomicU64,
    rearms: AtomicU64,
    rearm_ns: AtomicU64,
    busy_ns: AtomicU64,
    wait_errors: AtomicU64,
    interest_errors: AtomicU64,
    /// Failed waits since the last successful one (see [`PERSISTENT_WAIT_ERRORS`]).
    failing_waits: AtomicU64,
}

/// What one pattern thread did; times are zero unless [`Config::measure`] was set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Calls of [`Handler::ready`].
    pub handled: u64,
    /// Reports that found their descriptor in flight on another thread (handled again there).
    pub again: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Connections closed by this thread.
    pub closed: u64,
    /// `get_next_event` calls.
    pub waits: u64,
    /// Time inside them.
    pub wait_ns: u64,
    /// Events they returned.
    pub events: u64,
    /// The most events one call returned (at most [`Config::array_max`](crate::Config::array_max)).
    pub most_events: u64,
    /// With [`Config::probe_waits`]: waits whose zero-timeout probe found events, so the
    /// thread did not block (Banga's Fig. 6 measures these: the proxy "never blocks").
    pub ready_waits: u64,
    /// Time inside those probes (zero unless measuring).
    pub ready_ns: u64,
    /// Events those probes returned.
    pub ready_events: u64,
    /// With [`Config::probe_waits`]: waits whose probe found nothing, followed by a call
    /// that may block (`ready_waits + blocked_waits = waits`).
    pub blocked_waits: u64,
    /// Time inside both calls of those waits, sleep included (zero unless measuring).
    pub blocked_ns: u64,
    /// Interest declared by the runtime (new registrations and interest changes, of a
    /// connection, an attached descriptor or the listener; not re-arms).
    pub declares: u64,
    /// Time inside them (zero unless measuring).
    pub declare_ns: u64,
    /// Of `declares`, those that added a descriptor to the interest set (accepted
    /// connections, attached descriptors, interest declared again after none): Banga's
    /// "declaring interest" case of Fig. 7.
    pub declares_new: u64,
    /// Time inside them (zero unless measuring).
    pub declare_new_ns: u64,
    /// Interest revoked by the runtime (closes, detaches, `Next::Wait`).
    pub revokes: u64,
    /// Time inside them (zero unless measuring).
    pub revoke_ns: u64,
    /// Half-Sync: pushes into the work queue.
    pub inserts: u64,
    /// Time inside them.
    pub insert_ns: u64,
    /// Re-activations through [`hintq::Rearm`].
    pub rearms: u64,
    /// Time inside them.
    pub rearm_ns: u64,
    /// Time spent handling (dispatch, handler included).
    pub busy_ns: u64,
    /// `get_next_event` calls that failed. [`PERSISTENT_WAIT_ERRORS`] in a row stop the thread.
    pub wait_errors: u64,
    /// Interest changes (declare, revoke, re-arm) that failed; the loop goes on without them.
    pub interest_errors: u64,
}

/// Failed `get_next_event` calls in a row, with no success between them, after which a
/// thread stops with a message on standard error instead of spinning on an error that
/// does not go away (the queue's descriptor is broken, for example).
pub const PERSISTENT_WAIT_ERRORS: u64 = 100;

impl ThreadStats {
    fn snapshot(&self) -> Counters {
        let g = |a: &AtomicU64| a.load(Relaxed);
        Counters {
            handled: g(&self.handled),
            again: g(&self.again),
            accepted: g(&self.accepted),
            closed: g(&self.closed),
            waits: g(&self.waits),
            wait_ns: g(&self.wait_ns),
            events: g(&self.events),
            most_events: g(&self.most_events),
            ready_waits: g(&self.ready_waits),
            ready_ns: g(&self.ready_ns),
            ready_events: g(&self.ready_events),
            blocked_waits: g(&self.blocked_waits),
            blocked_ns: g(&self.blocked_ns),
            declares: g(&self.declares),
            declare_ns: g(&self.declare_ns),
            declares_new: g(&self.declares_new),
            declare_new_ns: g(&self.declare_new_ns),
            revokes: g(&self.revokes),
            revoke_ns: g(&self.revoke_ns),
            inserts: g(&self.inserts),
            insert_ns: g(&self.insert_ns),
            rearms: g(&self.rearms),
            rearm_ns: g(&self.rearm_ns),
            busy_ns: g(&self.busy_ns),
            wait_errors: g(&self.wait_errors),
            interest_errors: g(&self.interest_errors),
        }
    }
}

fn add(a: &AtomicU64, v: u64) {
    a.fetch_add(v, Relaxed);
}

fn since(t0: Instant) -> u64 {
    t0.elapsed().as_nanos() as u64
}

/// Declares and revokes of one thread, counted, and timed when measuring.
#[derive(Clone, Copy)]
pub(crate) struct Meter<'a> {
    st: &'a ThreadStats,
    on: bool,
}

impl Meter<'_> {
    /// `q.declare(fd, interest)`: a revoke if `interest` is empty, else a declare (`new`: one
    /// that adds `fd` to the interest set).
    pub(crate) fn declare(self, q: &mut Queue, fd: RawFd, interest: Interest, new: bool) -> io::Result<()> {
        let t0 = self.on.then(Instant::now);
        let r = q.declare(fd, interest);
        let ns = t0.map_or(0, since);
        let st = self.st;
        if interest.is_empty() {
            add(&st.revokes, 1);
            add(&st.revoke_ns, ns);
        } else {
            add(&st.declares, 1);
            add(&st.declare_ns, ns);
            if new {
                add(&st.declares_new, 1);
                add(&st.declare_new_ns, ns);
            }
        }
        r
    }

    /// Revokes interest in `fd` (`declare_interest` with an empty interest).
    pub(crate) fn revoke(self, q: &mut Queue, fd: RawFd) -> io::Result<()> {
        self.declare(q, fd, Interest::empty(), false)
    }
}

/// Counts a failed interest change: the loop goes on without it (the connection times out
/// or is closed), but not silently.
fn counted<T>(st: &ThreadStats, r: io::Result<T>) {
    if r.is_err() {
        add(&st.interest_errors, 1);
    }
}

struct Conn<C> {
    fd: OwnedFd,
    /// The deadline set for it in its source's wheel (see [`Clock`]): read here, so that a
    /// handler call in a thread pool does not lock the pool's wheel only to compare.
    armed: Option<Instant>,
    state: C,
    interest: Interest,
    /// The event source (queue) the connection is registered in.
    src: usize,
    /// Its registration's generation there.
    gen: u32,
    /// Descriptors attached to it ([`Fds::attach`]), in the same queue.
    extra: Vec<Extra>,
}

impl<C> Conn<C> {
    /// Whether `ev` belongs to a live registration of this connection in source `src`.
    fn fired(&self, ev: &Event, src: usize) -> bool {
        self.src == src
            && if ev.fd() == self.fd.as_raw_fd() {
                self.gen == ev.generation()
            } else {
                self.extra.iter().any(|e| e.fired(ev.fd(), ev.generation()))
            }
    }
}

/// The deadlines of one event source's connections, by descriptor number: a [`Wheel`],
/// set lazily. The deadline is asked when the connection is accepted and after each
/// handler call; the wheel is touched only when it moved *earlier* than the one set (a head
/// begun, a drain). A deadline that moved later (every request of a keep-alive connection
/// moves its idle deadline) leaves it be, and when it fires the deadline is asked again and
/// set anew. So a request costs one comparison ([`Conn::armed`]), a tick looks at one bucket of the wheel,
/// not at every connection, and a connection costs 12 bytes (the wheel's links).
enum Clock<'a> {
    /// The source's thread holds its wheel (reactor, shards).
    Own(&'a mut Wheel),
    /// A thread pool's: handlers on any thread set deadlines.
    Shared(&'a Mutex<Wheel>),
}

impl Clock<'_> {
    fn with<R>(&mut self, f: impl FnOnce(&mut Wheel) -> R) -> R {
        match self {
            Clock::Own(t) => f(t),
            Clock::Shared(m) => f(&mut m.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// What a handling thread keeps: the handler's local state and the descriptors parked with
/// the thread ([`Fds::park`]).
struct Home<L> {
    local: L,
    parked: Vec<Extra>,
}

impl<L: Default> Home<L> {
    fn new() -> Self {
        Home { local: L::default(), parked: Vec::new() }
    }
}

/// What the handler is asked.
#[derive(Clone, Copy)]
enum Call {
    /// A descriptor of the connection is ready (or, `None`, might be: a report came in
    /// while the connection was in flight, or the drain looks at every connection once).
    Ready(Option<(RawFd, State)>),
    /// Its deadline passed.
    Expire,
}

struct Slot<C> {
    flight: InFlight,
    /// The event source of the connection held here (of the last one, when empty): the
    /// deadlines and the drain's pass of a source look only at its own source's slots, never
    /// taking another thread's connection.
    src: AtomicUsize,
    conn: Mutex<Option<Conn<C>>>,
}

/// What is left on a listener after accepting from it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listen {
    /// Nothing pending: wait for its next event.
    Drained,
    /// The batch ended with connections possibly still pending. An edge-triggered backend
    /// (epoll-et, io_uring's multishot poll) reports no new edge for them, so the listener
    /// is declared again, which reports its readiness anew.
    More,
    /// Out of descriptors with none to shed with: the listener is not watched until then,
    /// as it stays readable and would spin.
    Pause(Instant),
}

/// Deferred work for the thread holding a shared event source.
enum Op {
    /// Revoke, then close (the descriptor stays open, so its number is not reused, until then).
    Close(OwnedFd),
    /// Change the interest of a registration.
    Declare(RawFd, Interest),
}

/// One queue shared by a thread pool, in hand-off mode.
struct Shared {
    lead: Leadership<Queue>,
    rearm: Rearm,
    ops: Mutex<Vec<Op>>,
    waker: Waker,
    /// The holder is (about to be) blocked in `get_next_event`.
    waiting: AtomicBool,
    /// Out of descriptors: the listener is not watched until then ([`Listen::Pause`]).
    paused: Mutex<Option<Instant>>,
    /// The listener, until the drain closes it, and its number (-1 then).
    listener: Mutex<Option<OwnedFd>>,
    lfd: AtomicI32,
    /// The deadlines of the pool's connections.
    timers: Mutex<Wheel>,
}

impl Shared {
    fn defer(&self, op: Op) {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).push(op);
        if self.waiting.load(SeqCst) {
            let _ = self.waker.wake();
        }
    }
}

/// How the dispatching thread reaches the event source of a connection.
enum Ctl<'a> {
    /// It holds the queue and the timers (reactor, shards).
    Own(&'a mut Queue, &'a mut Wheel),
    /// It does not: re-arm through the handle, defer the rest to the holder.
    Shared(&'a Shared),
}

impl Ctl<'_> {
    fn queue(&mut self) -> Option<&mut Queue> {
        match self {
            Ctl::Own(q, _) => Some(&mut **q),
            Ctl::Shared(_) => None,
        }
    }

    fn clock(&mut self) -> Clock<'_> {
        match self {
            Ctl::Own(_, t) => Clock::Own(t),
            Ctl::Shared(s) => Clock::Shared(&s.timers),
        }
    }
}

struct Core<H: Handler> {
    handler: Arc<H>,
    /// What a connection's own descriptor is declared with to read: `READ`, and `RECEIVE`
    /// if the handler takes what the backend receives ([`Handler::receives`]).
    read: Interest,
    measure: bool,
    /// [`Config::probe_waits`].
    probe: bool,
    /// [`Config::array_max`], at least 1.
    array_max: usize,
    tick: Duration,
    slots: Box<[Slot<H::Conn>]>,
    /// Per descriptor number: the connection its events go to (its own number for a
    /// connection's descriptor), [`PARKED`] or [`NONE`].
    owner: Box<[AtomicI32]>,
    /// One past the highest descriptor ever adopted.
    high: AtomicUsize,
    stop: AtomicBool,
    /// [`Server::drain`] was called.
    draining: AtomicBool,
    stats: Box<[ThreadStats]>,
}

impl<H: Handler> Core<H> {
    fn clock(&self) -> Option<Instant> {
        self.measure.then(Instant::now)
    }

    fn meter<'a>(&self, st: &'a ThreadStats) -> Meter<'a> {
        Meter { st, on: self.measure }
    }

    /// Takes a new connection into the table and `q`, its timer into `clock`.
    fn adopt(
        &self,
        fd: OwnedFd,
        (q, clock): (&mut Queue, &mut Clock<'_>),
        src: usize,
        home: &mut Home<H::Local>,
        st: &ThreadStats,
    ) {
        let raw = fd.as_raw_fd();
        let Some(slot) = self.slots.get(raw as usize) else { return };
        let Some(state) = self.handler.accept(raw) else { return };
        let gen = self.meter(st).declare(q, raw, self.read, true).ok().and_then(|()| q.generation(raw));
        let Some(gen) = gen else {
            self.handler.close_in(&mut home.local, state, raw, Why::Refused);
            return;
        };
        self.owner[raw as usize].store(raw, Relaxed);
        slot.src.store(src, Relaxed);
        let mut conn = Conn { fd, armed: None, state, interest: self.read, src, gen, extra: Vec::new() };
        self.arm(&mut conn, raw, clock);
        *slot.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn);
        self.high.fetch_max(raw as usize + 1, Relaxed);
        add(&st.accepted, 1);
    }

    /// Sets `conn`'s deadline in the wheel if it has none there due no later; see [`Clock`].
    fn arm(&self, conn: &mut Conn<H::Conn>, fd: RawFd, clock: &mut Clock<'_>) {
        let Some(d) = self.handler.deadline(&conn.state) else { return };
        if conn.armed.is_none_or(|at| d < at) {
            conn.armed = Some(d);
            clock.with(|w| w.insert(fd as usize, d));
        }
    }

    /// Accepts up to `limit` connections.
    fn accept(
        &self,
        acc: &mut Acceptor,
        q: (&mut Queue, &mut Clock<'_>),
        (src, home): (usize, &mut Home<H::Local>),
        st: &ThreadStats,
        limit: usize,
    ) -> Listen {
        let (q, clock) = q;
        for _ in 0..limit {
            match acc.accept() {
                Ok(Accepted::Conn(fd)) => self.adopt(fd, (&mut *q, &mut *clock), src, home, st),
                Ok(Accepted::Exhausted) => return Listen::Pause(Instant::now() + Acceptor::BACKOFF),
                Ok(Accepted::Drained | Accepted::Shed(_)) | Err(_) => return Listen::Drained,
            }
        }
        Listen::More
    }

    fn close(
        &self,
        conn: Conn<H::Conn>,
        ctl: &mut Ctl<'_>,
        home: &mut Home<H::Local>,
        why: Why,
        st: &ThreadStats,
    ) {
        let raw = conn.fd.as_raw_fd();
        ctl.clock().with(|w| w.remove(raw as usize));
        self.handler.close_in(&mut home.local, conn.state, raw, why);
        add(&st.closed, 1);
        let watched = !conn.interest.is_empty();
        for e in conn.extra {
            attach::revoke(ctl.queue(), &self.owner, e, self.meter(st));
        }
        match ctl {
            // Unwatched (after `Next::Wait`): nothing to count, revoked all the same.
            Ctl::Own(q, _) if !watched => counted(st, q.declare_interest(raw, Interest::empty())),
            Ctl::Own(q, _) => {
                counted(st, self.meter(st).revoke(q, raw));
                drop(conn.fd);
            }
            Ctl::Shared(s) => s.defer(Op::Close(conn.fd)),
        }
    }

    /// Hands `ev` to the handler of the connection its descriptor belongs to (or, for a
    /// parked descriptor, to [`Handler::local_event`]), unless another thread is handling
    /// that connection (then that thread runs once more), and re-activates or closes
    /// afterwards.
    fn dispatch(
        &self,
        ev: Event,
        ctl: &mut Ctl<'_>,
        (src, home): (usize, &mut Home<H::Local>),
        st: &ThreadStats,
    ) {
        let Some(owner) = self.owner.get(ev.fd() as usize) else { return };
        let cfd = match owner.load(Relaxed) {
            PARKED => return self.parked_event(ev, ctl, home, st),
            NONE => return,
            cfd => cfd,
        };
        let slot = &self.slots[cfd as usize];
        // A stale report for a number another source's connection reuses: never that
        // connection's flag, which its own thread may hold (it would then run once more on
        // this thread's behalf, with this thread's queue).
        if slot.src.load(Relaxed) != src {
            return;
        }
        if !slot.flight.enter() {
            add(&st.again, 1);
            return;
        }
        let t0 = self.clock();
        self.handle(slot, cfd, Some(ev), ctl, (src, home), st);
        if let Some(t0) = t0 {
            add(&st.busy_ns, t0.elapsed().as_nanos() as u64);
        }
    }

    fn parked_event(&self, ev: Event, ctl: &mut Ctl<'_>, home: &mut Home<H::Local>, st: &ThreadStats) {
        if !home.parked.iter().any(|e| e.fired(ev.fd(), ev.generation())) {
            return; // stale, or parked by another thread
        }
        let fds = Fds {
            q: ctl.queue(),
            owner: &self.owner,
            conn: None,
            parked: &mut home.parked,
            draining: self.draining(),
            meter: self.meter(st),
        };
        self.handler.local_event(&mut Cx { local: &mut home.local, fds }, ev.fd(), ev.state());
    }

    /// Handles the in-flight connection `cfd` until no report is left for it: first `ev`
    /// (dropped if stale), then once per report that came in meanwhile (state unknown: the
    /// interest is passed as a hint). Releases the in-flight flag.
    fn handle(
        &self,
        slot: &Slot<H::Conn>,
        cfd: RawFd,
        ev: Option<Event>,
        ctl: &mut Ctl<'_>,
        (src, home): (usize, &mut Home<H::Local>),
        st: &ThreadStats,
    ) {
        let mut ev = ev;
        loop {
            let g = slot.conn.lock().unwrap_or_else(|e| e.into_inner());
            let live = g.as_ref().is_some_and(|conn| match ev {
                Some(e) => conn.fired(&e, src),
                None => conn.src == src,
            });
            if !live {
                drop(g);
            } else if !self.call(slot, g, cfd, Call::Ready(ev.map(|e| (e.fd(), e.state()))), ctl, home, st) {
                return;
            }
            if slot.flight.leave() {
                return;
            }
            ev = None;
        }
    }

    /// Runs the handler on the (locked, live) connection of `slot` and applies its answer:
    /// re-arm, change of interest, or close. False when it closed the connection (and the
    /// in-flight flag was released).
    #[allow(clippy::too_many_arguments)]
    fn call(
        &self,
        slot: &Slot<H::Conn>,
        mut g: std::sync::MutexGuard<'_, Option<Conn<H::Conn>>>,
        cfd: RawFd,
        call: Call,
        ctl: &mut Ctl<'_>,
        home: &mut Home<H::Local>,
        st: &ThreadStats,
    ) -> bool {
        let conn = g.as_mut().expect("checked by the caller");
        let next = {
            let fds = Fds {
                q: ctl.queue(),
                owner: &self.owner,
                conn: Some((cfd, &mut conn.extra)),
                parked: &mut home.parked,
                draining: self.draining(),
                meter: self.meter(st),
            };
            let cx = &mut Cx { local: &mut home.local, fds };
            match call {
                Call::Ready(Some((fd, state))) => self.handler.event(cx, &mut conn.state, fd, state),
                Call::Ready(None) => {
                    let hint = State::from_bits_truncate(conn.interest.bits());
                    self.handler.event(cx, &mut conn.state, cfd, hint)
                }
                Call::Expire => self.handler.expire(cx, &mut conn.state, cfd),
            }
        };
        add(&st.handled, 1);
        let Some(i) = next.interest().map(|i| if i.contains(Interest::READ) { i | self.read } else { i })
        else {
            let conn = g.take().expect("matched above");
            drop(g);
            // Release the flag before `close` lets the number be reused: a new connection
            // accepted on it by another thread must not find the flag held, or its first
            // event is dropped as "in flight" and, on edge and hand-off backends, never
            // reported again.
            slot.flight.abandon();
            let why = if matches!(call, Call::Expire) { Why::Timeout } else { Why::Handler };
            self.close(conn, ctl, home, why, st);
            return false;
        };
        self.arm(conn, cfd, &mut ctl.clock());
        match ctl {
            // Hand-off mode: `Wait` leaves the delivered registration deactivated.
            Ctl::Shared(_) if next == Next::Wait => {}
            Ctl::Shared(s) if i == conn.interest => {
                let r0 = self.clock();
                counted(st, s.rearm.rearm_fd(cfd, conn.gen, i));
                add(&st.rearms, 1);
                if let Some(r0) = r0 {
                    add(&st.rearm_ns, r0.elapsed().as_nanos() as u64);
                }
            }
            Ctl::Shared(s) => {
                conn.interest = i;
                s.defer(Op::Declare(cfd, i));
            }
            Ctl::Own(..) if i == conn.interest => {}
            Ctl::Own(q, _) => {
                let new = conn.interest.is_empty();
                conn.interest = i;
                // An empty interest revokes. Declared again after a `Wait`: a new
                // registration, a new generation.
                if self.meter(st).declare(q, cfd, i, new).is_ok() {
                    conn.gen = q.generation(cfd).unwrap_or(conn.gen);
                }
            }
        }
        true
    }

    /// Expires the connections of source `src` whose timer fired and whose deadline passed
    /// ([`Handler::expire`]); sets the timer anew for those whose deadline moved later
    /// ([`Clock`]). A connection in flight on another thread is looked at again a tick later.
    fn expire_due(&self, ctl: &mut Ctl<'_>, (src, home): (usize, &mut Home<H::Local>), st: &ThreadStats) {
        let now = Instant::now();
        while let Some(i) = ctl.clock().with(|w| w.pop_expired(now)) {
            let (fd, slot) = (i as RawFd, &self.slots[i]);
            if slot.src.load(Relaxed) != src {
                continue;
            }
            if !slot.flight.try_enter() {
                // Its handler runs elsewhere (a pool) and keeps `armed`, now past: a look
                // again a tick later stands in for the key until then.
                ctl.clock().with(|w| w.insert(i, now + self.tick));
                continue;
            }
            let mut g = slot.conn.lock().unwrap_or_else(|e| e.into_inner());
            let mut expire = false;
            if let Some(c) = g.as_mut().filter(|c| c.src == src) {
                c.armed = None; // its key just left the wheel
                match self.handler.deadline(&c.state) {
                    Some(d) if d <= now => expire = true,
                    // It moved later since it was set: set anew.
                    _ => self.arm(c, fd, &mut ctl.clock()),
                }
            }
            let open = if expire {
                self.call(slot, g, fd, Call::Expire, ctl, home, st)
            } else {
                drop(g);
                true
            };
            if open && !slot.flight.leave() {
                self.handle(slot, fd, None, ctl, (src, home), st);
            }
        }
    }

    /// The drain began: every connection of source `src` not in flight is handled once
    /// (a report that arrives for one meanwhile is handled here too).
    fn nudge_all(&self, ctl: &mut Ctl<'_>, (src, home): (usize, &mut Home<H::Local>), st: &ThreadStats) {
        for (fd, slot) in self.slots[..self.high.load(Relaxed).min(self.slots.len())].iter().enumerate() {
            if slot.src.load(Relaxed) != src || !slot.flight.try_enter() {
                continue;
            }
            let g = slot.conn.lock().unwrap_or_else(|e| e.into_inner());
            let open = if g.as_ref().is_some_and(|c| c.src == src) {
                self.call(slot, g, fd as RawFd, Call::Ready(None), ctl, home, st)
            } else {
                drop(g);
                true
            };
            if open && !slot.flight.leave() {
                self.handle(slot, fd as RawFd, None, ctl, (src, home), st);
            }
        }
    }

    /// The thread of source `src` stops: its connections are closed ([`Why::Shutdown`]) with
    /// its own local state, while its queue is still there to revoke from.
    fn close_own(&self, ctl: &mut Ctl<'_>, (src, home): (usize, &mut Home<H::Local>), st: &ThreadStats) {
        for slot in self.slots[..self.high.load(Relaxed).min(self.slots.len())].iter() {
            if slot.src.load(Relaxed) != src {
                continue;
            }
            let conn = slot.conn.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(conn) = conn {
                self.close(conn, ctl, home, Why::Shutdown, st);
            }
        }
    }

    /// The drain began: the handler's hook, then every connection of `src` once.
    fn begin_drain(&self, ctl: &mut Ctl<'_>, (src, home): (usize, &mut Home<H::Local>), st: &ThreadStats) {
        let fds = Fds {
            q: ctl.queue(),
            owner: &self.owner,
            conn: None,
            parked: &mut home.parked,
            draining: true,
            meter: self.meter(st),
        };
        self.handler.draining(&mut Cx { local: &mut home.local, fds });
        self.nudge_all(ctl, (src, home), st);
    }

    fn draining(&self) -> bool {
        self.draining.load(Relaxed)
    }

    /// Waits on `q` (timed when measuring) for at most [`Config::array_max`] events and
    /// returns the events it got; a failed wait is counted and gives none. `None` when the
    /// waits keep failing: the thread must stop. With [`Config::probe_waits`], a call with a
    /// zero timeout comes first, and only if it finds nothing the call that may block.
    fn wait(&self, q: &mut Queue, evs: &mut [Event], st: &ThreadStats) -> Option<usize> {
        BATCH_TIME.set(None);
        let n = self.array_max.min(evs.len());
        let evs = &mut evs[..n];
        let t0 = self.clock();
        let probed = self.probe.then(|| q.get_next_event(evs, Some(Duration::ZERO)));
        let r = match probed {
            Some(Ok(n)) if n > 0 => {
                add(&st.ready_waits, 1);
                add(&st.ready_events, n as u64);
                if let Some(t0) = t0 {
                    add(&st.ready_ns, since(t0));
                }
                Ok(n)
            }
            Some(Err(e)) => Err(e),
            _ => {
                let r = q.get_next_event(evs, Some(self.tick));
                if self.probe {
                    add(&st.blocked_waits, 1);
                    if let Some(t0) = t0 {
                        add(&st.blocked_ns, since(t0));
                    }
                }
                r
            }
        };
        add(&st.waits, 1);
        if let Some(t0) = t0 {
            add(&st.wait_ns, since(t0));
        }
        match r {
            Ok(n) => {
                if n > 0 {
                    BATCH_TIME.set(Some(Instant::now()));
                }
                add(&st.events, n as u64);
                st.most_events.fetch_max(n as u64, Relaxed);
                st.failing_waits.store(0, Relaxed);
                Some(n)
            }
            Err(e) => {
                add(&st.wait_errors, 1);
                if st.failing_waits.fetch_add(1, Relaxed) + 1 < PERSISTENT_WAIT_ERRORS {
                    return Some(0);
                }
                let me = std::thread::current();
                eprintln!(
                    "hintq: thread {} stops: get_next_event failed {PERSISTENT_WAIT_ERRORS} times in a row: {e}",
                    me.name().unwrap_or("?")
                );
                None
            }
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Relaxed)
    }
}

thread_local! {
    /// When this thread's last wait returned events; cleared while it waits.
    static BATCH_TIME: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// The time for the events the calling thread is handling: when the wait that returned them
/// came back (one clock read per batch of events, not one per event), or the clock now on a
/// thread that took its events from another (a Half-Sync worker) or outside a handler. At
/// most one batch's handling old: for timeouts and `Date` headers, not for measuring.
pub fn batch_time() -> Instant {
    BATCH_TIME.get().unwrap_or_else(Instant::now)
}

/// A running pattern. Dropping it without [`Server::shutdown`] shuts it down too.
pub struct Server {
    addr: SocketAddr,
    threads: Vec<JoinHandle<()>>,
    stop: Option<Box<dyn FnOnce() + Send>>,
    finish: Option<Box<dyn FnOnce() + Send>>,
    /// Wakes every thread that holds an event source.
    wake: Box<dyn Fn() + Send + Sync>,
    draining: Option<Arc<dyn Fn() + Send + Sync>>,
    stats: Box<dyn Fn() -> Vec<Counters> + Send + Sync>,
    gate: Option<Arc<Gate>>,
    /// The claim on the address ([`net::claim`]), released after the threads (and the
    /// listeners with them) are gone: a field is dropped after `Drop::drop` ran.
    _claim: Option<Claim>,
}

impl Server {
    /// A server of `threads` started by one of the `start_*` functions; `start` fills in the
    /// rest (statistics, the final close of connections, the drain hook).
    fn started(
        addr: SocketAddr,
        threads: Vec<JoinHandle<()>>,
        stop: Box<dyn FnOnce() + Send>,
        wake: Box<dyn Fn() + Send + Sync>,
        gate: Option<Arc<Gate>>,
        claim: Option<Claim>,
    ) -> Server {
        Server {
            addr,
            threads,
            stop: Some(stop),
            finish: None,
            wake,
            draining: None,
            stats: Box::new(Vec::new),
            gate,
            _claim: claim,
        }
    }

    /// The address the listener(s) are bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Counters per thread: reactor `[0]`; Leader/Followers and shards `0..N`; Half-Sync the
    /// asynchronous thread at 0, workers `1..=N`.
    pub fn stats(&self) -> Vec<Counters> {
        (self.stats)()
    }

    /// Threads active now (below the configured count while the adaptive policy parks some).
    pub fn active_threads(&self) -> usize {
        self.gate.as_ref().map_or(self.threads.len(), |g| g.active())
    }

    /// Begins a graceful drain and returns at once: every thread that holds an event source
    /// revokes and closes its listener (new connections are refused), calls
    /// [`Handler::draining`], then handles each of its connections once (so that one idle
    /// between requests can see [`Fds::draining`] and close) and goes on serving the rest.
    /// Deadlines still apply. Waiting for the connections to finish is the caller's part;
    /// then [`Server::shutdown`].
    pub fn drain(&self) {
        if let Some(d) = &self.draining {
            d();
        }
        (self.wake)();
    }

    /// Stops every thread, closes every connection (calling [`Handler::close`] with
    /// [`Why::Shutdown`]), the listeners and the queues, and returns the final counters.
    pub fn shutdown(mut self) -> Vec<Counters> {
        self.stop_and_join();
        self.stats()
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(finish) = self.finish.take() {
            finish();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).field("threads", &self.threads.len()).finish()
    }
}

fn spawn(
    name: String,
    hook: Option<crate::ThreadHook>,
    role: Role,
    i: usize,
    f: impl FnOnce() + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        if let Some(h) = hook {
            h(role, i);
        }
        f()
    })
}

/// Starts `cfg.pattern` with `handler`.
///
/// # Errors
/// Binding the listener(s), creating the queues (a backend the pattern cannot share:
/// Leader/Followers and Half-Sync need `epoll`, `epoll-et`, `epoll-oneshot`, `select` or
/// `uring`), spawning threads.
pub fn start<H: Handler>(cfg: Config, handler: Arc<H>) -> io::Result<Server> {
    let n = if cfg.pattern == Pattern::Reactor { 1 } else { cfg.threads.max(1) };
    let nstats = if cfg.pattern == Pattern::HalfSync { n + 1 } else { n };
    let slots = (0..cfg.max_fds)
        .map(|_| Slot { flight: InFlight::new(), src: AtomicUsize::new(usize::MAX), conn: Mutex::new(None) })
        .collect();
    let read = Interest::READ | if handler.receives() { Interest::RECEIVE } else { Interest::empty() };
    let core = Arc::new(Core {
        handler,
        read,
        measure: cfg.measure || cfg.adaptive.is_some(),
        probe: cfg.probe_waits,
        array_max: cfg.array_max.max(1),
        tick: cfg.tick,
        slots,
        owner: (0..cfg.max_fds).map(|_| AtomicI32::new(NONE)).collect(),
        high: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        draining: AtomicBool::new(false),
        stats: (0..nstats).map(|_| ThreadStats::default()).collect(),
    });
    let mut server =
        if cfg.pattern.hands_off() { start_pool(&cfg, n, &core)? } else { start_shards(&cfg, n, &core)? };
    let c = Arc::clone(&core);
    server.stats = Box::new(move || c.stats.iter().map(ThreadStats::snapshot).collect());
    let c = Arc::clone(&core);
    server.draining = Some(Arc::new(move || c.draining.store(true, SeqCst)));
    let c = Arc::clone(&core);
    server.finish = Some(Box::new(move || {
        // The threads are gone, and their queues with them. A shard closed its own
        // connections before it stopped; what is left (the thread pools' connections) is
        // closed here, each connection's attached descriptors with it.
        let mut local = H::Local::default();
        for slot in c.slots.iter() {
            if let Some(conn) = slot.conn.lock().unwrap_or_else(|e| e.into_inner()).take() {
                c.handler.close_in(&mut local, conn.state, conn.fd.as_raw_fd(), Why::Shutdown);
                for e in conn.extra {
                    attach::revoke(None, &c.owner, e, c.meter(&c.stats[0]));
                }
            }
        }
    }));
    if let (Some(policy), Some(gate)) = (cfg.adaptive, server.gate.clone()) {
        let c = Arc::clone(&core);
        let first = usize::from(cfg.pattern == Pattern::HalfSync);
        server.threads.push(spawn("hintq-adapt".into(), None, Role::Worker, 0, move || {
            adapt(&c, &gate, policy, n, first)
        })?);
    }
    Ok(server)
}

/// The adaptive policy's loop (see the crate docs).
fn adapt<H: Handler>(core: &Core<H>, gate: &Gate, p: crate::Adaptive, max: usize, first: usize) {
    let busy = || core.stats[first..].iter().map(|s| s.busy_ns.load(Relaxed)).sum::<u64>();
    let mut last = (Instant::now(), busy());
    while !core.stopped() {
        std::thread::sleep(p.interval);
        let now = (Instant::now(), busy());
        let load = (now.1 - last.1) as f64 / (now.0 - last.0).as_nanos().max(1) as f64;
        last = now;
        let active = gate.active();
        let per_thread = load / active as f64;
        if per_thread > p.grow_above && active < max {
            gate.set_active(active + 1);
        } else if per_thread < p.shrink_below && active > p.min.max(1) {
            gate.set_active(active - 1);
        }
    }
}

/// Reactor, sharded and sharded-shared: every thread owns a queue and its connections.
fn start_shards<H: Handler>(cfg: &Config, n: usize, core: &Arc<Core<H>>) -> io::Result<Server> {
    let per_thread = cfg.pattern == Pattern::Sharded;
    let group = if cfg.pattern == Pattern::ShardedShared { Some(Group::new(cfg.backend)?) } else { None };
    let (first, addr, claim) = first_listener(cfg, per_thread || cfg.reuseport)?;
    let mut listeners = vec![Arc::new(first)];
    if per_thread {
        for _ in 1..n {
            listeners.push(Arc::new(net::listen(addr, true)?));
        }
    }
    if let Some(g) = &group {
        g.declare_interest(listeners[0].as_raw_fd(), Interest::READ, Delivery::One)?;
    }
    let mut threads = Vec::new();
    // Each thread makes its queue, its waker and its listener's interest itself, so that the
    // thread that waits on a queue is the first to use it: an io_uring ring admits one thread
    // (hintq's uring backend, quirk m), and one filled here and handed over would be moved to
    // a second ring at the thread's first wait. The wakers come back through `made`.
    let (made, ready) = std::sync::mpsc::channel::<io::Result<Waker>>();
    for i in 0..n {
        let listener = Arc::clone(&listeners[i % listeners.len()]);
        let acc = Acceptor::new(listener.as_raw_fd())?;
        // Shared listener: one connection per readiness, so that `Delivery::One` spreads
        // them; an own listener is drained (the kernel already spread by hash).
        let limit = if group.is_some() { 1 } else { 64 };
        let c = Arc::clone(core);
        let keep = group.clone();
        let (made, builder) = (made.clone(), builder(cfg));
        threads.push(spawn(
            format!("hintq-{}-{i}", cfg.pattern),
            cfg.on_thread_start.clone(),
            Role::Worker,
            i,
            move || {
                let setup = || -> io::Result<(Queue, Waker)> {
                    let mut q = match &keep {
                        Some(g) => g.queue()?,
                        None => builder.build()?,
                    };
                    let waker = q.waker()?;
                    if keep.is_none() {
                        q.declare(listener.as_raw_fd(), Interest::READ)?;
                    }
                    Ok((q, waker))
                };
                // (A failed send: `start` gave up already.)
                let mut q = match setup() {
                    Ok((q, waker)) => {
                        drop(made.send(Ok(waker)));
                        q
                    }
                    Err(e) => return drop(made.send(Err(e))),
                };
                let st = &c.stats[i];
                let mut lfd = listener.as_raw_fd();
                // Until the drain closes it (this thread's share of it, for the group's).
                let mut listening = Some((listener, acc));
                let mut home = Home::<H::Local>::new();
                let mut evs = vec![Event::default(); c.array_max];
                let mut next_tick = Instant::now() + c.tick;
                let mut timers = Wheel::new(c.slots.len(), c.tick);
                // Out of descriptors: the listener is not watched until then.
                let mut paused: Option<Instant> = None;
                while !c.stopped() {
                    if listening.is_some() && c.draining() {
                        counted(st, watch(&mut q, keep.as_ref(), lfd, Interest::empty()));
                        (listening, lfd, paused) = (None, -1, None);
                        c.begin_drain(&mut Ctl::Own(&mut q, &mut timers), (i, &mut home), st);
                    }
                    let Some(n) = c.wait(&mut q, &mut evs, st) else { break };
                    for ev in &evs[..n] {
                        let Some((_, acc)) = listening.as_mut().filter(|_| ev.fd() == lfd) else {
                            c.dispatch(*ev, &mut Ctl::Own(&mut q, &mut timers), (i, &mut home), st);
                            continue;
                        };
                        let clock = &mut Clock::Own(&mut timers);
                        match (c.accept(acc, (&mut q, clock), (i, &mut home), st, limit), &keep) {
                            // A group re-arms its one-shot registration at the next wait,
                            // which reports the connections still pending.
                            (Listen::Drained, _) | (Listen::More, Some(_)) => {}
                            (Listen::More, None) => {
                                counted(st, c.meter(st).declare(&mut q, lfd, Interest::READ, false))
                            }
                            (Listen::Pause(until), g) => {
                                paused = Some(until);
                                counted(st, watch(&mut q, g.as_ref(), lfd, Interest::empty()));
                            }
                        }
                    }
                    if paused.is_some_and(|t| Instant::now() >= t) {
                        // Declared anew, the listener reports the connections still pending.
                        paused = None;
                        counted(st, watch(&mut q, keep.as_ref(), lfd, Interest::READ));
                    }
                    if Instant::now() >= next_tick {
                        c.expire_due(&mut Ctl::Own(&mut q, &mut timers), (i, &mut home), st);
                        next_tick = Instant::now() + c.tick;
                    }
                }
                c.close_own(&mut Ctl::Own(&mut q, &mut timers), (i, &mut home), st);
                // Parked descriptors are closed with the queue they are registered in.
                drop(home);
                drop(q);
                drop(keep);
                drop(listening);
            },
        )?);
    }
    drop(made);
    // Every thread answers once (a thread that panicked drops its sender instead).
    let mut wakers = Vec::with_capacity(n);
    let mut failed = None;
    for _ in 0..n {
        match ready.recv() {
            Ok(Ok(w)) => wakers.push(w),
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Err(_) => {
                failed = failed.or_else(|| Some(io::Error::other("a server thread ended while starting")))
            }
        }
    }
    if let Some(e) = failed {
        core.stop.store(true, SeqCst);
        wakers.iter().for_each(|w| drop(w.wake()));
        return Err(e);
    }
    drop(listeners);
    let c = Arc::clone(core);
    let wakers = Arc::new(wakers);
    let w = Arc::clone(&wakers);
    let stop: Box<dyn FnOnce() + Send> = Box::new(move || {
        c.stop.store(true, SeqCst);
        w.iter().for_each(|w| drop(w.wake()));
    });
    let wake = Box::new(move || wakers.iter().for_each(|w| drop(w.wake())));
    Ok(Server::started(addr, threads, stop, wake, None, claim))
}

/// The first listener on `cfg.listen`, its address, and the claim on it ([`net::claim`];
/// none for a worker process, whose supervisor holds it): claimed before it binds, or, for
/// port 0, the port it got, once bound.
fn first_listener(cfg: &Config, reuseport: bool) -> io::Result<(OwnedFd, SocketAddr, Option<Claim>)> {
    let listen = || net::listen(cfg.listen, reuseport);
    if cfg.reuseport {
        let first = listen()?;
        let addr = net::local_addr(&first)?;
        return Ok((first, addr, None));
    }
    let (first, addr, claim) = net::claimed(cfg.listen, listen)?;
    Ok((first, addr, Some(claim)))
}

/// Declares interest in a shard's listener, in the group if it is shared.
fn watch(q: &mut Queue, group: Option<&Group>, lfd: RawFd, interest: Interest) -> io::Result<()> {
    match group {
        Some(g) => g.declare_interest(lfd, interest, Delivery::One).map(drop),
        None => q.declare(lfd, interest),
    }
}

/// Queues on the configured backend with its settings.
fn builder(cfg: &Config) -> hintq::Builder {
    hintq::Builder::new(cfg.backend).rtsig_hybrid(cfg.rtsig_hybrid).coalesce(cfg.coalesce)
}

/// A queue on the configured backend with its settings.
fn queue(cfg: &Config) -> io::Result<Queue> {
    builder(cfg).build()
}

/// Leader/Followers and Half-Sync: one queue in hand-off mode, shared by a pool.
fn start_pool<H: Handler>(cfg: &Config, n: usize, core: &Arc<Core<H>>) -> io::Result<Server> {
    let (listener, addr, claim) = first_listener(cfg, cfg.reuseport)?;
    let lfd = listener.as_raw_fd();
    let mut q = queue(cfg)?;
    let rearm = q.handoff()?;
    let waker = q.waker()?;
    q.declare(lfd, Interest::READ)?;
    let shared = Arc::new(Shared {
        lead: Leadership::new(q),
        rearm,
        ops: Mutex::new(Vec::new()),
        waker,
        waiting: AtomicBool::new(false),
        paused: Mutex::new(None),
        listener: Mutex::new(Some(listener)),
        lfd: AtomicI32::new(lfd),
        timers: Mutex::new(Wheel::new(cfg.max_fds, cfg.tick)),
    });
    let active = cfg.adaptive.map_or(n, |a| a.min.clamp(1, n));
    let gate = Arc::new(Gate::new(active));
    let work = Arc::new(WorkQueue::<Event>::default());
    let acc = Arc::new(Mutex::new(Acceptor::new(lfd)?));
    let mut threads = Vec::new();
    let half_sync = cfg.pattern == Pattern::HalfSync;
    let hook = cfg.on_thread_start.clone();
    for i in 0..n + usize::from(half_sync) {
        let (c, s, g, w, a) =
            (Arc::clone(core), Arc::clone(&shared), Arc::clone(&gate), Arc::clone(&work), Arc::clone(&acc));
        let (role, name) = match (half_sync, i) {
            (false, _) => (Role::Worker, format!("hintq-lf-{i}")),
            (true, 0) => (Role::Async, "hintq-hs-async".to_string()),
            (true, _) => (Role::Sync, format!("hintq-hs-{i}")),
        };
        let body: Box<dyn FnOnce() + Send> = match role {
            Role::Worker => Box::new(move || leader_followers(&c, &s, &g, &a, i)),
            Role::Async => Box::new(move || half_sync_async(&c, &s, &w, &a)),
            Role::Sync => Box::new(move || {
                let mut home = Home::<H::Local>::new();
                while !c.stopped() && g.pass(i - 1) {
                    let Some(ev) = w.pop() else { break };
                    c.dispatch(ev, &mut Ctl::Shared(&s), (0, &mut home), &c.stats[i]);
                }
            }),
        };
        threads.push(spawn(name, hook.clone(), role, i, body)?);
    }
    let c = Arc::clone(core);
    let g = Arc::clone(&gate);
    let s = Arc::clone(&shared);
    let wake = Box::new(move || drop(s.waker.wake()));
    let stop: Box<dyn FnOnce() + Send> = Box::new(move || {
        c.stop.store(true, SeqCst);
        // Not `lead.stop()`: followers leave one at a time, each after becoming leader and
        // seeing the flag, so no thread exits while another still works the queue. (On
        // io_uring a thread's exit cancels the polls it submitted; a leader cancelling
        // polls meanwhile was seen to wait forever for a completion.)
        let _ = shared.waker.wake();
        work.close();
        g.stop();
    });
    Ok(Server::started(addr, threads, stop, wake, Some(gate), claim))
}

/// The holder's chores before it waits: the drain's start, deferred closes and interest
/// changes, deadlines.
fn holder_chores<H: Handler>(
    c: &Core<H>,
    s: &Shared,
    q: &mut Queue,
    home: &mut Home<H::Local>,
    next_tick: &mut Instant,
    st: &ThreadStats,
) {
    let lfd = s.lfd.load(Relaxed);
    let mut paused = s.paused.lock().unwrap_or_else(|e| e.into_inner());
    if lfd >= 0 && c.draining() {
        *paused = None;
        s.lfd.store(-1, Relaxed);
        counted(st, q.declare_interest(lfd, Interest::empty()));
        drop(s.listener.lock().unwrap_or_else(|e| e.into_inner()).take());
        drop(paused);
        c.begin_drain(&mut Ctl::Shared(s), (0, home), st);
    } else if paused.is_some_and(|t| Instant::now() >= t) {
        *paused = None;
        counted(st, q.declare(lfd, Interest::READ));
    }
    let ops = std::mem::take(&mut *s.ops.lock().unwrap_or_else(|e| e.into_inner()));
    for op in ops {
        match op {
            Op::Close(fd) => {
                counted(st, c.meter(st).revoke(q, fd.as_raw_fd()));
                drop(fd);
            }
            Op::Declare(fd, i) => counted(st, c.meter(st).declare(q, fd, i, false)),
        }
    }
    if Instant::now() >= *next_tick {
        c.expire_due(&mut Ctl::Shared(s), (0, home), st);
        *next_tick = Instant::now() + c.tick;
    }
}

/// Waits on the shared queue as its holder until something other than a listener event
/// arrives (accepting on the way), with the `waiting` flag raised for deferred work. 0 when
/// the server stops or the waits keep failing.
fn hold_and_wait<H: Handler>(
    c: &Core<H>,
    s: &Shared,
    q: &mut Queue,
    evs: &mut [Event],
    (acc, home): (&Mutex<Acceptor>, &mut Home<H::Local>),
    next_tick: &mut Instant,
    st: &ThreadStats,
) -> usize {
    while !c.stopped() {
        holder_chores(c, s, q, home, next_tick, st);
        s.waiting.store(true, SeqCst);
        if !s.ops.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            s.waiting.store(false, SeqCst);
            continue;
        }
        let Some(n) = c.wait(q, evs, st) else {
            s.waiting.store(false, SeqCst);
            return 0;
        };
        s.waiting.store(false, SeqCst);
        let lfd = s.lfd.load(Relaxed);
        let mut kept = 0;
        for k in 0..n {
            let ev = evs[k];
            if ev.fd() == lfd {
                let mut acc = acc.lock().unwrap_or_else(|e| e.into_inner());
                let r = match c.accept(&mut acc, (&mut *q, &mut Clock::Shared(&s.timers)), (0, home), st, 64)
                {
                    Listen::Drained => s.rearm.rearm(&ev, Interest::READ),
                    Listen::More => q.declare(lfd, Interest::READ),
                    Listen::Pause(until) => {
                        *s.paused.lock().unwrap_or_else(|e| e.into_inner()) = Some(until);
                        q.declare_interest(lfd, Interest::empty()).map(drop)
                    }
                };
                counted(st, r);
            } else {
                evs[kept] = ev;
                kept += 1;
            }
        }
        if kept > 0 {
            return kept;
        }
    }
    0
}

fn leader_followers<H: Handler>(c: &Core<H>, s: &Shared, gate: &Gate, acc: &Mutex<Acceptor>, i: usize) {
    let st = &c.stats[i];
    let mut home = Home::<H::Local>::new();
    let mut next_tick = Instant::now() + c.tick;
    let mut evs = [Event::default(); 1];
    while !c.stopped() && gate.pass(i) {
        let Some(mut leader) = s.lead.lead() else { break };
        let n = leader.with(|q| hold_and_wait(c, s, q, &mut evs, (acc, &mut home), &mut next_tick, st));
        drop(leader); // promote a follower, then handle
        if n == 0 {
            break;
        }
        c.dispatch(evs[0], &mut Ctl::Shared(s), (0, &mut home), st);
    }
}

fn half_sync_async<H: Handler>(c: &Core<H>, s: &Shared, work: &WorkQueue<Event>, acc: &Mutex<Acceptor>) {
    let st = &c.stats[0];
    let Some(mut leader) = s.lead.lead() else { return };
    let mut home = Home::<H::Local>::new();
    let mut next_tick = Instant::now() + c.tick;
    let mut evs = vec![Event::default(); c.array_max];
    leader.with(|q| {
        while !c.stopped() {
            let n = hold_and_wait(c, s, q, &mut evs, (acc, &mut home), &mut next_tick, st);
            if n == 0 {
                return; // stopped, or the waits keep failing
            }
            for ev in &evs[..n] {
                let t0 = c.clock();
                if work.push(*ev).is_err() {
                    return;
                }
                add(&st.inserts, 1);
                if let Some(t0) = t0 {
                    add(&st.insert_ns, t0.elapsed().as_nanos() as u64);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outside a handler (no wait has returned on this thread) the batch time is the clock's;
    /// after a wait it is when that wait returned, the same for every event of the batch;
    /// a new wait clears it.
    #[test]
    fn batch_time_is_the_waits_return_or_the_clock() {
        let before = Instant::now();
        assert!(batch_time() >= before);
        let at = Instant::now() - Duration::from_secs(5);
        BATCH_TIME.set(Some(at));
        assert_eq!((batch_time(), batch_time()), (at, at));
        BATCH_TIME.set(None);
        assert!(batch_time() >= before);
    }
}
