//! A `poll(2)` interest array with an index by descriptor: the state the `poll` backend
//! passes to the kernel on every call, and which `gooch` (its active and inactive sets as
//! the two parts of one array) and `rtsig` (kept current beside the signal queue, so that a
//! switch to polling costs nothing, as Provos & Lever §6 recommend) share.
//!
//! Memory is what this array is about (it is most of these backends' cost per idle
//! connection): 16 bytes per watched descriptor, where a `pollfd` and a 64-bit token took
//! 20 and the array grew by copying.
//!
//! * `fds`: the `pollfd` entries, in two parts: the *front* `fds[..front]` and the *back*
//!   `fds[front..]`. `poll` and `rtsig` only ever use the front; `gooch` keeps its active
//!   set in front and its inactive one behind, so polling the active set is a poll of a
//!   prefix and polling both is a poll of the whole array (no second array to merge them).
//! * `gens`: the high half of each entry's token. A registration's token is
//!   `generation << 32 | fd` ([`crate::token`]), so its low half is the entry's own `fd`;
//!   only the queue's few internal watches have another low half, kept in `internal_low`.
//! * `slot_of`: per descriptor number, its index in `fds` plus one (0: not in the set).
//! * All three are reserved once up to the descriptor limit ([`sys::fd_table_reserve`]):
//!   address space only, resident where used, and never copied as the set grows (a copy
//!   left the old array behind in the allocator: about as much again).

use super::poller::Ready;
use crate::token::is_internal;
use crate::{sys, Interest, State};
use std::io;
use std::os::fd::RawFd;

#[derive(Default)]
pub(crate) struct PollSet {
    fds: Vec<libc::pollfd>,
    gens: Vec<u32>,
    /// Entries `fds[..front]` are the front part (see the module doc).
    front: usize,
    /// Per descriptor number: its index in `fds` plus one (0: not in the set).
    slot_of: Vec<u32>,
    /// The low halves of internal watches' tokens, by descriptor (a handful at most).
    internal_low: Vec<(RawFd, u32)>,
}

impl PollSet {
    pub(crate) fn len(&self) -> usize {
        self.fds.len()
    }

    /// How many entries are in the front part.
    pub(crate) fn front_len(&self) -> usize {
        self.front
    }

    /// `fd`'s index in `fds`.
    fn slot(&self, fd: RawFd) -> Option<usize> {
        let i = *self.slot_of.get(usize::try_from(fd).ok()?)?;
        i.checked_sub(1).map(|i| i as usize)
    }

    /// True if `fd` is watched in the back part.
    pub(crate) fn in_back(&self, fd: RawFd) -> bool {
        self.slot(fd).is_some_and(|i| i >= self.front)
    }

    /// The token of entry `i`.
    fn token_at(&self, i: usize) -> u64 {
        let high = u64::from(self.gens[i]) << 32;
        let fd = self.fds[i].fd;
        if is_internal(high) {
            let low = self.internal_low.iter().find(|(f, _)| *f == fd).map_or(0, |&(_, low)| low);
            high | u64::from(low)
        } else {
            high | u64::from(fd as u32)
        }
    }

    /// The token `fd` is watched under.
    pub(crate) fn token_of(&self, fd: RawFd) -> Option<u64> {
        self.slot(fd).map(|i| self.token_at(i))
    }

    /// The watched descriptors (a copy, so the caller may change the set meanwhile).
    pub(crate) fn fds(&self) -> Vec<RawFd> {
        self.fds.iter().map(|p| p.fd).collect()
    }

    /// The descriptors of the front part (a copy).
    pub(crate) fn front_fds(&self) -> Vec<RawFd> {
        self.fds[..self.front].iter().map(|p| p.fd).collect()
    }

