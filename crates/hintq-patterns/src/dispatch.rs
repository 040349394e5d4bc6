//! The dispatch every pattern shares: the connection table, accepting into it, handing a
//! readiness to the handler of the connection it belongs to and applying its answer
//! (re-arm, new interest, close), deadlines, the drain, and the wait itself. The thread
//! loops (`shards.rs`, `pool.rs`) call it; it calls the [`Handler`].

use crate::attach::{self, Cx, Extra, Fds, NONE, PARKED};
use crate::counters::{since, Counter, Meter, ThreadStats, PERSISTENT_WAIT_ERRORS};
use crate::handoff::{InFlight, Leadership};
use crate::{Config, Handler, Next, Why};
use hintq::{Accepted, Acceptor, Event, Interest, Queue, Rearm, State, Waker, Wheel};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) struct Conn<C> {
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
pub(crate) enum Clock<'a> {
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
pub(crate) struct Home<L> {
    pub(crate) local: L,
    pub(crate) parked: Vec<Extra>,
    /// When the thread's last wait returned events, for the events of that batch
    /// ([`Cx::now`]); `None` on a thread that takes its events from another (a Half-Sync
    /// worker) and while waiting.
    pub(crate) batch: Option<Instant>,
}

impl<L: Default> Home<L> {
    pub(crate) fn new() -> Self {
        Home { local: L::default(), parked: Vec::new(), batch: None }
    }
}

/// What the handler is asked.
#[derive(Clone, Copy)]
pub(crate) enum Call {
    /// A descriptor of the connection is ready (or, `None`, might be: a report came in
    /// while the connection was in flight, or the drain looks at every connection once).
    Ready(Option<(RawFd, State)>),
    /// Its deadline passed.
    Expire,
}

pub(crate) struct Slot<C> {
    pub(crate) flight: InFlight,
    /// The event source of the connection held here (of the last one, when empty): the
    /// deadlines and the drain's pass of a source look only at its own source's slots, never
    /// taking another thread's connection.
    pub(crate) src: AtomicUsize,
    pub(crate) conn: Mutex<Option<Conn<C>>>,
}

/// What is left on a listener after accepting from it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listen {
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
pub(crate) enum Op {
    /// Revoke, then close (the descriptor stays open, so its number is not reused, until then).
    Close(OwnedFd),
    /// Change the interest of a registration.
    Declare(RawFd, Interest),
}

/// One queue shared by a thread pool, in hand-off mode.
pub(crate) struct Shared {
    pub(crate) lead: Leadership<Queue>,
    pub(crate) rearm: Rearm,
    pub(crate) ops: Mutex<Vec<Op>>,
    pub(crate) waker: Waker,
    /// The holder is (about to be) blocked in `get_next_event`.
    pub(crate) waiting: AtomicBool,
    /// Out of descriptors: the listener is not watched until then ([`Listen::Pause`]).
    pub(crate) paused: Mutex<Option<Instant>>,
    /// The listener, until the drain closes it, and its number (-1 then).
    pub(crate) listener: Mutex<Option<OwnedFd>>,
    pub(crate) lfd: AtomicI32,
    /// The deadlines of the pool's connections.
    pub(crate) timers: Mutex<Wheel>,
}

impl Shared {
    pub(crate) fn defer(&self, op: Op) {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).push(op);
        if self.waiting.load(SeqCst) {
            let _ = self.waker.wake();
        }
    }
}

/// How the dispatching thread reaches the event source of a connection.
pub(crate) enum Ctl<'a> {
    /// It holds the queue and the timers (reactor, shards).
    Own(&'a mut Queue, &'a mut Wheel),
    /// It does not: re-arm through the handle, defer the rest to the holder.
    Shared(&'a Shared),
}

impl Ctl<'_> {
    pub(crate) fn queue(&mut self) -> Option<&mut Queue> {
        match self {
            Ctl::Own(q, _) => Some(&mut **q),
            Ctl::Shared(_) => None,
        }
    }

    pub(crate) fn clock(&mut self) -> Clock<'_> {
        match self {
            Ctl::Own(_, t) => Clock::Own(t),
            Ctl::Shared(s) => Clock::Shared(&s.timers),
        }
    }
}

