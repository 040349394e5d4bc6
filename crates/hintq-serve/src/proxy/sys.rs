//! The socket calls only the proxy makes (its listeners come from
//! [`hintq_patterns::listen`], the calls both servers make are in [`crate::common`]), over
//! the shared helpers of `hintq-sys`.

use hintq_sys::set_nodelay;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

pub(crate) use hintq_sys::take_error;

/// Starts a non-blocking connect to `to` (with `TCP_NODELAY`); the bool is true when it
/// completed at once, else wait for writability and call [`take_error`].
pub(crate) fn connect(to: SocketAddr) -> io::Result<(OwnedFd, bool)> {
    let sock = hintq_sys::tcp_socket(to)?;
    set_nodelay(sock.as_raw_fd())?;
    match hintq_sys::connect(sock.as_raw_fd(), to) {
        Ok(()) => Ok((sock, true)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINPROGRESS | libc::EINTR)) => Ok((sock, false)),
        Err(e) => Err(e),
    }
}

/// Whether an idle connection is still usable: nothing to read and no end of file or
/// error pending (`recv(MSG_PEEK)` says `EAGAIN`). Catches an upstream that closed (or sent
/// stray bytes) since the connection went idle.
pub(crate) fn idle_alive(fd: RawFd) -> bool {
    let mut b = 0u8;
    // SAFETY: `b` is valid for a write of one byte.
    let r = unsafe { libc::recv(fd, (&mut b as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}
