//! Queues as C sees them: `hq_queue` (explicit, or the calling thread's default queue), the
//! paper's two calls, wakers and statistics.
//!
//! An `hq_queue` is shared (`Arc`) between its C handle, the close interposer of
//! [`crate::revoke`] (which may have to revoke from another thread) and, for the default
//! queue, the thread-local slot. The core [`Queue`] sits behind a mutex: one thread at a
//! time uses it, as the header says, and a thread that closes a descriptor declared on a
//! queue another thread is blocked on cannot touch it. Such a thread leaves the descriptor
//! in the queue's mailbox and wakes it; every call on the queue revokes what the mailbox
//! holds before doing anything else (see [`crate::revoke`] for why that order is enough).

use crate::revoke::{self, Holder};
use crate::{duration, ffi, interest, valid_fd};
use hintq::{Backend, Builder, Event, Interest, Queue, Waker};
use libc::{c_char, c_int, c_uint, timeval};
use std::cell::{Cell, RefCell};
use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::os::fd::{FromRawFd, OwnedFd};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// Most events one `get_next_event` returns, whatever `array_max` says: bounds the
/// translation buffer a queue keeps (the paper allows returning fewer than asked).
const MAX_BATCH: usize = 4096;

/// The paper's `event_descr_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct event_descr_t {
    /// The descriptor.
    pub fd: c_int,
    /// Its state: `EVENT_*` bits, the values of [`hintq::State`].
    pub mask: c_uint,
}

/// A queue's counters, `struct hq_stats` in the header: [`hintq::Stats`] field by field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hq_stats {
    pub delivered: u64,
    pub coalesced: u64,
    pub stale: u64,
    pub overflows: u64,
    pub scanned: u64,
    pub rearms: u64,
    pub waits: u64,
    pub recoveries: u64,
    pub switches: u64,
    pub migrations: u64,
}

/// A queue as C sees it (opaque).
pub struct hq_queue {
    core: Mutex<Core>,
    /// The backend's name, NUL-terminated, for `hq_backend_name`.
    name: CString,
    /// Wakes the queue's wait: for the mailbox, and for `hq_waker_wake` with `woken` up.
    waker: Waker,
    /// An `hq_waker` fired: the next wait that returns nothing returns 0 to the caller.
    woken: Arc<AtomicBool>,
    /// Descriptors closed while declared here, by a thread that could not revoke at once.
    mailbox: Mutex<Vec<RawFd>>,
    has_mail: AtomicBool,
    /// The thread that made the last call (see [`thread_id`]).
    owner: AtomicU64,
    /// The calling thread's default queue: `hq_queue_free` leaves it alone.
    default: bool,
    me: Weak<hq_queue>,
}

struct Core {
    queue: Queue,
    /// Core events are read here, then copied out as `event_descr_t`.
    scratch: Vec<Event>,
    /// Descriptors this queue has put in [`revoke`]'s table (indexed by descriptor).
    declared: Vec<bool>,
    /// A revoke made on behalf of `close(2)` failed; the next call reports it.
    failed: Option<io::Error>,
}

thread_local! {
    /// A small number naming the calling thread (cheaper than `gettid`).
    static THREAD_ID: u64 = {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    };
    /// The queue this thread is inside a call of: a second call on it from the same thread
    /// (a signal handler) is `EBUSY` instead of a deadlock.
    static IN_CALL: Cell<*const hq_queue> = const { Cell::new(ptr::null()) };
    /// The paper's per-thread HINTS queue: created by the thread's first call, dropped
    /// (its backend descriptors closed) when the thread exits.
    static DEFAULT: RefCell<Option<Arc<hq_queue>>> = const { RefCell::new(None) };
}

fn thread_id() -> u64 {
    THREAD_ID.try_with(|id| *id).unwrap_or(0)
}

fn ebusy() -> io::Error {
    io::Error::from_raw_os_error(libc::EBUSY)
}

