//! # hintq-patterns: thread patterns over the hintq event API
//!
//! The application supplies a [`Handler`] ("this connection's descriptor is ready"; plus
//! accept and close hooks and an optional deadline); the [`Pattern`] decides which thread
//! waits, which thread handles, and when interest is re-activated. The patterns are those
//! Strebelow & Prehofer compare, plus the per-thread designs of modern servers:
//!
//! | pattern | threads | who waits | who handles | re-activation |
//! |---|---|---|---|---|
//! | [`Pattern::Reactor`] | 1 | the thread (the paper's Figure 3 loop) | the same thread | by its own queue |
//! | [`Pattern::LeaderFollowers`] | N identical | the leader, one at a time | the leader, after promoting a follower | the handler, through [`hintq::Rearm`] |
//! | [`Pattern::HalfSync`] | 1 asynchronous + N workers | the asynchronous thread | a worker, popped from a [`handoff::WorkQueue`] | the worker, through [`hintq::Rearm`] |
//! | [`Pattern::Sharded`] | N, each its own queue and `SO_REUSEPORT` listener | every thread, on its own connections | the same thread | by its own queue |
//! | [`Pattern::ShardedShared`] | N, each its own queue, one listener | every thread | the same thread | by its own queue; the listener through a [`hintq::Group`] with `Delivery::One` |
//!
//! ## Connections and the listener
//!
//! The pattern owns the listening socket(s) and accepts (with [`hintq::Acceptor`], so
//! `EMFILE` sheds instead of spinning): [`Handler::accept`] receives each new non-blocking
//! connection and returns its per-connection state, which the pattern keeps in a table
//! indexed by descriptor and hands back, by `&mut`, to
//! [`Handler::event`]. The pattern keeps the descriptor itself and closes it after
//! [`Handler::close`], so no path leaks one.
//! Accepting is done by the thread that holds the event source (the leader, the
//! asynchronous thread, each shard), inside the serial section: accepts are rare next to
//! requests on persistent connections.
//!
//! ## Connections with several descriptors, and per-thread state
//!
//! A connection may own more descriptors than its own (a proxy's upstream socket):
//! [`Handler::event`] gets a [`Cx`] whose [`Fds`] attaches a descriptor to the connection
//! with an interest, changes that interest, closes it, or parks it with the thread (it
//! outlives the connection, still watched; its events reach [`Handler::local_event`]) and
//! takes it back. Events of an attached descriptor run the same handler on the same
//! connection state (told which descriptor fired), behind the same in-flight flag, and are
//! checked against the registration's generation like the connection's own. The runtime
//! owns attached descriptors and closes them with the connection. Each handling thread also
//! keeps one [`Handler::Local`] value ([`Cx::local`]): an idle upstream pool per thread.
//! Attaching needs a thread that owns its queue (reactor, sharded, sharded-shared); the
//! thread-pool patterns refuse it with `Unsupported`.
//!
//! ## Sends made by the ring
//!
//! Where the thread owns an io_uring queue, [`hintq::RingIo::send`] gives a buffer to the kernel
//! instead of calling `send(2)`: it leaves with the thread's next wait, in the same
//! `io_uring_enter` as every other reply queued meanwhile and the wait for readiness
//! ([`hintq::RingIo::send`]). A send that succeeds is silent; [`hintq::RingIo::sending`] arms a
//! report of its completion, which calls the handler with `State::SENT`; a failed one calls
//! it with `State::SENT | State::ERR` ([`hintq::RingIo::send_error`] says why). One send per
//! descriptor is in flight, and closing the connection cancels it, so a handler that closes
//! after its last reply first waits for `sending` to be false. [`hintq::RingIo::can_send`] says
//! whether this is available (not on other backends, nor in the thread-pool patterns).
//!
//! ## What a handler must do
//!
//! * Descriptors are non-blocking; an event is a hint (`EAGAIN` is normal).
//! * On edge-triggered backends (`epoll-et`, `uring`) read until `EAGAIN` or a short read:
//!   a readiness is reported once per arrival.
//! * Return the next interest ([`Next`]). Keeping the same interest is the cheap path (a
//!   re-arm); changing it goes through the queue's `declare_interest` (in the thread-pool
//!   patterns, by the thread holding the event source, woken for it).
//! * A connection's handler is never run by two threads at once: the pattern holds a
//!   per-connection in-flight flag ([`handoff::InFlight`]) around it, and a report that
//!   arrives meanwhile makes the current handler run once more.
//!
//! Timeouts: [`Handler::deadline`] gives a connection's deadline (idle, header, ...). Each
//! event source keeps its connections' deadlines in a [`hintq::Wheel`] (a hashed timing
//! wheel indexed by descriptor: O(1) to set or move, 12 bytes a connection), set lazily: the
//! deadline is asked when the connection is accepted and after each handler call, and the
//! wheel is touched only when the deadline moved *earlier* than the one set (a head begun,
//! a drain); a deadline that moved later (every request of a keep-alive connection) leaves
//! it, and when it fires the deadline is asked again and set for it. So a request costs no
//! timer operation and a tick (every [`Config::tick`], the resolution) looks at one bucket,
//! not at every connection. An expired connection gets
//! [`Handler::expire`], which by default closes it with [`Why::Timeout`]; a connection being
//! handled is never expired under its handler (looked at again a tick later).
//!
//! Drain: [`Server::drain`] closes the listeners, calls [`Handler::draining`] once per
//! event-source thread, and runs every connection's handler once ([`Fds::draining`] is
//! then true), so that one idle between requests can close.
//!
//! ## Adaptive thread count
//!
//! With [`Config::adaptive`], Leader/Followers and Half-Sync run between `min` and
//! `threads` active threads (workers for Half-Sync); the others park. Every `interval` the
//! pattern measures the time its threads spent handling (the load) and divides by the active
//! count: above `grow_above` one more thread is unparked, below `shrink_below` one is
//! parked. One step per interval, so the count follows load without oscillating on a single
//! noisy interval. The sharded patterns do not adapt: their connections belong to a
//! thread, so parking it would strand them. Strebelow & Prehofer's conclusion is the reason:
//! too many threads cost Half-Sync dearly, too few cap Leader/Followers.
//!
//! ## Thread hand-offs cost wake-ups
//!
//! Every hand-off between threads (Leader/Followers promoting a follower, Half-Sync's push
//! to a sleeping worker, a `select` re-arm waking the waiting thread) is a futex wake: about
//! 1 µs on the same core, 30-40 µs across cores on the 2-vCPU machine of PERF.md, ten times
//! a whole request. The crate README discusses what that does to each pattern, with the
//! figures of `hintq bench patterns`.
//!
//! ## Shutdown
//!
//! [`Server::shutdown`] stops every thread (waking waiters, followers, parked threads and
//! workers), joins them, calls [`Handler::close`] with [`Why::Shutdown`] for every
//! connection still open and closes its descriptor, then closes the listeners and queues:
//! the process holds as many descriptors afterwards as before [`start`].

