//! The raw system calls the benchmarks need, in one place, each `unsafe` with its `SAFETY:`
//! line: descriptors to make readable, the raw epoll loop the backends are compared with.
//! What `hintq-sys` already has (socket pairs, eventfds, pinning, the descriptor limit, poll,
//! epoll_create, drain) is called there, not wrapped here.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use hintq_sys::cvt;

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
        let epfd = hintq_sys::epoll_create()?;
        Ok(RawEpoll { epfd, buf: vec![libc::epoll_event { events: 0, u64: 0 }; max.max(1)] })
    }

    /// `EPOLL_CTL_ADD` of `fd` for reading, level-triggered, with `fd` as data.
    #[inline]
    pub fn add(&self, fd: RawFd) -> io::Result<()> {
        epoll_add(self.epfd.as_raw_fd(), fd, RAW_EVENTS, fd as u64)
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
        let n = hintq_sys::epoll_wait(self.epfd.as_raw_fd(), &mut self.buf, -1)?;
        Ok(self.buf[..n].iter().map(|ev| ev.u64 as RawFd))
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
    hintq_sys::thread_switches().1
}

/// `getppid(2)` by number, bypassing any libc caching: the null system call.
pub fn null_syscall() {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getppid) };
}

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

/// `EPOLL_CTL_ADD` of `fd` to `epfd` with `events` and `data`.
#[inline]
pub fn epoll_add(epfd: RawFd, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: the kernel only reads the live event.
    cvt(unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, &mut ev) }).map(drop)
}

/// One blocking `epoll_wait` on `epfd` (no timeout); returns the reports' data. `EINTR` is an
/// empty return.
pub fn epoll_wait_data(epfd: RawFd, buf: &mut [libc::epoll_event]) -> io::Result<Vec<u64>> {
    match hintq_sys::epoll_wait(epfd, buf, -1) {
        Ok(n) => Ok(buf[..n].iter().map(|e| e.u64).collect()),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Adds 1 to an eventfd's counter, making it readable.
pub fn write_eventfd(fd: RawFd) -> io::Result<()> {
    let one = 1u64;
    // SAFETY: writes 8 bytes from a live u64.
    let n = unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
    if n == 8 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A raw io_uring multishot-poll loop, driven directly through the `io-uring` crate: the
/// floor the `uring` backend is held to. Its ring is set up as the backend's is (completion
/// ring of 4096; `SINGLE_ISSUER`, `DEFER_TASKRUN` and `TASKRUN_FLAG` where the kernel takes
/// them and `defer` asks for it, else `COOP_TASKRUN` and `TASKRUN_FLAG`), so a ratio
/// between the two is the backend's own work. `user_data` is the descriptor. Used on the
/// thread that made it (a `DEFER_TASKRUN` ring admits no other).
pub struct RawUring {
    ring: io_uring::IoUring,
}

impl RawUring {
    /// A ring like the `uring` backend's; `defer`: as [`hintq::Builder::uring_defer`].
    pub fn new(defer: bool) -> io::Result<RawUring> {
        // 2: deferred, 1: cooperative, 0: neither.
        let build = |run: u8| {
            let mut b = io_uring::IoUring::builder();
            b.setup_cqsize(4096).setup_clamp();
            match run {
                2 => drop(b.setup_single_issuer().setup_defer_taskrun().setup_taskrun_flag()),
                1 => drop(b.setup_coop_taskrun().setup_taskrun_flag()),
                _ => {}
            }
            b.build(256)
        };
        let mut last = io::Error::from_raw_os_error(libc::EINVAL);
        for run in [2, 1, 0].into_iter().filter(|&r| defer || r < 2) {
            match build(run) {
                Ok(ring) => return Ok(RawUring { ring }),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Arms a multishot `POLL_ADD` on `fd` for reading (what the `uring` backend asks for on
    /// `Interest::READ`) and submits it.
    pub fn add(&mut self, fd: RawFd) -> io::Result<()> {
        self.arm(fd)?;
        self.ring.submit().map(drop)
    }

    fn arm(&mut self, fd: RawFd) -> io::Result<()> {
        let events = RAW_EVENTS & 0xffff;
        let sqe = io_uring::opcode::PollAdd::new(io_uring::types::Fd(fd), events)
            .multi(true)
            .build()
            .user_data(fd as u64);
        // SAFETY: a POLL_ADD entry points at no memory of ours.
        while unsafe { self.ring.submission().push(&sqe) }.is_err() {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// Reaps the completions in the ring without a system call, entering the kernel (and
    /// blocking) only when there are none or the kernel flags work for us; re-arms a poll
    /// that ended. Returns how many readiness completions it took.
    pub fn wait(&mut self) -> io::Result<usize> {
        loop {
            let mut ended = Vec::new();
            let mut n = 0;
            for cqe in self.ring.completion() {
                if !io_uring::cqueue::more(cqe.flags()) {
                    ended.push(cqe.user_data() as RawFd);
                }
                n += usize::from(cqe.result() > 0);
            }
            for fd in ended {
                self.arm(fd)?;
            }
            let flagged = {
                let sq = self.ring.submission();
                !sq.is_empty() || sq.cq_overflow() || sq.taskrun()
            };
            if n > 0 && !flagged {
                return Ok(n);
            }
            match self.ring.submit_and_wait(usize::from(n == 0)) {
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                r => drop(r?),
            }
            if n > 0 {
                return Ok(n);
            }
        }
    }
}