/// A call in progress on a queue: the core locked, `IN_CALL` set, the mailbox emptied.
struct Call<'a> {
    q: &'a hq_queue,
    core: MutexGuard<'a, Core>,
    outer: *const hq_queue,
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        let _ = IN_CALL.try_with(|c| c.set(self.outer));
    }
}

impl hq_queue {
    pub(crate) fn new(mut queue: Queue, default: bool) -> io::Result<Arc<hq_queue>> {
        let waker = queue.waker()?;
        let name = CString::new(queue.backend().name()).expect("backend names hold no NUL");
        let core = Core { queue, scratch: Vec::new(), declared: Vec::new(), failed: None };
        Ok(Arc::new_cyclic(|me| hq_queue {
            core: Mutex::new(core),
            name,
            waker,
            woken: Arc::default(),
            mailbox: Mutex::default(),
            has_mail: AtomicBool::new(false),
            owner: AtomicU64::new(thread_id()),
            default,
            me: me.clone(),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Core> {
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a call: `EBUSY` if this thread is already inside one on this queue.
    fn call(&self) -> io::Result<Call<'_>> {
        let this: *const hq_queue = self;
        let outer = IN_CALL.try_with(|c| c.replace(this)).map_err(|_| ebusy())?;
        if outer == this {
            let _ = IN_CALL.try_with(|c| c.set(outer));
            return Err(ebusy());
        }
        let mut call = Call { q: self, core: self.lock(), outer };
        self.owner.store(thread_id(), Ordering::Relaxed);
        call.settle()?;
        Ok(call)
    }

    /// `close(2)` on another queue's behalf found `fd` declared here: revoke it now if this
    /// thread is the one using the queue and it is idle, else leave it in the mailbox and
    /// wake the queue, whose next call (or current wait) revokes it.
    pub(crate) fn closed_elsewhere(&self, fd: RawFd) {
        let this: *const hq_queue = self;
        let mine = self.owner.load(Ordering::Relaxed) == thread_id()
            && IN_CALL.try_with(|c| c.get() != this).unwrap_or(false);
        if mine {
            if let Ok(mut core) = self.core.try_lock() {
                core.forget(fd);
                return;
            }
        }
        self.mailbox.lock().unwrap_or_else(|e| e.into_inner()).push(fd);
        self.has_mail.store(true, Ordering::Release);
        // A failed wake-up (an rtsig queue whose thread has exited) leaves the mail for the
        // next call, which is all that can be done for a queue nobody waits on.
        let _ = self.waker.wake();
    }

    fn holder(&self) -> Holder {
        Holder::Queue(self.me.clone())
    }

    fn declare(&self, fd: c_int, mask: c_int, statemask: Option<&mut c_int>) -> io::Result<c_int> {
        let interest = interest(mask)?;
        let fd = valid_fd(fd)?;
        let mut call = self.call()?;
        let core = &mut *call.core;
        // The paper: the state is reported only "if the statemask argument is non-NULL".
        // Without one, readiness that predates the call must arrive as an event instead,
        // which is what `Queue::declare` guarantees (and it saves the state query).
        match statemask {
            Some(out) => *out = core.queue.declare_interest(crate::borrowed(fd), interest)?.bits() as c_int,
            None => core.queue.declare(crate::borrowed(fd), interest)?,
        }
        let i = fd as usize;
        let was = core.declared.get(i).copied().unwrap_or(false);
        if !interest.is_empty() && !was {
            if core.declared.len() <= i {
                core.declared.resize(i + 1, false);
            }
            core.declared[i] = true;
            revoke::add(fd, self.holder());
        } else if interest.is_empty() && was {
            core.declared[i] = false;
            revoke::remove(fd, &self.holder());
        }
        Ok(0)
    }

    fn next(&self, out: &mut [MaybeUninit<event_descr_t>], timeout: Option<&timeval>) -> io::Result<c_int> {
        let timeout = duration(timeout)?;
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        loop {
            let remaining = match (timeout, deadline) {
                (_, Some(d)) => Some(d.saturating_duration_since(Instant::now())),
                // No timeout, or one too large to add to the clock: no limit.
                (_, None) => None,
            };
            let n = self.call()?.next(out, remaining)?;
            if n > 0 || self.woken.swap(false, Ordering::AcqRel) {
                return Ok(n as c_int);
            }
            if remaining.is_some_and(|r| r.is_zero()) {
                return Ok(0);
            }
            // Woken for the mailbox, or the timeout passed (then `remaining` is zero next).
        }
    }

    fn close(&self, fd: c_int) -> io::Result<c_int> {
        let fd = valid_fd(fd)?;
        let mut call = self.call()?;
        if call.core.declared.get(fd as usize).copied().unwrap_or(false) {
            call.core.declared[fd as usize] = false;
            revoke::remove(fd, &self.holder());
        }
        // Revokes, then closes through the library's `close`, which revokes the descriptor
        // on any other queue or group that declared it.
        // SAFETY: a C caller of `hq_close`/`hq_close_default` gives up `fd` (hintq.h), and
        // `valid_fd` refused the negative numbers that are no descriptor.
        call.core.queue.close(unsafe { OwnedFd::from_raw_fd(fd) }).map(|()| 0)
    }

    fn stats(&self) -> io::Result<hq_stats> {
        let s = self.call()?.core.queue.stats();
        Ok(hq_stats {
            delivered: s.delivered,
            coalesced: s.coalesced,
            stale: s.stale,
            overflows: s.overflows,
            scanned: s.scanned,
            rearms: s.rearms,
            waits: s.waits,
            recoveries: s.recoveries,
            switches: s.switches,
            migrations: s.migrations,
        })
    }
}

impl Call<'_> {
    /// Revokes the descriptors the mailbox holds, and reports a failed revoke made for
    /// `close(2)` earlier.
    fn settle(&mut self) -> io::Result<()> {
        if self.q.has_mail.swap(false, Ordering::Acquire) {
            let mail = std::mem::take(&mut *self.q.mailbox.lock().unwrap_or_else(|e| e.into_inner()));
            for fd in mail {
                self.core.forget(fd);
            }
        }
        self.core.failed.take().map_or(Ok(()), Err)
    }

    fn next(
        &mut self,
        out: &mut [MaybeUninit<event_descr_t>],
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let max = out.len().min(MAX_BATCH);
        let core = &mut *self.core;
        if core.scratch.len() < max {
            core.scratch.resize(max, Event::default());
        }
        let n = core.queue.get_next_event(&mut core.scratch[..max], timeout)?;
        // A wake-up may have been for the mailbox: revoke now, so that a closed descriptor's
        // file is let go of at once, and drop this batch's events of what was revoked.
        self.settle()?;
        let core = &mut *self.core;
        let mut k = 0;
        for e in &core.scratch[..n] {
            if core.queue.is_current(e) {
                out[k].write(event_descr_t { fd: e.fd(), mask: e.state().bits() });
                k += 1;
            }
        }
        Ok(k)
    }
}

impl Core {
    /// Revokes `fd`, closed behind the queue's back. Its entry in [`revoke`]'s table is gone
    /// already. A descriptor closed again and not declared here any more is left alone.
    fn forget(&mut self, fd: RawFd) {
        let Some(d) = self.declared.get_mut(fd as usize).filter(|d| **d) else { return };
        *d = false;
        if let Err(e) = self.queue.declare_interest(crate::borrowed(fd), Interest::empty()) {
            self.failed.get_or_insert(e);
        }
    }
}

/// The calling thread's default queue, created on first use from `HINTQ_BACKEND`.
fn default_queue() -> io::Result<Arc<hq_queue>> {
    DEFAULT
        .try_with(|cell| {
            if let Some(q) = cell.try_borrow().map_err(|_| ebusy())?.as_ref() {
                return Ok(Arc::clone(q));
            }
            let q = hq_queue::new(Queue::new(Backend::from_env()?)?, true)?;
            *cell.try_borrow_mut().map_err(|_| ebusy())? = Some(Arc::clone(&q));
            Ok(q)
        })
        .unwrap_or_else(|_| Err(io::Error::other("called while the thread's locals are destroyed")))
}

/// The calling thread's default queue if it has one, without creating it.
fn existing_default() -> Option<Arc<hq_queue>> {
    DEFAULT.try_with(|c| c.try_borrow().ok().and_then(|q| q.clone())).ok().flatten()
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
        return Err(crate::einval());
    }
    // SAFETY: non-NULL and `array_max` > 0 records long, per this function's contract;
    // `MaybeUninit` makes no claim that the caller initialised them.
    Ok(unsafe { std::slice::from_raw_parts_mut(ev_array.cast(), array_max as usize) })
}

/// A queue handle from C.
///
/// # Safety
/// `q` is NULL or a live queue: from `hq_queue_new*`, `hq_group_queue` or
/// `hq_default_queue` (of a thread that has not exited), not freed.
unsafe fn handle<'a>(q: *const hq_queue) -> io::Result<&'a hq_queue> {
    // SAFETY: NULL or valid, per this function's contract.
    unsafe { q.as_ref() }.ok_or_else(crate::einval)
}

/// Hands a new queue to C.
pub(crate) fn into_handle(q: Arc<hq_queue>) -> *mut hq_queue {
    Arc::into_raw(q).cast_mut()
}

/// The paper's `declare_interest` on the calling thread's default queue; see `hintq.h`.
///
/// # Safety
/// `statemask` is NULL or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn declare_interest(fd: c_int, interestmask: c_int, statemask: *mut c_int) -> c_int {
    // SAFETY: NULL or a valid `int`, per the contract above.
    let statemask = unsafe { statemask.as_mut() };
    ffi(-1, || default_queue()?.declare(fd, interestmask, statemask))
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
    ffi(-1, || default_queue()?.next(out?, timeout))
}

/// Revokes the default queue's interest in `fd`, then closes it; see `hintq.h`.
#[no_mangle]
pub extern "C" fn hq_close_default(fd: c_int) -> c_int {
    ffi(-1, || match existing_default() {
        Some(q) => q.close(fd),
        // Without a default queue there is nothing to revoke here (and no queue to create:
        // that could fail on a bad HINTQ_BACKEND and leave the descriptor open).
        None => revoke::close_checked(valid_fd(fd)?),
    })
}

/// The calling thread's default queue as an `hq_queue`; see `hintq.h`.
#[no_mangle]
pub extern "C" fn hq_default_queue() -> *mut hq_queue {
    ffi(ptr::null_mut(), || Ok(Arc::as_ptr(&default_queue()?).cast_mut()))
}

/// Creates a queue on the named backend (NULL: `HINTQ_BACKEND`); see `hintq.h`.
///
/// # Safety
/// `backend_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hq_queue_new(backend_name: *const c_char) -> *mut hq_queue {
    // SAFETY: NULL or NUL-terminated, per the contract above.
    let backend = unsafe { crate::backend_named(backend_name) };
    ffi(ptr::null_mut(), || Ok(into_handle(hq_queue::new(Queue::new(backend?)?, false)?)))
}

