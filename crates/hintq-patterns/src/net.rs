//! Listening sockets (with `SO_REUSEPORT` for the sharded pattern) and the descriptor
//! helpers the runtime needs, over the shared system-call helpers of `hintq-sys`.

use hintq_sys::{bind, cvt, setsockopt, tcp_socket};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};

/// A non-blocking, close-on-exec TCP listener on `addr` (IPv4 or IPv6), with
/// `SO_REUSEADDR`, and `SO_REUSEPORT` when `reuseport` (one per shard, same port).
///
/// # Errors
/// `socket`, `setsockopt`, `bind` or `listen`.
pub fn listen(addr: SocketAddr, reuseport: bool) -> io::Result<OwnedFd> {
    let sock = tcp_socket(addr)?;
    let fd = sock.as_raw_fd();
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1 as libc::c_int)?;
    if reuseport {
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1 as libc::c_int)?;
    }
    bind(fd, addr)?;
    // SAFETY: plain syscall on a live socket.
    cvt(unsafe { libc::listen(fd, 4096) })?;
    Ok(sock)
}

/// The address a listener is bound to.
///
/// # Errors
/// Duplicating the descriptor or `getsockname`.
pub fn local_addr(fd: &OwnedFd) -> io::Result<SocketAddr> {
    let l = TcpListener::from(fd.try_clone()?);
    l.local_addr()
}

/// Descriptors open in this process now (`/proc/self/fd`), for leak checks.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count().saturating_sub(1))
}