#![warn(missing_docs)]

mod attach;
mod counters;
mod dispatch;
pub mod handoff;
mod launch;
mod net;
mod pool;
mod run;
mod shards;
mod sync;

pub use attach::{Cx, Fds};
pub use counters::{Counters, PERSISTENT_WAIT_ERRORS};
pub use net::{claim, claimed, listen, local_addr, open_fds, Claim};
pub use run::{start, Server};

use hintq::{Backend, Interest, State};
use std::fmt;
use std::net::SocketAddr;
use std::os::fd::{BorrowedFd, RawFd};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The thread patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// One thread: wait, handle, repeat (the paper's Figure 3).
    Reactor,
    /// N identical threads; one leader waits, promotes a follower, handles what it got.
    LeaderFollowers,
    /// One thread waits and queues events; N workers pop and handle them.
    HalfSync,
    /// N threads, each with its own queue and its own `SO_REUSEPORT` listener.
    Sharded,
    /// N threads, each with its own queue, sharing one listener through a group with
    /// `Delivery::One`.
    ShardedShared,
}

impl Pattern {
    /// Every pattern, in the order the benchmark sweeps them.
    pub const ALL: [Pattern; 5] = [
        Pattern::Reactor,
        Pattern::LeaderFollowers,
        Pattern::HalfSync,
        Pattern::Sharded,
        Pattern::ShardedShared,
    ];