/// Creates a queue whose FIFO holds at most `capacity` events; see `hintq.h`.
///
/// # Safety
/// `backend_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hq_queue_new_bounded(backend_name: *const c_char, capacity: usize) -> *mut hq_queue {
    // SAFETY: NULL or NUL-terminated, per the contract above.
    let backend = unsafe { crate::backend_named(backend_name) };
    ffi(ptr::null_mut(), || {
        if capacity == 0 {
            return Err(crate::einval());
        }
        let queue = Builder::new(backend?).capacity(capacity).build()?;
        Ok(into_handle(hq_queue::new(queue, false)?))
    })
}

/// `declare_interest` on queue `q`; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue; `statemask` is NULL or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn hq_declare_interest(
    q: *mut hq_queue,
    fd: c_int,
    interestmask: c_int,
    statemask: *mut c_int,
) -> c_int {
    // SAFETY: each pointer is NULL or valid, per the contract above.
    let (q, statemask) = unsafe { (handle(q), statemask.as_mut()) };
    ffi(-1, || q?.declare(fd, interestmask, statemask))
}

/// `get_next_event` on queue `q`; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue; `ev_array` is NULL or points to `array_max` writable
/// records; `timeout` is NULL or points to a `struct timeval`.
#[no_mangle]
pub unsafe extern "C" fn hq_get_next_event(
    q: *mut hq_queue,
    array_max: c_int,
    ev_array: *mut event_descr_t,
    timeout: *mut timeval,
) -> c_int {
    // SAFETY: each pointer is NULL or valid and unaliased, per the contract above.
    let (q, out, timeout) = unsafe { (handle(q), out_array(array_max, ev_array), timeout.as_ref()) };
    ffi(-1, || q?.next(out?, timeout))
}

