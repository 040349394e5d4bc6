//! The system-call helpers the hintq crates share, so that none keeps its own copy (mio's
//! single `syscall!` macro is the model). Each `unsafe` block is here with its `SAFETY:` line.
//!
//! One error convention: a call that fails is an [`io::Error`] carrying its errno
//! ([`cvt`]); nothing here turns a failure into a default value, the caller decides.
//! `EINTR` is retried only where a function says so, or by the caller with [`retry`], since
//! a caller that waits with a deadline must recompute its timeout first.

mod bufring;
pub use bufring::{buf_more, BufRing};

use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// A system call's return type whose `-1` (any negative value) means "failed, see errno".
pub trait Ret: Copy {
    /// Whether the value reports a failure.
    fn failed(self) -> bool;
}

macro_rules! ret {
    ($($t:ty),*) => {$(
        impl Ret for $t {
            fn failed(self) -> bool {
                self < 0
            }
        }
    )*};
}
ret!(i32, i64, isize);

/// Turns a `-1`-and-errno return into an `io::Error` (read right after the call, before
/// anything else can change errno).
///
/// # Errors
/// `io::Error::last_os_error()` when `r` is negative.
pub fn cvt<T: Ret>(r: T) -> io::Result<T> {
    if r.failed() {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Runs `f` again while it fails with `EINTR`.
///
/// # Errors
/// `f`'s first error that is not `EINTR`.
pub fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// A descriptor the kernel just returned.
///
/// # Safety
/// `fd` is open and owned by nobody else.
unsafe fn owned(fd: RawFd) -> OwnedFd {
    // SAFETY: per this function's contract.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// `addr` as the kernel takes it: a `sockaddr_storage` holding a `sockaddr_in` or
/// `sockaddr_in6`, and its length.
pub fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid (AF_UNSPEC) value.
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
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_scope_id = a.scope_id();
            mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// The address a `sockaddr_storage` filled by the kernel holds; `None` for a family other
/// than IPv4 and IPv6.
pub fn socket_addr(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(sin.sin_port))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::from((ip, u16::from_be(sin6.sin6_port))))
        }
        _ => None,
    }
}

/// A non-blocking, close-on-exec TCP socket of `addr`'s family.
///
/// # Errors
/// `socket(2)`'s (`EMFILE`, ...).
pub fn tcp_socket(addr: SocketAddr) -> io::Result<OwnedFd> {
    let family = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall; the result is checked.
    let fd = cvt(unsafe {
        libc::socket(family, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0)
    })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { owned(fd) })
}

/// `bind(2)` of `fd` to `addr`.
///
/// # Errors
/// `bind(2)`'s (`EADDRINUSE`, `EADDRNOTAVAIL`, ...).
pub fn bind(fd: RawFd, addr: SocketAddr) -> io::Result<()> {
    let (ss, len) = sockaddr(addr);
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    cvt(unsafe { libc::bind(fd, (&ss as *const libc::sockaddr_storage).cast(), len) }).map(drop)
}

/// `connect(2)` of `fd` to `addr`, once (a non-blocking socket gives `EINPROGRESS`).
///
/// # Errors
/// `connect(2)`'s.
pub fn connect(fd: RawFd, addr: SocketAddr) -> io::Result<()> {
    let (ss, len) = sockaddr(addr);
    // SAFETY: `ss` holds a sockaddr of `len` bytes.
    cvt(unsafe { libc::connect(fd, (&ss as *const libc::sockaddr_storage).cast(), len) }).map(drop)
}

