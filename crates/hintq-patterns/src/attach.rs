//! What a handler's callbacks reach besides the connection's state: the thread's local
//! state, and the descriptors a connection owns beside its own ([`Fds`]).
//!
//! An attached descriptor (an upstream socket, say) is registered in the queue of the
//! thread that owns the connection, under the connection: its events run the same
//! handler, on the same connection state, behind the same in-flight flag. The runtime owns
//! it from [`Fds::attach`] on and closes it (after revoking interest, so its number is not
//! reused while registered) on [`Fds::close`] or with the connection. A descriptor can
//! also be *parked* with the thread ([`Fds::park`]): it outlives the connection, stays
//! watched, and its events go to [`Handler::local_event`](crate::Handler::local_event)
//! until a connection of the same thread takes it back ([`Fds::unpark`]). That is what an
//! idle upstream pool per thread needs.
//!
//! Attaching needs a thread that owns its queue: reactor, sharded and sharded-shared. The
//! thread-pool patterns hand any event to any thread, so there [`Fds::attach`] fails with
//! `Unsupported`.

use crate::counters::Meter;
use hintq::{Interest, Queue};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::AtomicI32;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

/// `owner` of a descriptor the runtime does not route.
pub(crate) const NONE: i32 = -1;
/// `owner` of a descriptor parked with its thread.
pub(crate) const PARKED: i32 = -2;

/// An attached (or parked) descriptor and its registration.
#[derive(Debug)]
pub(crate) struct Extra {
    pub(crate) fd: OwnedFd,
    pub(crate) interest: Interest,
    /// The registration's generation (what its events carry), while `interest` is not empty.
    pub(crate) gen: u32,
}

impl Extra {
    /// Whether an event of `fd` with generation `gen` belongs to this live registration.
    pub(crate) fn fired(&self, fd: RawFd, gen: u32) -> bool {
        self.fd.as_raw_fd() == fd && self.gen == gen && !self.interest.is_empty()
    }
}

/// The descriptors a callback may attach, re-declare, park and close.
pub struct Fds<'a> {
    /// The thread's own queue; `None` in the thread-pool patterns.
    pub(crate) q: Option<&'a mut Queue>,
    /// Per descriptor number: the connection it routes to, [`PARKED`] or [`NONE`].
    pub(crate) owner: &'a [AtomicI32],
    /// The connection being handled (its descriptor, its attached descriptors).
    pub(crate) conn: Option<(RawFd, &'a mut Vec<Extra>)>,
    /// Descriptors parked with this thread.
    pub(crate) parked: &'a mut Vec<Extra>,
    pub(crate) draining: bool,
    /// Counts (and, measuring, times) the declares and revokes made here.
    pub(crate) meter: Meter<'a>,
}

/// A callback's context: the thread's [`Handler::Local`](crate::Handler::Local) state, the
/// connection's descriptors, and the time of the events being handled ([`Cx::now`]).
pub struct Cx<'a, L> {
    pub(crate) local: &'a mut L,
    pub(crate) fds: Fds<'a>,
    /// When the wait that returned the events being handled came back, if this thread waited.
    pub(crate) batch: Option<Instant>,
}

impl<'a, L> Cx<'a, L> {
    /// This thread's local state.
    pub fn local(&mut self) -> &mut L {
        self.local
    }

    /// The connection's descriptors.
    pub fn fds(&mut self) -> &mut Fds<'a> {
        &mut self.fds
    }

    /// Both at once.
    pub fn split(&mut self) -> (&mut L, &mut Fds<'a>) {
        (self.local, &mut self.fds)
    }

    /// The time for the events being handled: when the wait that returned them came back
    /// (one clock read per batch of events, not one per event), or the clock now on a thread
    /// that took its events from another (a Half-Sync worker). At most one batch's handling
    /// old: for timeouts and `Date` headers, not for measuring.
    pub fn now(&self) -> Instant {
        self.batch.unwrap_or_else(Instant::now)
    }
}

