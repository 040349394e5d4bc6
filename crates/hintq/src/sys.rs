//! The raw system calls, in one place. Every `unsafe` block of the crate outside the
//! io_uring ring handling lives here with its `SAFETY:` line. `EINTR` is *not* retried here:
//! the one place that retries it is the wait loop of [`crate::Queue::get_next_event`], which
//! also recomputes the remaining timeout.

use crate::event::state_from_epoll;
use crate::State;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

pub(crate) use hintq_sys::{cvt, epoll_wait, eventfd, poll};

/// A timeout in milliseconds for `epoll_wait`/`poll`: `None` blocks, and a partial
/// millisecond is rounded *up* so that a wait never returns before its deadline.
#[inline]
pub(crate) fn timeout_ms(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(d) if d.is_zero() => 0,
        // Rounded up, in 64-bit arithmetic: whole seconds are whole milliseconds (a 128-bit
        // division of `as_nanos` ran on every wait, a zero timeout included).
        Some(d) => {
            let ms = d
                .as_secs()
                .saturating_mul(1000)
                .saturating_add(u64::from(d.subsec_nanos().div_ceil(1_000_000)));
            ms.min(libc::c_int::MAX as u64) as libc::c_int
        }
    }
}

/// Maps `poll(2)` revents to a [`State`]: the poll bits are epoll's (`POLLIN` is `EPOLLIN`
/// and so on, see [`state_from_epoll`]), and `POLLNVAL` (0x20), which epoll does not have,
/// moves down one place to `ERR`.
#[inline]
pub(crate) fn state_from_poll(revents: libc::c_short) -> State {
    const _: () = assert!(
        libc::POLLIN as i32 == libc::EPOLLIN
            && libc::POLLPRI as i32 == libc::EPOLLPRI
            && libc::POLLOUT as i32 == libc::EPOLLOUT
            && libc::POLLERR as i32 == libc::EPOLLERR
            && libc::POLLHUP as i32 == libc::EPOLLHUP
            && libc::POLLRDHUP as i32 == libc::EPOLLRDHUP
            && libc::POLLNVAL == 0x20
    );
    let e = u32::from(revents as u16);
    state_from_epoll(e) | State::from_bits_retain((e & 0x20) >> 1)
}

/// Maps an interest to the `poll(2)` events to ask for. `POLLRDHUP` (the peer's half-close)
/// only with `READ`: it stays set, so a writer asking for it would be woken on every wait of
/// a level-triggered backend while it waits for buffer space. A full hang-up (`POLLHUP`) and
/// errors are reported whatever the interest.
pub(crate) fn poll_events(interest: crate::Interest) -> libc::c_short {
    let mut e = 0;
    if interest.contains(crate::Interest::READ) {
        e |= libc::POLLIN | libc::POLLRDHUP;
    }
    if interest.contains(crate::Interest::WRITE) {
        e |= libc::POLLOUT;
    }
    if interest.contains(crate::Interest::EXCEPT) {
        e |= libc::POLLPRI;
    }
    e
}

/// How many entries a table indexed by descriptor number reserves when it is first used:
/// the soft `RLIMIT_NOFILE` (no descriptor of the process can be higher), at most 2^20.
/// A reservation is address space, resident only where written, and saves the copies (and
/// the old arrays left in the allocator) of growing by doubling.
pub(crate) fn fd_table_reserve() -> usize {
    const MAX: u64 = 1 << 20;
    hintq_sys::nofile().map_or(1024, |(soft, _)| soft.min(MAX) as usize)
}

/// The current readiness of one descriptor, asked with a zero-timeout `poll(2)`.
/// A descriptor that is not open gives `EBADF`.
pub(crate) fn current_state(fd: RawFd) -> io::Result<State> {
    let mut p = [libc::pollfd {
        fd,
        events: libc::POLLIN | libc::POLLOUT | libc::POLLPRI | libc::POLLRDHUP,
        revents: 0,
    }];
    loop {
        match poll(&mut p, 0) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    if p[0].revents & libc::POLLNVAL != 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    Ok(state_from_poll(p[0].revents))
}

/// Adds one to an eventfd counter (wakes its watchers). `EAGAIN` (counter saturated)
/// means a wake-up is already pending, which is all a waker wants.
pub(crate) fn eventfd_signal(fd: &OwnedFd) -> io::Result<()> {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64.
    let r = unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::WouldBlock {
            return Err(e);
        }
    }
    Ok(())
}

/// Resets an eventfd counter to zero; true if it was signalled.
pub(crate) fn eventfd_drain(fd: RawFd) -> bool {
    let mut v: u64 = 0;
    // SAFETY: reads 8 bytes into a live u64.
    unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) == 8 }
}

