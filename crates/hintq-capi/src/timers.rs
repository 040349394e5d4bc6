//! Timers for C: `hq_timers`, a [`hintq::Timers`] whose next deadline becomes the timeout
//! of `get_next_event`. Timers carry a `void *` of the caller's and are named by positive
//! 64-bit ids, never reused within a set.

use crate::{duration, ffi, timeval_of};
use hintq::timer::TimerId;
use hintq::Timers;
use libc::{c_int, c_void, timeval};
use std::collections::HashMap;
use std::io;
use std::ptr;
use std::time::Instant;

/// A set of one-shot timers (opaque to C).
#[derive(Default)]
pub struct hq_timers {
    /// Each timer carries its C id and the caller's pointer (as an address).
    timers: Timers<(i64, usize)>,
    ids: HashMap<i64, TimerId>,
    last: i64,
}

impl hq_timers {
    fn add(&mut self, delay: &timeval, data: *mut c_void) -> io::Result<i64> {
        let delay = duration(Some(delay))?.ok_or_else(crate::einval)?;
        let at = Instant::now().checked_add(delay).ok_or_else(crate::einval)?;
        self.last += 1;
        let id = self.last;
        self.ids.insert(id, self.timers.insert(at, (id, data as usize)));
        Ok(id)
    }

    fn cancel(&mut self, id: i64) -> io::Result<usize> {
        let tid = self.ids.remove(&id).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
        Ok(self.timers.cancel(tid).map_or(0, |(_, data)| data))
    }

    fn expire(&mut self) -> Option<(i64, usize)> {
        let (_, (id, data)) = self.timers.pop_expired(Instant::now())?;
        self.ids.remove(&id);
        Some((id, data))
    }
}

/// Stores `data` through `out` unless `out` is NULL.
fn give(out: Option<&mut *mut c_void>, data: usize) {
    if let Some(out) = out {
        *out = data as *mut c_void;
    }
}

/// An empty timer set; see `hintq.h`.
#[no_mangle]
pub extern "C" fn hq_timers_new() -> *mut hq_timers {
    ffi(ptr::null_mut(), || Ok(Box::into_raw(Box::default())))
}

/// Frees a timer set (NULL: nothing); see `hintq.h`.
///
/// # Safety
/// `t` is NULL or a live set, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn hq_timers_free(t: *mut hq_timers) {
    if !t.is_null() {
        // SAFETY: made by `Box::into_raw` in `hq_timers_new` and given back exactly once.
        let t = unsafe { Box::from_raw(t) };
        ffi((), || {
            drop(t);
            Ok(())
        });
    }
}

/// Arms a timer that expires `*delay` from now; see `hintq.h`.
///
/// # Safety
/// `t` is NULL or a live set used by no other thread; `delay` is NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn hq_timer_add(t: *mut hq_timers, delay: *const timeval, data: *mut c_void) -> i64 {
    // SAFETY: each pointer is NULL or valid, per the contract above.
    let (t, delay) = unsafe { (t.as_mut(), delay.as_ref()) };
    ffi(-1, || t.ok_or_else(crate::einval)?.add(delay.ok_or_else(crate::einval)?, data))
}

/// Disarms timer `id`; see `hintq.h`.
///
/// # Safety
/// `t` is NULL or a live set used by no other thread; `data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hq_timer_cancel(t: *mut hq_timers, id: i64, data: *mut *mut c_void) -> c_int {
    // SAFETY: each pointer is NULL or valid, per the contract above.
    let (t, data) = unsafe { (t.as_mut(), data.as_mut()) };
    ffi(-1, || {
        give(data, t.ok_or_else(crate::einval)?.cancel(id)?);
        Ok(0)
    })
}

/// The time until the earliest deadline; see `hintq.h`.
///
/// # Safety
/// `t` is NULL or a live set used by no other thread; `tv` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hq_timers_timeout(t: *mut hq_timers, tv: *mut timeval) -> c_int {
    // SAFETY: each pointer is NULL or valid, per the contract above.
    let (t, tv) = unsafe { (t.as_mut(), tv.as_mut()) };
    ffi(-1, || {
        let (t, tv) = (t.ok_or_else(crate::einval)?, tv.ok_or_else(crate::einval)?);
        match t.timers.timeout(Instant::now(), None) {
            Some(d) => {
                *tv = timeval_of(d);
                Ok(1)
            }
            None => Ok(0),
        }
    })
}

/// Removes one expired timer, earliest first; see `hintq.h`.
///
/// # Safety
/// `t` is NULL or a live set used by no other thread; `data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn hq_timers_expire(t: *mut hq_timers, data: *mut *mut c_void) -> i64 {
    // SAFETY: each pointer is NULL or valid, per the contract above.
    let (t, data) = unsafe { (t.as_mut(), data.as_mut()) };
    ffi(-1, || match t.ok_or_else(crate::einval)?.expire() {
        Some((id, d)) => {
            give(data, d);
            Ok(id)
        }
        None => Ok(0),
    })
}

/// How many timers are armed; see `hintq.h`.
///
/// # Safety
/// `t` is NULL or a live set used by no other thread.
#[no_mangle]
pub unsafe extern "C" fn hq_timers_count(t: *const hq_timers) -> i64 {
    // SAFETY: NULL or valid, per the contract above.
    let t = unsafe { t.as_ref() };
    ffi(-1, || Ok(t.ok_or_else(crate::einval)?.timers.len() as i64))
}