pub(crate) struct Core<H: Handler> {
    pub(crate) handler: Arc<H>,
    /// What a connection's own descriptor is declared with to read: `READ`, and `RECEIVE`
    /// if the handler takes what the backend receives ([`Handler::receives`]).
    pub(crate) read: Interest,
    pub(crate) measure: bool,
    /// [`Config::probe_waits`].
    pub(crate) probe: bool,
    /// [`Config::array_max`], at least 1.
    pub(crate) array_max: usize,
    pub(crate) tick: Duration,
    pub(crate) slots: Box<[Slot<H::Conn>]>,
    /// Per descriptor number: the connection its events go to (its own number for a
    /// connection's descriptor), [`PARKED`] or [`NONE`].
    pub(crate) owner: Box<[AtomicI32]>,
    /// One past the highest descriptor ever adopted.
    pub(crate) high: AtomicUsize,
    pub(crate) stop: AtomicBool,
    /// [`Server::drain`] was called.
    pub(crate) draining: AtomicBool,
    pub(crate) stats: Box<[ThreadStats]>,
}

impl<H: Handler> Core<H> {
    /// The table for `cfg.max_fds` descriptors and `threads` threads' counters.
    pub(crate) fn new(cfg: &Config, handler: Arc<H>, threads: usize) -> Self {
        let slots = (0..cfg.max_fds)
            .map(|_| Slot {
                flight: InFlight::new(),
                src: AtomicUsize::new(usize::MAX),
                conn: Mutex::new(None),
            })
            .collect();
        let read = Interest::READ | if handler.receives() { Interest::RECEIVE } else { Interest::empty() };
        Core {
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
            stats: (0..threads).map(|_| ThreadStats::default()).collect(),
        }
    }

    /// After the threads are gone, and their queues with them: closes the connections left
    /// (a shard closed its own before it stopped; the thread pools' are left), each
    /// connection's attached descriptors with it.
    pub(crate) fn close_left(&self) {
        let mut local = H::Local::default();
        for slot in self.slots.iter() {
            if let Some(conn) = slot.conn.lock().unwrap_or_else(|e| e.into_inner()).take() {
                self.handler.close_in(&mut local, conn.state, conn.fd.as_raw_fd(), Why::Shutdown);
                for e in conn.extra {
                    attach::revoke(None, &self.owner, e, self.meter(&self.stats[0]));
                }
            }
        }
    }

    /// The time spent handling by the threads from `first` on ([`Counters::busy_ns`](crate::Counters::busy_ns)).
    pub(crate) fn busy_ns(&self, first: usize) -> u64 {
        self.stats[first..].iter().map(|s| s.get(Counter::BusyNs)).sum()
    }

    pub(crate) fn clock(&self) -> Option<Instant> {
        self.measure.then(Instant::now)
    }