fn refuse(kind: io::ErrorKind, why: &str) -> io::Error {
    io::Error::new(kind, why.to_string())
}

impl Fds<'_> {
    /// The descriptor of the connection being handled (`None` in
    /// [`Handler::local_event`](crate::Handler::local_event) and
    /// [`Handler::draining`](crate::Handler::draining)).
    pub fn conn_fd(&self) -> Option<RawFd> {
        self.conn.as_ref().map(|(fd, _)| *fd)
    }

    /// A graceful drain is under way ([`Server::drain`](crate::Server::drain)).
    pub fn draining(&self) -> bool {
        self.draining
    }

    /// Takes `fd` into the connection, watched for `interest` (empty: not yet), and returns
    /// its number. The runtime owns it from now on: it is closed by [`Fds::close`] or with
    /// the connection. Its events call [`Handler::event`](crate::Handler::event) with it.
    ///
    /// # Errors
    /// `Unsupported` in the thread-pool patterns; `InvalidInput` outside a connection's
    /// callback or for a descriptor at or above [`Config::max_fds`](crate::Config::max_fds);
    /// the queue's `declare` errors. `fd` is closed on error.
    pub fn attach(&mut self, fd: OwnedFd, interest: Interest) -> io::Result<RawFd> {
        let Some((cfd, extra)) = self.conn.as_mut() else {
            return Err(refuse(io::ErrorKind::InvalidInput, "attach outside a connection's callback"));
        };
        let Some(q) = self.q.as_deref_mut() else {
            return Err(refuse(
                io::ErrorKind::Unsupported,
                "descriptors can be attached on reactor, sharded and sharded-shared only: the \
                 thread-pool patterns hand a connection's events to any thread",
            ));
        };
        let raw = fd.as_raw_fd();
        let Some(owner) = usize::try_from(raw).ok().and_then(|i| self.owner.get(i)) else {
            return Err(refuse(io::ErrorKind::InvalidInput, "descriptor above the connection table"));
        };
        let gen = if interest.is_empty() {
            0
        } else {
            self.meter.declare(q, raw, interest, true)?;
            q.generation(raw).unwrap_or(0)
        };
        owner.store(*cfd, Relaxed);
        extra.push(Extra { fd, interest, gen });
        Ok(raw)
    }

    /// Sets (replaces) the interest of an attached or parked descriptor; empty: unwatched
    /// until declared again. Declaring the interest it has is free.
    ///
    /// # Errors
    /// `NotFound` if `fd` is neither attached to this connection nor parked; the queue's
    /// errors (the descriptor is then unwatched).
    pub fn declare(&mut self, fd: RawFd, interest: Interest) -> io::Result<()> {
        let q = self.q.as_deref_mut();
        let Some((list, i)) = find(&mut self.conn, self.parked, fd) else {
            return Err(refuse(io::ErrorKind::NotFound, "descriptor not attached"));
        };
        let e = &mut list[i];
        if e.interest == interest {
            return Ok(());
        }
        let q = q.ok_or_else(|| refuse(io::ErrorKind::Unsupported, "no queue of its own"))?;
        match self.meter.declare(q, fd, interest, e.interest.is_empty()) {
            Ok(()) => {
                e.interest = interest;
                e.gen = q.generation(fd).unwrap_or(e.gen);
                Ok(())
            }
            Err(err) => {
                e.interest = Interest::empty();
                Err(err)
            }
        }
    }

    /// Revokes interest in an attached or parked descriptor and closes it; false if it is
    /// neither.
    pub fn close(&mut self, fd: RawFd) -> bool {
        let Some((list, i)) = find(&mut self.conn, self.parked, fd) else { return false };
        let e = list.swap_remove(i);
        revoke(self.q.as_deref_mut(), self.owner, e, self.meter);
        true
    }

    /// The io_uring ring's own I/O ([`hintq::RingIo`]: sends, and receives into the ring's
    /// buffers) of the thread's queue, for the connection's descriptor and those attached to
    /// it; `None` off io_uring and in the thread-pool patterns (no queue of its own). A send
    /// that succeeds is silent unless [`hintq::RingIo::sending`] is asked; one that fails
    /// calls the handler with `State::SENT | State::ERR`. Closing the connection, or revoking
    /// a descriptor's interest ([`Next::Wait`](crate::Next::Wait), an empty
    /// [`Fds::declare`]), cancels its send and drops what was received and not taken.
    pub fn ring_io(&mut self) -> Option<hintq::RingIo<'_>> {
        self.q.as_deref_mut()?.ring_io()
    }

    /// Moves an attached descriptor from the connection to the thread, registration and all:
    /// it outlives the connection, and its events go to
    /// [`Handler::local_event`](crate::Handler::local_event). False if it is not attached.
    pub fn park(&mut self, fd: RawFd) -> bool {
        let Some((_, extra)) = self.conn.as_mut() else { return false };
        let Some(i) = extra.iter().position(|e| e.fd.as_raw_fd() == fd) else { return false };
        self.owner[fd as usize].store(PARKED, Relaxed);
        self.parked.push(extra.swap_remove(i));
        true
    }

    /// Moves a parked descriptor into the connection being handled. False if it is not
    /// parked or there is no connection.
    pub fn unpark(&mut self, fd: RawFd) -> bool {
        let Some((cfd, extra)) = self.conn.as_mut() else { return false };
        // The proxy's pool reuses its newest upstream, parked last: searched from the end.
        let Some(i) = self.parked.iter().rposition(|e| e.fd.as_raw_fd() == fd) else { return false };
        self.owner[fd as usize].store(*cfd, Relaxed);
        extra.push(self.parked.swap_remove(i));
        true
    }
}