    /// Watches `fd` for `interest` under `token`, replacing an earlier watch (which keeps
    /// its part); a new watch goes to the front part.
    pub(crate) fn set(&mut self, fd: RawFd, token: u64, interest: Interest) {
        let events = sys::poll_events(interest);
        let high = (token >> 32) as u32;
        self.internal_low.retain(|(f, _)| *f != fd);
        if is_internal(token) {
            self.internal_low.push((fd, token as u32));
        } else {
            debug_assert_eq!(token as u32, fd as u32, "a registration's token ends with its descriptor");
        }
        if let Some(i) = self.slot(fd) {
            self.fds[i].events = events;
            self.gens[i] = high;
            return;
        }
        // Descriptors are non-negative: the queue refuses the others.
        let n = fd as usize;
        if self.slot_of.len() <= n {
            if self.slot_of.capacity() == 0 {
                self.slot_of.reserve(sys::fd_table_reserve().max(n + 1));
                self.fds.reserve(sys::fd_table_reserve());
                self.gens.reserve(sys::fd_table_reserve());
            }
            self.slot_of.resize(n + 1, 0);
        }
        let last = self.fds.len();
        self.fds.push(libc::pollfd { fd, events, revents: 0 });
        self.gens.push(high);
        self.slot_of[n] = last as u32 + 1;
        self.swap(last, self.front);
        self.front += 1;
    }

    /// Drops the index's entries past the highest number watched and gives back the pages
    /// of all three tables' room past their use ([`hintq_sys::release_spare`]); the room
    /// itself stays reserved, so the next peak still copies nothing.
    pub(crate) fn trim(&mut self) {
        let used = self.slot_of.iter().rposition(|&i| i != 0).map_or(0, |i| i + 1);
        hintq_sys::truncate_release(&mut self.slot_of, used);
        hintq_sys::release_spare(&mut self.fds);
        hintq_sys::release_spare(&mut self.gens);
    }

    /// Swaps entries `i` and `j` and keeps the index right.
    fn swap(&mut self, i: usize, j: usize) {
        if i == j {
            return;
        }
        self.fds.swap(i, j);
        self.gens.swap(i, j);
        self.slot_of[self.fds[i].fd as usize] = i as u32 + 1;
        self.slot_of[self.fds[j].fd as usize] = j as u32 + 1;
    }

    /// Stops watching `fd`; returns whether it was watched. Entries that move to fill the
    /// hole move to positions at or after its own (see [`PollSet::collect`]).
    pub(crate) fn remove(&mut self, fd: RawFd) -> bool {
        let Some(mut i) = self.slot(fd) else { return false };
        if i < self.front {
            self.front -= 1;
            self.swap(i, self.front);
            i = self.front;
        }
        let last = self.fds.len() - 1;
        self.swap(i, last);
        self.fds.pop();
        self.gens.pop();
        self.slot_of[fd as usize] = 0;
        self.internal_low.retain(|(f, _)| *f != fd);
        true
    }

    /// Moves `fd` from the back part to the front part; false if it was not in the back.
    pub(crate) fn move_front(&mut self, fd: RawFd) -> bool {
        match self.slot(fd) {
            Some(i) if i >= self.front => {
                self.swap(i, self.front);
                self.front += 1;
                true
            }
            _ => false,
        }
    }

    /// Moves `fd` from the front part to the back part; false if it was not in the front.
    pub(crate) fn move_back(&mut self, fd: RawFd) -> bool {
        match self.slot(fd) {
            Some(i) if i < self.front => {
                self.front -= 1;
                self.swap(i, self.front);
                true
            }
            _ => false,
        }
    }

    /// `poll(2)` over the whole set.
    pub(crate) fn poll(&mut self, timeout: libc::c_int) -> io::Result<usize> {
        sys::poll(&mut self.fds, timeout)
    }

    /// `poll(2)` over the front part only.
    pub(crate) fn poll_front(&mut self, timeout: libc::c_int) -> io::Result<usize> {
        sys::poll(&mut self.fds[..self.front], timeout)
    }

