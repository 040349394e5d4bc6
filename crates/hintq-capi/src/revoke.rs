//! `close(2)` revokes interest, as the paper says (§4: "closing a descriptor implicitly
//! removes any declared interest").
//!
//! A user-space library cannot see a `close(2)` made through the kernel, and on some
//! backends the registration outlives it: io_uring's armed poll holds its own reference to
//! the file, so the socket is never torn down and the peer sees no end-of-file; `poll`,
//! `select`, `select-classic` and `gooch` watch a number, so a new descriptor that reuses it is reported
//! without being declared; events already collected for the old descriptor would be handed
//! out as events of the new one. So the library provides `close` itself: a C program linked
//! with `-lhintq` (shared or static) calls this `close`, found before the C library's by the
//! dynamic linker (the program and its `DT_NEEDED` libraries come before `libc.so`, which
//! the compiler driver links last) or by the static link. It revokes the descriptor on every
//! queue and group of the process that declared it, then closes it with the system call.
//!
//! * Which descriptors are declared somewhere is kept in a table (descriptor → queues and
//!   groups) behind a mutex, and summed up in a bitmap read without a lock, so that closing
//!   a descriptor nothing declared costs one atomic load (and stays async-signal-safe).
//! * A group is `Sync`: its registration is revoked at once. A queue is revoked at once when
//!   the closing thread is the one using it and the queue is idle; otherwise (another
//!   thread's queue, perhaps blocked in `get_next_event`) the descriptor goes to the queue's
//!   mailbox and the queue is woken; every call on a queue empties its mailbox first, and a
//!   woken wait empties it before waiting again. That is soon enough for the peer: the
//!   blocked thread is woken and cancels the poll. And it is before any declaration of a new
//!   descriptor with the same number: the mail is posted before the system call frees the
//!   number, so the queue's thread finds it at its next call, whatever that call is.
//! * The table entry is taken out before the system call, so a descriptor is revoked once,
//!   however many threads race to close it.
//!
//! Not seen: descriptors closed without this `close` (by `dup2`/`dup3` onto a declared
//! number, `close_range`, `fclose` and other closes inside the C library, or a raw
//! `syscall(SYS_close)`); revoke those first, as the header says.

use crate::group::hq_group;
use crate::queue::hq_queue;
use libc::c_int;
use std::collections::BTreeMap;
use std::io;
use std::os::fd::RawFd;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Weak};

/// Descriptors below this have a bit in [`MAYBE`]; above it every close looks in the table.
const BITMAP_FDS: usize = 1 << 20;

/// Bit `fd` is set while `fd` may have an entry in [`TABLE`] (128 KiB of zeroed memory,
/// touched only where descriptors are declared).
static MAYBE: [AtomicU64; BITMAP_FDS / 64] = [const { AtomicU64::new(0) }; BITMAP_FDS / 64];

/// Who declared each descriptor.
static TABLE: Mutex<BTreeMap<RawFd, Vec<Holder>>> = Mutex::new(BTreeMap::new());

/// A queue or group holding a declaration.
#[derive(Clone)]
pub(crate) enum Holder {
    Queue(Weak<hq_queue>),
    Group(Weak<hq_group>),
}

impl Holder {
    fn same(&self, other: &Holder) -> bool {
        match (self, other) {
            (Holder::Queue(a), Holder::Queue(b)) => a.ptr_eq(b),
            (Holder::Group(a), Holder::Group(b)) => a.ptr_eq(b),
            _ => false,
        }
    }

    fn alive(&self) -> bool {
        match self {
            Holder::Queue(q) => q.strong_count() > 0,
            Holder::Group(g) => g.strong_count() > 0,
        }
    }

    /// Revokes `fd`, which is being closed.
    fn revoke(&self, fd: RawFd) {
        match self {
            Holder::Queue(q) => {
                if let Some(q) = q.upgrade() {
                    q.closed_elsewhere(fd);
                }
            }
            Holder::Group(g) => {
                if let Some(g) = g.upgrade() {
                    g.closed(fd);
                }
            }
        }
    }
}

fn table() -> MutexGuard<'static, BTreeMap<RawFd, Vec<Holder>>> {
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn mark(fd: RawFd, on: bool) {
    let i = fd as usize;
    if let Some(word) = MAYBE.get(i / 64) {
        let bit = 1u64 << (i % 64);
        if on {
            word.fetch_or(bit, Ordering::SeqCst);
        } else {
            word.fetch_and(!bit, Ordering::SeqCst);
        }
    }
}

fn maybe_declared(fd: RawFd) -> bool {
    match MAYBE.get(fd as usize / 64) {
        Some(word) => word.load(Ordering::SeqCst) & (1u64 << (fd as usize % 64)) != 0,
        None => fd >= 0,
    }
}

/// `holder` declared `fd`.
pub(crate) fn add(fd: RawFd, holder: Holder) {
    let mut t = table();
    let holders = t.entry(fd).or_default();
    holders.retain(Holder::alive);
    if !holders.iter().any(|h| h.same(&holder)) {
        holders.push(holder);
    }
    mark(fd, true);
}

/// `holder` revoked `fd` itself.
pub(crate) fn remove(fd: RawFd, holder: &Holder) {
    let mut t = table();
    if let Some(holders) = t.get_mut(&fd) {
        holders.retain(|h| h.alive() && !h.same(holder));
        if holders.is_empty() {
            t.remove(&fd);
            mark(fd, false);
        }
    }
}

/// Revokes `fd` everywhere it is declared; the caller closes it next.
fn revoke_everywhere(fd: RawFd) {
    let holders = {
        let mut t = table();
        mark(fd, false);
        t.remove(&fd).unwrap_or_default()
    };
    for h in holders {
        h.revoke(fd);
    }
}

/// `close(2)` through the library's `close`, as an `io::Result`.
pub(crate) fn close_checked(fd: RawFd) -> io::Result<c_int> {
    match close(fd) {
        -1 => Err(io::Error::last_os_error()),
        r => Ok(r),
    }
}

/// `close(2)` with the paper's meaning; see `hintq.h` and the module docs.
///
/// Interposes the C library's `close` for the program that links the library (and for the
/// library itself: the core's closes come here too, and find nothing declared). The
/// system call is made directly, since this symbol hides the C library's.
#[no_mangle]
pub extern "C" fn close(fd: c_int) -> c_int {
    if maybe_declared(fd) {
        // A panic here would cross into C; it cannot happen short of a bug, and then the
        // descriptor is still closed below.
        let _ = panic::catch_unwind(AssertUnwindSafe(|| revoke_everywhere(fd)));
    }
    // SAFETY: `close` takes a plain integer; the caller gives up `fd`.
    unsafe { libc::syscall(libc::SYS_close, fd) as c_int }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_follows_the_table() {
        let fd = 900_001;
        assert!(!maybe_declared(fd));
        let h = Holder::Queue(Weak::new());
        add(fd, h.clone());
        assert!(maybe_declared(fd));
        remove(fd, &h);
        assert!(!maybe_declared(fd));
        assert!(maybe_declared(BITMAP_FDS as RawFd), "above the bitmap: always looked up");
        assert!(!maybe_declared(-1));
    }
}
