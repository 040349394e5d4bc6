//! Hand-off mode: one queue, several threads (Leader/Followers, Half-Sync/Half-Async).
//!
//! A [`Queue`](crate::Queue) belongs to one thread at a time, and by default it re-arms what it delivered
//! at its own next [`Queue::get_next_event`](crate::Queue::get_next_event). The thread-pool patterns of Strebelow &
//! Prehofer need something else: the thread that *takes* an event (the leader, or the
//! asynchronous thread) is not the one that *handles* it, and the descriptor must stay quiet
//! until the handler has read the message and sent the reply, then be re-activated by the
//! handler while another thread may already be blocked in `get_next_event`.
//!
//! [`Queue::handoff`](crate::Queue::handoff) switches a queue into that mode and returns a [`Rearm`]:
//!
//! * Every event the queue delivers leaves its registration **deactivated**: it is not
//!   reported again, whatever arrives, until [`Rearm::rearm`] is called for it. How the
//!   backend deactivates and re-activates is the paper's per-mechanism cost:
//!
//!   | backend | deactivate (at delivery, by the waiting thread) | re-activate ([`Rearm::rearm`], any thread) |
//!   |---|---|---|
//!   | `epoll-oneshot` | automatic (`EPOLLONESHOT`) | `EPOLL_CTL_MOD` |
//!   | `epoll` (level) | `EPOLL_CTL_DEL` | `EPOLL_CTL_ADD` |
//!   | `select` | clear the bits in the shadow sets | set the bits (under their lock), wake a blocked `select` |
//!   | `epoll-et`, `uring` | none (edge-triggered) | none |
//!
//!   On the edge-native backends a new arrival *is* reported while the first event is
//!   being handled: the caller must serialise handling per descriptor itself (an in-flight
//!   flag), and the handler must read until `EAGAIN` or a short read.
//! * `poll`, `select-classic`, `rtsig` and `gooch` have no thread-safe re-activation path
//!   (the classical select rebuilds its sets from a table only its own thread touches):
//!   `handoff` fails with `Unsupported` for them, and for a queue that is a
//!   [`crate::Group`] member.
//!
//! # Thread rules
//!
//! * The [`Queue`](crate::Queue) itself stays `Send`, not `Sync`: the pattern shares it behind a lock (the
//!   Leader/Followers "mutually exclusive section") or keeps it in one thread (Half-Sync).
//!   Declaring, revoking and closing go through the queue, hence through that lock.
//! * [`Rearm`] is `Send + Sync` and may be used from any thread, concurrently with a
//!   `get_next_event` blocked in another thread, but only for an event that thread was
//!   handed and only **before** the descriptor is revoked or closed: re-arming a registration
//!   that was revoked meanwhile could re-add a closed descriptor's number.
//! * The interest passed to `rearm` must be the one declared (changing interest is a
//!   `declare_interest`, through the queue).

use crate::backend::Handoff;
use crate::token::token;
use crate::{Event, Interest, Waker};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Re-activates, from any thread, a registration a queue in hand-off mode delivered; see
/// the [module docs](crate::shared). Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Rearm {
    how: Handoff,
    /// Wakes the queue's blocked `select` (only the select backend needs it).
    waker: Option<Waker>,
}

impl std::fmt::Debug for Rearm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match &self.how {
            Handoff::Epoll { add: true, .. } => "epoll ADD",
            Handoff::Epoll { add: false, .. } => "epoll MOD",
            Handoff::Select(_) => "select bit",
            Handoff::Edge => "none (edge)",
        };
        f.debug_struct("Rearm").field("how", &how).finish()
    }
}

impl Rearm {
    /// The handle of a queue put in hand-off mode (`Queue::handoff`): `how` its backend
    /// re-activates, `waker` wakes its blocked `select`.
    pub(crate) fn new(how: Handoff, waker: Option<Waker>) -> Rearm {
        Rearm { how, waker }
    }

    /// Re-activates the registration that delivered `ev`, for `interest` (the declared one).
    ///
    /// # Errors
    /// `epoll_ctl`'s errors other than the descriptor being gone (`EBADF`, `ENOENT`: nothing
    /// to re-activate); waking the queue's `select`.
    pub fn rearm(&self, ev: &Event, interest: Interest) -> io::Result<()> {
        self.how.reactivate(ev.fd, token(ev.fd, ev.gen), interest, self.waker.as_ref())
    }

    /// [`Rearm::rearm`] by descriptor and registration generation ([`Event::generation`],
    /// [`Queue::generation`](crate::Queue::generation)), for a caller that keeps those rather than the event.
    ///
    /// # Errors
    /// As for [`Rearm::rearm`].
    pub fn rearm_fd(&self, fd: BorrowedFd<'_>, generation: u32, interest: Interest) -> io::Result<()> {
        let fd = fd.as_raw_fd();
        self.how.reactivate(fd, token(fd, generation), interest, self.waker.as_ref())
    }

    /// True when [`Rearm::rearm`] does nothing (edge-triggered backends): then a new arrival
    /// is reported even while an earlier event of the descriptor is being handled.
    pub fn is_edge(&self) -> bool {
        matches!(self.how, Handoff::Edge)
    }
}
