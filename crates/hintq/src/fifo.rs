//! The HINTS queue's FIFO (paper §6): pending hints in arrival order with at most one element
//! per registration, a later report of a pending registration coalesced into it, a bound past
//! which the queue overflows, and the descriptor-order scan that finds events while it does.
//!
//! [`Fifo`] keeps the elements and the overflow's bookkeeping; the per-registration flags
//! it reads and writes (`pending`, the coalesced `extra` state, the interest) live in the slot
//! table ([`crate::slots`]), which every call is handed. What a delivery does beyond that
//! (statistics, one-shot re-arms, hand-off) is the queue's.

use crate::slots::Slot;
use crate::token::{untoken, GROUP_BIT};
use crate::{sys, Event, State};
use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

/// How many descriptors one `poll(2)` of the overflow scan covers.
const SCAN_CHUNK: usize = 256;

#[derive(Clone, Copy, Debug)]
struct Entry {
    token: u64,
    state: State,
}

/// What [`Fifo::push`] did with a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// A new element at the tail.
    Queued,
    /// Merged into the registration's pending element.
    Coalesced,
    /// The report's registration was revoked or replaced: dropped.
    Stale,
    /// The FIFO is full: dropped, and the caller starts an overflow scan ([`Fifo::overflow`]).
    Full,
}

/// What [`Fifo::pop`] took from the head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Popped {
    /// A registration's hint: its state with every report coalesced into it, limited to the
    /// interest (empty when only bits no longer asked for were left). The registration is no
    /// longer pending.
    Own { fd: RawFd, gen: u32, state: State },
    /// A group's hint ([`GROUP_BIT`]), for the group to check.
    Group { token: u64, state: State },
    /// An element whose registration was revoked or replaced since it was queued.
    Stale,
}

/// The FIFO of pending hints and the overflow scan's state.
pub(crate) struct Fifo {
    entries: VecDeque<Entry>,
    /// Registrations pending (queued, or held by [`Fifo::hold`]) and still current.
    live: usize,
    /// The most pending registrations before the FIFO is full.
    capacity: usize,
    /// `Some(n)`: the FIFO overflowed and `n` registrations remain to be scanned before the
    /// queue returns to FIFO-only delivery.
    overflow: Option<usize>,
    /// Where the next scan starts, so that no descriptor starves.
    cursor: usize,
    /// The scan's `poll(2)` array, kept between scans.
    buf: Vec<libc::pollfd>,
}

impl Fifo {
    /// An empty FIFO holding at most `capacity` pending registrations.
    pub(crate) fn new(capacity: usize) -> Fifo {
        Fifo { entries: VecDeque::new(), live: 0, capacity, overflow: None, cursor: 0, buf: Vec::new() }
    }

    /// No element is queued (stale ones count until popped).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Registrations pending and current.
    pub(crate) fn pending(&self) -> usize {
        self.live
    }

    /// Adds a report of registration `token` (not a group's): coalesced into its pending
    /// element if it has one, dropped if stale or if the FIFO is full.
    pub(crate) fn push(&mut self, slots: &mut [Slot], token: u64, state: State) -> Pushed {
        let (fd, gen) = untoken(token);
        let Some(slot) = slots.get_mut(fd as usize).filter(|s| s.is(gen)) else { return Pushed::Stale };
        if slot.pending {
            slot.extra |= state;
            Pushed::Coalesced
        } else if self.live >= self.capacity {
            Pushed::Full
        } else {
            slot.pending = true;
            self.live += 1;
            self.entries.push_back(Entry { token, state });
            Pushed::Queued
        }
    }

    /// Adds a group's report, which the group checks when it is popped.
    pub(crate) fn push_group(&mut self, token: u64, state: State) {
        self.entries.push_back(Entry { token, state });
    }

    /// Marks `slot`'s registration pending without an element: a report handed out at once
    /// while later reports of the same batch may still come, which then coalesce into it as
    /// into an element. [`Fifo::release`] ends it.
    #[inline]
    pub(crate) fn hold(&mut self, slot: &mut Slot) {
        slot.pending = true;
        self.live += 1;
    }

