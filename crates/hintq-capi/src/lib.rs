//! # The C ABI of hintq
//!
//! `libhintq.so` / `libhintq.a` for C programs: the paper's `declare_interest` and
//! `get_next_event` on a per-thread default queue, and the explicit-queue `hq_` calls. The
//! contract is written once, in `include/hintq.h`; this file only translates it to
//! [`hintq::Queue`]:
//!
//! * every exported body runs inside `ffi`, which turns an `io::Error` into `-1`/`NULL`
//!   plus errno and a panic into `EIO`, so that no unwind crosses into C;
//! * raw pointers from C become references or slices in the exported functions, at the one
//!   place where the header's contract makes them valid; everything below works on those.
//!
//! The tests in `tests/` compile the C programs in `tests/c/` against the header, run them
//! (under valgrind where available) and check that the header and the exported symbols agree.

#![deny(unsafe_op_in_unsafe_fn)]
#![allow(non_camel_case_types)]

use hintq::{Backend, Event, Interest, Queue};
use libc::{c_char, c_int, c_uint, timeval};
use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd};
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::time::Duration;

/// Most events one `get_next_event` returns, whatever `array_max` says: bounds the
/// translation buffer a queue keeps (the paper allows returning fewer than asked).
const MAX_BATCH: usize = 4096;

/// Timeouts with more seconds than this (about 136 years) mean "no limit".
const FOREVER_SECS: libc::time_t = u32::MAX as libc::time_t;

/// The paper's `event_descr_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct event_descr_t {
    /// The descriptor.
    pub fd: c_int,
    /// Its state: `EVENT_*` bits, the values of [`hintq::State`].
    pub mask: c_uint,
}

/// A queue as C sees it (opaque): the core queue plus what the translation needs.
pub struct hq_queue {
    queue: Queue,
    /// The backend's name, NUL-terminated, for `hq_backend_name`.
    name: CString,
    /// Core events are read here, then copied out as `event_descr_t`.
    scratch: Vec<Event>,
}

impl hq_queue {
    fn new(backend: Backend) -> io::Result<hq_queue> {
        let queue = Queue::new(backend)?;
        let name = CString::new(queue.backend().name()).expect("backend names hold no NUL");
        Ok(hq_queue { queue, name, scratch: Vec::new() })
    }

    fn declare(
        &mut self,
        fd: c_int,
        interestmask: c_int,
        statemask: Option<&mut c_int>,
    ) -> io::Result<c_int> {
        let interest = u32::try_from(interestmask).ok().and_then(Interest::from_bits).ok_or_else(einval)?;
        let fd = valid_fd(fd)?;
        // The paper: the state is reported only "if the statemask argument is non-NULL".
        // Without one, readiness that predates the call must arrive as an event instead,
        // which is what `Queue::declare` guarantees (and it saves the state query).
        match statemask {
            Some(out) => *out = self.queue.declare_interest(fd, interest)?.bits() as c_int,
            None => self.queue.declare(fd, interest)?,
        }
        Ok(0)
    }

    fn next(
        &mut self,
        out: &mut [MaybeUninit<event_descr_t>],
        timeout: Option<&timeval>,
    ) -> io::Result<c_int> {
        let timeout = duration(timeout)?;
        let max = out.len().min(MAX_BATCH);
        if self.scratch.len() < max {
            self.scratch.resize(max, Event::default());
        }
        let n = self.queue.get_next_event(&mut self.scratch[..max], timeout)?;
        for (o, e) in out.iter_mut().zip(&self.scratch[..n]) {
            o.write(event_descr_t { fd: e.fd(), mask: e.state().bits() });
        }
        Ok(n as c_int)
    }

    fn close(&mut self, fd: c_int) -> io::Result<c_int> {
        // SAFETY: a C caller of `hq_close`/`hq_close_default` gives up `fd` (hintq.h), and
        // `valid_fd` refused the negative numbers that are no descriptor.
        self.queue.close(unsafe { OwnedFd::from_raw_fd(valid_fd(fd)?) }).map(|()| 0)
    }
}

/// A negative descriptor is `EBADF`, as for `close(2)` (the core calls it `InvalidInput`).
fn valid_fd(fd: c_int) -> io::Result<c_int> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    Ok(fd)
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

fn einval() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
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
    // SAFETY: `__errno_location` returns the calling thread's errno, valid for the thread.
    unsafe { *libc::__errno_location() = errno };
    fail
}

thread_local! {
    /// The paper's per-thread HINTS queue: created by the thread's first call, dropped
    /// (its backend descriptors closed) when the thread exits.
    static DEFAULT: RefCell<Option<hq_queue>> = const { RefCell::new(None) };
}

/// Runs `f` on the calling thread's default queue, creating it if needed. `EBUSY` when
/// re-entered (a signal handler interrupting a call on the same thread).
fn with_default<T>(f: impl FnOnce(&mut hq_queue) -> io::Result<T>) -> io::Result<T> {
    DEFAULT
        .try_with(|cell| {
            let mut slot = cell.try_borrow_mut().map_err(|_| io::Error::from_raw_os_error(libc::EBUSY))?;
            let q = match &mut *slot {
                Some(q) => q,
                None => slot.insert(hq_queue::new(Backend::from_env()?)?),
            };
            f(q)
        })
        .unwrap_or_else(|_| Err(io::Error::other("called while the thread's locals are destroyed")))
}

