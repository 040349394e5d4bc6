//! The raw system calls, in one place. Every `unsafe` block of the crate outside the
//! io_uring ring handling lives here with its `SAFETY:` line. `EINTR` is *not* retried here:
//! the one place that retries it is the wait loop of [`crate::Queue::get_next_event`], which
//! also recomputes the remaining timeout.

use crate::State;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Turns a `-1`-and-errno return into an `io::Error`.
pub(crate) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A timeout in milliseconds for `epoll_wait`/`poll`: `None` blocks, and a partial
/// millisecond is rounded *up* so that a wait never returns before its deadline.
pub(crate) fn timeout_ms(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(d) => {
            let ms = d.as_nanos().div_ceil(1_000_000);
            ms.min(libc::c_int::MAX as u128) as libc::c_int
        }
    }
}

/// Maps `poll(2)` revents to a [`State`].
pub(crate) fn state_from_poll(revents: libc::c_short) -> State {
    let mut s = State::empty();
    if revents & libc::POLLIN != 0 {
        s |= State::READ;
    }
    if revents & libc::POLLOUT != 0 {
        s |= State::WRITE;
    }
    if revents & libc::POLLPRI != 0 {
        s |= State::EXCEPT;
    }
    if revents & (libc::POLLHUP | libc::POLLRDHUP) != 0 {
        s |= State::HUP;
    }
    if revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
        s |= State::ERR;
    }
    s
}

/// Maps an interest to the `poll(2)` events to ask for.
pub(crate) fn poll_events(interest: crate::Interest) -> libc::c_short {
    let mut e = libc::POLLRDHUP;
    if interest.contains(crate::Interest::READ) {
        e |= libc::POLLIN;
    }
    if interest.contains(crate::Interest::WRITE) {
        e |= libc::POLLOUT;
    }
    if interest.contains(crate::Interest::EXCEPT) {
        e |= libc::POLLPRI;
    }
    e
}

/// `poll(2)` over a slice, returning the count of entries with revents set.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: libc::c_int) -> io::Result<usize> {
    // SAFETY: the pointer and length describe a live, exclusively borrowed slice.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
    cvt(n).map(|n| n as usize)
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

/// A non-blocking, close-on-exec `eventfd`.
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the returned descriptor is owned by nobody else.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: `fd` was just created and is open.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
pub(crate) fn epoll_create() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall.
    let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: `fd` was just created and is open.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `epoll_ctl(2)`; `events` and `data` are ignored for `EPOLL_CTL_DEL`.
pub(crate) fn epoll_ctl(epfd: RawFd, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: `ev` is a live epoll_event; the kernel only reads it.
    cvt(unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) }).map(drop)
}

/// `epoll_wait(2)` into a buffer; returns the number of entries filled.
pub(crate) fn epoll_wait(
    epfd: RawFd,
    buf: &mut [libc::epoll_event],
    timeout: libc::c_int,
) -> io::Result<usize> {
    let max = buf.len().min(libc::c_int::MAX as usize) as libc::c_int;
    // SAFETY: the kernel writes at most `max` entries into the exclusively borrowed buffer.
    let n = unsafe { libc::epoll_wait(epfd, buf.as_mut_ptr(), max, timeout) };
    cvt(n).map(|n| n as usize)
}

/// Maps epoll event bits to a [`State`].
pub(crate) fn state_from_epoll(events: u32) -> State {
    let mut s = State::empty();
    let has = |bit: libc::c_int| events & bit as u32 != 0;
    if has(libc::EPOLLIN) {
        s |= State::READ;
    }
    if has(libc::EPOLLOUT) {
        s |= State::WRITE;
    }
    if has(libc::EPOLLPRI) {
        s |= State::EXCEPT;
    }
    if has(libc::EPOLLHUP) || has(libc::EPOLLRDHUP) {
        s |= State::HUP;
    }
    if has(libc::EPOLLERR) {
        s |= State::ERR;
    }
    s
}

/// Maps an interest to epoll event bits (without trigger flags).
pub(crate) fn epoll_events(interest: crate::Interest) -> u32 {
    let mut e = libc::EPOLLRDHUP as u32;
    if interest.contains(crate::Interest::READ) {
        e |= libc::EPOLLIN as u32;
    }
    if interest.contains(crate::Interest::WRITE) {
        e |= libc::EPOLLOUT as u32;
    }
    if interest.contains(crate::Interest::EXCEPT) {
        e |= libc::EPOLLPRI as u32;
    }
    e
}

/// `FD_SETSIZE`: `select(2)` cannot watch a descriptor at or above it.
pub(crate) const FD_SETSIZE: usize = libc::FD_SETSIZE;

/// An `fd_set` as 64-bit words, so results can be scanned a word at a time.
pub(crate) type FdSet = [u64; FD_SETSIZE / 64];

const _: () = assert!(std::mem::size_of::<FdSet>() == std::mem::size_of::<libc::fd_set>());
const _: () = assert!(std::mem::align_of::<FdSet>() >= std::mem::align_of::<libc::fd_set>());

/// `select(2)` over three word-array sets; returns the number of ready bits.
pub(crate) fn select(
    nfds: usize,
    r: &mut FdSet,
    w: &mut FdSet,
    e: &mut FdSet,
    timeout: Option<Duration>,
) -> io::Result<usize> {
    let mut tv = timeout.map(|d| libc::timeval {
        tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    });
    let tvp = tv.as_mut().map_or(std::ptr::null_mut(), |t| t as *mut libc::timeval);
    let cast = |s: &mut FdSet| (s as *mut FdSet).cast::<libc::fd_set>();
    // SAFETY: FdSet has the size and alignment of fd_set (asserted above) and each set is
    // exclusively borrowed; `nfds` <= FD_SETSIZE is checked by the caller; `tvp` is null or
    // points at a live timeval.
    let n = unsafe { libc::select(nfds as libc::c_int, cast(r), cast(w), cast(e), tvp) };
    cvt(n).map(|n| n as usize)
}