/// Starts a non-blocking connect of `fd` to `addr`: `Ok(true)` when it completed at once
/// (possible on loopback), `Ok(false)` when it goes on in the background: wait for
/// writability, then read the outcome with [`take_error`]. A connect interrupted by a signal
/// goes on in the background too, so `EINTR` means the same as `EINPROGRESS`, and so does
/// `EALREADY` (what a retry of the interrupted call reports).
///
/// # Errors
/// `connect(2)`'s other failures (`ECONNREFUSED`, `EADDRNOTAVAIL`, ...).
pub fn start_connect(fd: RawFd, addr: SocketAddr) -> io::Result<bool> {
    match connect(fd, addr) {
        Ok(()) => Ok(true),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINPROGRESS | libc::EINTR | libc::EALREADY)) => {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// A new non-blocking TCP socket with `TCP_NODELAY`, connecting to `to` ([`start_connect`]):
/// the socket, and whether it is connected already. On an error the socket is closed.
///
/// # Errors
/// `socket(2)`'s, `setsockopt(2)`'s, [`start_connect`]'s.
pub fn tcp_connect(to: SocketAddr) -> io::Result<(OwnedFd, bool)> {
    let sock = tcp_socket(to)?;
    set_nodelay(sock.as_raw_fd())?;
    let done = start_connect(sock.as_raw_fd(), to)?;
    Ok((sock, done))
}

/// Sets a socket option of plain-data type `T`.
///
/// # Errors
/// `setsockopt(2)`'s.
pub fn setsockopt<T: Copy>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: T) -> io::Result<()> {
    let len = mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` lives for the call and its size is passed with it.
    cvt(unsafe { libc::setsockopt(fd, level, name, (&value as *const T).cast(), len) }).map(drop)
}

/// `TCP_NODELAY` on.
///
/// # Errors
/// As [`setsockopt`].
pub fn set_nodelay(fd: RawFd) -> io::Result<()> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1 as libc::c_int)
}

/// The pending error of a socket (`SO_ERROR`), which also tells whether a non-blocking
/// connect succeeded: `Ok(())` when it did.
///
/// # Errors
/// The connect's failure (`ECONNREFUSED`, `ETIMEDOUT`, ...), or `getsockopt(2)`'s.
pub fn take_error(fd: RawFd) -> io::Result<()> {
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

/// The peer of a connected socket.
///
/// # Errors
/// `getpeername(2)`'s (`ENOTCONN`, ...); `EAFNOSUPPORT` for a peer that is not IPv4 or IPv6.
pub fn peer_addr(fd: RawFd) -> io::Result<SocketAddr> {
    // SAFETY: sockaddr_storage is plain data; all-zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { mem::zeroed() };
    let mut len = mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `ss` has room for `len` bytes.
    cvt(unsafe { libc::getpeername(fd, (&mut ss as *mut libc::sockaddr_storage).cast(), &mut len) })?;
    socket_addr(&ss).ok_or_else(|| io::Error::from_raw_os_error(libc::EAFNOSUPPORT))
}

/// A non-blocking, close-on-exec `eventfd` with the counter at zero.
///
/// # Errors
/// `eventfd(2)`'s (`EMFILE`, ...).
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the result is checked.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { owned(fd) })
}

/// A close-on-exec epoll instance (`epoll_create1(EPOLL_CLOEXEC)`): the one the core's epoll
/// backend and groups, and the benchmarks' raw loops, all create.
///
/// # Errors
/// `epoll_create1(2)`'s (`EMFILE`, `ENOMEM`, ...).
pub fn epoll_create() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the result is checked.
    let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { owned(fd) })
}

/// One `poll(2)` over `fds` with `timeout_ms` (-1 blocks, 0 is a pure scan), once (`EINTR`
/// is the caller's); returns how many entries have `revents` set.
///
/// # Errors
/// `poll(2)`'s (`EINTR`, `ENOMEM`, ...).
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: libc::c_int) -> io::Result<usize> {
    // SAFETY: the kernel reads and writes `fds.len()` live, exclusively borrowed entries.
    cvt(unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }).map(|n| n as usize)
}

/// `epoll_wait(2)` into `buf`, `timeout_ms` as the kernel takes it (-1: no limit); returns the
/// number of entries filled. `EINTR` is returned, not retried (wrap in [`retry`] to retry).
///
/// # Errors
/// `epoll_wait(2)`'s (`EINTR`, `EBADF`, ...).
#[inline]
pub fn epoll_wait(epfd: RawFd, buf: &mut [libc::epoll_event], timeout_ms: libc::c_int) -> io::Result<usize> {
    let max = buf.len().min(libc::c_int::MAX as usize) as libc::c_int;
    // SAFETY: the kernel writes at most `max` entries into the exclusively borrowed buffer.
    cvt(unsafe { libc::epoll_wait(epfd, buf.as_mut_ptr(), max, timeout_ms) }).map(|n| n as usize)
}

/// `io_uring_enter(2)` without a signal mask or an extended argument: submits `to_submit`
/// queued entries and, with `IORING_ENTER_GETEVENTS` in `flags`, runs the ring's pending
/// work and waits for `min_complete` completions (0: not at all). The plain form of the call,
/// for the waits that need no timeout; timed waits go through the `io-uring` crate's
/// `submit_with_args`. Returns the entries submitted.
///
/// # Errors
/// The call's errno: `EINTR`, `ETIME`, `EBUSY`, `EBADR` (see the io_uring backend).
#[inline]
pub fn io_uring_enter(fd: RawFd, to_submit: u32, min_complete: u32, flags: u32) -> io::Result<u32> {
    // On x86-64 the `syscall` instruction itself: libc's variadic `syscall()` costs some 36
    // instructions a call in the hottest path of the io_uring backend (issue 27).
    #[cfg(target_arch = "x86_64")]
    {
        let r: isize;
        // SAFETY: no memory of ours is passed (a null signal mask of size 0); the kernel may
        // write the rings' shared memory, so the asm is not `nomem`; rcx and r11 are the
        // instruction's clobbers, and the kernel restores the flags from r11.
        unsafe {
            std::arch::asm!("syscall",
                inlateout("rax") libc::SYS_io_uring_enter as isize => r,
                in("rdi") fd as isize, in("rsi") to_submit as usize, in("rdx") min_complete as usize,
                in("r10") flags as usize, in("r8") 0usize, in("r9") 0usize,
                lateout("rcx") _, lateout("r11") _, options(nostack, preserves_flags));
        }
        if r < 0 {
            Err(io::Error::from_raw_os_error(-r as i32))
        } else {
            Ok(r as u32)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: no memory is passed: a null signal mask of size 0.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                fd,
                to_submit,
                min_complete,
                flags,
                std::ptr::null::<u8>(),
                0usize,
            )
        };
        cvt(r).map(|n| n as u32)
    }
}

/// A connected, non-blocking, close-on-exec `AF_UNIX` stream pair.
///
/// # Errors
/// `socketpair(2)`'s (`EMFILE`, ...).
pub fn socketpair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    let ty = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: `fds` is a live array of two ints for the kernel to fill.
    cvt(unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, fds.as_mut_ptr()) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (owned(fds[0]), owned(fds[1])) })
}

/// A non-blocking, close-on-exec pipe, `(read end, write end)` (`pipe2(2)`): the kernel-side
/// buffer a [`splice`] moves bytes through.
///
/// # Errors
/// `pipe2(2)`'s (`EMFILE`, `ENFILE`).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a live array of two ints for the kernel to fill.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (owned(fds[0]), owned(fds[1])) })
}

/// Asks for a pipe's capacity to be `bytes` (`F_SETPIPE_SZ`, rounded up by the kernel to a
/// power of two pages); returns the capacity it has now.
///
/// # Errors
/// `fcntl(2)`'s: `EPERM` above `/proc/sys/fs/pipe-max-size` or the user's pipe pages,
/// `EBUSY` below what the pipe holds.
pub fn set_pipe_size(fd: RawFd, bytes: usize) -> io::Result<usize> {
    let want = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: plain syscall on a descriptor the caller owns; the result is checked.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, want) }).map(|n| n as usize)
}

/// A pipe's capacity in bytes (`F_GETPIPE_SZ`).
///
/// # Errors
/// `fcntl(2)`'s (`EBADF`, and `EINVAL` for what is not a pipe).
pub fn pipe_size(fd: RawFd) -> io::Result<usize> {
    // SAFETY: plain syscall on a descriptor the caller owns; the result is checked.
    cvt(unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) }).map(|n| n as usize)
}

/// One non-blocking `splice(2)` of at most `len` bytes from `from` to `to` (one of them a
/// pipe), `SPLICE_F_MOVE | SPLICE_F_NONBLOCK`, `EINTR` retried; returns the bytes moved, 0
/// at the end of `from`'s stream (a socket's peer shut down its sending side).
///
/// The bytes stay in the kernel: from a TCP socket into a pipe the socket buffer's pages are
/// referenced, not copied, and from a pipe into a socket they are sent as they are.
///
/// # Errors
/// `WouldBlock` when `from` has nothing (or `to` no room) now; `splice(2)`'s others
/// (`EPIPE`, `ECONNRESET` from a socket, `EINVAL` when neither is a pipe).
pub fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    let flags = libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK;
    retry(|| {
        // SAFETY: plain syscall on descriptors the caller owns; no offsets (null), no memory.
        cvt(unsafe { libc::splice(from, std::ptr::null_mut(), to, std::ptr::null_mut(), len, flags) })
            .map(|n| n as usize)
    })
}

/// `RLIMIT_NOFILE` as `(soft, hard)`.
///
/// # Errors
/// `getrlimit(2)`'s.
pub fn nofile() -> io::Result<(u64, u64)> {
    let mut rl = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: the kernel fills the live rlimit.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) })?;
    Ok((rl.rlim_cur, rl.rlim_max))
}

/// Sets the soft `RLIMIT_NOFILE`, keeping the hard one.
///
/// # Errors
/// `setrlimit(2)`'s (`EINVAL` above the hard limit).
pub fn set_nofile_soft(soft: u64) -> io::Result<()> {
    let (_, hard) = nofile()?;
    let rl = libc::rlimit { rlim_cur: soft, rlim_max: hard };
    // SAFETY: the kernel only reads the live rlimit.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) }).map(drop)
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns `(soft, hard)` afterwards.
///
/// # Errors
/// `getrlimit(2)`'s or `setrlimit(2)`'s.
pub fn raise_nofile() -> io::Result<(u64, u64)> {
    let (soft, hard) = nofile()?;
    if soft < hard {
        set_nofile_soft(hard)?;
    }
    Ok((hard.max(soft), hard))
}

/// The CPUs the calling thread may run on.
///
/// # Errors
/// `sched_getaffinity(2)`'s.
pub fn affinity() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: the kernel fills the live set of the size given.
    cvt(unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    // SAFETY: CPU_ISSET reads the set in bounds (`i` below CPU_SETSIZE).
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&i| unsafe { libc::CPU_ISSET(i, &set) }).collect())
}

/// Pins the calling thread (and the threads and processes it starts later) to `cpu`.
/// Allocates nothing and makes one system call, so a child may call it between `fork` and
/// `exec` (`Command::pre_exec`).
///
/// # Errors
/// `EINVAL` for a CPU number beyond `CPU_SETSIZE`, else `sched_setaffinity(2)`'s.
pub fn pin(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (checked above); the kernel only reads the set.
    cvt(unsafe {
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set)
    })
    .map(drop)
}

/// Whose CPU time [`cpu_time`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    /// This process, all its threads.
    Process,
    /// This process and its children that have been waited for.
    ProcessAndChildren,
    /// The calling thread.
    Thread,
}

/// CPU time used, `(user, system)`, by `who` (`getrusage(2)`, which fails only for an
/// unknown `who` or a bad pointer: neither can happen here).
pub fn cpu_time(who: Usage) -> (Duration, Duration) {
    let get = |w| {
        // SAFETY: an all-zero rusage is valid; the kernel fills it.
        let mut ru: libc::rusage = unsafe { mem::zeroed() };
        // SAFETY: `ru` is live and exclusively borrowed; `w` is a valid RUSAGE_* value.
        let r = unsafe { libc::getrusage(w, &mut ru) };
        debug_assert_eq!(r, 0, "getrusage({w}): {}", io::Error::last_os_error());
        let d = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        (d(ru.ru_utime), d(ru.ru_stime))
    };
    match who {
        Usage::Process => get(libc::RUSAGE_SELF),
        Usage::Thread => get(libc::RUSAGE_THREAD),
        Usage::ProcessAndChildren => {
            let ((su, ss), (cu, cs)) = (get(libc::RUSAGE_SELF), get(libc::RUSAGE_CHILDREN));
            (su + cu, ss + cs)
        }
    }
}

/// Reads `fd` until it would block, hits end of file or fails; returns the bytes read and
/// discarded (0: nothing was there). For tests and benchmarks that only consume readiness.
pub fn drain(fd: RawFd) -> usize {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        // SAFETY: reads into a live local buffer of its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return total;
        }
        total += n as usize;
    }
}

/// Context switches of the calling thread so far, `(voluntary, involuntary)`
/// (`getrusage(RUSAGE_THREAD)`): a voluntary one is a sleep, so their growth over a run
/// counts the thread's wake-ups; an involuntary one is a preemption.
pub fn thread_switches() -> (u64, u64) {
    // SAFETY: an all-zero rusage is valid; the kernel fills it.
    let mut ru: libc::rusage = unsafe { mem::zeroed() };
    // SAFETY: `ru` is live and exclusively borrowed; RUSAGE_THREAD is valid on Linux.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

/// Voluntary context switches of thread `tid` of this process so far (`voluntary_ctxt_switches`
/// of `/proc/self/task/<tid>/status`): each is a sleep that began.
///
/// # Errors
/// The thread is gone, or the line is missing.
pub fn switches_of(tid: libc::pid_t) -> io::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:")?.trim().parse().ok())
        .ok_or_else(|| io::Error::other(format!("no voluntary_ctxt_switches for thread {tid}")))
}

/// The calling thread's id (`gettid(2)`).
pub fn gettid() -> libc::pid_t {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

/// True if thread `tid` of this process is asleep (state `S` in `/proc/self/task/<tid>/stat`).
pub fn is_sleeping(tid: libc::pid_t) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    // The state follows the command name, which is in parentheses and may hold spaces.
    stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('S'))
}

/// Gives the whole pages of `v`'s spare capacity (past its length) back to the kernel
/// (`madvise(MADV_DONTNEED)`), keeping the capacity: for tables reserved up to the descriptor
/// limit, which keep every page their highest numbers touched once those numbers are gone.
/// The spare capacity holds no values, so the zeroed pages that replace them on the next
/// touch change nothing. Returns the bytes given back.
pub fn release_spare<T>(v: &mut Vec<T>) -> usize {
    let page = page_size();
    let start = v.as_ptr() as usize + v.len() * std::mem::size_of::<T>();
    let end = v.as_ptr() as usize + v.capacity() * std::mem::size_of::<T>();
    let (first, last) = (start.next_multiple_of(page), end / page * page);
    if last <= first {
        return 0;
    }
    // SAFETY: [first, last) lies inside the spare capacity of `v`'s allocation, which the
    // `&mut` borrow makes ours alone and which holds no values; the kernel zero-fills the
    // pages if they are touched again.
    let r = unsafe { libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_DONTNEED) };
    if r == 0 {
        last - first
    } else {
        0
    }
}

/// Gives back to the kernel the whole pages of `v` that hold only zeros
/// (`madvise(MADV_DONTNEED)`, one call per run of such pages): they read as zeros again,
/// from a shared zero page until written. For tables of links or deadlines indexed by
/// descriptor number, whose entries go back to 0 when their number is done with. One pass
/// over `v`; returns the bytes given back.
///
/// # Safety
/// `v` lies in private anonymous memory (as the global allocator's blocks on Linux do): a
/// private file mapping's page would read back as the file's contents, not zeros.
pub unsafe fn release_zero_pages(v: &mut [u32]) -> usize {
    let page = page_size();
    let start = v.as_ptr() as usize;
    let end = start + std::mem::size_of_val(v);
    let mut given = 0;
    let mut run: Option<usize> = None;
    let mut at = start.next_multiple_of(page);
    let mut flush = |from: usize, to: usize| {
        // SAFETY: [from, to) is whole pages inside `v`, borrowed mutably, holding only zeros,
        // which is what the kernel's fresh anonymous pages hold (the caller's promise): no
        // value changes.
        if unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED) } == 0 {
            given += to - from;
        }
    };
    while at + page <= end {
        let (i, n) = ((at - start) / 4, page / 4);
        let zero = v[i..i + n].iter().all(|&x| x == 0);
        match (zero, run) {
            (true, None) => run = Some(at),
            (false, Some(from)) => {
                flush(from, at);
                run = None;
            }
            _ => {}
        }
        at += page;
    }
    if let Some(from) = run {
        flush(from, at);
    }
    given
}

/// Truncates `v` to `len` and gives back the pages that held the dropped values
/// ([`release_dropped`]).
pub fn truncate_release<T>(v: &mut Vec<T>, len: usize) {
    let old = v.len();
    if len < old {
        v.truncate(len);
        release_dropped(v, old);
    }
}

/// Gives back the whole pages of `v`'s spare capacity up to where a length of `old` ended
/// (`madvise(MADV_DONTNEED)`), from the page after `v`'s last value: the pages of values
/// dropped since `v` was `old` long. No system call when no page was freed; over successive
/// calls every page past the last value is given back once. The capacity stays.
pub fn release_dropped<T>(v: &mut Vec<T>, old: usize) {
    let page = page_size();
    let size = std::mem::size_of::<T>();
    let base = v.as_ptr() as usize;
    let cap_end = base + v.capacity() * size;
    let first = (base + v.len() * size).next_multiple_of(page);
    let last = (base + old.min(v.capacity()) * size).next_multiple_of(page).min(cap_end / page * page);
    if last > first {
        // SAFETY: [first, last) lies in `v`'s spare capacity (past its length, within its
        // capacity), which the `&mut` borrow makes ours alone and which holds no values.
        unsafe { libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_DONTNEED) };
    }
}

/// The size of a memory page.
pub fn page_size() -> usize {
    // SAFETY: no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1)
}

/// How many of the pages of `[ptr, ptr + len)` are resident (`mincore`), for tests and
/// measurements of [`release_spare`]; `None` if the kernel refused.
pub fn resident_pages(ptr: *const u8, len: usize) -> Option<usize> {
    let page = page_size();
    let first = ptr as usize / page * page;
    let end = (ptr as usize + len).next_multiple_of(page);
    let mut vec = vec![0u8; (end - first) / page];
    // SAFETY: `vec` has one byte per page of the range; mincore only reads the page tables.
    let r = unsafe { libc::mincore(first as *mut libc::c_void, end - first, vec.as_mut_ptr()) };
    (r == 0).then(|| vec.iter().filter(|&&b| b & 1 != 0).count())
}

/// Parses a command-line duration: `250us`, `500ms`, `10s`, `2m`, `1h`, or a bare number of
/// seconds (`1.5`); surrounding blanks are ignored. The one parser of `hintq load`, `serve` and
/// `proxy` flags.
///
/// # Errors
/// Anything else, with a message naming the accepted forms.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("bad duration {s:?}: expected e.g. 500ms, 10s, 2m"))?;
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("bad duration unit in {s:?}: use us, ms, s, m or h")),
    };
    Duration::try_from_secs_f64(n * scale).map_err(|e| format!("bad duration {s:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("50us"), Ok(Duration::from_micros(50)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration(" 10s "), Ok(Duration::from_secs(10)));
        for bad in ["10 s", "x", "", "5 parsecs", "-1s", "1e999"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn io_uring_enter_reports_the_errno() {
        // Not a descriptor, and a descriptor that is not a ring: the kernel's errors, as
        // errno values (the x86-64 form reads them from the negative return itself).
        assert_eq!(io_uring_enter(-1, 0, 0, 1).unwrap_err().raw_os_error(), Some(libc::EBADF));
        let (a, _b) = socketpair().unwrap();
        let e = io_uring_enter(a.as_raw_fd(), 0, 0, 1).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP));
    }

    #[test]
    fn cvt_keeps_errno() {
        // SAFETY: (test) closing a number that is not open fails with EBADF.
        let e = cvt(unsafe { libc::close(-1) }).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        assert_eq!(cvt(5isize).unwrap(), 5);
    }

    #[test]
    fn socket_addresses_survive_the_round_trip() {
        for a in ["127.0.0.1:8080", "[::1]:443", "0.0.0.0:0"] {
            let a: SocketAddr = a.parse().unwrap();
            assert_eq!(socket_addr(&sockaddr(a).0), Some(a));
        }
    }

    #[test]
    fn a_connected_peer_and_a_refused_connect_are_reported() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, from) = l.accept().unwrap();
        use std::os::fd::AsRawFd;
        assert_eq!(peer_addr(s.as_raw_fd()).unwrap(), from);
        assert_eq!(peer_addr(c.as_raw_fd()).unwrap(), l.local_addr().unwrap());
        let port = l.local_addr().unwrap().port();
        drop((l, s));
        let to = SocketAddr::from(([127, 0, 0, 1], port));
        let fd = tcp_socket(to).unwrap();
        match connect(fd.as_raw_fd(), to) {
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {
                let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                // SAFETY: (test) one live pollfd.
                assert_eq!(unsafe { libc::poll(&mut p, 1, 5000) }, 1);
                assert_eq!(take_error(fd.as_raw_fd()).unwrap_err().raw_os_error(), Some(libc::ECONNREFUSED));
            }
            r => assert_eq!(r.unwrap_err().raw_os_error(), Some(libc::ECONNREFUSED)),
        }
    }

    /// Bytes spliced from a socket into a pipe and from the pipe into another socket arrive
    /// as sent; an empty source is `WouldBlock`, a closed one 0; the pipe's size is set.
    #[test]
    fn bytes_splice_through_a_pipe() {
        use std::io::{Read, Write};
        use std::os::fd::AsRawFd;
        let (a, b) = socketpair().unwrap();
        let (c, d) = socketpair().unwrap();
        let (r, w) = pipe().unwrap();
        assert!(set_pipe_size(w.as_raw_fd(), 256 * 1024).unwrap() >= 256 * 1024);
        assert_eq!(pipe_size(r.as_raw_fd()).unwrap(), set_pipe_size(w.as_raw_fd(), 256 * 1024).unwrap());
        let e = splice(b.as_raw_fd(), w.as_raw_fd(), 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        let mut a = std::fs::File::from(a);
        a.write_all(b"0123456789abcdef").unwrap();
        assert_eq!(splice(b.as_raw_fd(), w.as_raw_fd(), 10).unwrap(), 10);
        assert_eq!(splice(r.as_raw_fd(), c.as_raw_fd(), 64).unwrap(), 10);
        let mut got = [0u8; 10];
        std::fs::File::from(d).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"0123456789");
        drop(a);
        assert_eq!(splice(b.as_raw_fd(), w.as_raw_fd(), 64).unwrap(), 6);
        assert_eq!(splice(b.as_raw_fd(), w.as_raw_fd(), 64).unwrap(), 0, "end of stream");
    }

    #[test]
    fn the_descriptor_limit_is_raised_to_the_hard_one() {
        let (soft, hard) = raise_nofile().unwrap();
        assert_eq!(soft, hard);
        assert_eq!(nofile().unwrap(), (hard, hard));
    }

    #[test]
    fn pages_of_zeros_are_given_back_and_the_rest_kept() {
        let page = super::page_size();
        let mut v = vec![1u32; 32 * page / 4];
        let bytes = v.len() * 4;
        for x in &mut v[page / 4..] {
            *x = 0;
        }
        let last = v.len() - 1;
        v[last] = 5;
        assert!(super::resident_pages(v.as_ptr().cast(), bytes).unwrap() >= 31);
        // SAFETY: (test) a Vec's block, from the global allocator: anonymous memory.
        let given = unsafe { super::release_zero_pages(&mut v) };
        assert!(given >= 28 * page, "{given} bytes given back");
        assert!(super::resident_pages(v.as_ptr().cast(), bytes).unwrap() <= 4);
        assert!(v[..page / 4].iter().all(|&x| x == 1) && v[last] == 5);
        assert!(v[page / 4..last].iter().all(|&x| x == 0));
    }

    #[test]
    fn spare_pages_are_given_back_and_the_values_kept() {
        let page = super::page_size();
        let mut v: Vec<u64> = Vec::with_capacity(64 * page / 8);
        v.resize(64 * page / 8, 7);
        let bytes = v.capacity() * 8;
        let all = super::resident_pages(v.as_ptr().cast(), bytes).unwrap();
        assert!(all >= 63, "{all} of 64 pages resident after writing them");
        v.truncate(page / 8 * 3 + 5);
        let given = super::release_spare(&mut v);
        assert!(given >= 60 * page, "{given} bytes given back");
        let left = super::resident_pages(v.as_ptr().cast(), bytes).unwrap();
        assert!(left <= 5, "{left} pages still resident");
        assert!(v.iter().all(|&x| x == 7), "the values kept their contents");
        v.resize(64 * page / 8, 9);
        assert!(v[page / 8 * 3 + 5..].iter().all(|&x| x == 9));
    }
}
