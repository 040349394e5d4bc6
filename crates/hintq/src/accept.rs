//! Accepting connections without the two classic event-loop traps.
//!
//! * `EMFILE`/`ENFILE` (RELIABILITY H5): `accept` fails but the connection stays queued, so
//!   the listener stays readable and a level-triggered loop spins at 100% CPU. [`Acceptor`]
//!   keeps one spare descriptor (`/dev/null`); when out of descriptors it closes the spare,
//!   accepts and closes the pending connections (the clients see a close, not a hang), then
//!   reopens the spare. libuv does the same (src/unix/stream.c). Another thread of the
//!   process may take the slot the spare freed before it is reopened; the spare is then lost
//!   until a descriptor frees, and [`Accepted::Exhausted`] tells the caller to stop watching
//!   the listener for [`Acceptor::BACKOFF`] (nginx disables its accept events for 500 ms the
//!   same way); watching on would spin, as the pending connections keep it readable.
//! * Errors that belong to one pending connection (H6): Linux `accept` passes on pending
//!   network errors (`ENETDOWN`, `EPROTO`, `ENOPROTOOPT`, `EHOSTDOWN`, `ENONET`,
//!   `EHOSTUNREACH`, `EOPNOTSUPP`, `ENETUNREACH`) and `ECONNABORTED` for a peer that reset
//!   before accept. They are skipped: the next pending connection is tried.

use crate::sys;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Accepts from one non-blocking listener; see the module docs.
#[derive(Debug)]
pub struct Acceptor {
    listener: RawFd,
    spare: Option<OwnedFd>,
    shed: u64,
}

/// What one call to [`Acceptor::accept`] produced.
#[derive(Debug)]
pub enum Accepted {
    /// A new connection, non-blocking and close-on-exec.
    Conn(OwnedFd),
    /// Nothing pending (`EAGAIN`): wait for the next readiness.
    Drained,
    /// Out of descriptors: this many pending connections were accepted and closed.
    Shed(u64),
    /// Out of descriptors with no spare to shed with (connections may have been shed before
    /// it was lost; [`Acceptor::shed`] counts them): connections stay queued and the listener
    /// readable. Stop watching it for [`Acceptor::BACKOFF`], then accept again.
    Exhausted,
}

impl Acceptor {
    /// How long to stop watching the listener after [`Accepted::Exhausted`]: long enough
    /// that retrying costs nothing measurable, short enough that service resumes promptly
    /// once descriptors free.
    pub const BACKOFF: Duration = Duration::from_millis(100);

    /// Wraps a listening socket (which the caller keeps owning and must make non-blocking).
    ///
    /// By number (a `RawFd`): the acceptor keeps it beyond this call, which a
    /// `BorrowedFd<'_>` would not express; the honest type, `Acceptor<'l>` borrowing the
    /// listener, cannot be held beside its listener in one struct or sent to pool threads.
    /// So the caller keeps the listener open while the acceptor lives.
    ///
    /// # Errors
    /// Opening the spare descriptor.
    pub fn new(listener: RawFd) -> io::Result<Acceptor> {
        Ok(Acceptor { listener, spare: Some(open_spare()?), shed: 0 })
    }

    /// Connections shed so far because descriptors ran out.
    pub fn shed(&self) -> u64 {
        self.shed
    }

    /// Accepts one connection, skipping per-connection errors.
    ///
    /// # Errors
    /// Errors of the listener itself (`EBADF`, `EINVAL`, `ENOTSOCK`).
    pub fn accept(&mut self) -> io::Result<Accepted> {
        loop {
            match accept4(self.listener) {
                Ok(fd) => return Ok(Accepted::Conn(fd)),
                Err(e) => match e.raw_os_error().unwrap_or(0) {
                    libc::EAGAIN => return Ok(Accepted::Drained),
                    libc::EINTR => continue,
                    libc::EMFILE | libc::ENFILE => return Ok(self.shed_pending()),
                    libc::ECONNABORTED
                    | libc::ENETDOWN
                    | libc::EPROTO
                    | libc::ENOPROTOOPT
                    | libc::EHOSTDOWN
                    | libc::ENONET
                    | libc::EHOSTUNREACH
                    | libc::EOPNOTSUPP
                    | libc::ENETUNREACH
                    | libc::EPERM => continue,
                    _ => return Err(e),
                },
            }
        }
    }

    fn shed_pending(&mut self) -> Accepted {
        // A spare lost to another thread comes back once a descriptor frees.
        let Some(spare) = self.spare.take().or_else(|| open_spare().ok()) else {
            return Accepted::Exhausted;
        };
        drop(spare);
        let mut n = 0;
        let drained = loop {
            match accept4(self.listener) {
                Ok(fd) => {
                    drop(fd);
                    n += 1;
                }
                Err(e) => break e.raw_os_error() == Some(libc::EAGAIN),
            }
        };
        self.spare = open_spare().ok();
        self.shed += n;
        // Connections left pending with no spare to shed them: the listener stays readable.
        if drained || self.spare.is_some() {
            Accepted::Shed(n)
        } else {
            Accepted::Exhausted
        }
    }
}

fn open_spare() -> io::Result<OwnedFd> {
    // SAFETY: the path is a NUL-terminated literal.
    let fd = sys::cvt(unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn accept4(listener: RawFd) -> io::Result<OwnedFd> {
    let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: null address pointers are allowed by accept4(2).
    let fd = sys::cvt(unsafe { libc::accept4(listener, std::ptr::null_mut(), std::ptr::null_mut(), flags) })?;
    // SAFETY: `fd` was just accepted and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl AsRawFd for Acceptor {
    fn as_raw_fd(&self) -> RawFd {
        self.listener
    }
}