/// A close-on-exec epoll instance.
pub(crate) use hintq_sys::epoll_create;

/// `epoll_ctl(2)`; `events` and `data` are ignored for `EPOLL_CTL_DEL`.
#[inline]
pub(crate) fn epoll_ctl(epfd: RawFd, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: `ev` is a live epoll_event; the kernel only reads it.
    cvt(unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) }).map(drop)
}

/// Maps an interest to epoll event bits (without trigger flags); `EPOLLRDHUP` only with
/// `READ`, as in [`poll_events`]. By masks, without a test per bit: `READ` (0x1) is
/// `EPOLLIN | EPOLLRDHUP`, `WRITE` (0x2) moves up one place to `EPOLLOUT`, `EXCEPT` (0x4) down
/// one to `EPOLLPRI`.
#[inline]
pub(crate) fn epoll_events(interest: crate::Interest) -> u32 {
    let i = interest.bits();
    ((i & 0x1) * (libc::EPOLLIN | libc::EPOLLRDHUP) as u32) | ((i & 0x2) << 1) | ((i & 0x4) >> 1)
}

/// A word of a descriptor set as the kernel reads it (`__kernel_fd_set`'s `unsigned long`):
/// descriptor `fd` is bit `fd % FD_BITS` of word `fd / FD_BITS`.
pub(crate) type FdWord = libc::c_ulong;
/// Descriptors per [`FdWord`].
pub(crate) const FD_BITS: usize = FdWord::BITS as usize;

/// `select(2)` over three descriptor sets of any size, by the raw `pselect6` system call
/// (with no signal mask: the same call as `select`, and present on every Linux
/// architecture). glibc's `fd_set` is a fixed 1024 bits, but the kernel reads `nfds` bits
/// from each pointer, so sets sized at run time watch any descriptor the process may open.
/// Returns the number of ready bits; the sets are overwritten with the result.
///
/// # Errors
/// `EINTR`; `EBADF` if a set holds a descriptor that is not open; `EINVAL` (`nfds` above
/// `INT_MAX`); `ENOMEM` (the kernel's copies of the sets).
///
/// # Panics
/// If a set is shorter than `nfds` bits.
pub(crate) fn select(nfds: usize, sets: [&mut [FdWord]; 3], timeout: Option<Duration>) -> io::Result<usize> {
    let words = nfds.div_ceil(FD_BITS);
    assert!(sets.iter().all(|s| s.len() >= words), "a descriptor set shorter than nfds");
    let nfds = libc::c_int::try_from(nfds).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts.as_mut().map_or(std::ptr::null_mut(), |t| t as *mut libc::timespec);
    let [r, w, e] = sets;
    // SAFETY: each set is an exclusively borrowed buffer of at least `nfds` bits (asserted
    // above), which is all the kernel reads and writes; `tsp` is null or points at a live
    // timespec; a null sixth argument means no signal mask.
    let n = unsafe {
        libc::syscall(
            libc::SYS_pselect6,
            nfds,
            r.as_mut_ptr(),
            w.as_mut_ptr(),
            e.as_mut_ptr(),
            tsp,
            std::ptr::null::<libc::c_void>(),
        )
    };
    cvt(n).map(|n| n as usize)
}

/// Sends `signo` to thread `tid` of this process.
pub(crate) fn tgkill(tid: libc::pid_t, signo: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, signo) };
    cvt(r as libc::c_int).map(drop)
}

// ----- POSIX real-time signal plumbing for the rtsig backend -----
// asm-generic/fcntl.h; the libc crate lacks these for glibc targets.
const F_SETSIG: libc::c_int = 10;
const F_SETOWN_EX: libc::c_int = 15;
const F_OWNER_TID: libc::c_int = 0;

#[repr(C)]
struct FOwnerEx {
    kind: libc::c_int,
    pid: libc::pid_t,
}

/// The fields of a `SIGPOLL`-style siginfo: which descriptor, which poll band.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SigInfo {
    pub signo: libc::c_int,
    pub code: libc::c_int,
    pub fd: RawFd,
    pub band: libc::c_long,
}

/// The kernel's siginfo layout for `SIGPOLL` on LP64 targets: three ints, then the union
/// (8-byte aligned) whose `_sigpoll` arm is `{ long si_band; int si_fd; }`.
#[cfg(target_pointer_width = "64")]
#[repr(C)]
struct RawSigPoll {
    signo: libc::c_int,
    errno: libc::c_int,
    code: libc::c_int,
    band: libc::c_long,
    fd: libc::c_int,
}

/// The calling thread's kernel thread id.
pub(crate) use hintq_sys::gettid;

