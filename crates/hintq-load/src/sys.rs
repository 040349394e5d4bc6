//! The system calls of the load generator, each `unsafe` in one place with its reason.
//! EINTR is retried here and nowhere else.

use std::io;
use std::mem;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;

/// `IP_LOCAL_PORT_RANGE` (Linux 6.3+; not yet in every libc release).
const IP_LOCAL_PORT_RANGE: libc::c_int = 51;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_size(r: libc::ssize_t) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid (AF_UNSPEC) value.
    let mut ss: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            let sin = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above.
            let sin6 = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: T) -> io::Result<()> {
    // SAFETY: `value` lives for the call and its size is passed with it.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &value as *const T as *const libc::c_void,
            mem::size_of::<T>() as u32,
        )
    })
    .map(drop)
}

/// The outcome of starting a non-blocking connect.
pub enum Connect {
    /// Connected at once (possible on loopback).
    Done,
    /// `EINPROGRESS`: wait for writability, then read `SO_ERROR` ([`take_error`]).
    InProgress,
}

/// Opens a non-blocking TCP socket to `to`, optionally from `from` (bound with
/// `IP_BIND_ADDRESS_NO_PORT`, so the port is chosen at connect time per 4-tuple and every
/// source address gets the whole ephemeral range), and starts connecting. Returns the
/// descriptor even when the connect fails later; on an immediate failure it is closed.
///
/// # Errors
/// `socket`, `bind` or `connect` failures with their errno (`EADDRNOTAVAIL` when the
/// ephemeral ports of this source/destination pair are used up).
pub fn connect(
    to: SocketAddr,
    from: Option<IpAddr>,
    ports: Option<(u16, u16)>,
) -> io::Result<(RawFd, Connect)> {
    let family = if to.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain socket(2); the result is checked.
    let fd = cvt(unsafe {
        libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
    })?;
    match start_connect(fd, to, from, ports) {
        Ok(c) => Ok((fd, c)),
        Err(e) => {
            close(fd);
            Err(e)
        }
    }
}

fn start_connect(
    fd: RawFd,
    to: SocketAddr,
    from: Option<IpAddr>,
    ports: Option<(u16, u16)>,
) -> io::Result<Connect> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1 as libc::c_int)?;
    if let Some((lo, hi)) = ports {
        let level = if to.is_ipv4() { libc::IPPROTO_IP } else { libc::IPPROTO_IPV6 };
        setsockopt(fd, level, IP_LOCAL_PORT_RANGE, u32::from(lo) | (u32::from(hi) << 16))?;
    }
    if let Some(ip) = from {
        setsockopt(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1 as libc::c_int)?;
        let (ss, len) = sockaddr(SocketAddr::new(ip, 0));
        // SAFETY: `ss` holds a valid sockaddr of `len` bytes.
        cvt(unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) })?;
    }
    let (ss, len) = sockaddr(to);
    // SAFETY: as above. A retried connect after EINTR reports EALREADY/EISCONN, handled below.
    match cvt(unsafe { libc::connect(fd, &ss as *const _ as *const libc::sockaddr, len) }) {
        Ok(_) => Ok(Connect::Done),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINPROGRESS | libc::EINTR | libc::EALREADY)) => {
            Ok(Connect::InProgress)
        }
        Err(e) => Err(e),
    }
}

/// The pending error of a socket (`SO_ERROR`), which also tells whether a non-blocking
/// connect succeeded: `Ok(())` when it did.
///
/// # Errors
/// The connect's failure (`ECONNREFUSED`, `ETIMEDOUT`, ...).
pub fn take_error(fd: RawFd) -> io::Result<()> {
    let mut err: libc::c_int = 0;
    let mut len = mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `err` and `len` are valid for writes of the sizes given.
    cvt(unsafe {
        libc::getsockopt(fd, libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut _ as *mut _, &mut len)
    })?;
    match err {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// `read(2)`, retried on EINTR.
///
/// # Errors
/// As `read(2)`; `WouldBlock` when nothing is there.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its length.
    retry(|| cvt_size(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }))
}

/// `send(2)` with `MSG_NOSIGNAL` (a reset peer gives `EPIPE`, not SIGPIPE), retried on EINTR.
///
/// # Errors
/// As `send(2)`.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of its length.
    retry(|| cvt_size(unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) }))
}

/// Closes a descriptor that no queue watches (one that failed before registration).
pub fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and gives it up here.
    unsafe { libc::close(fd) };
}

/// `RLIMIT_NOFILE` as (soft, hard).
pub fn nofile() -> (u64, u64) {
    // SAFETY: `rl` is valid for writes.
    let mut rl: libc::rlimit = unsafe { mem::zeroed() };
    // SAFETY: as above; RLIMIT_NOFILE always exists.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    (rl.rlim_cur, rl.rlim_max)
}

/// Sets the soft `RLIMIT_NOFILE`.
///
/// # Errors
/// `setrlimit(2)`'s (`EINVAL` above the hard limit).
pub fn set_nofile_soft(soft: u64) -> io::Result<()> {
    let (_, hard) = nofile();
    let rl = libc::rlimit { rlim_cur: soft, rlim_max: hard };
    // SAFETY: `rl` is a valid rlimit.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) }).map(drop)
}

/// CPU time used, user and system, in seconds: this process (all threads) and its reaped
/// children.
pub fn cpu_seconds() -> (f64, f64) {
    let get = |who| {
        // SAFETY: `ru` is valid for writes; `who` is RUSAGE_SELF or RUSAGE_CHILDREN.
        let mut ru: libc::rusage = unsafe { mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::getrusage(who, &mut ru) };
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        (secs(ru.ru_utime), secs(ru.ru_stime))
    };
    let (su, ss) = get(libc::RUSAGE_SELF);
    let (cu, cs) = get(libc::RUSAGE_CHILDREN);
    (su + cu, ss + cs)
}

/// The system's ephemeral port range (`net.ipv4.ip_local_port_range`), inclusive.
pub fn local_port_range() -> (u16, u16) {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|x| x.parse::<u16>());
            Some((it.next()?.ok()?, it.next()?.ok()?))
        })
        .unwrap_or((32768, 60999))
}
