//! The socket calls both servers make, each `unsafe` with its `SAFETY:` line, `EINTR`
//! retried here: [`read_into`], [`send_now`], [`shutdown_write`], [`set_nodelay`],
//! [`peer_addr`] (the proxy's own, connecting upstream, are in `proxy/sys.rs`).

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

pub use hintq_sys::set_nodelay;

/// Runs a byte-count system call (`-1` and errno on failure) until it is not interrupted.
pub(crate) fn retry(mut f: impl FnMut() -> isize) -> io::Result<usize> {
    hintq_sys::retry(|| hintq_sys::cvt(f()).map(|n| n as usize))
}

/// What [`read_into`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// This many bytes; `short` when fewer than asked for (the socket is drained for now,
    /// which edge-triggered backends accept in place of reading to `EAGAIN`).
    Data { n: usize, short: bool },
    /// `EAGAIN`.
    Again,
    /// End of stream (the peer shut down its sending side).
    Eof,
}

/// Reads once from socket `fd` into the spare capacity of `buf` (at least `min_room` bytes of
/// it, reserved first) and extends it.
///
/// `recv` rather than `read`: on a socket it goes straight to the protocol, skipping the file
/// layer (`vfs_read`) that `read` passes through; `perf` put that layer at 2–3% of the
/// server's CPU per request on loopback.
///
/// # Errors
/// Socket errors other than `EAGAIN` (`ECONNRESET` and the like).
pub fn read_into(fd: RawFd, buf: &mut Vec<u8>, min_room: usize) -> io::Result<Read> {
    buf.reserve(min_room);
    read_into_at_most(fd, buf, usize::MAX)
}

/// [`read_into`] of at most `max` bytes, into the room `buf` has (never growing it).
///
/// # Errors
/// As [`read_into`].
pub fn read_into_at_most(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> io::Result<Read> {
    let room = buf.spare_capacity_mut();
    let want = room.len().min(max);
    // SAFETY: `room` is writable spare capacity of `want` bytes.
    match retry(|| unsafe { libc::recv(fd, room.as_mut_ptr().cast(), want, 0) }) {
        Ok(0) => Ok(Read::Eof),
        Ok(n) => {
            // SAFETY: the kernel initialised the first `n` bytes of the spare capacity.
            unsafe { buf.set_len(buf.len() + n) };
            Ok(Read::Data { n, short: n < want })
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Read::Again),
        Err(e) => Err(e),
    }
}

/// One non-blocking best-effort send (a 408 before closing a timed-out connection, say);
/// returns the bytes sent.
pub fn send_now(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: pointer and length describe `bytes`.
    retry(|| unsafe {
        libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
    })
}

/// `shutdown(fd, SHUT_WR)`: the first stage of a graceful close (RFC 9112 §9.6).
pub fn shutdown_write(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor the caller owns.
    retry(|| unsafe { libc::shutdown(fd, libc::SHUT_WR) } as isize).map(drop)
}

/// The peer of a connected socket for the access log; `None` (logged as `-`) when the
/// kernel cannot say (the peer is already gone).
pub fn peer_addr(fd: RawFd) -> Option<SocketAddr> {
    hintq_sys::peer_addr(fd).ok()
}