/// C's `ev_array`/`array_max` as a slice of possibly uninitialised records.
///
/// # Safety
/// `ev_array` is NULL or points to `array_max` writable `event_descr_t`, unused by anything
/// else for `'a`.
unsafe fn out_array<'a>(
    array_max: c_int,
    ev_array: *mut event_descr_t,
) -> io::Result<&'a mut [MaybeUninit<event_descr_t>]> {
    if ev_array.is_null() || array_max <= 0 {
        return Err(einval());
    }
    // SAFETY: non-NULL and `array_max` > 0 records long, per this function's contract;
    // `MaybeUninit` makes no claim that the caller initialised them.
    Ok(unsafe { std::slice::from_raw_parts_mut(ev_array.cast(), array_max as usize) })
}

/// The paper's `declare_interest` on the calling thread's default queue; see `hintq.h`.
///
/// # Safety
/// `statemask` is NULL or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn declare_interest(fd: c_int, interestmask: c_int, statemask: *mut c_int) -> c_int {
    // SAFETY: NULL or a valid `int`, per the contract above.
    let statemask = unsafe { statemask.as_mut() };
    ffi(-1, || with_default(|q| q.declare(fd, interestmask, statemask)))
}

/// The paper's `get_next_event` on the calling thread's default queue; see `hintq.h`.
///
/// # Safety
/// `ev_array` is NULL or points to `array_max` writable records; `timeout` is NULL or
/// points to a readable `struct timeval`.
#[no_mangle]
pub unsafe extern "C" fn get_next_event(
    array_max: c_int,
    ev_array: *mut event_descr_t,
    timeout: *mut timeval,
) -> c_int {
    // SAFETY: as promised by the caller, see above.
    let (out, timeout) = (unsafe { out_array(array_max, ev_array) }, unsafe { timeout.as_ref() });
    ffi(-1, || with_default(|q| q.next(out?, timeout)))
}

/// Revokes the default queue's interest in `fd`, then closes it; see `hintq.h`.
#[no_mangle]
pub extern "C" fn hq_close_default(fd: c_int) -> c_int {
    ffi(-1, || {
        // Without a default queue there is nothing to revoke (and no queue to create: that
        // could fail on a bad HINTQ_BACKEND and leave the descriptor open). When the queue is
        // busy (re-entered), `with_default` reports EBUSY.
        let has_queue = DEFAULT.try_with(|c| c.try_borrow().map_or(true, |q| q.is_some())).unwrap_or(false);
        if has_queue {
            return with_default(|q| q.close(fd));
        }
        let fd = valid_fd(fd)?;
        // SAFETY: the caller gives up `fd`; it is closed once, here.
        hintq_sys::cvt(unsafe { libc::close(fd) })?;
        Ok(0)
    })
}

/// Creates a queue on the named backend (NULL: `HINTQ_BACKEND`); see `hintq.h`.
///
/// # Safety
/// `backend_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hq_queue_new(backend_name: *const c_char) -> *mut hq_queue {
    // SAFETY: NULL or NUL-terminated, per the contract above.
    let name = (!backend_name.is_null()).then(|| unsafe { CStr::from_ptr(backend_name) });
    ffi(ptr::null_mut(), || {
        let backend = match name {
            None => Backend::from_env()?,
            Some(name) => name.to_str().map_err(|_| einval())?.parse()?,
        };
        Ok(Box::into_raw(Box::new(hq_queue::new(backend)?)))
    })
}

/// `declare_interest` on queue `q`; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue from `hq_queue_new` that no other thread is using;
/// `statemask` is NULL or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn hq_declare_interest(
    q: *mut hq_queue,
    fd: c_int,
    interestmask: c_int,
    statemask: *mut c_int,
) -> c_int {
    // SAFETY: each pointer is NULL or valid and unaliased, per the contract above.
    let (q, statemask) = unsafe { (q.as_mut(), statemask.as_mut()) };
    ffi(-1, || q.ok_or_else(einval)?.declare(fd, interestmask, statemask))
}

/// `get_next_event` on queue `q`; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue that no other thread is using; `ev_array` is NULL or points
/// to `array_max` writable records; `timeout` is NULL or points to a `struct timeval`.
#[no_mangle]
pub unsafe extern "C" fn hq_get_next_event(
    q: *mut hq_queue,
    array_max: c_int,
    ev_array: *mut event_descr_t,
    timeout: *mut timeval,
) -> c_int {
    // SAFETY: each pointer is NULL or valid and unaliased, per the contract above.
    let (q, out, timeout) = unsafe { (q.as_mut(), out_array(array_max, ev_array), timeout.as_ref()) };
    ffi(-1, || q.ok_or_else(einval)?.next(out?, timeout))
}

/// Revokes interest in `fd` on queue `q`, then closes it; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue that no other thread is using.
#[no_mangle]
pub unsafe extern "C" fn hq_close(q: *mut hq_queue, fd: c_int) -> c_int {
    // SAFETY: NULL or valid and unaliased, per the contract above.
    let q = unsafe { q.as_mut() };
    ffi(-1, || q.ok_or_else(einval)?.close(fd))
}

/// Destroys queue `q` (NULL: nothing); see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue from `hq_queue_new`, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn hq_queue_free(q: *mut hq_queue) {
    if !q.is_null() {
        // SAFETY: made by `Box::into_raw` in `hq_queue_new` and given back exactly once.
        let q = unsafe { Box::from_raw(q) };
        ffi((), || {
            drop(q);
            Ok(())
        });
    }
}

/// The name of the backend `q` runs on, valid until `hq_queue_free(q)`; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn hq_backend_name(q: *const hq_queue) -> *const c_char {
    // SAFETY: NULL or valid, per the contract above.
    let q = unsafe { q.as_ref() };
    ffi(ptr::null(), || Ok(q.ok_or_else(einval)?.name.as_ptr()))
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
}