    /// True for the patterns whose threads share one queue and pass connections on through
    /// hand-off ([`hintq::Rearm`]): Leader/Followers and Half-Sync. Their queues do not make
    /// sends themselves ([`hintq::RingIo::can_send`]).
    pub fn hands_off(self) -> bool {
        matches!(self, Pattern::LeaderFollowers | Pattern::HalfSync)
    }

    /// The name used by `--pattern`.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Reactor => "reactor",
            Pattern::LeaderFollowers => "leader-followers",
            Pattern::HalfSync => "half-sync",
            Pattern::Sharded => "sharded",
            Pattern::ShardedShared => "sharded-shared",
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Pattern {
    type Err = String;
    fn from_str(s: &str) -> Result<Pattern, String> {
        Pattern::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Pattern::ALL.iter().map(|p| p.name()).collect();
            format!("unknown pattern {s:?}; expected one of: {}", names.join(", "))
        })
    }
}

/// What to wait for next on a connection, or close it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Wait until readable (the usual case after sending a reply).
    Read,
    /// Wait until writable (a reply is left to send).
    Write,
    /// Both.
    ReadWrite,
    /// Neither, for now: the connection stays open and its descriptor unwatched until a
    /// later call asks again (an attached descriptor, say an upstream socket, will call).
    Wait,
    /// Close the connection (then [`Handler::close`] is called).
    Close,
}

impl Next {
    fn interest(self) -> Option<Interest> {
        match self {
            Next::Read => Some(Interest::READ),
            Next::Write => Some(Interest::WRITE),
            Next::ReadWrite => Some(Interest::READ | Interest::WRITE),
            Next::Wait => Some(Interest::empty()),
            Next::Close => None,
        }
    }
}

/// Why a connection was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// [`Handler::event`] returned [`Next::Close`].
    Handler,
    /// Its [`Handler::deadline`] passed.
    Timeout,
    /// The server shut down.
    Shutdown,
    /// The event source refused the descriptor (`ENOSPC` at the epoll watch limit, say).
    Refused,
}

impl Next {
    /// The `Next` that asks for `interest` on the connection's descriptor.
    pub fn from_interest(interest: Interest) -> Next {
        let (r, w) = (interest.contains(Interest::READ), interest.contains(Interest::WRITE));
        match (r, w) {
            (true, true) => Next::ReadWrite,
            (true, false) => Next::Read,
            (false, true) => Next::Write,
            (false, false) => Next::Wait,
        }
    }
}

