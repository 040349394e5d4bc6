//! # The C ABI of hintq
//!
//! `libhintq.so` / `libhintq.a` for C programs: the paper's `declare_interest` and
//! `get_next_event` on a per-thread default queue, the explicit-queue `hq_` calls, and the
//! rest of the library (process-wide interest, wakers, bounded queues, statistics, timers).
//! The contract is written once, in `include/hintq.h`; these files only translate it to the
//! core crate:
//!
//! * every exported body runs inside [`ffi`], which turns an `io::Error` into `-1`/`NULL`
//!   plus errno and a panic into `EIO`, so that no unwind crosses into C;
//! * raw pointers from C become references or slices in the exported functions, at the one
//!   place where the header's contract makes them valid; everything below works on those;
//! * [`revoke`] gives `close(2)` the paper's meaning: closing a declared descriptor revokes
//!   interest in it on every queue and group of the process.
//!
//! Modules: [`queue`] (queues, the default queue, wakers, statistics), [`group`]
//! (process-wide interest), [`timers`], [`revoke`] (the `close` the library provides).
//!
//! The tests in `tests/` compile the C programs in `tests/c/` against the header, run them
//! (under valgrind where available) and check that the header and the exported symbols agree.

#![deny(unsafe_op_in_unsafe_fn)]
#![allow(non_camel_case_types)]

pub mod group;
pub mod queue;
pub mod revoke;
pub mod timers;

pub use group::hq_group;
pub use queue::{event_descr_t, hq_queue, hq_stats, hq_waker};
pub use timers::hq_timers;

use hintq::{Backend, Interest};
use libc::{c_char, c_int, timeval};
use std::ffi::CStr;
use std::io;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

/// Timeouts with more seconds than this (about 136 years) mean "no limit".
const FOREVER_SECS: libc::time_t = u32::MAX as libc::time_t;

/// A negative descriptor is `EBADF`, as for `close(2)`: refused here, before [`borrowed`]
/// (the core takes a `BorrowedFd`, which is never negative).
fn valid_fd(fd: c_int) -> io::Result<c_int> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    Ok(fd)
}

/// A C caller's descriptor number (not negative: [`valid_fd`]) as the `BorrowedFd` the core
/// takes. C has no borrow to give: its contract is the paper's, the caller keeps `fd` open
/// for the call (or revokes a number it closed behind the queue's back, [`revoke`]).
fn borrowed(fd: c_int) -> std::os::fd::BorrowedFd<'static> {
    debug_assert!(fd >= 0, "valid_fd first");
    // SAFETY: `fd` is not -1 (valid_fd refused negatives, and the revokes pass numbers that
    // were declared). The core never closes it and only hands the number to the kernel,
    // which answers `EBADF` for one that is not open; the borrow ends with the call.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

/// C's `interestmask`: `EVENT_READ|EVENT_WRITE|EVENT_EXCEPT` bits only (`Interest::RECEIVE`
/// is not offered to C: the header has no call to take what the ring received).
fn interest(mask: c_int) -> io::Result<Interest> {
    u32::try_from(mask)
        .ok()
        .and_then(Interest::from_bits)
        .filter(|i| !i.contains(Interest::RECEIVE))
        .ok_or_else(einval)
}

/// A `struct timeval` as a core timeout: NULL blocks, negative fields are `EINVAL`.
fn duration(tv: Option<&timeval>) -> io::Result<Option<Duration>> {
    let Some(tv) = tv else { return Ok(None) };
    if tv.tv_sec < 0 || tv.tv_usec < 0 {
        return Err(einval());
    }
    if tv.tv_sec > FOREVER_SECS {
        return Ok(None);
    }
    Ok(Some(Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64)))
}

/// A duration as a `struct timeval`, rounded up to the microsecond so that a wait on it
/// never ends before the duration did.
fn timeval_of(d: Duration) -> timeval {
    let micros = d.as_nanos().div_ceil(1000);
    let secs = (micros / 1_000_000).min(FOREVER_SECS as u128);
    timeval { tv_sec: secs as libc::time_t, tv_usec: (micros % 1_000_000) as libc::suseconds_t }
}