    pub(crate) fn meter<'a>(&self, st: &'a ThreadStats) -> Meter<'a> {
        st.meter(self.measure)
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
        st.add(Counter::Accepted, 1);
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
    pub(crate) fn accept(
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
        st.add(Counter::Closed, 1);
        let watched = !conn.interest.is_empty();
        for e in conn.extra {
            attach::revoke(ctl.queue(), &self.owner, e, self.meter(st));
        }
        match ctl {
            // Unwatched (after `Next::Wait`): nothing to count, revoked all the same.
            Ctl::Own(q, _) if !watched => st.counted(q.declare_interest(conn.fd.as_fd(), Interest::empty())),
            Ctl::Own(q, _) => {
                st.counted(self.meter(st).revoke(q, raw));
                drop(conn.fd);
            }
            Ctl::Shared(s) => s.defer(Op::Close(conn.fd)),
        }
    }

    /// Hands `ev` to the handler of the connection its descriptor belongs to (or, for a
    /// parked descriptor, to [`Handler::local_event`]), unless another thread is handling
    /// that connection (then that thread runs once more), and re-activates or closes
    /// afterwards.
    pub(crate) fn dispatch(
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
            st.add(Counter::Again, 1);
            return;
        }
        let t0 = self.clock();
        self.handle(slot, cfd, Some(ev), ctl, (src, home), st);
        if let Some(t0) = t0 {
            st.add(Counter::BusyNs, t0.elapsed().as_nanos() as u64);
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
        self.handler.local_event(
            &mut Cx { local: &mut home.local, fds, batch: home.batch },
            ev.fd(),
            ev.state(),
        );
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
            let cx = &mut Cx { local: &mut home.local, fds, batch: home.batch };
            match call {
                Call::Ready(Some((fd, state))) => self.handler.event(cx, &mut conn.state, fd, state),
                Call::Ready(None) => {
                    let hint = State::from_bits_truncate(conn.interest.bits());
                    self.handler.event(cx, &mut conn.state, cfd, hint)
                }
                Call::Expire => self.handler.expire(cx, &mut conn.state, cfd),
            }
        };
        st.add(Counter::Handled, 1);
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
                st.counted(s.rearm.rearm_fd(conn.fd.as_fd(), conn.gen, i));
                st.add(Counter::Rearms, 1);
                if let Some(r0) = r0 {
                    st.add(Counter::RearmNs, r0.elapsed().as_nanos() as u64);
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
    pub(crate) fn expire_due(
        &self,
        ctl: &mut Ctl<'_>,
        (src, home): (usize, &mut Home<H::Local>),
        st: &ThreadStats,
    ) {
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

    /// The drain began: every connection of source `src` is handled once with the drain
    /// visible (a report that arrives for one meanwhile is handled here too). One in flight
    /// on another thread (a pool's) gets a note, so that thread handles it once more after
    /// its round: skipped, a connection answered just before the drain and re-armed just
    /// after it stayed open, idle, until the drain's time ran out (`select` with
    /// Leader/Followers or Half-Sync, about 1 drain in 60).
    fn nudge_all(&self, ctl: &mut Ctl<'_>, (src, home): (usize, &mut Home<H::Local>), st: &ThreadStats) {
        for (fd, slot) in self.slots[..self.high.load(Relaxed).min(self.slots.len())].iter().enumerate() {
            if slot.src.load(Relaxed) != src || !slot.flight.enter() {
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
    pub(crate) fn close_own(
        &self,
        ctl: &mut Ctl<'_>,
        (src, home): (usize, &mut Home<H::Local>),
        st: &ThreadStats,
    ) {
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
    pub(crate) fn begin_drain(
        &self,
        ctl: &mut Ctl<'_>,
        (src, home): (usize, &mut Home<H::Local>),
        st: &ThreadStats,
    ) {
        let fds = Fds {
            q: ctl.queue(),
            owner: &self.owner,
            conn: None,
            parked: &mut home.parked,
            draining: true,
            meter: self.meter(st),
        };
        self.handler.draining(&mut Cx { local: &mut home.local, fds, batch: home.batch });
        self.nudge_all(ctl, (src, home), st);
    }

    pub(crate) fn draining(&self) -> bool {
        self.draining.load(Relaxed)
    }

    /// Waits on `q` (timed when measuring) for at most [`Config::array_max`] events and
    /// returns the events it got; a failed wait is counted and gives none. `None` when the
    /// waits keep failing: the thread must stop. With [`Config::probe_waits`], a call with a
    /// zero timeout comes first, and only if it finds nothing the call that may block.
    /// `batch` is set to when the wait returned events ([`Home::batch`]).
    pub(crate) fn wait(
        &self,
        q: &mut Queue,
        evs: &mut [Event],
        batch: &mut Option<Instant>,
        st: &ThreadStats,
    ) -> Option<usize> {
        *batch = None;
        let n = self.array_max.min(evs.len());
        let evs = &mut evs[..n];
        let t0 = self.clock();
        let probed = self.probe.then(|| q.get_next_event(evs, Some(Duration::ZERO)));
        let r = match probed {
            Some(Ok(n)) if n > 0 => {
                st.add(Counter::ReadyWaits, 1);
                st.add(Counter::ReadyEvents, n as u64);
                if let Some(t0) = t0 {
                    st.add(Counter::ReadyNs, since(t0));
                }
                Ok(n)
            }
            Some(Err(e)) => Err(e),
            _ => {
                let r = q.get_next_event(evs, Some(self.tick));
                if self.probe {
                    st.add(Counter::BlockedWaits, 1);
                    if let Some(t0) = t0 {
                        st.add(Counter::BlockedNs, since(t0));
                    }
                }
                r
            }
        };
        st.add(Counter::Waits, 1);
        if let Some(t0) = t0 {
            st.add(Counter::WaitNs, since(t0));
        }
        match r {
            Ok(n) => {
                if n > 0 {
                    *batch = Some(Instant::now());
                }
                st.add(Counter::Events, n as u64);
                st.max(Counter::MostEvents, n as u64);
                st.failing_waits.store(0, Relaxed);
                Some(n)
            }
            Err(e) => {
                st.add(Counter::WaitErrors, 1);
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

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Relaxed)
    }
}