/// The application's side: per-connection state and what to do when a connection is ready.
/// One handler serves every thread, so it is `Send + Sync`; the per-connection state moves
/// between threads in the thread-pool patterns, so it is `Send`.
///
/// A handler implements [`Handler::accept`] and [`Handler::event`], which gets the thread's
/// [`Cx`] too: its [`Handler::Local`] state and the connection's attached descriptors (the
/// proxy's upstream sockets); a handler with one descriptor per connection and no per-thread
/// state ignores it.
pub trait Handler: Send + Sync + 'static {
    /// Per-connection state.
    type Conn: Send + 'static;

    /// Per-thread state (`()` for none): each pattern thread that handles connections makes
    /// one with `Default` and hands it to [`Handler::event`] through [`Cx::local`]. Never
    /// shared between threads, so it need not be `Send`: a pool of idle upstream
    /// connections, buffers, a date cache.
    type Local: Default + 'static;

    /// A new connection (non-blocking, close-on-exec). `None` refuses it (the pattern
    /// closes it). The pattern then waits for it to become readable.
    fn accept(&self, fd: RawFd) -> Option<Self::Conn>;

    /// A descriptor of the connection is ready: its own (`fd == cx.fds().conn_fd()`) or one
    /// it attached with [`Fds::attach`] (`state` is a hint). Returns what to wait for on the
    /// connection's own descriptor; attached ones are changed through [`Cx::fds`]. Never
    /// called for the same connection by two threads at once, whichever descriptor fired.
    fn event(&self, cx: &mut Cx<'_, Self::Local>, conn: &mut Self::Conn, fd: RawFd, state: State) -> Next;

    /// A descriptor the thread holds outside any connection ([`Fds::park`]) is ready. The
    /// default closes it.
    fn local_event(&self, cx: &mut Cx<'_, Self::Local>, fd: RawFd, _state: State) {
        cx.fds().close(fd);
    }

    /// The connection is being closed; the pattern closes `fd` right after, and every
    /// descriptor still attached to it.
    fn close(&self, _conn: Self::Conn, _fd: RawFd, _why: Why) {}

    /// [`Handler::close`] with the closing thread's local state. At [`Server::shutdown`] a
    /// shard closes its own connections with its own; the thread pools' connections left
    /// then get a fresh one. The default calls `close`.
    fn close_in(&self, _local: &mut Self::Local, conn: Self::Conn, fd: RawFd, why: Why) {
        self.close(conn, fd, why)
    }

    /// True if the handler takes a connection's data from the backend where it receives it
    /// itself ([`Interest::RECEIVE`]; io_uring's multishot receive): it calls
    /// [`hintq::RingIo::take_received`] for the connection's descriptor before reading from it.
    /// Default false: the handler reads.
    fn receives(&self) -> bool {
        false
    }

    /// When the connection should be closed if nothing happens. Asked when the connection is
    /// accepted, after every call of the handler and when its timer fires: a deadline must
    /// change only in those calls (or by the drain, which calls every connection).
    fn deadline(&self, _conn: &Self::Conn) -> Option<Instant> {
        None
    }

    /// The connection's [`Handler::deadline`] passed. The default closes it
    /// ([`Why::Timeout`]); a handler may instead answer (a `408`, a `504`) and go on.
    fn expire(&self, _cx: &mut Cx<'_, Self::Local>, _conn: &mut Self::Conn, _fd: RawFd) -> Next {
        Next::Close
    }

    /// A graceful drain began ([`Server::drain`]): called once on each thread that holds an
    /// event source, with its local state, before its connections are looked at.
    fn draining(&self, _cx: &mut Cx<'_, Self::Local>) {}
}

/// The adaptive thread-count policy; see the crate docs.
#[derive(Clone, Copy, Debug)]
pub struct Adaptive {
    /// Fewest active threads (workers for Half-Sync).
    pub min: usize,
    /// How often load is measured and the count adjusted.
    pub interval: Duration,
    /// Unpark one thread when the active threads were busy more than this share of time.
    pub grow_above: f64,
    /// Park one thread when they were busy less than this share.
    pub shrink_below: f64,
}

impl Default for Adaptive {
    fn default() -> Self {
        Adaptive { min: 1, interval: Duration::from_millis(100), grow_above: 0.75, shrink_below: 0.25 }
    }
}

/// Which thread a hook is called on: its role and index (see [`Server::stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A thread that waits and handles (reactor, leader/follower, shard).
    Worker,
    /// Half-Sync's asynchronous (waiting) thread.
    Async,
    /// A Half-Sync worker.
    Sync,
}

/// A callback run first thing on every pattern thread (to pin it to a core, say).
pub type ThreadHook = Arc<dyn Fn(Role, usize) + Send + Sync>;