/// A signal set holding `signos`.
pub(crate) fn sigset(signos: &[libc::c_int]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the zeroed set; sigaddset only sets bits in it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signos {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks `set` in the calling thread.
pub(crate) fn block_signals(set: &libc::sigset_t) -> io::Result<()> {
    // SAFETY: `set` is a valid initialised sigset.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// `sigtimedwait(2)`: `Ok(None)` when the timeout passed (`EAGAIN`); `EINTR` is returned.
pub(crate) fn sigtimedwait(set: &libc::sigset_t, timeout: Option<Duration>) -> io::Result<Option<SigInfo>> {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: siginfo_t is plain data; zeroed is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` and `info` are live; `tsp` is null or points at a live timespec.
    let r = unsafe { libc::sigtimedwait(set, &mut info, tsp) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.raw_os_error() == Some(libc::EAGAIN) { Ok(None) } else { Err(e) };
    }
    const _: () = assert!(std::mem::size_of::<RawSigPoll>() <= std::mem::size_of::<libc::siginfo_t>());
    // SAFETY: RawSigPoll is a prefix of the kernel's siginfo layout on this target and fits in it.
    let raw = unsafe { &*(&info as *const libc::siginfo_t).cast::<RawSigPoll>() };
    Ok(Some(SigInfo { signo: raw.signo, code: raw.code, fd: raw.fd, band: raw.band }))
}

/// A non-blocking `signalfd(2)` for `set`, which becomes readable while a signal of the set is
/// pending for the thread that polls it. The signals stay blocked; it is only slept on.
pub(crate) fn signalfd(set: &libc::sigset_t) -> io::Result<OwnedFd> {
    // SAFETY: `set` is a valid initialised sigset; -1 asks for a new descriptor.
    let fd = cvt(unsafe { libc::signalfd(-1, set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
    // SAFETY: a descriptor just created, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Directs `fd`'s I/O signals to `signo` on thread `tid` (`F_SETSIG`, `F_SETOWN_EX`).
pub(crate) fn set_signal_owner(fd: RawFd, signo: libc::c_int, tid: libc::pid_t) -> io::Result<()> {
    // SAFETY: fcntl with integer arguments.
    cvt(unsafe { libc::fcntl(fd, F_SETSIG, signo) })?;
    let owner = FOwnerEx { kind: F_OWNER_TID, pid: tid };
    // SAFETY: `owner` is a live f_owner_ex the kernel only reads.
    cvt(unsafe { libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) }).map(drop)
}

/// True if `fd`'s file raises `signo` at thread `tid`: the registration that set it up is
/// still the one behind this number (it was not closed and the number reused by another).
pub(crate) fn signals_to(fd: RawFd, signo: libc::c_int, tid: libc::pid_t) -> io::Result<bool> {
    const F_GETSIG: libc::c_int = 11;
    const F_GETOWN_EX: libc::c_int = 16;
    // SAFETY: fcntl with integer arguments.
    let sig = cvt(unsafe { libc::fcntl(fd, F_GETSIG) })?;
    let mut owner = FOwnerEx { kind: -1, pid: 0 };
    // SAFETY: `owner` is a live f_owner_ex the kernel writes.
    cvt(unsafe { libc::fcntl(fd, F_GETOWN_EX, &mut owner as *mut FOwnerEx) })?;
    Ok(sig == signo && owner.kind == F_OWNER_TID && owner.pid == tid)
}

/// Turns signal-driven I/O (`O_ASYNC`) on or off for `fd`; on also sets `O_NONBLOCK`.
pub(crate) fn set_async(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: fcntl with integer arguments.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    let want = if on { flags | libc::O_ASYNC | libc::O_NONBLOCK } else { flags & !libc::O_ASYNC };
    if want != flags {
        // SAFETY: fcntl with integer arguments.
        cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, want) })?;
    }
    Ok(())
}

/// What to install as a signal's disposition.
pub(crate) enum Disposition {
    /// Discards pending instances of the signal, in every thread (POSIX).
    Ignore,
    /// A handler that does nothing: a stray delivery to a thread that does not block the
    /// signal must not terminate the process, as the default action would.
    Noop,
}

extern "C" fn noop_handler(_: libc::c_int) {}

/// The current handler of `signo` is the default or hintq's own no-op one.
pub(crate) fn signal_is_free(signo: libc::c_int) -> io::Result<bool> {
    // SAFETY: a sigaction is plain data, for which all zeroes is valid.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: sigaction with a null new action only reads the current one into `old`.
    cvt(unsafe { libc::sigaction(signo, std::ptr::null(), &mut old) })?;
    Ok(old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == noop_handler as *const () as usize)
}

/// Installs a disposition for `signo`.
pub(crate) fn set_disposition(signo: libc::c_int, d: Disposition) -> io::Result<()> {
    // SAFETY: a zeroed sigaction with an empty mask and a valid handler value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = match d {
        Disposition::Ignore => libc::SIG_IGN,
        Disposition::Noop => noop_handler as *const () as usize,
    };
    // SAFETY: `sa` is a valid sigaction.
    cvt(unsafe { libc::sigaction(signo, &sa, std::ptr::null_mut()) }).map(drop)
}

#[cfg(test)]
mod tests {
    /// `state_from_poll` agrees with a test per bit for every combination of the bits it
    /// reads.
    #[test]
    fn poll_bits_become_the_same_state_as_a_test_per_bit() {
        let bits = [
            libc::POLLIN,
            libc::POLLPRI,
            libc::POLLOUT,
            libc::POLLERR,
            libc::POLLHUP,
            libc::POLLNVAL,
            libc::POLLRDHUP,
        ];
        for combo in 0u32..128 {
            let mut e: libc::c_short = 0;
            let mut want = State::empty();
            for (k, &b) in bits.iter().enumerate() {
                if combo & (1 << k) != 0 {
                    e |= b;
                    want |= match b {
                        libc::POLLIN => State::READ,
                        libc::POLLOUT => State::WRITE,
                        libc::POLLPRI => State::EXCEPT,
                        libc::POLLERR | libc::POLLNVAL => State::ERR,
                        _ => State::HUP,
                    };
                }
            }
            assert_eq!(state_from_poll(e), want, "revents {e:#x}");
        }
    }

    /// The masks of `epoll_events` agree with a test per bit for every interest.
    #[test]
    fn interests_become_the_same_epoll_bits_as_a_test_per_bit() {
        use crate::Interest;
        for bits in 0..8u32 {
            let i = Interest::from_bits_truncate(bits);
            let mut want = 0;
            if i.contains(Interest::READ) {
                want |= (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
            }
            if i.contains(Interest::WRITE) {
                want |= libc::EPOLLOUT as u32;
            }
            if i.contains(Interest::EXCEPT) {
                want |= libc::EPOLLPRI as u32;
            }
            assert_eq!(epoll_events(i), want, "{i:?}");
            assert_eq!(epoll_events(i | Interest::RECEIVE), want, "{i:?} with RECEIVE");
        }
    }

    /// The shifts of `state_from_epoll` agree with a test per bit for every combination of
    /// the bits it reads (and the input-only bits around them change nothing).
    #[test]
    fn epoll_bits_become_the_same_state_as_a_test_per_bit() {
        let bits =
            [libc::EPOLLIN, libc::EPOLLPRI, libc::EPOLLOUT, libc::EPOLLERR, libc::EPOLLHUP, libc::EPOLLRDHUP];
        for combo in 0u32..64 {
            let mut e = 0u32;
            let mut want = State::empty();
            for (k, &b) in bits.iter().enumerate() {
                if combo & (1 << k) != 0 {
                    e |= b as u32;
                    want |= match b {
                        libc::EPOLLIN => State::READ,
                        libc::EPOLLOUT => State::WRITE,
                        libc::EPOLLPRI => State::EXCEPT,
                        libc::EPOLLERR => State::ERR,
                        _ => State::HUP,
                    };
                }
            }
            assert_eq!(state_from_epoll(e), want, "events {e:#x}");
            let noise = (libc::EPOLLRDNORM | libc::EPOLLWRNORM | libc::EPOLLET | libc::EPOLLONESHOT) as u32;
            assert_eq!(state_from_epoll(e | noise), want, "events {e:#x} with input-only bits");
        }
    }

    use super::*;

    /// The milliseconds a wait is given: rounded up (a wait never ends before its timeout),
    /// clamped to what `epoll_wait` and `poll` take, as the exact 128-bit arithmetic gives.
    #[test]
    fn timeouts_round_up_to_milliseconds_and_clamp() {
        let exact =
            |d: Duration| d.as_nanos().div_ceil(1_000_000).min(libc::c_int::MAX as u128) as libc::c_int;
        let ms = Duration::from_millis;
        let cases = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(999_999),
            ms(1),
            ms(1) + Duration::from_nanos(1),
            Duration::from_secs(1) + Duration::from_nanos(1),
            Duration::from_millis(1500),
            ms(libc::c_int::MAX as u64),
            ms(libc::c_int::MAX as u64) + Duration::from_nanos(1),
            Duration::from_secs(u64::MAX / 1000 + 1),
            Duration::MAX,
        ];
        for d in cases {
            assert_eq!(timeout_ms(Some(d)), exact(d), "{d:?}");
        }
        assert_eq!(timeout_ms(Some(Duration::from_nanos(1))), 1);
        assert_eq!(timeout_ms(None), -1);
    }
}
