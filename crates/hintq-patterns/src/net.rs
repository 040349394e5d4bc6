//! Listening sockets (with `SO_REUSEPORT` for the sharded pattern), the claim that keeps a
//! port to one server, and the descriptor helpers the runtime needs, over the shared
//! system-call helpers of `hintq-sys`.
//!
//! # One port, one server
//!
//! `SO_REUSEPORT` lets the sharded pattern (and the worker processes of `--processes`) put
//! several listeners on one port, but Linux lets *any* socket of the same user join such a
//! group: a second server started on the port would silently take a share of its
//! connections. So a server [`claim`]s its address before its listeners join:
//!
//! 1. It binds an abstract Unix socket named after the address (`hintq-listen <addr>`).
//!    Names are exclusive, and the kernel frees one when its last descriptor closes (the
//!    process ending included: nothing stale is left). This orders every hintq server on
//!    the address, whatever their timing: one holds the name, the others fail here.
//! 2. It binds a probe socket to the address with `SO_REUSEADDR` but *without*
//!    `SO_REUSEPORT`, then closes it. That bind fails if anything listens there already
//!    (a listener in a `SO_REUSEPORT` group included), and does not fail for connections of
//!    a previous server left in `TIME_WAIT`.
//! 3. Only then its own listeners bind, with `SO_REUSEPORT` where the pattern shares the
//!    port, and listen; the claim is held until they are closed.
//!
//! What is left is another program (not a hintq server) that binds the port with
//! `SO_REUSEPORT` itself between steps 2 and 3: it asked to share. One without
//! `SO_REUSEPORT` that listens in that window makes step 3 fail. A `--processes` supervisor
//! claims the address for its workers, which then join without claiming
//! ([`Config::reuseport`](crate::Config::reuseport)). A claim is per network namespace, as
//! ports are.

use hintq_sys::{bind, cvt, setsockopt, tcp_socket};
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::linux::net::SocketAddrExt as _;
use std::os::unix::net::{SocketAddr as UnixAddr, UnixListener};

/// A server's claim on its listening address ([`claim`]): the address is refused to every
/// other hintq server while it is held. Dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct Claim {
    _name: UnixListener,
}

/// Claims `addr` for the calling process (see the module docs): fails when another hintq
/// server holds it, or when anything listens on it already. For port 0, claim the address
/// the first listener got instead ([`Claim::port_of`]).
///
/// # Errors
/// `AddrInUse` with a message naming `addr`; the probe's other `bind` errors
/// (`EADDRNOTAVAIL`, `EACCES`), with `addr` too.
pub fn claim(addr: SocketAddr) -> io::Result<Claim> {
    let claim = Claim::port_of(addr)?;
    let probe = tcp_socket(addr)?;
    setsockopt(probe.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1 as libc::c_int)?;
    bind(probe.as_raw_fd(), addr).map_err(|e| named(addr, e))?;
    Ok(claim)
}

/// `bind()` (a socket on `addr`) under a claim ([`claim`]): `addr` is claimed first, or, for
/// port 0, the address the socket got. Returns the socket, its address and the claim.
///
/// # Errors
/// As [`claim`], and `bind`'s.
pub fn claimed(
    addr: SocketAddr,
    bind: impl FnOnce() -> io::Result<OwnedFd>,
) -> io::Result<(OwnedFd, SocketAddr, Claim)> {
    let before = (addr.port() != 0).then(|| claim(addr)).transpose()?;
    let sock = bind()?;
    let bound = local_addr(&sock)?;
    let claim = match before {
        Some(c) => c,
        None => Claim::port_of(bound)?,
    };
    Ok((sock, bound, claim))
}

impl Claim {
    /// The first step of [`claim`] alone: for an address this process listens on already (a
    /// port the kernel chose, where the probe would find this process's own listener).
    ///
    /// # Errors
    /// `AddrInUse` when another hintq server holds `addr`.
    pub fn port_of(addr: SocketAddr) -> io::Result<Claim> {
        let name = UnixAddr::from_abstract_name(format!("hintq-listen {addr}"))?;
        match UnixListener::bind_addr(&name) {
            Ok(l) => Ok(Claim { _name: l }),
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => Err(io::Error::new(
                e.kind(),
                format!("{addr}: Address already in use (by another hintq server)"),
            )),
            Err(e) => Err(named(addr, e)),
        }
    }
}

/// `e` with the address it concerns first: `127.0.0.1:8080: Address already in use (os error 98)`.
fn named(addr: SocketAddr, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{addr}: {e}"))
}

/// A non-blocking, close-on-exec TCP listener on `addr` (IPv4 or IPv6), with
/// `SO_REUSEADDR`, and `SO_REUSEPORT` when `reuseport` (one per shard, same port). It does
/// not [`claim`] the address: the runtime's `start` does.
///
/// # Errors
/// `socket`, `setsockopt`, `bind` or `listen` (those of `bind` and `listen` naming `addr`).
pub fn listen(addr: SocketAddr, reuseport: bool) -> io::Result<OwnedFd> {
    let sock = tcp_socket(addr)?;
    let fd = sock.as_raw_fd();
    setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1 as libc::c_int)?;
    if reuseport {
        setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1 as libc::c_int)?;
    }
    bind(fd, addr).map_err(|e| named(addr, e))?;
    // SAFETY: plain syscall on a live socket.
    cvt(unsafe { libc::listen(fd, 4096) }).map_err(|e| named(addr, e))?;
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
