//! Process-wide interest (paper §9): a group of per-thread queues sharing descriptors.
//!
//! How it is built: the group keeps one epoll set shared by all members (for
//! [`Delivery::One`]) and one epoll set per member (for [`Delivery::All`]). Every watch in
//! these sets is `EPOLLONESHOT`, so once a readiness is taken by one `epoll_wait` no other
//! thread can take it until the member that took it re-arms it, which it does at its next
//! `get_next_event` (after handling). That is what makes `One` exactly-once, stronger than
//! `EPOLLEXCLUSIVE`, which wakes "one or more" waiters. Each member's own backend watches the
//! group's sets for readability under internal tokens, so a member blocked on any backend
//! wakes when the group has work. All members wake for a `One` readiness (a thundering herd
//! bounded by the group size); one of them takes it, the others go back to waiting without
//! returning.

use crate::backend::epoll::{rearm, remove, upsert};
use crate::queue::{next_gen, token, untoken, GROUP_BIT, TOKEN_GROUP_OWN, TOKEN_GROUP_SHARED};
use crate::{sys, Backend, Event, Interest, Queue, State};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Which members of a [`Group`] hear of a descriptor's readiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Exactly one member gets each readiness (the paper's `SO_WAKEUP_ONE`). The descriptor
    /// is not reported again until that member's next `get_next_event`.
    One,
    /// Every member gets each readiness (the paper's default).
    All,
}

/// A group of per-thread queues with process-wide interest. Cheap to clone; `Send + Sync`.
#[derive(Clone)]
pub struct Group {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    shared: OwnedFd,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    regs: HashMap<RawFd, Reg>,
    members: Vec<Weak<OwnedFd>>,
    gen: u32,
}

#[derive(Clone, Copy)]
struct Reg {
    gen: u32,
    interest: Interest,
    delivery: Delivery,
}

const ONESHOT: u32 = libc::EPOLLONESHOT as u32;

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Table {
    fn live_members(&mut self) -> Vec<Arc<OwnedFd>> {
        self.members.retain(|m| m.strong_count() > 0);
        self.members.iter().filter_map(Weak::upgrade).collect()
    }
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
    /// Creating the queue or its epoll set, or registering existing `All` descriptors in it.
    pub fn queue(&self) -> io::Result<Queue> {
        let mut q = Queue::new(self.inner.backend)?;
        let own = Arc::new(sys::epoll_create()?);
        {
            let mut t = self.inner.lock();
            for (&fd, r) in t.regs.iter().filter(|(_, r)| r.delivery == Delivery::All) {
                let data = GROUP_BIT | token(fd, r.gen);
                upsert(own.as_raw_fd(), fd, sys::epoll_events(r.interest) | ONESHOT, data, true)?;
            }
            t.members.push(Arc::downgrade(&own));
        }
        q.watch_internal(self.inner.shared.as_raw_fd(), TOKEN_GROUP_SHARED)?;
        q.watch_internal(own.as_raw_fd(), TOKEN_GROUP_OWN)?;
        q.group = Some(GroupLink {
            inner: Arc::clone(&self.inner),
            own,
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
    /// `InvalidInput` for a negative descriptor, `EBADF` if it is not open, `epoll_ctl`'s
    /// other errors.
    pub fn declare_interest(&self, fd: RawFd, interest: Interest, delivery: Delivery) -> io::Result<State> {
        if fd < 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("negative descriptor {fd}")));
        }
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

/// A member queue's tie to its group.
pub(crate) struct GroupLink {
    inner: Arc<Inner>,
    own: Arc<OwnedFd>,
    /// Tokens delivered by the last call, to re-arm at the next.
    rearm: Vec<u64>,
    /// The last harvest filled its buffer: more may be waiting without a new wake-up.
    more: bool,
    buf: Vec<libc::epoll_event>,
}

impl GroupLink {
    /// Takes up to `max` reports from the shared set or the member's own set.
    pub(crate) fn harvest(
        &mut self,
        which: u64,
        max: usize,
        mut push: impl FnMut(u64, State),
    ) -> io::Result<()> {
        let epfd =
            if which == TOKEN_GROUP_OWN { self.own.as_raw_fd() } else { self.inner.shared.as_raw_fd() };
        let max = max.clamp(1, 1024);
        self.buf.resize(max, libc::epoll_event { events: 0, u64: 0 });
        let n = match sys::epoll_wait(epfd, &mut self.buf, 0) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            r => r?,
        };
        self.more |= n == max;
        for ev in &self.buf[..n] {
            push(ev.u64, sys::state_from_epoll(ev.events));
        }
        Ok(())
    }

    /// Before blocking: if a harvest left reports behind, take them now, since an
    /// edge-triggered member backend would not be woken for them again.
    pub(crate) fn prefetch(&mut self, max: usize, mut push: impl FnMut(u64, State)) -> io::Result<()> {
        if std::mem::take(&mut self.more) {
            self.harvest(TOKEN_GROUP_SHARED, max, &mut push)?;
            self.harvest(TOKEN_GROUP_OWN, max, &mut push)?;
        }
        Ok(())
    }

    pub(crate) fn is_current(&self, fd: RawFd, gen: u32) -> bool {
        self.inner.lock().regs.get(&fd).is_some_and(|r| r.gen == gen)
    }

    /// Turns a harvested report into an event if its registration is still current.
    pub(crate) fn deliver(&mut self, tok: u64, state: State) -> Option<Event> {
        let (fd, gen) = untoken(tok);
        let reg = self.inner.lock().regs.get(&fd).copied().filter(|r| r.gen == gen)?;
        self.rearm.push(tok);
        let state = state.visible(reg.interest);
        (!state.is_empty()).then_some(Event { fd, state, gen: gen | (1 << 31) })
    }

    /// Re-arms what the previous call delivered; returns how many.
    pub(crate) fn rearm(&mut self) -> io::Result<u64> {
        let mut n = 0;
        for tok in self.rearm.drain(..) {
            let (fd, gen) = untoken(tok);
            let t = self.inner.lock();
            let Some(reg) = t.regs.get(&fd).filter(|r| r.gen == gen) else { continue };
            let epfd = match reg.delivery {
                Delivery::One => self.inner.shared.as_raw_fd(),
                Delivery::All => self.own.as_raw_fd(),
            };
            rearm(epfd, fd, sys::epoll_events(reg.interest) | ONESHOT, tok)?;
            n += 1;
        }
        Ok(n)
    }
}