/// How to run a pattern.
#[derive(Clone)]
pub struct Config {
    /// The pattern.
    pub pattern: Pattern,
    /// Threads (Half-Sync: workers, beside the asynchronous thread; Reactor: ignored, 1).
    pub threads: usize,
    /// The event backend.
    pub backend: Backend,
    /// Where to listen (port 0: any free port, see [`Server::local_addr`]).
    pub listen: SocketAddr,
    /// Bind every listener with `SO_REUSEPORT`, whatever the pattern, so that other processes
    /// can listen on the same port (the worker processes of `hintq serve --processes`), and
    /// do not [`claim`] the address: the one that started them holds the claim. The sharded
    /// pattern always binds with `SO_REUSEPORT`, for its listener per thread; without this,
    /// every pattern claims its address first, so that no other server shares its port.
    pub reuseport: bool,
    /// Time the operations the experiment reports (two clock reads per operation):
    /// `get_next_event`, declares and revokes, re-arms, work-queue inserts, handling.
    pub measure: bool,
    /// Split the waits that found events without blocking from those that blocked (Banga's
    /// Fig. 6 counts the former): each wait first calls `get_next_event` with a zero timeout
    /// and, only if that finds nothing, again with the tick's timeout. A timed call that
    /// returned events may have slept before they came; one with a zero timeout never did.
    /// Costs one more call per wait that blocks, none under saturation. See
    /// [`Counters::ready_waits`].
    pub probe_waits: bool,
    /// The most events one `get_next_event` call returns (Banga's `array_max`): the length of
    /// the event array of each waiting thread. Leader/Followers takes one event per call
    /// whatever this says (it hands the queue over before handling it). Default
    /// [`Config::ARRAY_MAX`].
    pub array_max: usize,
    /// Grow and shrink the active thread count with load.
    pub adaptive: Option<Adaptive>,
    /// How often deadlines are checked (and the longest a waiting thread sleeps).
    pub tick: Duration,
    /// Descriptors above this are refused (the connection table is sized by it).
    pub max_fds: usize,
    /// Run on every pattern thread first.
    pub on_thread_start: Option<ThreadHook>,
    /// The `rtsig` backend's hybrid signal/polling thresholds (ignored by other backends
    /// and by the `sharded-shared` group).
    pub rtsig_hybrid: hintq::Hybrid,
    /// io_uring's coalescing window for the pattern's queues (zero: off); see
    /// [`hintq::Builder::coalesce`].
    pub coalesce: Duration,
    /// io_uring: the queues' rings defer their completion work to the waiting thread where
    /// the kernel has it; see [`hintq::Builder::uring_defer`]. Default true.
    pub uring_defer: bool,
    /// io_uring: the queues' rings make the replies' sends where the kernel has them; see
    /// [`hintq::Builder::uring_sends`] and [`Config::ring_sends`]. Default true.
    pub uring_sends: bool,
    /// io_uring: the queues' rings receive for handlers that ask
    /// ([`Handler::receives`]) where the kernel has it; see
    /// [`hintq::Builder::uring_receives`]. Default true.
    pub uring_receives: bool,
}

impl Config {
    /// The default [`Config::array_max`].
    pub const ARRAY_MAX: usize = 64;

    /// True if the threads' queues make the replies' sends themselves (through [`crate::Fds::ring_io`]):
    /// a backend that sends ([`Backend::sends`]) on a pattern that does not hand off, unless
    /// [`Config::uring_sends`] is false.
    pub fn ring_sends(&self) -> bool {
        self.uring_sends && self.backend.sends() && !self.pattern.hands_off()
    }

    /// A configuration with defaults: no measuring, fixed thread count, 100 ms tick,
    /// 65,536 descriptors, 64 events per call.
    pub fn new(pattern: Pattern, threads: usize, backend: Backend, listen: SocketAddr) -> Config {
        Config {
            pattern,
            threads: threads.max(1),
            backend,
            listen,
            reuseport: false,
            measure: false,
            probe_waits: false,
            array_max: Config::ARRAY_MAX,
            adaptive: None,
            tick: Duration::from_millis(100),
            max_fds: 65_536,
            on_thread_start: None,
            rtsig_hybrid: hintq::Hybrid::default(),
            coalesce: Duration::ZERO,
            uring_defer: true,
            uring_sends: true,
            uring_receives: true,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("pattern", &self.pattern)
            .field("threads", &self.threads)
            .field("backend", &self.backend)
            .field("listen", &self.listen)
            .field("reuseport", &self.reuseport)
            .field("array_max", &self.array_max)
            .field("adaptive", &self.adaptive)
            .field("coalesce", &self.coalesce)
            .field("uring_defer", &self.uring_defer)
            .field("uring_sends", &self.uring_sends)
            .field("uring_receives", &self.uring_receives)
            .finish()
    }
}

/// A descriptor this crate holds open, by number (a connection or an attached descriptor in
/// a thread's table, a listener its pattern keeps), borrowed for one call to the queue.
/// The tables key their owners (`OwnedFd`) by number, and a number leaves the queue (revoke)
/// before its owner is dropped, so the number names the owner's file for the call.
pub(crate) fn held<'a>(fd: RawFd) -> BorrowedFd<'a> {
    debug_assert!(fd >= 0, "a held descriptor");
    // SAFETY: as above: every caller passes the number of a descriptor whose owner it holds
    // until after the call (and never -1); the queue does not close it.
    unsafe { BorrowedFd::borrow_raw(fd) }
}
