//! Backends: one file each, selected at run time (libev's model, not mio's compile-time one).
//!
//! A backend is the small [`Poller`] contract below. It knows nothing of FIFO order,
//! coalescing, generations or overflow: the [`crate::Queue`] does all of that once, for every
//! backend. A backend only watches descriptors under a 64-bit token and reports
//! `(token, state)` pairs.

use crate::waker::WakeSignal;
use crate::Interest;
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::Duration;

pub(crate) mod epoll;
mod fdmap;
pub(crate) mod gooch;
mod poller;
mod shadow;
pub use gooch::GoochPolicy;
pub(crate) use poller::{Arm, Capabilities, Counters, Handoff, Poller, Ready};
pub use poller::{ProbeError, ProbeErrorKind};
pub use rtsig::Hybrid;
mod poll;
mod pollset;
pub(crate) mod rtsig;
mod select;
pub(crate) mod uring;

/// How many buffers the library left allocated for the rest of the process because the
/// kernel might still read or write them: io_uring sends and receives that could not be
/// cancelled and reaped before their ring closed (a queue dropped on a thread other than the
/// one that ran it, or completions the kernel dropped). Freeing them could send bytes the
/// program never sent, or let a receive write into reused memory. 0 on other backends.
pub fn leaked_buffers() -> u64 {
    uring::leaked()
}

/// The backend a queue runs on, chosen at run time and dispatched statically: a `match`
/// the compiler inlines through, where a `Box<dyn Poller>` made every call (three a wait)
/// an indirect one that nothing could be inlined across. Held inline by its queue (one per
/// thread), io_uring's 600-odd bytes too: a box would add a load to each of its calls.
#[allow(clippy::large_enum_variant)]
// An explicit tag: the common path's test for its backend is one byte compare, where the
// niche in the io_uring variant made it a dozen instructions.
#[repr(u8)]
pub(crate) enum Any {
    Uring(uring::Uring),
    Epoll(epoll::Epoll),
    Poll(poll::Poll),
    Select(select::Select),
    Rtsig(rtsig::Rtsig),
    Gooch(gooch::Gooch),
}

/// Runs `$e` with `$p` bound to the backend inside `$any`.
macro_rules! each {
    ($any:expr, $p:ident => $e:expr) => {
        match $any {
            Any::Uring($p) => $e,
            Any::Epoll($p) => $e,
            Any::Poll($p) => $e,
            Any::Select($p) => $e,
            Any::Rtsig($p) => $e,
            Any::Gooch($p) => $e,
        }
    };
}

impl Poller for Any {
    #[inline]
    fn capabilities(&self) -> Capabilities {
        each!(self, p => p.capabilities())
    }
    /// epoll's inline (one `epoll_ctl` and a few compares), the others' out of line.
    #[inline]
    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, arm: Arm) -> io::Result<()> {
        match self {
            Any::Epoll(p) => p.set(fd, token, interest, arm),
            _ => self.set_other(fd, token, interest, arm),
        }
    }
    /// epoll's inline, the others' out of line.
    #[inline]
    fn delete(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        match self {
            Any::Epoll(p) => p.delete(fd, token),
            _ => self.delete_other(fd, token),
        }
    }
    #[inline]
    fn wait(&mut self, out: &mut Vec<Ready>, max: usize, timeout: Option<Duration>) -> io::Result<()> {
        each!(self, p => p.wait(out, max, timeout))
    }
    #[inline]
    fn counters(&self) -> Counters {
        each!(self, p => p.counters())
    }
    #[inline]
    fn trim(&mut self) {
        each!(self, p => p.trim())
    }
    #[inline]
    fn handoff(&mut self) -> Option<Handoff> {
        each!(self, p => p.handoff())
    }
    #[inline]
    fn deactivate(&mut self, fd: RawFd, token: u64) {
        each!(self, p => p.deactivate(fd, token))
    }
}

/// What one backend alone has, reached through the enum rather than the trait.
impl Any {
    /// [`Poller::set`] of the backends other than epoll.
    #[inline(never)]
    fn set_other(&mut self, fd: RawFd, token: u64, interest: Interest, arm: Arm) -> io::Result<()> {
        each!(self, p => p.set(fd, token, interest, arm))
    }

    /// [`Poller::delete`] of the backends other than epoll.
    #[inline(never)]
    fn delete_other(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        each!(self, p => p.delete(fd, token))
    }

    /// The io_uring ring, whose I/O (sends, receives into its buffers) no other backend has.
    #[inline]
    pub(crate) fn ring(&mut self) -> Option<&mut uring::Uring> {
        match self {
            Any::Uring(u) => Some(u),
            _ => None,
        }
    }

