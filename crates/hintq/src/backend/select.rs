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
//! e. Hand-off mode ([`crate::Rearm`]): another thread re-activates a descriptor by setting
//!    its bit in the shadow sets (the "bit flip" Strebelow & Prehofer describe). A `select`
//!    already blocked works on its own copy and would not see the bit, so the shadow sets are
//!    atomic words and a `waiting` flag tells the re-arming thread to wake the call.

use super::{Handoff, Poller, Ready};
use crate::sys::{self, FdSet, FD_SETSIZE};
use crate::{Interest, State};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// The INTERESTED sets as atomic words, shared with a [`crate::Rearm`] in hand-off mode.
pub(crate) struct Shadow {
    sets: [[AtomicU64; FD_SETSIZE / 64]; 3],
    /// A `select` call is (about to be) blocked on a copy of the sets (quirk e).
    pub(crate) waiting: AtomicBool,
}

impl Shadow {
    /// Sets or clears `fd`'s bit in the read, write and except sets per `interest`.
    pub(crate) fn put(&self, fd: usize, interest: Interest) {
        let bit = 1u64 << (fd % 64);
        for (set, want) in self.sets.iter().zip([Interest::READ, Interest::WRITE, Interest::EXCEPT]) {
            if interest.contains(want) {
                set[fd / 64].fetch_or(bit, SeqCst);
            } else {
                set[fd / 64].fetch_and(!bit, SeqCst);
            }
        }
    }

    fn copy(&self, i: usize) -> FdSet {
        std::array::from_fn(|w| self.sets[i][w].load(SeqCst))
    }
}

pub(crate) struct Select {
    shadow: Arc<Shadow>,
    /// Descriptors with a watch, deactivated or not: what `nfds` must cover (quirk e).
    registered: FdSet,
    tokens: Vec<u64>,
    /// One past the highest watched descriptor.
    nfds: usize,
}

impl Select {
    pub(crate) fn new() -> Select {
        let shadow = Shadow {
            sets: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            waiting: AtomicBool::new(false),
        };
        Select {
            shadow: Arc::new(shadow),
            registered: [0; FD_SETSIZE / 64],
            tokens: vec![0; FD_SETSIZE],
            nfds: 0,
        }
    }

    fn watched(&self, fd: usize) -> bool {
        self.registered[fd / 64] & (1u64 << (fd % 64)) != 0
    }

    fn clear(&mut self, fd: usize) {
        self.shadow.put(fd, Interest::empty());
        self.registered[fd / 64] &= !(1u64 << (fd % 64));
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
        self.tokens[i] = token;
        self.shadow.put(i, interest);
        if interest.is_empty() {
            self.registered[i / 64] &= !(1u64 << (i % 64));
        } else {
            self.registered[i / 64] |= 1u64 << (i % 64);
        }
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

    fn handoff(&mut self) -> Option<Handoff> {
        Some(Handoff::Select(Arc::clone(&self.shadow)))
    }

    fn deactivate(&mut self, fd: RawFd, _token: u64) {
        // Not `clear`: `nfds` stays, so a re-arm from another thread needs no update of it.
        self.shadow.put(fd as usize, Interest::empty());
    }

    fn wait(&mut self, out: &mut Vec<Ready>, _max: usize, timeout: Option<Duration>) -> io::Result<()> {
        // Quirk e: the flag is raised before the copy, so a bit set after the copy is seen
        // by its setter as "waiting" and followed by a wake-up.
        self.shadow.waiting.store(true, SeqCst);
        let (mut r, mut w, mut e) = (self.shadow.copy(0), self.shadow.copy(1), self.shadow.copy(2));
        let result = sys::select(self.nfds, &mut r, &mut w, &mut e, timeout);
        self.shadow.waiting.store(false, SeqCst);
        match result {
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

/// Hand-off mode ([`Handoff::Select`]): re-activates `fd` for `interest` from any thread by
/// setting its bits in the shared shadow sets, and wakes the queue's `select` if it is
/// blocked (it would not see the bits until its next call). A descriptor select cannot
/// watch was refused at declare time: nothing to do.
pub(crate) fn handoff_rearm(
    shadow: &Shadow,
    fd: RawFd,
    interest: Interest,
    waker: Option<&crate::Waker>,
) -> io::Result<()> {
    if fd < 0 || fd as usize >= FD_SETSIZE {
        return Ok(());
    }
    shadow.put(fd as usize, interest);
    // Paired with the flag raised before the copy in `Select::wait`.
    if shadow.waiting.load(SeqCst) {
        waker.map_or(Ok(()), crate::Waker::wake)?;
    }
    Ok(())
}