    /// Ends a [`Fifo::hold`]: the state coalesced meanwhile (not yet limited to the interest).
    #[inline]
    pub(crate) fn release(&mut self, slot: &mut Slot) -> State {
        slot.pending = false;
        self.live -= 1;
        std::mem::take(&mut slot.extra)
    }

    /// Takes the head element.
    pub(crate) fn pop(&mut self, slots: &mut [Slot]) -> Option<Popped> {
        let e = self.entries.pop_front()?;
        if e.token & GROUP_BIT != 0 {
            return Some(Popped::Group { token: e.token, state: e.state });
        }
        let (fd, gen) = untoken(e.token);
        let Some(slot) = slots.get_mut(fd as usize).filter(|s| s.gen() == gen && s.pending) else {
            return Some(Popped::Stale);
        };
        let state = (e.state | self.release(slot)).visible(slot.interest);
        Some(Popped::Own { fd, gen, state })
    }

    /// The registration of `slot` was revoked (it was `pending`; `slots` is the table after
    /// the revoke): its element, if any, is stale. Stale elements are dropped once they
    /// outnumber the live ones by far: looked at only when one became stale (a revoke of a
    /// registration not pending leaves the elements as they were).
    #[inline]
    pub(crate) fn revoked(&mut self, pending: bool, slots: &[Slot]) {
        if pending {
            self.live -= 1;
            if self.entries.len() > 2 * self.live + 64 {
                self.compact(slots);
            }
        }
    }

    /// Drops the elements of registrations no longer pending.
    #[cold]
    #[inline(never)]
    fn compact(&mut self, slots: &[Slot]) {
        self.entries.retain(|e| {
            if e.token & GROUP_BIT != 0 {
                return true;
            }
            let (fd, gen) = untoken(e.token);
            slots.get(fd as usize).is_some_and(|s| s.gen() == gen && s.pending)
        });
    }

    /// The group tokens queued (for a member leaving its group).
    pub(crate) fn group_tokens(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries.iter().map(|e| e.token).filter(|t| t & GROUP_BIT != 0)
    }

    /// The FIFO overflowed with `registered` registrations: each is to be scanned once.
    pub(crate) fn overflow(&mut self, registered: usize) {
        self.overflow = Some(registered);
    }

    /// An overflow scan is due.
    #[inline]
    pub(crate) fn overflowing(&self) -> bool {
        self.overflow.is_some()
    }