/// A backend name from C: NULL means `HINTQ_BACKEND` (or the recommended backend).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn backend_named(name: *const c_char) -> io::Result<Backend> {
    if name.is_null() {
        return Backend::from_env();
    }
    // SAFETY: non-NULL and NUL-terminated, per this function's contract.
    let name = unsafe { CStr::from_ptr(name) };
    Ok(name.to_str().map_err(|_| einval())?.parse()?)
}

fn einval() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

fn set_errno(errno: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno, valid for the thread.
    unsafe { *libc::__errno_location() = errno };
}

/// Runs an exported body: its value on success; `fail` with errno set on error, and with
/// errno `EIO` if it panicked.
fn ffi<T>(fail: T, body: impl FnOnce() -> io::Result<T>) -> T {
    let errno = match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(v)) => return v,
        Ok(Err(e)) => e.raw_os_error().unwrap_or(match e.kind() {
            io::ErrorKind::InvalidInput => libc::EINVAL,
            _ => libc::EIO,
        }),
        Err(_) => libc::EIO,
    };
    set_errno(errno);
    fail
}

/// Takes back a handle made by `Arc::into_raw` (a queue or a group), NULL allowed.
///
/// # Safety
/// `p` is NULL or came from `Arc::into_raw` and is given back exactly once.
unsafe fn free_arc<T>(p: *const T) {
    if !p.is_null() {
        // SAFETY: per this function's contract.
        let arc = unsafe { std::sync::Arc::from_raw(p) };
        ffi((), || {
            drop(arc);
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno() -> c_int {
        io::Error::last_os_error().raw_os_error().unwrap()
    }

    #[test]
    fn a_panic_becomes_eio() {
        let prev = panic::take_hook();
        panic::set_hook(Box::new(|_| {}));
        let r = ffi(-1, || -> io::Result<c_int> { panic!("inside the library") });
        panic::set_hook(prev);
        assert_eq!((r, errno()), (-1, libc::EIO));
    }

    #[test]
    fn errors_keep_errno_else_einval_or_eio() {
        assert_eq!(
            (ffi(-1, || Err(io::Error::from_raw_os_error(libc::EMFILE))), errno()),
            (-1, libc::EMFILE)
        );
        let invalid = io::Error::new(io::ErrorKind::InvalidInput, "fd >= FD_SETSIZE");
        assert_eq!((ffi(-1, || Err(invalid)), errno()), (-1, libc::EINVAL));
        assert_eq!((ffi(-1, || Err(io::Error::other("?"))), errno()), (-1, libc::EIO));
    }

    #[test]
    fn timevals() {
        let tv = |tv_sec, tv_usec| timeval { tv_sec, tv_usec };
        assert_eq!(duration(None).unwrap(), None);
        assert_eq!(duration(Some(&tv(0, 0))).unwrap(), Some(Duration::ZERO));
        assert_eq!(duration(Some(&tv(1, 1_500_000))).unwrap(), Some(Duration::from_millis(2500)));
        assert_eq!(duration(Some(&tv(libc::time_t::MAX, 0))).unwrap(), None);
        assert_eq!(duration(Some(&tv(0, -1))).unwrap_err().raw_os_error(), Some(libc::EINVAL));
        assert_eq!(duration(Some(&tv(-1, 0))).unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn durations_round_up_to_the_microsecond() {
        let t = timeval_of(Duration::new(2, 1));
        assert_eq!((t.tv_sec, t.tv_usec), (2, 1));
        let t = timeval_of(Duration::from_micros(1_999_999));
        assert_eq!((t.tv_sec, t.tv_usec), (1, 999_999));
        assert_eq!(timeval_of(Duration::ZERO).tv_usec, 0);
    }
}
