//! The mechanics of a [`crate::Group`]: its shared table of registrations and members, the
//! wake-one bookkeeping (which member's own set holds the shared set), and a member queue's
//! tie to it ([`GroupLink`]), which the queue calls from `get_next_event`. The public API
//! that builds member queues is in `group.rs`, above the queue; this module is below it.

use crate::backend::epoll::rearm;
use crate::token::{untoken, GROUP_GEN, TOKEN_GROUP_OWN, TOKEN_GROUP_SHARED};
use crate::{sys, Backend, Event, Interest, State};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Which members of a [`crate::Group`] hear of a descriptor's readiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Exactly one member gets each readiness (the paper's `SO_WAKEUP_ONE`). The descriptor
    /// is not reported again until that member's next `get_next_event`.
    One,
    /// Every member gets each readiness (the paper's default).
    All,
}

pub(crate) struct Inner {
    pub(crate) backend: Backend,
    pub(crate) shared: OwnedFd,
    pub(crate) table: Mutex<Table>,
}

#[derive(Default)]
pub(crate) struct Table {
    pub(crate) regs: HashMap<RawFd, Reg>,
    pub(crate) members: Vec<Weak<OwnedFd>>,
    pub(crate) gen: u32,
    /// The member whose own set holds the shared set.
    pub(crate) watcher: Option<Watcher>,
    /// Members waiting in `get_next_event` without the shared set, longest waiting first.
    /// Not empty only while the watcher is waiting too.
    pub(crate) idle: VecDeque<Member>,
    pub(crate) next_id: u64,
}

/// A member as the group's wake-one bookkeeping knows it.
#[derive(Clone)]
pub(crate) struct Member {
    pub(crate) id: u64,
    pub(crate) own: Arc<OwnedFd>,
}

pub(crate) struct Watcher {
    pub(crate) member: Member,
    /// In `get_next_event` (false: busy in the application, or gone).
    pub(crate) waiting: bool,
}

#[derive(Clone, Copy)]
pub(crate) struct Reg {
    pub(crate) gen: u32,
    pub(crate) interest: Interest,
    pub(crate) delivery: Delivery,
}

pub(crate) const ONESHOT: u32 = libc::EPOLLONESHOT as u32;

impl Inner {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Enables (`EPOLLIN`, level-triggered) or disables the shared set nested in a member's own
/// set. It is nested once, disabled, when the member joins, and then only modified: an
/// `EPOLL_CTL_ADD` of an epoll set walks every watch in it for the kernel's loop and path
/// checks (under a global mutex), a `MOD` does not. A disabled nested set does not wake its
/// member: the kernel's callback skips a watch whose events do not include the readiness.
pub(crate) fn watch_shared(own: &OwnedFd, shared: RawFd, enabled: bool) -> io::Result<()> {
    let events = if enabled { libc::EPOLLIN as u32 } else { 0 };
    sys::epoll_ctl(own.as_raw_fd(), libc::EPOLL_CTL_MOD, shared, events, TOKEN_GROUP_SHARED)
}

/// After [`watch_shared`] enabled the shared set in `own`: if the shared set is ready now,
/// makes sure `own`'s waiters hear of it. An `EPOLL_CTL_MOD` that finds the watch ready wakes
/// them only if the watch was not already on `own`'s ready list, and a level-triggered watch
/// stays there after a harvest reported it (until the next scan of `own`), also while it is
/// disabled. A member asleep on epoll scans that list before sleeping; one asleep on
/// io_uring does not (its poll of `own` fires on wake-ups only), so the readiness was never
/// announced and the member slept on with a connection waiting (the C echo server on
/// io_uring, about 1 run in 15 on a loaded machine). Removing and adding the watch again
/// always wakes; it is done only when the shared set is ready (a readiness after the check
/// wakes through the kernel's callback, which does not look at the ready list).
pub(crate) fn wake_if_ready(own: &OwnedFd, shared: RawFd) -> io::Result<()> {
    let mut p = [libc::pollfd { fd: shared, events: libc::POLLIN, revents: 0 }];
    if hintq_sys::poll(&mut p, 0)? == 0 {
        return Ok(());
    }
    sys::epoll_ctl(own.as_raw_fd(), libc::EPOLL_CTL_DEL, shared, 0, 0)?;
    sys::epoll_ctl(own.as_raw_fd(), libc::EPOLL_CTL_ADD, shared, libc::EPOLLIN as u32, TOKEN_GROUP_SHARED)
}

impl Table {
    pub(crate) fn live_members(&mut self) -> Vec<Arc<OwnedFd>> {
        self.members.retain(|m| m.strong_count() > 0);
        self.members.iter().filter_map(Weak::upgrade).collect()
    }

    pub(crate) fn is_watcher(&self, id: u64) -> bool {
        self.watcher.as_ref().is_some_and(|w| w.member.id == id)
    }

