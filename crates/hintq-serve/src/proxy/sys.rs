//! The socket calls only the proxy makes (its listeners come from
//! [`hintq_patterns::listen`], the calls both servers make are in [`crate::common`]), each
//! `unsafe` with its `SAFETY:` line.

use crate::common::set_nodelay;
use std::io;
use std::mem;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut ss: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            let sin = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above.
            let sin6 = unsafe { &mut *(&mut ss as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn socket(addr: SocketAddr) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall.
    let fd = cvt(unsafe {
        libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
    })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Starts a non-blocking connect to `to` (with `TCP_NODELAY`); the bool is true when it
/// completed at once, else wait for writability and call [`take_error`].
pub(crate) fn connect(to: SocketAddr) -> io::Result<(OwnedFd, bool)> {
    use std::os::fd::AsRawFd;
    let sock = socket(to)?;
    let _ = set_nodelay(sock.as_raw_fd());
    let (ss, len) = sockaddr(to);
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    match cvt(unsafe { libc::connect(sock.as_raw_fd(), (&ss as *const libc::sockaddr_storage).cast(), len) })
    {
        Ok(_) => Ok((sock, true)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINPROGRESS | libc::EINTR)) => Ok((sock, false)),
        Err(e) => Err(e),
    }
}

/// The pending error of a socket (`SO_ERROR`): `Ok` when a non-blocking connect succeeded.
pub(crate) fn take_error(fd: RawFd) -> io::Result<()> {
    let mut err: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` and `len` are valid for writes of the sizes given.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    })?;
    match err {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
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
