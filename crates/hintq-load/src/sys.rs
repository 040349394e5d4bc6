//! The system calls of the load generator, each `unsafe` in one place with its reason, over
//! the shared helpers of `hintq-sys`. EINTR is retried here and nowhere else.

use hintq_sys::{bind, cvt, retry, setsockopt, Usage};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{IntoRawFd, RawFd};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use hintq_sys::take_error;

/// `IP_LOCAL_PORT_RANGE` (Linux 6.3+; not yet in every libc release).
const IP_LOCAL_PORT_RANGE: libc::c_int = 51;

/// `SO_TIMESTAMPNS` (= `SCM_TIMESTAMPNS`) where `time_t` is 64 bits: every Linux target this
/// runs on (libc does not yet export it for all of them).
const SO_TIMESTAMPNS: libc::c_int = 35;

/// `read`/`send`'s byte count, or the error.
fn len(r: libc::ssize_t) -> io::Result<usize> {
    cvt(r).map(|n| n as usize)
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
    let fd = hintq_sys::tcp_socket(to)?.into_raw_fd();
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
    hintq_sys::set_nodelay(fd)?;
    if let Some((lo, hi)) = ports {
        let level = if to.is_ipv4() { libc::IPPROTO_IP } else { libc::IPPROTO_IPV6 };
        setsockopt(fd, level, IP_LOCAL_PORT_RANGE, u32::from(lo) | (u32::from(hi) << 16))?;
    }
    if let Some(ip) = from {
        setsockopt(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1 as libc::c_int)?;
        bind(fd, SocketAddr::new(ip, 0))?;
    }
    Ok(if hintq_sys::start_connect(fd, to)? { Connect::Done } else { Connect::InProgress })
}

/// `read(2)`, retried on EINTR.
///
/// # Errors
/// As `read(2)`; `WouldBlock` when nothing is there.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of its length.
    retry(|| len(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }))
}

/// Asks the kernel to stamp each segment `fd` receives with its arrival time
/// (`SO_TIMESTAMPNS`), handed back by [`read_stamped`].
///
/// # Errors
/// As `setsockopt(2)`.
pub fn stamp_arrivals(fd: RawFd) -> io::Result<()> {
    setsockopt(fd, libc::SOL_SOCKET, SO_TIMESTAMPNS, 1 as libc::c_int)
}

/// `recvmsg(2)` into `buf`, retried on EINTR: the bytes read and, on a socket with
/// [`stamp_arrivals`], when the last segment among them arrived (`CLOCK_REALTIME`, since the
/// epoch; compare with [`realtime`]).
///
/// # Errors
/// As `recvmsg(2)`; `WouldBlock` when nothing is there.
pub fn read_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<Duration>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // Room for one SCM_TIMESTAMPNS message (a header and a timespec), 8-byte aligned.
    let mut control = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid (no name, no buffers); the fields are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` points at `iov` (valid for `buf.len()` bytes of writes) and at `control`,
    // all live across the call.
    let n = retry(|| len(unsafe { libc::recvmsg(fd, &mut msg, 0) }))?;
    let mut stamp = None;
    // SAFETY: the kernel filled `msg_controllen` bytes of `control`; the CMSG macros walk
    // them without leaving that range, and the timespec is read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == SO_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                stamp = Some(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n, stamp))
}

/// `CLOCK_REALTIME` since the epoch: the clock of [`read_stamped`]'s arrival times.
pub fn realtime() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// `send(2)` with `MSG_NOSIGNAL` (a reset peer gives `EPIPE`, not SIGPIPE), retried on EINTR.
///
/// # Errors
/// As `send(2)`.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of its length.
    retry(|| len(unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) }))
}

/// Closes a descriptor that no queue watches (one that failed before registration).
pub fn close(fd: RawFd) {
    // SAFETY: the caller owns `fd` and gives it up here.
    unsafe { libc::close(fd) };
}

/// CPU time used, user and system, in seconds: this process (all threads) and its reaped
/// children.
pub fn cpu_seconds() -> (f64, f64) {
    let (user, system) = hintq_sys::cpu_time(Usage::ProcessAndChildren);
    (user.as_secs_f64(), system.as_secs_f64())
}

/// The most sockets the kernel keeps in TIME_WAIT (`net.ipv4.tcp_max_tw_buckets`); beyond it a
/// closing socket skips TIME_WAIT. Unreadable: no bound.
pub fn max_time_wait() -> u64 {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_max_tw_buckets")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(u64::MAX)
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