/// Where `fd` is held: the connection's list or the parked one, and its index there.
fn find<'x>(
    conn: &'x mut Option<(RawFd, &mut Vec<Extra>)>,
    parked: &'x mut Vec<Extra>,
    fd: RawFd,
) -> Option<(&'x mut Vec<Extra>, usize)> {
    if let Some((_, extra)) = conn.as_mut() {
        if let Some(i) = extra.iter().position(|e| e.fd.as_raw_fd() == fd) {
            return Some((&mut **extra, i));
        }
    }
    let i = parked.iter().rposition(|e| e.fd.as_raw_fd() == fd)?;
    Some((parked, i))
}

/// Unroutes, revokes and closes `e` (revoked first, so its number is not reused while
/// registered; the revoke counted by `meter` unless it had no interest).
pub(crate) fn revoke(q: Option<&mut Queue>, owner: &[AtomicI32], e: Extra, meter: Meter<'_>) {
    owner[e.fd.as_raw_fd() as usize].store(NONE, Relaxed);
    match q {
        Some(q) if !e.interest.is_empty() => drop(meter.revoke(q, e.fd.as_raw_fd())),
        // Not watched: nothing to count (revoked all the same, to be sure).
        Some(q) => drop(q.declare_interest(e.fd.as_fd(), Interest::empty())),
        None => {}
    }
    drop(e.fd);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::ThreadStats;
    use std::time::Duration;

    /// After a wait the time is when that wait returned, the same however often it is asked;
    /// without one (a Half-Sync worker), the clock's.
    #[test]
    fn now_is_the_waits_return_or_the_clock() {
        let (st, owner, mut parked, mut local) = (ThreadStats::default(), [], Vec::new(), ());
        let before = Instant::now();
        let at = before - Duration::from_secs(5);
        for batch in [Some(at), None] {
            let fds = Fds {
                q: None,
                owner: &owner,
                conn: None,
                parked: &mut parked,
                draining: false,
                meter: st.meter(false),
            };
            let cx = Cx { local: &mut local, fds, batch };
            match batch {
                Some(at) => assert_eq!((cx.now(), cx.now()), (at, at)),
                None => assert!(cx.now() >= before),
            }
        }
    }
}