    /// The entries `poll` left in the array: reports each ready one (`ready` of them) and
    /// calls `each` with its descriptor. A closed descriptor (`POLLNVAL`, which `poll` would
    /// report on every call) is reported once as `ERR` and dropped. Entries not passed to
    /// the last poll have no `revents` (every reported entry's are cleared here).
    pub(crate) fn collect(&mut self, mut ready: usize, out: &mut Vec<Ready>, mut each: impl FnMut(RawFd)) {
        let mut i = 0;
        while ready > 0 && i < self.fds.len() {
            let p = self.fds[i];
            if p.revents == 0 {
                i += 1;
                continue;
            }
            ready -= 1;
            self.fds[i].revents = 0;
            let token = self.token_at(i);
            if p.revents & libc::POLLNVAL != 0 {
                out.push(Ready { token, state: State::ERR });
                // The entry moved into `i` (from `i` or later) is looked at next.
                self.remove(p.fd);
                continue;
            }
            out.push(Ready { token, state: sys::state_from_poll(p.revents) });
            each(p.fd);
            i += 1;
        }
    }
}

impl PollSet {
    /// The raw entries, for a caller that polls several sets in one call.
    pub(crate) fn entries(&self) -> &[libc::pollfd] {
        &self.fds
    }

    /// Copies results of a combined poll back into this set's entries; returns how many
    /// are ready.
    pub(crate) fn take_results(&mut self, results: &[libc::pollfd]) -> usize {
        let mut ready = 0;
        for (mine, r) in self.fds.iter_mut().zip(results) {
            mine.revents = r.revents;
            ready += usize::from(r.revents != 0);
        }
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::{token, TOKEN_GROUP_OWN, TOKEN_WAKER};

    fn check_index(s: &PollSet) {
        for (i, p) in s.fds.iter().enumerate() {
            assert_eq!(s.slot(p.fd), Some(i), "index of fd {}", p.fd);
        }
        let indexed = s.slot_of.iter().filter(|&&i| i != 0).count();
        assert_eq!(indexed, s.fds.len());
        assert!(s.front <= s.fds.len());
    }

    #[test]
    fn tokens_come_back_whole_for_registrations_and_internal_watches() {
        let mut s = PollSet::default();
        s.set(7, token(7, 5), Interest::READ);
        s.set(3, TOKEN_WAKER, Interest::READ);
        s.set(9, TOKEN_GROUP_OWN, Interest::READ);
        s.set(11, crate::token::GROUP_BIT | token(11, (1 << 30) - 1), Interest::WRITE);
        assert_eq!(s.token_of(7), Some(token(7, 5)));
        assert_eq!(s.token_of(3), Some(TOKEN_WAKER));
        assert_eq!(s.token_of(9), Some(TOKEN_GROUP_OWN));
        assert_eq!(s.token_of(11), Some(crate::token::GROUP_BIT | token(11, (1 << 30) - 1)));
        // Re-registered under a new generation: the new token.
        s.set(7, token(7, 6), Interest::WRITE);
        assert_eq!(s.token_of(7), Some(token(7, 6)));
        assert!(s.remove(9));
        assert_eq!(s.token_of(9), None);
        assert!(s.internal_low.iter().all(|(f, _)| *f != 9));
        check_index(&s);
    }

    #[test]
    fn parts_move_and_removal_keeps_them_apart() {
        let mut s = PollSet::default();
        for fd in 0..10 {
            s.set(fd, token(fd, 1), Interest::READ);
        }
        assert_eq!(s.front_len(), 10);
        for fd in [1, 4, 7, 8] {
            assert!(s.move_back(fd));
            assert!(!s.move_back(fd));
        }
        assert_eq!(s.front_len(), 6);
        assert!(s.in_back(4) && !s.in_back(5));
        // New watches go in front, even with a back part.
        s.set(20, token(20, 1), Interest::READ);
        assert!(!s.in_back(20));
        assert!(s.remove(5) && s.remove(8) && !s.remove(8));
        assert!(s.move_front(7));
        check_index(&s);
        let mut front = s.front_fds();
        front.sort();
        assert_eq!(front, [0, 2, 3, 6, 7, 9, 20]);
        let mut all = s.fds();
        all.sort();
        assert_eq!(all, [0, 1, 2, 3, 4, 6, 7, 9, 20]);
        for fd in all {
            assert_eq!(s.token_of(fd), Some(token(fd, 1)));
        }
    }
}
