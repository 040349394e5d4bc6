//! What every backend is to the queue: the [`Poller`] trait (readiness only) and the types
//! it speaks in. The backends' own files implement it, [`super::Any`] dispatches to them; none
//! of them needs anything else of the backend module.

use super::shadow::Shadow;
use crate::{Interest, State};
use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// One readiness report from a backend.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ready {
    pub token: u64,
    pub state: State,
}

/// How [`Poller::set`] is to watch a descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arm {
    /// The queue believes `fd` is new to the backend.
    Fresh,
    /// The queue believes the backend watches `fd` already (a change of interest).
    Existing,
    /// Re-arms a registration a one-shot backend ([`Capabilities::oneshot`]) disarmed when
    /// it reported it. A descriptor closed meanwhile is not watched again: its number may
    /// belong to another file by now. Other backends take it as [`Arm::Existing`].
    Rearm,
}

impl Arm {
    /// [`Arm::Fresh`] or [`Arm::Existing`].
    #[inline]
    pub(crate) fn new(fresh: bool) -> Arm {
        if fresh {
            Arm::Fresh
        } else {
            Arm::Existing
        }
    }
}

/// What a backend's mechanism does that the queue must know of: fixed per backend (and
/// per mode, and per kernel for io_uring), asked once per queue or per statistics call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Capabilities {
    /// The backend disarms a registration when it reports it (`epoll-oneshot`): the queue
    /// re-arms it with [`Arm::Rearm`] once the event is delivered.
    pub oneshot: bool,
    /// One wait reports each registration at most once (`epoll`): the queue may hand a
    /// wait's reports out without coalescing them.
    pub reports_once: bool,
    /// Readiness that predates `set` is reported by the next wait. False only for `rtsig`:
    /// a signal is raised for an arrival, never for a state.
    pub reports_existing: bool,
    /// The coalescing window in effect ([`crate::Builder::coalesce`]): io_uring on a kernel
    /// with a minimum wait only.
    pub coalescing: Option<Duration>,
}

impl Capabilities {
    /// A level- or edge-triggered backend that reports existing readiness and neither
    /// disarms, dedupes nor coalesces.
    pub(crate) const PLAIN: Capabilities =
        Capabilities { oneshot: false, reports_once: false, reports_existing: true, coalescing: None };
}

/// What every backend does: readiness only. Tokens are opaque to the backend. What one
/// backend alone has is reached through [`Any`]: io_uring's sends and receives
/// ([`Any::ring`](super::Any::ring)), rtsig's wake-up signal
/// ([`Any::wake_signal`](super::Any::wake_signal)).
pub(crate) trait Poller: Send {
    /// What the mechanism does that the queue must know of.
    fn capabilities(&self) -> Capabilities {
        Capabilities::PLAIN
    }

    /// Watches `fd` for `interest` under `token`, replacing what was watched for `fd` before.
    /// `arm` says whether the queue believes `fd` is new to the backend; a backend must
    /// still cope when it is wrong (the descriptor was closed and its number reused, so the
    /// kernel forgot it; or it was dup2'ed over).
    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, arm: Arm) -> io::Result<()>;

    /// Stops watching `fd`. A descriptor the kernel already forgot (closed) is not an error.
    /// After this returns, the backend holds no reference to the open file (io_uring: the
    /// poll request is cancelled), so `close(fd)` really closes it.
    fn delete(&mut self, fd: RawFd, token: u64) -> io::Result<()>;

    /// Waits up to `timeout` (`None`: forever, zero: not at all) for readiness and appends
    /// reports to `out`, at most `max` where the mechanism lets the caller choose (a backend
    /// whose reports are already in memory, like io_uring's ring, may append more). Returns
    /// `Interrupted` on `EINTR`; the queue retries. May return with nothing appended before
    /// the timeout (a spurious wake-up).
    fn wait(&mut self, out: &mut Vec<Ready>, max: usize, timeout: Option<Duration>) -> io::Result<()>;

    /// The backend's own counters, merged into [`crate::Stats`].
    fn counters(&self) -> Counters {
        Counters::default()
    }

    /// Gives back the pages of tables indexed by descriptor number past the highest number
    /// watched now: called by the queue once its registrations fell far below their peak.
    /// Nothing to do for backends without such tables.
    fn trim(&mut self) {}

    /// Hand-off mode ([`crate::Rearm`]): the thread-safe path that re-activates a delivered
    /// registration. `None`: the backend cannot be re-armed from another thread.
    fn handoff(&mut self) -> Option<Handoff> {
        None
    }

    /// Hand-off mode: stops `fd` from being reported again until it is re-armed through the
    /// [`Handoff`] path. Nothing to do for one-shot (the kernel disarmed it) and edge-native
    /// backends (no new report without a new arrival).
    fn deactivate(&mut self, _fd: RawFd, _token: u64) {}
}

/// How a [`crate::Rearm`] re-activates a registration from any thread.
#[derive(Clone)]
pub(crate) enum Handoff {
    /// `epoll_ctl` on the shared set: `MOD` (one-shot) or `ADD` (level, deactivated by `DEL`).
    Epoll { epfd: std::sync::Arc<std::os::fd::OwnedFd>, flags: u32, add: bool },
    /// Set the bits in the shared shadow sets, and wake a blocked `select`.
    Select(std::sync::Arc<Shadow>),
    /// Edge-native: a new arrival is a new report; nothing to re-activate.
    Edge,
}

/// Counters a backend keeps about its own mechanics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Overflow recoveries (rtsig: SIGIO then a full poll scan).
    pub recoveries: u64,
    /// Switches between signal and polling mode (rtsig hybrid).
    pub switches: u64,
    /// Descriptors moved between the active and inactive sets (gooch).
    pub migrations: u64,
}

/// Why this kernel does not run a backend ([`Backend::probe`](super::Backend::probe)); its text says why in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeError {
    kind: ProbeErrorKind,
    reason: String,
}

/// What kind of refusal a [`ProbeError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProbeErrorKind {
    /// The kernel refused the mechanism outright: `EPERM` (`kernel.io_uring_disabled`, a
    /// seccomp filter such as Docker's default), `ENOSYS` (built without it).
    Refused,
    /// The kernel is too old for a feature the backend needs (a missing opcode or flag).
    Unsupported,
    /// The probe itself failed (an eventfd could not be made, say): perhaps temporary.
    Failed,
}

impl ProbeError {
    pub(crate) fn new(kind: ProbeErrorKind, reason: impl Into<String>) -> ProbeError {
        ProbeError { kind, reason: reason.into() }
    }

    /// What kind of refusal this is.
    pub fn kind(&self) -> ProbeErrorKind {
        self.kind
    }

    /// The reason in words, as [`std::fmt::Display`] writes it.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for ProbeError {}

impl From<ProbeError> for io::Error {
    fn from(e: ProbeError) -> io::Error {
        let kind = match e.kind {
            ProbeErrorKind::Refused => io::ErrorKind::PermissionDenied,
            ProbeErrorKind::Unsupported => io::ErrorKind::Unsupported,
            ProbeErrorKind::Failed => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}
