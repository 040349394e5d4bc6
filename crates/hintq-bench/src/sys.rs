//! The raw system calls the benchmarks need, in one place, each `unsafe` with its `SAFETY:`
//! line: descriptors to make readable, the raw epoll loop the backends are compared with;
//! core pinning and the descriptor limit come from the shared helpers of `hintq-sys`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use hintq_sys::cvt;
/// A connected, non-blocking `AF_UNIX` stream pair: `(watched, peer)`. The benchmark writes
/// on `peer` and watches and reads `watched`.
pub use hintq_sys::socketpair;
/// The CPUs this thread may run on; pinning the calling thread; the descriptor limit.
pub use hintq_sys::{affinity, pin, raise_nofile};

/// A non-blocking eventfd that is never written: an idle descriptor costing one fd.
pub use hintq_sys::eventfd;

/// Writes one byte; the benchmark's write side never fills the socket buffer.
pub fn write1(fd: RawFd) -> io::Result<()> {
    // SAFETY: writes one byte from a live static.
    let n = unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) };
    if n == 1 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Reads up to 16 bytes and discards them; `EAGAIN` (a spurious event) is not an error.
pub fn drain(fd: RawFd) {
    let mut buf = [0u8; 16];
    // SAFETY: reads at most 16 bytes into a live local buffer.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
}

/// A raw epoll instance, driven directly against libc: the floor the backends are held to.
pub struct RawEpoll {
    epfd: OwnedFd,
    buf: Vec<libc::epoll_event>,
}

/// What the raw loop asks for: what the `epoll` backend asks for on `Interest::READ`.
const RAW_EVENTS: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;

impl RawEpoll {
    /// An epoll instance returning at most `max` events per wait.
    pub fn new(max: usize) -> io::Result<RawEpoll> {
        // SAFETY: plain syscall.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `fd` was just created and is owned by nobody else.
        let epfd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(RawEpoll { epfd, buf: vec![libc::epoll_event { events: 0, u64: 0 }; max.max(1)] })
    }

    /// `EPOLL_CTL_ADD` of `fd` for reading, level-triggered, with `fd` as data.
    #[inline]
    pub fn add(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: RAW_EVENTS, u64: fd as u64 };
        // SAFETY: `ev` is a live epoll_event the kernel only reads.
        cvt(unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) }).map(drop)
    }

    /// `EPOLL_CTL_DEL` of `fd`.
    #[inline]
    pub fn del(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `add`; the kernel ignores `ev` for a delete.
        cvt(unsafe { libc::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) }).map(drop)
    }

    /// One blocking `epoll_wait`; returns the descriptors it reported.
    #[inline]
    pub fn wait(&mut self) -> io::Result<impl Iterator<Item = RawFd> + '_> {
        let max = self.buf.len() as libc::c_int;
        // SAFETY: the kernel writes at most `max` entries into the exclusively borrowed buffer.
        let n = cvt(unsafe { libc::epoll_wait(self.epfd.as_raw_fd(), self.buf.as_mut_ptr(), max, -1) })?;
        Ok(self.buf[..n as usize].iter().map(|ev| ev.u64 as RawFd))
    }
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    // SAFETY: an all-zero utsname is valid; the kernel fills it with NUL-terminated strings.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is live and exclusively borrowed.
    if unsafe { libc::uname(&mut u) } != 0 {
        return "unknown".into();
    }
    let bytes: Vec<u8> = u.release.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`), in ns: unlike wall time, it
/// does not grow while another process holds the CPU.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the kernel fills the live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Involuntary context switches of this thread so far: times it was preempted.
pub fn preemptions() -> u64 {
    // SAFETY: an all-zero rusage is valid; the kernel fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is live and exclusively borrowed.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nivcsw as u64
}

/// `getppid(2)` by number, bypassing any libc caching: the null system call.
pub fn null_syscall() {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getppid) };
}

/// One `poll(2)` over `fds` with `timeout_ms` (0: a pure scan); returns how many were ready.
pub use hintq_sys::poll;

/// This process's `RLIMIT_SIGPENDING`: `(soft, hard)`.
pub fn sigpending_limit() -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: the kernel fills the live rlimit.
    cvt(unsafe { libc::getrlimit(libc::RLIMIT_SIGPENDING, &mut lim) })?;
    Ok((lim.rlim_cur, lim.rlim_max))
}

/// Sets the soft `RLIMIT_SIGPENDING` of this process (the hard limit is kept, so it can be
/// raised again). Real-time signals beyond it are not queued; an `F_SETSIG` descriptor then
/// raises plain `SIGIO` instead: the overflow the rtsig backend recovers from.
pub fn set_sigpending(soft: u64) -> io::Result<()> {
    let (_, hard) = sigpending_limit()?;
    let lim = libc::rlimit { rlim_cur: soft.min(hard), rlim_max: hard };
    // SAFETY: the kernel only reads the live rlimit.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_SIGPENDING, &lim) }).map(drop)
}