    /// Makes `to` the watcher: enables the shared set `shared` in its own set, then disables
    /// it in the previous watcher's (enable first, so that it is never watched by nobody; a
    /// readiness in between wakes both, once). On failure nothing changed.
    pub(crate) fn move_watch(&mut self, shared: RawFd, to: &Member, waiting: bool) -> io::Result<()> {
        if !self.is_watcher(to.id) {
            watch_shared(&to.own, shared, true)?;
            wake_if_ready(&to.own, shared)?;
            if let Some(old) = &self.watcher {
                // Failing, the set stays enabled in both: a member more wakes, none is lost.
                let _ = watch_shared(&old.member.own, shared, false);
            }
        }
        self.watcher = Some(Watcher { member: to.clone(), waiting });
        Ok(())
    }

    /// `me` stops waiting (or leaves the group): a watcher hands the shared set to the
    /// longest-idle member; with none idle it keeps it while busy, or, leaving, drops it.
    pub(crate) fn stop_waiting(&mut self, shared: RawFd, me: &Member, leaving: bool) {
        self.idle.retain(|m| m.id != me.id);
        if !self.is_watcher(me.id) {
            return;
        }
        while let Some(next) = self.idle.pop_front() {
            if self.move_watch(shared, &next, true).is_ok() {
                return;
            }
            // That member's set refused the change (out of memory): it goes on waiting
            // without the shared set; try the next.
        }
        if leaving {
            // The own set is closed with the member's last reference, in the caller.
            self.watcher = None;
        } else if let Some(w) = &mut self.watcher {
            w.waiting = false;
        }
    }
}

/// A member queue's tie to its group.
pub(crate) struct GroupLink {
    pub(crate) inner: Arc<Inner>,
    /// This member; `me.own` is its own set, which its backend watches.
    pub(crate) me: Member,
    /// Between [`GroupLink::start_waiting`] and [`GroupLink::stop_waiting`].
    pub(crate) waiting: bool,
    /// Tokens delivered by the last call, to re-arm at the next.
    pub(crate) rearm: Vec<u64>,
    /// The last harvest filled its buffer: more may be waiting without a new wake-up.
    pub(crate) more: bool,
    pub(crate) buf: Vec<libc::epoll_event>,
}

impl GroupLink {
    /// Takes up to `max` reports from the shared set or the member's own set. The own set
    /// reports the shared set nested in it (this member is, or was, the watcher) under
    /// [`TOKEN_GROUP_SHARED`]: the shared set is then harvested too.
    pub(crate) fn harvest(
        &mut self,
        which: u64,
        max: usize,
        mut push: impl FnMut(u64, State),
    ) -> io::Result<()> {
        let epfd =
            if which == TOKEN_GROUP_OWN { self.me.own.as_raw_fd() } else { self.inner.shared.as_raw_fd() };
        let max = max.clamp(1, 1024);
        self.buf.resize(max, libc::epoll_event { events: 0, u64: 0 });
        let n = match sys::epoll_wait(epfd, &mut self.buf, 0) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            r => r?,
        };
        self.more |= n == max;
        let mut nested = false;
        for ev in &self.buf[..n] {
            if ev.u64 == TOKEN_GROUP_SHARED {
                nested = true;
            } else {
                push(ev.u64, crate::event::state_from_epoll(ev.events));
            }
        }
        if nested {
            self.harvest(TOKEN_GROUP_SHARED, max, push)?;
        }
        Ok(())
    }

    /// The member is about to wait in its backend: it becomes the watcher if there is none
    /// or the watcher is busy, else it joins the idle members. Repeated waits within one
    /// `get_next_event` change nothing.
    pub(crate) fn start_waiting(&mut self) -> io::Result<()> {
        if self.waiting {
            return Ok(());
        }
        let mut t = self.inner.lock();
        let shared = self.inner.shared.as_raw_fd();
        match &t.watcher {
            Some(w) if w.waiting && w.member.id != self.me.id => t.idle.push_back(self.me.clone()),
            _ => t.move_watch(shared, &self.me, true)?,
        }
        self.waiting = true;
        Ok(())
    }

    /// `get_next_event` returns: a watcher hands the shared set to an idle member.
    pub(crate) fn stop_waiting(&mut self) {
        if std::mem::take(&mut self.waiting) {
            let shared = self.inner.shared.as_raw_fd();
            self.inner.lock().stop_waiting(shared, &self.me, false);
        }
    }

    /// The member queue is dropped with `pending` group reports harvested and not delivered:
    /// re-arms them and what it delivered since its last call, so that a readiness it took
    /// reaches another member, and hands the shared set on.
    pub(crate) fn leave(&mut self, pending: impl Iterator<Item = u64>) {
        self.rearm.extend(pending);
        // Failing, the descriptor is gone or the kernel out of memory; nothing to return to.
        let _ = self.rearm();
        self.waiting = false;
        let shared = self.inner.shared.as_raw_fd();
        self.inner.lock().stop_waiting(shared, &self.me, true);
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
        (!state.is_empty()).then_some(Event::new(fd, state, gen | GROUP_GEN))
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
                Delivery::All => self.me.own.as_raw_fd(),
            };
            rearm(epfd, fd, sys::epoll_events(reg.interest) | ONESHOT, tok)?;
            n += 1;
        }
        Ok(n)
    }
}
