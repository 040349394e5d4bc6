//! `select(2)` in the two forms Banga et al. measured (§2, Fig. 8):
//!
//! * [`Mode::Improved`] (backend `select`), their "improved select", which Strebelow &
//!   Prehofer also measured: the INTERESTED sets are kept as persistent shadow sets, copied
//!   into the call's sets each time (the kernel overwrites them with the result), and the
//!   result is scanned a word at a time, skipping empty words.
//! * [`Mode::Classic`] (backend `select-classic`), select as a 1999 server used it (Squid's
//!   `comm_select`, the proxy Banga measured): the three sets are rebuilt on every call from
//!   the per-descriptor interest table, one `FD_SET` per watched descriptor, and the result
//!   is tested bit by bit over `0..nfds`.
//!
//! Both cost O(highest descriptor) per wait, in the kernel as in user space; the classical
//! one pays for every watched descriptor twice more in user space. Both keep the library's
//! semantics (coalescing, revoke and close are the queue's).
//!
//! Kernel quirks handled here:
//!
//! a. glibc's `fd_set` is 1024 bits and `FD_SET` above it is undefined behaviour (select(2)
//!    BUGS), but the kernel takes sets of any size: it reads `nfds` bits from each pointer.
//!    The sets here are heap arrays of `unsigned long`, grown as higher descriptors are
//!    declared, and go to the raw system call ([`sys::select`]), so any descriptor the
//!    process can open is watched. What the kernel may still refuse (`ENOMEM` for its copies
//!    of very large sets, `EINVAL`) is returned by the wait as an error with its errno.
//! b. One closed descriptor makes the whole call fail with `EBADF`. The backend then
//!    finds the closed ones with `poll(2)`, reports each once as `ERR` and drops it, like
//!    the poll backend's `POLLNVAL` handling.
//! c. select(2) may report a descriptor ready spuriously ("wrong checksum"): the contract
//!    allows spurious events, and callers use non-blocking descriptors.
//! d. The kernel rewrites the timeout: a fresh one is built for every call.
//! f. The kernel looks only as far as the process's descriptor table reaches (it clamps
//!    `nfds` to the table's size) and ignores the bits above it, so a watched number above
//!    every open descriptor would never give `EBADF` (b) and never be reported. The table
//!    never shrinks: once the highest watched descriptor has been seen open, every watched
//!    number is inside it. So before a call that reaches higher than any descriptor seen
//!    open, the highest watched one is checked, and if it is closed, the closed ones are
//!    reported and dropped as in b.
//! e. Hand-off mode ([`crate::Rearm`], improved mode only): another thread re-activates a
//!    descriptor by setting its bit in the shadow sets (the "bit flip" Strebelow & Prehofer
//!    describe). A `select` already blocked works on its own copy and would not see the bit,
//!    so a `waiting` flag tells the re-arming thread to wake the call. The shadow sets are
//!    behind a mutex since they may grow. The classical mode rebuilds its sets from a table
//!    only its own thread touches, so it has no hand-off path (as `poll`).

use super::poller::{Arm, Handoff, Poller, Ready};
use super::shadow::{bit, grow, Sets, Shadow, KINDS};
use crate::sys::{self, FdWord, FD_BITS};
use crate::{Interest, State};
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which of Banga's two selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Persistent shadow sets, copied per call; results scanned word by word.
    Improved,
    /// Sets rebuilt from the interest table per call; results tested bit by bit.
    Classic,
}

/// What is declared for one descriptor number.
#[derive(Clone, Copy)]
struct Entry {
    token: u64,
    /// Empty: not watched.
    interest: Interest,
}

pub(crate) struct Select {
    mode: Mode,
    /// Improved mode: the interest as persistent sets (the classical mode leaves it empty).
    shadow: Arc<Shadow>,
    /// By descriptor number: the token and declared interest. A watched descriptor stays here
    /// while deactivated (quirk e), so `nfds` covers it. The classical mode's interest list.
    table: Vec<Entry>,
    /// The sets handed to the kernel, reused from call to call.
    call: Sets,
    /// One past the highest watched descriptor.
    nfds: usize,
    /// One past a descriptor seen open: the kernel's table reaches at least this far (quirk f).
    covered: usize,
}

impl Select {
    pub(crate) fn new(mode: Mode) -> Select {
        let shadow = Shadow { sets: Mutex::default(), waiting: AtomicBool::new(false) };
        Select {
            mode,
            shadow: Arc::new(shadow),
            table: Vec::new(),
            call: Sets::default(),
            nfds: 0,
            covered: 0,
        }
    }

    fn watched(&self, fd: usize) -> bool {
        self.table.get(fd).is_some_and(|e| !e.interest.is_empty())
    }

    fn clear(&mut self, fd: usize) {
        if self.mode == Mode::Improved {
            self.shadow.put(fd, Interest::empty());
        }
        if let Some(e) = self.table.get_mut(fd) {
            e.interest = Interest::empty();
        }
        while self.nfds > 0 && !self.watched(self.nfds - 1) {
            self.nfds -= 1;
        }
    }

