//! Process-wide interest (paper §9): a group of per-thread queues sharing descriptors.
//!
//! How it is built: the group keeps one epoll set shared by all members (for
//! [`Delivery::One`]) and one epoll set per member (for [`Delivery::All`]). Every watch in
//! these sets is `EPOLLONESHOT`, so once a readiness is taken by one `epoll_wait` no other
//! thread can take it until the member that took it re-arms it, which it does at its next
//! `get_next_event` (after handling), or when its queue is dropped. That is what makes `One`
//! exactly-once, stronger than `EPOLLEXCLUSIVE`, which wakes "one or more" waiters.
//!
//! Each member's own backend watches the member's own set for readability under an internal
//! token, so a member blocked on any backend wakes when its set has work. Wake-one: the
//! shared set is nested in every member's own set, but enabled in exactly one at a time, the
//! *watcher*'s, so a `One` readiness wakes that member and no other. The group keeps the
//! watcher and a FIFO of the other members blocked in `get_next_event` (*idle*), under its
//! lock:
//!
//! * A member about to wait becomes the watcher if there is none or the watcher is busy (out
//!   of `get_next_event`): it enables the shared set in its own set and disables it in the
//!   busy member's. Otherwise it joins the idle list and waits on its own set alone.
//! * A watcher leaving `get_next_event` (for a group readiness or anything else) hands the
//!   shared set to the longest-idle member, if any: two `EPOLL_CTL_MOD`, no wake-up of the
//!   new watcher unless the shared set is ready at once. A busy group, with no member idle,
//!   makes no hand-off. With no member idle it stays the watcher while busy, so a
//!   readiness arriving while every member is busy waits in its set for its next call, or
//!   for the first member that comes to wait, which takes the shared set over. The nested
//!   watch is level-triggered: enabling a ready shared set wakes its new watcher at once, so
//!   nothing is lost in a hand-off.
//! * A dropped member re-arms what it took and did not re-arm yet, then hands the shared set
//!   on as if it left, so a readiness it took is not stranded.
//!
//! Why not the kernel's wake-one: `EPOLLEXCLUSIVE` is refused (`EINVAL`) for an epoll
//! descriptor as the target, so it cannot nest the shared set, and on the descriptors
//! themselves it excludes `EPOLLONESHOT` (no exactly-once) and wakes "one or more" waiters;
//! `poll`, `select`, `gooch` and `rtsig` members have no exclusive wait at all. A wait queue
//! entry of an io_uring poll stays armed while its thread is busy, so even where the kernel
//! could pick one waiter it would not pick a blocked one.
//!
//! `rtsig` members sleep on their own set too: an epoll set raises no signal, so the
//! backend polls it together with a `signalfd` of its signals (quirk f of `rtsig`).
//!
//! Size limit: the kernel bounds the wake-up paths from one file through nested epoll sets
//! (`path_limits` in fs/eventpoll.c: 500 of depth 1, 100 of depth 2). A `One` descriptor
//! reaches every member through the shared set and the member's own set, and on the epoll
//! backends through the backend's set too: a group takes at most 100 members on `epoll*`
//! and 500 on the others, beyond which [`Group::queue`] (or a `One` declaration) fails with
//! `EINVAL`.

use crate::backend::epoll::{remove, upsert};
pub use crate::member::Delivery;
use crate::member::{GroupLink, Inner, Member, Reg, Table, ONESHOT};
use crate::token::{next_gen, token, GROUP_BIT, TOKEN_GROUP_OWN, TOKEN_GROUP_SHARED};
use crate::{sys, Backend, Interest, Queue, State};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::{Arc, Mutex};

/// A group of per-thread queues with process-wide interest. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Group {
    inner: Arc<Inner>,
}

impl Group {
    /// A group whose member queues run on `backend`.
    ///
    /// # Errors
    /// Creating the shared epoll set.
    pub fn new(backend: Backend) -> io::Result<Group> {
        Ok(Group {
            inner: Arc::new(Inner { backend, shared: sys::epoll_create()?, table: Mutex::default() }),
        })
    }

    /// A new member queue, for the calling thread (or a thread it will be moved to). It
    /// receives the group's descriptors as well as those it declares itself.
    ///
    /// # Errors
    /// Creating the queue or its epoll set, or registering existing `All` descriptors in it;
    /// `EINVAL` past the kernel's bound on nested wake-up paths (100 members on the epoll
    /// backends, 500 on the others; see the module docs).
    pub fn queue(&self) -> io::Result<Queue> {
        let mut q = Queue::new(self.inner.backend)?;
        let own = Arc::new(sys::epoll_create()?);
        let id = {
            let mut t = self.inner.lock();
            for (&fd, r) in t.regs.iter().filter(|(_, r)| r.delivery == Delivery::All) {
                let data = GROUP_BIT | token(fd, r.gen);
                upsert(own.as_raw_fd(), fd, sys::epoll_events(r.interest) | ONESHOT, data, true)?;
            }
            t.members.push(Arc::downgrade(&own));
            let shared = self.inner.shared.as_raw_fd();
            sys::epoll_ctl(own.as_raw_fd(), libc::EPOLL_CTL_ADD, shared, 0, TOKEN_GROUP_SHARED)?;
            t.next_id += 1;
            t.next_id
        };
        q.watch_internal(own.as_raw_fd(), TOKEN_GROUP_OWN)?;
        q.join(GroupLink {
            inner: Arc::clone(&self.inner),
            me: Member { id, own },
            waiting: false,
            rearm: Vec::new(),
            more: false,
            buf: Vec::new(),
        });
        Ok(q)
    }

    /// Declares (replaces, or with an empty interest revokes) interest in `fd` for the whole
    /// group and returns its current state, as [`Queue::declare_interest`] does.
    ///
    /// # Errors
    /// `EBADF` if `fd` is not open, `epoll_ctl`'s other errors.
    pub fn declare_interest(
        &self,
        fd: BorrowedFd<'_>,
        interest: Interest,
        delivery: Delivery,
    ) -> io::Result<State> {
        let fd = fd.as_raw_fd();
        let mut t = self.inner.lock();
        if let Some(old) = t.regs.remove(&fd) {
            self.unwatch(&mut t, fd, old.delivery)?;
        }
        if interest.is_empty() {
            return Ok(State::empty());
        }
        t.gen = next_gen(t.gen);
        let reg = Reg { gen: t.gen, interest, delivery };
        let (events, data) = (sys::epoll_events(interest) | ONESHOT, GROUP_BIT | token(fd, reg.gen));
        let watched = match delivery {
            Delivery::One => upsert(self.inner.shared.as_raw_fd(), fd, events, data, true),
            Delivery::All => {
                t.live_members().iter().try_for_each(|m| upsert(m.as_raw_fd(), fd, events, data, true))
            }
        };
        t.regs.insert(fd, reg);
        let state = watched.and_then(|()| sys::current_state(fd));
        if state.is_err() {
            t.regs.remove(&fd);
            self.unwatch(&mut t, fd, delivery)?;
        }
        state
    }

    fn unwatch(&self, t: &mut Table, fd: RawFd, delivery: Delivery) -> io::Result<()> {
        match delivery {
            Delivery::One => remove(self.inner.shared.as_raw_fd(), fd),
            Delivery::All => t.live_members().iter().try_for_each(|m| remove(m.as_raw_fd(), fd)),
        }
    }
}
