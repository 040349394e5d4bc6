//! Listening sockets (with `SO_REUSEPORT` for the sharded pattern) and the descriptor
//! helpers the runtime needs, each `unsafe` with its `SAFETY:` line.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn set_opt(fd: RawFd, level: libc::c_int, name: libc::c_int, on: libc::c_int) -> io::Result<()> {
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `on` is a live c_int and `len` its size.
    cvt(unsafe { libc::setsockopt(fd, level, name, (&on as *const libc::c_int).cast(), len) }).map(drop)
}

/// A non-blocking, close-on-exec TCP listener on `addr` (IPv4 or IPv6), with
/// `SO_REUSEADDR`, and `SO_REUSEPORT` when `reuseport` (one per shard, same port).
///
/// # Errors
/// `socket`, `setsockopt`, `bind` or `listen`.
pub fn listen(addr: SocketAddr, reuseport: bool) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall.
    let fd = cvt(unsafe {
        libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
    })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    set_opt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if reuseport {
        set_opt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            let sin = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above.
            let sin6 = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    cvt(unsafe { libc::bind(fd, (&ss as *const libc::sockaddr_storage).cast(), len as libc::socklen_t) })?;
    // SAFETY: plain syscall.
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
