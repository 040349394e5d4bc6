//! The runtime's counters, named once: [`Counter`] indexes each thread's array of atomics
//! ([`ThreadStats`]), and the same list makes the public snapshot [`Counters`] (its fields,
//! its JSON through serde) and the copy between them. [`Meter`] counts and times the
//! interest changes made on a thread's behalf.

use hintq::{Interest, Queue};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// Failed `get_next_event` calls in a row, with no success between them, after which a
/// thread stops with a message on standard error instead of spinning on an error that
/// does not go away (the queue's descriptor is broken, for example).
pub const PERSISTENT_WAIT_ERRORS: u64 = 100;

/// Declares [`Counter`] (one variant per counter), [`Counters`] (one field per counter, in
/// the same order, serialized under the field's name) and [`ThreadStats::snapshot`].
macro_rules! counters {
    ($($(#[doc = $doc:expr])* $field:ident: $name:ident,)*) => {
        /// One counter of a thread: the index into its [`ThreadStats`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum Counter {
            $($name,)*
        }

        impl Counter {
            /// How many there are.
            const COUNT: usize = [$(Counter::$name),*].len();
        }

        /// What one pattern thread did; times are zero unless [`Config::measure`](crate::Config::measure) was set.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
        #[non_exhaustive]
        pub struct Counters {
            $($(#[doc = $doc])* pub $field: u64,)*
        }

        impl ThreadStats {
            /// The counters now.
            pub(crate) fn snapshot(&self) -> Counters {
                Counters { $($field: self.get(Counter::$name),)* }
            }
        }
    };
}

counters! {
    /// Calls of [`Handler::event`](crate::Handler::event).
    handled: Handled,
    /// Reports that found their descriptor in flight on another thread (handled again there).
    again: Again,
    /// Connections accepted.
    accepted: Accepted,
    /// Connections closed by this thread.
    closed: Closed,
    /// `get_next_event` calls.
    waits: Waits,
    /// Time inside them.
    wait_ns: WaitNs,
    /// Events they returned.
    events: Events,
    /// The most events one call returned (at most [`Config::array_max`](crate::Config::array_max)).
    most_events: MostEvents,
    /// With [`Config::probe_waits`](crate::Config::probe_waits): waits whose zero-timeout
    /// probe found events, so the thread did not block (Banga's Fig. 6 measures these: the
    /// proxy "never blocks").
    ready_waits: ReadyWaits,
    /// Time inside those probes (zero unless measuring).
    ready_ns: ReadyNs,
    /// Events those probes returned.
    ready_events: ReadyEvents,
    /// With [`Config::probe_waits`](crate::Config::probe_waits): waits whose probe found
    /// nothing, followed by a call that may block (`ready_waits + blocked_waits = waits`).
    blocked_waits: BlockedWaits,
    /// Time inside both calls of those waits, sleep included (zero unless measuring).
    blocked_ns: BlockedNs,
    /// Interest declared by the runtime (new registrations and interest changes, of a
    /// connection, an attached descriptor or the listener; not re-arms).
    declares: Declares,
    /// Time inside them (zero unless measuring).
    declare_ns: DeclareNs,
    /// Of `declares`, those that added a descriptor to the interest set (accepted
    /// connections, attached descriptors, interest declared again after none): Banga's
    /// "declaring interest" case of Fig. 7.
    declares_new: DeclaresNew,
    /// Time inside them (zero unless measuring).
    declare_new_ns: DeclareNewNs,
    /// Interest revoked by the runtime (closes, detaches, `Next::Wait`).
    revokes: Revokes,
    /// Time inside them (zero unless measuring).
    revoke_ns: RevokeNs,
    /// Half-Sync: pushes into the work queue.
    inserts: Inserts,
    /// Time inside them.
    insert_ns: InsertNs,
    /// Re-activations through [`hintq::Rearm`].
    rearms: Rearms,
    /// Time inside them.
    rearm_ns: RearmNs,
    /// Time spent handling (dispatch, handler included).
    busy_ns: BusyNs,
    /// `get_next_event` calls that failed. [`PERSISTENT_WAIT_ERRORS`] in a row stop the thread.
    wait_errors: WaitErrors,
    /// Interest changes (declare, revoke, re-arm) that failed; the loop goes on without them.
    interest_errors: InterestErrors,
}

/// Per-thread counters, read by [`Server::stats`](crate::Server::stats).
pub(crate) struct ThreadStats {
    counts: [AtomicU64; Counter::COUNT],
    /// Failed waits since the last successful one (see [`PERSISTENT_WAIT_ERRORS`]).
    pub(crate) failing_waits: AtomicU64,
}

impl Default for ThreadStats {
    fn default() -> Self {
        ThreadStats { counts: std::array::from_fn(|_| AtomicU64::new(0)), failing_waits: AtomicU64::new(0) }
    }
}

impl ThreadStats {
    pub(crate) fn add(&self, c: Counter, v: u64) {
        self.counts[c as usize].fetch_add(v, Relaxed);
    }

    /// Adds the time since `t0`, if there is one (measuring).
    pub(crate) fn add_since(&self, c: Counter, t0: Option<Instant>) {
        if let Some(t0) = t0 {
            self.add(c, since(t0));
        }
    }

    pub(crate) fn max(&self, c: Counter, v: u64) {
        self.counts[c as usize].fetch_max(v, Relaxed);
    }

    pub(crate) fn get(&self, c: Counter) -> u64 {
        self.counts[c as usize].load(Relaxed)
    }

    /// Counts this thread's declares and revokes, timing them if `on`.
    pub(crate) fn meter(&self, on: bool) -> Meter<'_> {
        Meter { st: self, on }
    }

    /// Counts a failed interest change: the loop goes on without it (the connection times
    /// out or is closed), but not silently.
    pub(crate) fn counted<T>(&self, r: io::Result<T>) {
        if r.is_err() {
            self.add(Counter::InterestErrors, 1);
        }
    }
}

pub(crate) fn since(t0: Instant) -> u64 {
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
        let r = q.declare(crate::held(fd), interest);
        let ns = t0.map_or(0, since);
        let st = self.st;
        if interest.is_empty() {
            st.add(Counter::Revokes, 1);
            st.add(Counter::RevokeNs, ns);
        } else {
            st.add(Counter::Declares, 1);
            st.add(Counter::DeclareNs, ns);
            if new {
                st.add(Counter::DeclaresNew, 1);
                st.add(Counter::DeclareNewNs, ns);
            }
        }
        r
    }

    /// Revokes interest in `fd` (`declare_interest` with an empty interest).
    pub(crate) fn revoke(self, q: &mut Queue, fd: RawFd) -> io::Result<()> {
        self.declare(q, fd, Interest::empty(), false)
    }
}