    /// The descriptor-order scan (paper §6): `poll(2)` of the live registrations that are not
    /// pending, in chunks, resumed where the last scan stopped so that every registration is
    /// looked at once per pass whatever `out.len()` is. `held(fd)` says whether the backend
    /// holds data for `fd` that no poll shows (io_uring's receives). Fills `out` with the
    /// events found and returns how many; the overflow ends once `registered` registrations
    /// were looked at. The slots are not changed: what a delivery does is the caller's.
    pub(crate) fn scan(
        &mut self,
        slots: &[Slot],
        registered: usize,
        out: &mut [Event],
        held: impl Fn(RawFd) -> bool,
    ) -> io::Result<usize> {
        let mut remaining = self.overflow.unwrap_or(0).min(registered);
        let limit = slots.len();
        let mut n = 0;
        let mut cursor = self.cursor % limit.max(1);
        while remaining > 0 && n < out.len() {
            self.buf.clear();
            let mut at = cursor;
            for _ in 0..limit {
                if self.buf.len() == SCAN_CHUNK.min(remaining) {
                    break;
                }
                let s = &slots[at];
                if s.live() && !s.pending {
                    self.buf.push(libc::pollfd {
                        fd: at as RawFd,
                        events: sys::poll_events(s.interest),
                        revents: 0,
                    });
                }
                at = (at + 1) % limit;
            }
            if self.buf.is_empty() {
                remaining = 0;
                break;
            }
            hintq_sys::retry(|| sys::poll(&mut self.buf, 0))?;
            for p in &self.buf {
                if n == out.len() {
                    break;
                }
                remaining -= 1;
                cursor = (p.fd as usize + 1) % limit;
                let slot = &slots[p.fd as usize];
                let extra = if held(p.fd) { State::READ } else { State::empty() };
                let state = (sys::state_from_poll(p.revents) | extra).visible(slot.interest);
                if !state.is_empty() {
                    out[n] = Event::new(p.fd, state, slot.gen());
                    n += 1;
                }
            }
        }
        self.cursor = cursor;
        self.overflow = (remaining > 0).then_some(remaining);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slots::LIVE;
    use crate::token::token;
    use crate::Interest;
    use std::os::fd::{AsRawFd, OwnedFd};

    /// A table with live registrations of generation 1 at `fds`, interest READ and WRITE.
    fn table(fds: &[RawFd]) -> Vec<Slot> {
        let len = fds.iter().max().map_or(0, |&fd| fd as usize + 1);
        let mut slots = vec![Slot::default(); len];
        for &fd in fds {
            slots[fd as usize] =
                Slot { key: 1 | LIVE, interest: Interest::READ | Interest::WRITE, ..Slot::default() };
        }
        slots
    }

    fn pop_all(f: &mut Fifo, slots: &mut [Slot]) -> Vec<Popped> {
        std::iter::from_fn(|| f.pop(slots)).collect()
    }

    #[test]
    fn reports_of_a_pending_registration_coalesce_into_its_element_in_arrival_order() {
        let mut slots = table(&[3, 5]);
        let mut f = Fifo::new(usize::MAX);
        assert_eq!(f.push(&mut slots, token(5, 1), State::READ), Pushed::Queued);
        assert_eq!(f.push(&mut slots, token(3, 1), State::WRITE), Pushed::Queued);
        assert_eq!(f.push(&mut slots, token(5, 1), State::WRITE), Pushed::Coalesced);
        assert_eq!(f.pending(), 2);
        assert_eq!(
            pop_all(&mut f, &mut slots),
            [
                Popped::Own { fd: 5, gen: 1, state: State::READ | State::WRITE },
                Popped::Own { fd: 3, gen: 1, state: State::WRITE },
            ]
        );
        assert!(f.is_empty() && f.pending() == 0);
        // Delivered: a new report queues again.
        assert_eq!(f.push(&mut slots, token(5, 1), State::READ), Pushed::Queued);
    }

    #[test]
    fn a_state_outside_the_interest_is_cut_and_a_held_registration_coalesces() {
        let mut slots = table(&[4]);
        slots[4].interest = Interest::READ;
        let mut f = Fifo::new(usize::MAX);
        f.push(&mut slots, token(4, 1), State::WRITE | State::HUP);
        assert_eq!(pop_all(&mut f, &mut slots), [Popped::Own { fd: 4, gen: 1, state: State::HUP }]);
        // Handed out at once and held: a later report joins it, no element is queued.
        f.hold(&mut slots[4]);
        assert_eq!(f.push(&mut slots, token(4, 1), State::READ), Pushed::Coalesced);
        assert!(f.is_empty());
        assert_eq!(f.release(&mut slots[4]), State::READ);
        assert_eq!(f.pending(), 0);
    }

    #[test]
    fn revoked_and_replaced_registrations_leave_no_event() {
        let mut slots = table(&[2, 6]);
        let mut f = Fifo::new(usize::MAX);
        f.push(&mut slots, token(2, 1), State::READ);
        f.push(&mut slots, token(6, 1), State::READ);
        // 2 revoked and declared again (generation 2) before its element is popped; a report
        // of the old generation is stale.
        let pending = slots[2].pending;
        slots[2] = Slot { key: 2 | LIVE, interest: Interest::READ, ..Slot::default() };
        f.revoked(pending, &slots);
        assert_eq!(f.push(&mut slots, token(2, 1), State::READ), Pushed::Stale);
        assert_eq!(f.push(&mut slots, token(9, 1), State::READ), Pushed::Stale, "past the table");
        assert_eq!(
            pop_all(&mut f, &mut slots),
            [Popped::Stale, Popped::Own { fd: 6, gen: 1, state: State::READ }]
        );
    }

    #[test]
    fn stale_elements_are_dropped_once_they_pile_up() {
        let fds: Vec<RawFd> = (0..200).collect();
        let mut slots = table(&fds);
        let mut f = Fifo::new(usize::MAX);
        for &fd in &fds {
            f.push(&mut slots, token(fd, 1), State::READ);
        }
        for &fd in &fds[..150] {
            let pending = slots[fd as usize].pending;
            slots[fd as usize] = Slot { key: 1, ..Slot::default() };
            f.revoked(pending, &slots);
        }
        assert_eq!(f.pending(), 50);
        assert!(f.entries.len() <= 2 * 50 + 64, "{} elements kept for 50 live", f.entries.len());
        let got = pop_all(&mut f, &mut slots);
        let own: Vec<RawFd> = got
            .iter()
            .filter_map(|p| if let Popped::Own { fd, .. } = p { Some(*fd) } else { None })
            .collect();
        assert_eq!(own, (150..200).collect::<Vec<_>>(), "the live ones, in order");
    }

    #[test]
    fn a_full_fifo_refuses_and_group_elements_pass_through() {
        let mut slots = table(&[1, 2, 3]);
        let mut f = Fifo::new(2);
        assert_eq!(f.push(&mut slots, token(1, 1), State::READ), Pushed::Queued);
        assert_eq!(f.push(&mut slots, token(2, 1), State::READ), Pushed::Queued);
        assert_eq!(f.push(&mut slots, token(3, 1), State::READ), Pushed::Full);
        assert_eq!(
            f.push(&mut slots, token(1, 1), State::WRITE),
            Pushed::Coalesced,
            "coalescing needs no room"
        );
        assert!(!slots[3].pending);
        f.push_group(GROUP_BIT | 7, State::READ);
        assert_eq!(f.group_tokens().collect::<Vec<_>>(), [GROUP_BIT | 7]);
        assert_eq!(pop_all(&mut f, &mut slots).len(), 3);
    }

    fn readable_pairs(n: usize) -> Vec<(OwnedFd, OwnedFd)> {
        let mut pairs: Vec<_> = (0..n).map(|_| hintq_sys::socketpair().unwrap()).collect();
        pairs.sort_by_key(|(a, _)| a.as_raw_fd());
        pairs
    }

    fn write_byte(fd: &OwnedFd) {
        // SAFETY: (test) one byte from a live buffer to a live socket.
        assert_eq!(unsafe { libc::write(fd.as_raw_fd(), b"x".as_ptr().cast(), 1) }, 1);
    }

    fn read_byte(fd: RawFd) {
        let mut c = 0u8;
        // SAFETY: (test) one byte into a local.
        assert_eq!(unsafe { libc::read(fd, (&mut c as *mut u8).cast(), 1) }, 1);
    }

    /// The overflow scan finds the ready registrations that are not pending, resumes where
    /// it stopped (one event per call still reaches every one), and ends once every
    /// registration was looked at.
    #[test]
    fn the_overflow_scan_finds_every_ready_registration_and_then_ends() {
        let pairs = readable_pairs(6);
        let fds: Vec<RawFd> = pairs.iter().map(|(a, _)| a.as_raw_fd()).collect();
        let mut slots = table(&fds);
        for s in &mut slots {
            s.interest = Interest::READ;
        }
        for (_, b) in &pairs[..4] {
            write_byte(b);
        }
        // The first one is pending: the FIFO has it, the scan leaves it out.
        let mut f = Fifo::new(1);
        f.push(&mut slots, token(fds[0], 1), State::READ);
        assert_eq!(f.push(&mut slots, token(fds[1], 1), State::READ), Pushed::Full);
        f.overflow(fds.len());
        assert!(f.overflowing());
        let mut found = Vec::new();
        let mut out = [Event::default(); 1];
        for _ in 0..10 {
            if !f.overflowing() {
                break;
            }
            let n = f.scan(&slots, fds.len(), &mut out, |_| false).unwrap();
            found.extend(out[..n].iter().map(|e| (e.fd, e.state(), e.gen)));
            // The application reads what it was told of.
            out[..n].iter().for_each(|e| read_byte(e.fd));
        }
        assert!(!f.overflowing(), "the scan ended");
        let want: Vec<_> = fds[1..4].iter().map(|&fd| (fd, State::READ, 1)).collect();
        assert_eq!(found, want, "the ready ones not pending, in descriptor order, once");
        // What the backend holds counts as readable.
        f.overflow(fds.len());
        let mut out = [Event::default(); 8];
        let n = f.scan(&slots, fds.len(), &mut out, |fd| fd == fds[5]).unwrap();
        assert!(
            out[..n].iter().any(|e| e.fd == fds[5] && e.state() == State::READ),
            "held data not reported"
        );
    }
}
