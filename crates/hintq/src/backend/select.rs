//! `select(2)` as Banga et al. found it (§2) and Strebelow & Prehofer measured it: the
//! INTERESTED sets are kept as shadow `fd_set`s, copied into the call's sets each time
//! (the kernel overwrites them with the result), and the result is scanned a 64-bit word
//! at a time, skipping empty words. Cost O(highest descriptor) per wait.
//!
//! Kernel quirks handled here:
//!
//! a. `FD_SET` with a descriptor at or above `FD_SETSIZE` (1024) is undefined behaviour
//!    (select(2) BUGS): such descriptors are refused at declare time with a clear error.
//! b. One closed descriptor makes the whole call fail with `EBADF`. The backend then
//!    finds the closed ones with `poll(2)`, reports each once as `ERR` and drops it, like
//!    the poll backend's `POLLNVAL` handling.
//! c. select(2) may report a descriptor ready spuriously ("wrong checksum"): the contract
//!    allows spurious events, and callers use non-blocking descriptors.
//! d. Timeouts are in microseconds and the kernel rewrites the timeval: a fresh one is
//!    built for every call.

use super::{Poller, Ready};
use crate::sys::{self, FdSet, FD_SETSIZE};
use crate::{Interest, State};
use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

pub(crate) struct Select {
    read: FdSet,
    write: FdSet,
    except: FdSet,
    tokens: Vec<u64>,
    /// One past the highest watched descriptor.
    nfds: usize,
}

impl Select {
    pub(crate) fn new() -> Select {
        Select {
            read: [0; FD_SETSIZE / 64],
            write: [0; FD_SETSIZE / 64],
            except: [0; FD_SETSIZE / 64],
            tokens: vec![0; FD_SETSIZE],
            nfds: 0,
        }
    }

    fn put(set: &mut FdSet, fd: usize, on: bool) {
        let bit = 1u64 << (fd % 64);
        if on {
            set[fd / 64] |= bit;
        } else {
            set[fd / 64] &= !bit;
        }
    }

    fn watched(&self, fd: usize) -> bool {
        (self.read[fd / 64] | self.write[fd / 64] | self.except[fd / 64]) & (1u64 << (fd % 64)) != 0
    }

    fn clear(&mut self, fd: usize) {
        for set in [&mut self.read, &mut self.write, &mut self.except] {
            Self::put(set, fd, false);
        }
        while self.nfds > 0 && !self.watched(self.nfds - 1) {
            self.nfds -= 1;
        }
    }

    /// Quirk b: reports and drops every watched descriptor that is no longer open.
    fn drop_closed(&mut self, out: &mut Vec<Ready>) {
        for fd in 0..self.nfds {
            if self.watched(fd)
                && matches!(sys::current_state(fd as RawFd), Err(e) if e.raw_os_error() == Some(libc::EBADF))
            {
                out.push(Ready { token: self.tokens[fd], state: State::ERR });
                self.clear(fd);
            }
        }
    }
}

impl Poller for Select {
    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, _fresh: bool) -> io::Result<()> {
        let i = fd as usize;
        if i >= FD_SETSIZE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("descriptor {fd} is at or above FD_SETSIZE ({FD_SETSIZE}): the select backend cannot watch it"),
            ));
        }
        Self::put(&mut self.read, i, interest.contains(Interest::READ));
        Self::put(&mut self.write, i, interest.contains(Interest::WRITE));
        Self::put(&mut self.except, i, interest.contains(Interest::EXCEPT));
        self.tokens[i] = token;
        if self.watched(i) {
            self.nfds = self.nfds.max(i + 1);
        }
        Ok(())
    }

    fn delete(&mut self, fd: RawFd, _token: u64) -> io::Result<()> {
        if (fd as usize) < FD_SETSIZE {
            self.clear(fd as usize);
        }
        Ok(())
    }

    fn wait(&mut self, out: &mut Vec<Ready>, _max: usize, timeout: Option<Duration>) -> io::Result<()> {
        let (mut r, mut w, mut e) = (self.read, self.write, self.except);
        match sys::select(self.nfds, &mut r, &mut w, &mut e, timeout) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(err) if err.raw_os_error() == Some(libc::EBADF) => {
                self.drop_closed(out);
                return Ok(());
            }
            Err(err) => return Err(err),
        }
        for word in 0..self.nfds.div_ceil(64) {
            let mut bits = r[word] | w[word] | e[word];
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let mask = 1u64 << bit;
                let mut state = State::empty();
                state.set(State::READ, r[word] & mask != 0);
                state.set(State::WRITE, w[word] & mask != 0);
                state.set(State::EXCEPT, e[word] & mask != 0);
                out.push(Ready { token: self.tokens[word * 64 + bit], state });
            }
        }
        Ok(())
    }
}
