//! `poll(2)`: the interest array is handed to the kernel on every call, which walks it in
//! full; cost O(registered) per wait (the baseline of all four papers).
//!
//! Kernel quirks handled here (in [`super::pollset`]):
//!
//! a. A descriptor closed without a revoke reports `POLLNVAL` on *every* call (poll(2)),
//!    which would turn the loop into a busy loop. It is reported once, as `ERR`, and its
//!    entry is dropped (libevent's `test_event_closed_fd_poll` behaviour).
//! b. `POLLHUP`, `POLLERR` and `POLLNVAL` are reported whatever was asked; `POLLRDHUP` is
//!    asked for with `READ` interest so a half-close reads as `HUP` to a reader (not to a
//!    writer: see epoll's quirk d).
//! c. Timeouts are in milliseconds; a partial millisecond is rounded up so the wait never
//!    ends before its deadline.

use super::poller::{Arm, Poller, Ready};
use super::pollset::PollSet;
use crate::{sys, Interest};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

#[derive(Default)]
pub(crate) struct Poll {
    set: PollSet,
}

impl Poller for Poll {
    fn trim(&mut self) {
        self.set.trim();
    }

    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, _arm: Arm) -> io::Result<()> {
        self.set.set(fd, token, interest);
        Ok(())
    }

    fn delete(&mut self, fd: RawFd, _token: u64) -> io::Result<()> {
        self.set.remove(fd);
        Ok(())
    }

    fn wait(&mut self, out: &mut Vec<Ready>, _max: usize, timeout: Option<Duration>) -> io::Result<()> {
        let ready = self.set.poll(sys::timeout_ms(timeout))?;
        self.set.collect(ready, out, |_| {});
        Ok(())
    }
}
