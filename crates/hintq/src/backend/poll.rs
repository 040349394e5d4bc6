//! `poll(2)`: the interest array is handed to the kernel on every call, which walks it in
//! full; cost O(registered) per wait (the baseline of all four papers).
//!
//! Kernel quirks handled here:
//!
//! a. A descriptor closed without a revoke reports `POLLNVAL` on *every* call (poll(2)),
//!    which would turn the loop into a busy loop. It is reported once, as `ERR`, and its
//!    entry is dropped (libevent's `test_event_closed_fd_poll` behaviour).
//! b. `POLLHUP`, `POLLERR` and `POLLNVAL` are reported whatever was asked; `POLLRDHUP` is
//!    always asked for so a half-close reads as `HUP`.
//! c. Timeouts are in milliseconds; a partial millisecond is rounded up so the wait never
//!    ends before its deadline.

use super::{Poller, Ready};
use crate::{sys, Interest, State};
use std::collections::HashMap;
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

pub(crate) struct Poll {
    fds: Vec<libc::pollfd>,
    tokens: Vec<u64>,
    slot_of: HashMap<RawFd, usize>,
}

impl Poll {
    pub(crate) fn new() -> Poll {
        Poll { fds: Vec::new(), tokens: Vec::new(), slot_of: HashMap::new() }
    }

    fn remove_at(&mut self, i: usize) {
        let fd = self.fds[i].fd;
        self.slot_of.remove(&fd);
        self.fds.swap_remove(i);
        self.tokens.swap_remove(i);
        if let Some(moved) = self.fds.get(i) {
            self.slot_of.insert(moved.fd, i);
        }
    }
}

impl Poller for Poll {
    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, _fresh: bool) -> io::Result<()> {
        let events = sys::poll_events(interest);
        match self.slot_of.get(&fd) {
            Some(&i) => {
                self.fds[i].events = events;
                self.tokens[i] = token;
            }
            None => {
                self.slot_of.insert(fd, self.fds.len());
                self.fds.push(libc::pollfd { fd, events, revents: 0 });
                self.tokens.push(token);
            }
        }
        Ok(())
    }

    fn delete(&mut self, fd: RawFd, _token: u64) -> io::Result<()> {
        if let Some(&i) = self.slot_of.get(&fd) {
            self.remove_at(i);
        }
        Ok(())
    }

    fn wait(&mut self, out: &mut Vec<Ready>, _max: usize, timeout: Option<Duration>) -> io::Result<()> {
        let mut left = sys::poll(&mut self.fds, sys::timeout_ms(timeout))?;
        let mut i = 0;
        while left > 0 && i < self.fds.len() {
            let revents = self.fds[i].revents;
            if revents == 0 {
                i += 1;
                continue;
            }
            left -= 1;
            out.push(Ready { token: self.tokens[i], state: sys::state_from_poll(revents) });
            if revents & libc::POLLNVAL != 0 {
                out.last_mut().expect("just pushed").state = State::ERR;
                self.remove_at(i); // quirk a; the entry swapped into `i` is looked at next
            } else {
                i += 1;
            }
        }
        Ok(())
    }
}
