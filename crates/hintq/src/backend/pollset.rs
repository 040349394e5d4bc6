//! A `poll(2)` interest array with an index by descriptor: the state the `poll` backend
//! passes to the kernel on every call, and which `gooch` (two of them) and `rtsig` (kept
//! current beside the signal queue, so that a switch to polling costs nothing, as Provos &
//! Lever §6 recommend) share.

use super::Ready;
use crate::{sys, Interest, State};
use std::io;
use std::os::fd::RawFd;

#[derive(Default)]
pub(crate) struct PollSet {
    fds: Vec<libc::pollfd>,
    tokens: Vec<u64>,
    /// Per descriptor number: its index in `fds` plus one (0: not in the set). 4 bytes per
    /// number up to the highest one in the set, where a hash map took about 30 per member.
    slot_of: Vec<u32>,
}

impl PollSet {
    pub(crate) fn len(&self) -> usize {
        self.fds.len()
    }

    /// `fd`'s index in `fds`.
    fn slot(&self, fd: RawFd) -> Option<usize> {
        let i = *self.slot_of.get(usize::try_from(fd).ok()?)?;
        i.checked_sub(1).map(|i| i as usize)
    }

    pub(crate) fn contains(&self, fd: RawFd) -> bool {
        self.slot(fd).is_some()
    }

    /// The token `fd` is watched under.
    pub(crate) fn token_of(&self, fd: RawFd) -> Option<u64> {
        self.slot(fd).map(|i| self.tokens[i])
    }

    /// The watched descriptors (a copy, so the caller may change the set meanwhile).
    pub(crate) fn fds(&self) -> Vec<RawFd> {
        self.fds.iter().map(|p| p.fd).collect()
    }

    /// Watches `fd` for `interest` under `token`, replacing an earlier watch.
    pub(crate) fn set(&mut self, fd: RawFd, token: u64, interest: Interest) {
        self.insert(libc::pollfd { fd, events: sys::poll_events(interest), revents: 0 }, token);
    }

    fn insert(&mut self, p: libc::pollfd, token: u64) {
        match self.slot(p.fd) {
            Some(i) => {
                self.fds[i].events = p.events;
                self.tokens[i] = token;
            }
            None => {
                // Descriptors are non-negative: the queue refuses the others.
                let n = p.fd as usize;
                if self.slot_of.len() <= n {
                    self.slot_of.resize(n + 1, 0);
                }
                self.slot_of[n] = self.fds.len() as u32 + 1;
                self.fds.push(libc::pollfd { revents: 0, ..p });
                self.tokens.push(token);
            }
        }
    }

    /// Stops watching `fd`; returns its entry and token if it was watched.
    pub(crate) fn remove(&mut self, fd: RawFd) -> Option<(libc::pollfd, u64)> {
        let i = self.slot(fd)?;
        self.slot_of[fd as usize] = 0;
        let p = self.fds.swap_remove(i);
        let t = self.tokens.swap_remove(i);
        if let Some(moved) = self.fds.get(i) {
            self.slot_of[moved.fd as usize] = i as u32 + 1;
        }
        Some((p, t))
    }

    /// Moves `fd`'s watch from this set to `other`.
    pub(crate) fn move_to(&mut self, fd: RawFd, other: &mut PollSet) {
        if let Some((p, t)) = self.remove(fd) {
            other.insert(p, t);
        }
    }

    /// `poll(2)` over the whole set.
    pub(crate) fn poll(&mut self, timeout: libc::c_int) -> io::Result<usize> {
        sys::poll(&mut self.fds, timeout)
    }

    /// The entries `poll` left in the array: reports each ready one (`ready` of them) and
    /// calls `each` with its descriptor. A closed descriptor (`POLLNVAL`, which `poll` would
    /// report on every call) is reported once as `ERR` and dropped.
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
            if p.revents & libc::POLLNVAL != 0 {
                out.push(Ready { token: self.tokens[i], state: State::ERR });
                self.remove(p.fd); // the entry swapped into `i` is looked at next
                continue;
            }
            out.push(Ready { token: self.tokens[i], state: sys::state_from_poll(p.revents) });
            each(p.fd);
            i += 1;
        }
    }

    /// The raw entries, for a caller that polls several sets in one call.
    pub(crate) fn entries(&self) -> &[libc::pollfd] {
        &self.fds
    }

    /// Copies results of a combined poll back into this set's entries.
    pub(crate) fn take_results(&mut self, results: &[libc::pollfd]) -> usize {
        let mut ready = 0;
        for (mine, r) in self.fds.iter_mut().zip(results) {
            mine.revents = r.revents;
            ready += usize::from(r.revents != 0);
        }
        ready
    }
}