    /// Quirk b: reports and drops every watched descriptor that is no longer open.
    fn drop_closed(&mut self, out: &mut Vec<Ready>) {
        for fd in 0..self.nfds {
            if self.watched(fd) && is_closed(fd) {
                out.push(Ready { token: self.table[fd].token, state: State::ERR });
                self.clear(fd);
            }
        }
    }

    /// The classical mode's per-call work before the call: empty sets, then one `FD_SET`
    /// per watched descriptor and kind.
    fn rebuild(&mut self, words: usize) {
        for set in &mut self.call {
            set[..words].fill(0);
        }
        for (fd, e) in self.table[..self.nfds].iter().enumerate() {
            let (word, mask) = bit(fd);
            for (set, kind) in self.call.iter_mut().zip(KINDS) {
                if e.interest.contains(kind) {
                    set[word] |= mask;
                }
            }
        }
    }

    /// The state `fd`'s bits say in the result sets.
    fn state_of(&self, word: usize, mask: FdWord) -> State {
        let mut state = State::empty();
        for (set, s) in self.call.iter().zip([State::READ, State::WRITE, State::EXCEPT]) {
            state.set(s, set[word] & mask != 0);
        }
        state
    }

    /// Improved: the result a word at a time, skipping empty words.
    fn scan_words(&self, words: usize, out: &mut Vec<Ready>) {
        for word in 0..words {
            let mut bits = self.call[0][word] | self.call[1][word] | self.call[2][word];
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let state = self.state_of(word, 1 << b);
                out.push(Ready { token: self.table[word * FD_BITS + b].token, state });
            }
        }
    }

    /// Classical: `FD_ISSET` on each set for every descriptor below `nfds`.
    fn scan_bits(&self, out: &mut Vec<Ready>) {
        for fd in 0..self.nfds {
            let (word, mask) = bit(fd);
            let state = self.state_of(word, mask);
            if !state.is_empty() {
                out.push(Ready { token: self.table[fd].token, state });
            }
        }
    }
}

impl Poller for Select {
    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, _arm: Arm) -> io::Result<()> {
        // Descriptors are non-negative: the queue refuses the others.
        let i = fd as usize;
        if self.table.len() <= i {
            self.table.resize(i + 1, Entry { token: 0, interest: Interest::empty() });
        }
        self.table[i] = Entry { token, interest };
        if self.mode == Mode::Improved {
            self.shadow.put(i, interest);
        }
        if interest.is_empty() {
            self.clear(i);
        } else {
            self.nfds = self.nfds.max(i + 1);
        }
        Ok(())
    }

    fn delete(&mut self, fd: RawFd, _token: u64) -> io::Result<()> {
        self.clear(fd as usize);
        Ok(())
    }

    fn handoff(&mut self) -> Option<Handoff> {
        (self.mode == Mode::Improved).then(|| Handoff::Select(Arc::clone(&self.shadow)))
    }

    fn deactivate(&mut self, fd: RawFd, _token: u64) {
        // Not `clear`: `nfds` stays, so a re-arm from another thread needs no update of it.
        self.shadow.put(fd as usize, Interest::empty());
    }

    fn wait(&mut self, out: &mut Vec<Ready>, _max: usize, timeout: Option<Duration>) -> io::Result<()> {
        if self.nfds > self.covered {
            // Quirk f.
            if is_closed(self.nfds - 1) {
                self.drop_closed(out);
                return Ok(());
            }
            self.covered = self.nfds;
        }
        let words = self.nfds.div_ceil(FD_BITS);
        grow(&mut self.call, words);
        match self.mode {
            Mode::Improved => {
                // Quirk e: the flag is raised before the copy, so a bit set after the copy
                // is seen by its setter as "waiting" and followed by a wake-up.
                self.shadow.waiting.store(true, SeqCst);
                self.shadow.copy_into(&mut self.call, words);
            }
            Mode::Classic => self.rebuild(words),
        }
        let [r, w, e] = &mut self.call;
        let result = sys::select(self.nfds, [&mut r[..words], &mut w[..words], &mut e[..words]], timeout);
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
        match self.mode {
            Mode::Improved => self.scan_words(words, out),
            Mode::Classic => self.scan_bits(out),
        }
        Ok(())
    }
}

/// True if `fd` is not an open descriptor.
fn is_closed(fd: usize) -> bool {
    matches!(sys::current_state(fd as RawFd), Err(e) if e.raw_os_error() == Some(libc::EBADF))
}

/// Hand-off mode ([`Handoff::Select`]): re-activates `fd` for `interest` from any thread by
/// setting its bits in the shared shadow sets, and wakes the queue's `select` if it is
/// blocked (it would not see the bits until its next call).
pub(crate) fn handoff_rearm(
    shadow: &Shadow,
    fd: RawFd,
    interest: Interest,
    waker: Option<&crate::Waker>,
) -> io::Result<()> {
    let Ok(fd) = usize::try_from(fd) else { return Ok(()) };
    shadow.put(fd, interest);
    // Paired with the flag raised before the copy in `Select::wait`.
    if shadow.waiting.load(SeqCst) {
        waker.map_or(Ok(()), crate::Waker::wake)?;
    }
    Ok(())
}