/// Revokes interest in `fd` on queue `q`, then closes it; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn hq_close(q: *mut hq_queue, fd: c_int) -> c_int {
    // SAFETY: NULL or valid, per the contract above.
    let q = unsafe { handle(q) };
    ffi(-1, || q?.close(fd))
}

/// Destroys queue `q` (NULL or a default queue: nothing); see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue, not used again afterwards unless it is a default queue.
#[no_mangle]
pub unsafe extern "C" fn hq_queue_free(q: *mut hq_queue) {
    // SAFETY: NULL or valid, per the contract above.
    if unsafe { q.as_ref() }.is_some_and(|q| !q.default) {
        // SAFETY: not a default queue, so made by `into_handle` and given back once.
        unsafe { crate::free_arc(q.cast_const()) };
    }
}

/// The name of the backend `q` runs on, valid until `hq_queue_free(q)`; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn hq_backend_name(q: *const hq_queue) -> *const c_char {
    // SAFETY: NULL or valid, per the contract above.
    let q = unsafe { handle(q) };
    ffi(ptr::null(), || Ok(q?.name.as_ptr()))
}

/// Copies `q`'s counters into `*out`; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue; `out` is NULL or points to a writable `struct hq_stats`.
#[no_mangle]
pub unsafe extern "C" fn hq_queue_stats(q: *mut hq_queue, out: *mut hq_stats) -> c_int {
    // SAFETY: each pointer is NULL or valid, per the contract above.
    let (q, out) = unsafe { (handle(q), out.as_mut()) };
    ffi(-1, || {
        let out = out.ok_or_else(crate::einval)?;
        *out = q?.stats()?;
        Ok(0)
    })
}