    /// [`Any::ring`], shared.
    #[inline]
    pub(crate) fn ring_ref(&self) -> Option<&uring::Uring> {
        match self {
            Any::Uring(u) => Some(u),
            _ => None,
        }
    }

    /// For backends that cannot watch an eventfd (`rtsig`): the thread and signal a
    /// [`crate::Waker`] must send to wake this backend's wait.
    pub(crate) fn wake_signal(&self) -> Option<WakeSignal> {
        match self {
            Any::Rtsig(r) => Some(r.wake_signal()),
            _ => None,
        }
    }

    /// Submits what the ring has queued for the kernel (its sends) without waiting: called
    /// when the queue hands out events without waiting for the backend. Nothing elsewhere.
    #[inline]
    pub(crate) fn submit(&mut self) -> io::Result<()> {
        match self {
            Any::Uring(u) => u.submit(),
            _ => Ok(()),
        }
    }

    /// Events may have been lost inside the ring (CQ overflow with `EBADR`): returns and
    /// clears the flag; the queue answers with a full rescan. False elsewhere.
    #[inline]
    pub(crate) fn take_lost(&mut self) -> bool {
        match self {
            Any::Uring(u) => u.take_lost(),
            _ => false,
        }
    }

    /// True if the ring holds received bytes (or an end of stream, or an error) of `fd`
    /// not taken yet: readable, whatever `poll(2)` says (for the overflow scan).
    #[inline]
    pub(crate) fn holds(&self, fd: RawFd) -> bool {
        self.ring_ref().is_some_and(|u| u.holds(fd))
    }
}

impl Handoff {
    /// Re-activates, from any thread, `fd`'s registration `data` that a wait of a queue in
    /// hand-off mode delivered, for `interest`; each backend's way is in its own file.
    /// `waker` wakes the queue's blocked wait where the backend needs it (`select`).
    pub(crate) fn reactivate(
        &self,
        fd: RawFd,
        data: u64,
        interest: Interest,
        waker: Option<&crate::Waker>,
    ) -> io::Result<()> {
        match self {
            Handoff::Edge => Ok(()),
            Handoff::Epoll { epfd, flags, add } => {
                epoll::handoff_rearm(epfd.as_raw_fd(), (*flags, *add), fd, data, interest)
            }
            Handoff::Select(shadow) => select::handoff_rearm(shadow, fd, interest, waker),
        }
    }
}

/// Per-backend settings a [`crate::Builder`] passes down.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Config {
    pub uring: uring::Settings,
    pub hybrid: Hybrid,
    pub gooch: GoochPolicy,
}

/// The readiness mechanisms hintq can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// io_uring multishot `POLL_ADD`: hints are posted into the shared completion ring and
    /// reaped without a system call when already there. Edge-native.
    Uring,
    /// epoll, level-triggered. State-based.
    Epoll,
    /// epoll, edge-triggered (`EPOLLET`). Edge-native.
    EpollEt,
    /// epoll with `EPOLLONESHOT`, re-armed with `EPOLL_CTL_MOD` at the next
    /// `get_next_event` after the event was delivered (or at the next `declare_interest`).
    EpollOneshot,
    /// `poll(2)`: the interest array goes to the kernel on every call. O(registered).
    Poll,
    /// `select(2)`, Banga's "improved select": persistent shadow sets copied per call,
    /// results scanned word by word. Sets sized at run time: any descriptor number.
    Select,
    /// `select(2)` as a 1999 server used it ("classical select"): sets rebuilt from the
    /// interest table on every call, results tested bit by bit. No hand-off mode.
    SelectClassic,
    /// POSIX real-time signals (`F_SETSIG`, `F_SETOWN_EX` to the queue's thread), collected
    /// with `sigtimedwait`; on queue overflow (plain `SIGIO`) a flush and a full poll scan;
    /// optionally the hybrid of Provos & Lever that polls under heavy load. Edge-native.
    Rtsig,
    /// Gooch's active and inactive poll sets with activity-driven migration. State-based.
    Gooch,
}

/// An unknown backend name. Its `Debug` says what its `Display` says, so that a `main`
/// returning the error (which prints `Debug`) names the valid backends too.
#[derive(Clone, PartialEq, Eq)]
pub struct ParseBackendError(String);

impl fmt::Display for ParseBackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Backend::ALL.iter().map(|b| b.name()).collect();
        write!(f, "unknown backend {:?}; valid: {}", self.0, names.join(", "))
    }
}

impl fmt::Debug for ParseBackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl std::error::Error for ParseBackendError {}

impl From<ParseBackendError> for io::Error {
    fn from(e: ParseBackendError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidInput, e)
    }
}