/// Wakes one queue from any thread (opaque to C).
pub struct hq_waker {
    waker: Waker,
    woken: Arc<AtomicBool>,
}

/// A waker for queue `q`; see `hintq.h`.
///
/// # Safety
/// `q` is NULL or a live queue.
#[no_mangle]
pub unsafe extern "C" fn hq_waker_new(q: *mut hq_queue) -> *mut hq_waker {
    // SAFETY: NULL or valid, per the contract above.
    let q = unsafe { handle(q) };
    ffi(ptr::null_mut(), || {
        let q = q?;
        Ok(Box::into_raw(Box::new(hq_waker { waker: q.waker.clone(), woken: Arc::clone(&q.woken) })))
    })
}

/// Wakes the waker's queue; see `hintq.h`.
///
/// # Safety
/// `w` is NULL or a live waker.
#[no_mangle]
pub unsafe extern "C" fn hq_waker_wake(w: *const hq_waker) -> c_int {
    // SAFETY: NULL or valid, per the contract above.
    let w = unsafe { w.as_ref() };
    ffi(-1, || {
        let w = w.ok_or_else(crate::einval)?;
        w.woken.store(true, Ordering::Release);
        w.waker.wake().map(|()| 0)
    })
}

/// Frees a waker (NULL: nothing); see `hintq.h`.
///
/// # Safety
/// `w` is NULL or a live waker, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn hq_waker_free(w: *mut hq_waker) {
    if !w.is_null() {
        // SAFETY: made by `Box::into_raw` in `hq_waker_new` and given back exactly once.
        let w = unsafe { Box::from_raw(w) };
        ffi((), || {
            drop(w);
            Ok(())
        });
    }
}