impl Backend {
    /// Every backend, in the order `hintq backends` lists them.
    pub const ALL: [Backend; 9] = [
        Backend::Uring,
        Backend::Epoll,
        Backend::EpollEt,
        Backend::EpollOneshot,
        Backend::Poll,
        Backend::Select,
        Backend::SelectClassic,
        Backend::Rtsig,
        Backend::Gooch,
    ];

    /// The name used by `HINTQ_BACKEND`, `--backend` and `hq_queue_new`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Uring => "uring",
            Backend::Epoll => "epoll",
            Backend::EpollEt => "epoll-et",
            Backend::EpollOneshot => "epoll-oneshot",
            Backend::Poll => "poll",
            Backend::Select => "select",
            Backend::SelectClassic => "select-classic",
            Backend::Rtsig => "rtsig",
            Backend::Gooch => "gooch",
        }
    }

    /// True if the backend reports arrivals rather than states (see the crate docs).
    pub fn is_edge(self) -> bool {
        matches!(self, Backend::Uring | Backend::EpollEt | Backend::Rtsig)
    }

    /// Whether this kernel lets the backend run, and if not, why.
    ///
    /// # Errors
    /// Why not, as a [`ProbeError`] whose [`ProbeError::kind`] tells a refusal from a kernel
    /// too old and from a failed probe.
    pub fn probe(self) -> Result<(), ProbeError> {
        match self {
            Backend::Uring => uring::probe().clone(),
            _ => Ok(()),
        }
    }

    /// True if a queue on this backend makes sends itself ([`crate::RingIo::send`]) unless its
    /// builder says not to ([`crate::Builder::uring_sends`]): `uring` where this kernel runs
    /// it with `IORING_OP_SEND`. A queue in hand-off mode still does not
    /// ([`crate::RingIo::can_send`]).
    pub fn sends(self) -> bool {
        self == Backend::Uring && self.probe().is_ok() && uring::sends()
    }

    /// The backends this kernel supports.
    pub fn supported() -> Vec<Backend> {
        Backend::ALL.into_iter().filter(|b| b.probe().is_ok()).collect()
    }

    /// `uring` where the kernel allows it, else `epoll`. When io_uring is refused (disabled
    /// by `kernel.io_uring_disabled`, filtered by seccomp, too old), says so once on
    /// standard error.
    pub fn recommended() -> Backend {
        match Backend::Uring.probe() {
            Ok(()) => Backend::Uring,
            Err(why) => {
                warn_once_fallback(&why);
                Backend::Epoll
            }
        }
    }

    /// The backend named by `HINTQ_BACKEND`, or [`Backend::recommended`] when it is unset
    /// or empty. An unknown name is an `InvalidInput` error.
    pub fn from_env() -> io::Result<Backend> {
        match std::env::var("HINTQ_BACKEND") {
            Ok(name) if !name.is_empty() => Ok(name.parse()?),
            _ => Ok(Backend::recommended()),
        }
    }

    /// Builds the backend, falling back to epoll (with one warning) when io_uring is refused.
    /// `uring_cq` sizes io_uring's completion ring (`None`: the default).
    pub(crate) fn open(self, config: &Config) -> io::Result<(Backend, Any)> {
        if let Err(why) = self.probe() {
            warn_once_fallback(&why);
            return Backend::Epoll.open(config);
        }
        let p = match self {
            Backend::Uring => Any::Uring(uring::Uring::new(&config.uring)?),
            Backend::Epoll => Any::Epoll(epoll::Epoll::new(epoll::Mode::Level)?),
            Backend::EpollEt => Any::Epoll(epoll::Epoll::new(epoll::Mode::Edge)?),
            Backend::EpollOneshot => Any::Epoll(epoll::Epoll::new(epoll::Mode::Oneshot)?),
            Backend::Poll => Any::Poll(poll::Poll::default()),
            Backend::Select => Any::Select(select::Select::new(select::Mode::Improved)),
            Backend::SelectClassic => Any::Select(select::Select::new(select::Mode::Classic)),
            Backend::Rtsig => Any::Rtsig(rtsig::Rtsig::new(config.hybrid)?),
            Backend::Gooch => Any::Gooch(gooch::Gooch::new(config.gooch)),
        };
        Ok((self, p))
    }
}

fn warn_once_fallback(why: &ProbeError) {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| eprintln!("hintq: io_uring unavailable ({why}); falling back to epoll"));
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = ParseBackendError;
    fn from_str(s: &str) -> Result<Backend, ParseBackendError> {
        Backend::ALL.into_iter().find(|b| b.name() == s).ok_or_else(|| ParseBackendError(s.to_string()))
    }
}
