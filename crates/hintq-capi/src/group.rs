//! Process-wide interest (paper §9) for C: `hq_group`, a [`hintq::Group`] whose member
//! queues are ordinary `hq_queue`s.

use crate::queue::{hq_queue, into_handle};
use crate::revoke::{self, Holder};
use crate::{ffi, interest, valid_fd};
use hintq::{Delivery, Group, Interest};
use libc::{c_char, c_int};
use std::io;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::{Arc, Weak};

/// `HQ_DELIVER_ONE`: one member gets each readiness.
const DELIVER_ONE: c_int = 1;
/// `HQ_DELIVER_ALL`: every member gets each readiness.
const DELIVER_ALL: c_int = 2;

/// A group as C sees it (opaque). `Send + Sync`, like the group.
pub struct hq_group {
    group: Group,
    me: Weak<hq_group>,
}

impl hq_group {
    fn declare(
        &self,
        fd: c_int,
        mask: c_int,
        delivery: c_int,
        statemask: Option<&mut c_int>,
    ) -> io::Result<c_int> {
        let interest = interest(mask)?;
        let delivery = match delivery {
            DELIVER_ONE => Delivery::One,
            DELIVER_ALL => Delivery::All,
            _ => return Err(crate::einval()),
        };
        let fd = valid_fd(fd)?;
        let holder = Holder::Group(self.me.clone());
        let state = self.group.declare_interest(crate::borrowed(fd), interest, delivery)?;
        if interest.is_empty() {
            revoke::remove(fd, &holder);
        } else {
            revoke::add(fd, holder);
        }
        if let Some(out) = statemask {
            *out = state.bits() as c_int;
        }
        Ok(0)
    }

    /// `fd` is being closed: revoke it for the whole group.
    pub(crate) fn closed(&self, fd: RawFd) {
        // The descriptor is still open here, and the only failure of a revoke is
        // `epoll_ctl(DEL)` failing on a set the group owns, which leaves nothing to undo: the
        // registration is gone from the group's table either way, so no event of it is
        // delivered.
        let _ = self.group.declare_interest(crate::borrowed(fd), Interest::empty(), Delivery::One);
    }
}

/// A group on the named backend (NULL: `HINTQ_BACKEND`); see `hintq.h`.
///
/// # Safety
/// `backend_name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn hq_group_new(backend_name: *const c_char) -> *mut hq_group {
    // SAFETY: NULL or NUL-terminated, per the contract above.
    let backend = unsafe { crate::backend_named(backend_name) };
    ffi(ptr::null_mut(), || {
        let group = Group::new(backend?)?;
        Ok(Arc::into_raw(Arc::new_cyclic(|me| hq_group { group, me: me.clone() })).cast_mut())
    })
}

/// A new member queue of `g`; see `hintq.h`.
///
/// # Safety
/// `g` is NULL or a live group.
#[no_mangle]
pub unsafe extern "C" fn hq_group_queue(g: *mut hq_group) -> *mut hq_queue {
    // SAFETY: NULL or valid, per the contract above.
    let g = unsafe { g.as_ref() };
    ffi(ptr::null_mut(), || {
        let g = g.ok_or_else(crate::einval)?;
        Ok(into_handle(hq_queue::new(g.group.queue()?, false)?))
    })
}

/// Declares (or with 0 revokes) the group's interest in `fd`; see `hintq.h`.
///
/// # Safety
/// `g` is NULL or a live group; `statemask` is NULL or points to a writable `int`.
#[no_mangle]
pub unsafe extern "C" fn hq_group_declare(
    g: *mut hq_group,
    fd: c_int,
    interestmask: c_int,
    delivery: c_int,
    statemask: *mut c_int,
) -> c_int {
    // SAFETY: each pointer is NULL or valid, per the contract above.
    let (g, statemask) = unsafe { (g.as_ref(), statemask.as_mut()) };
    ffi(-1, || g.ok_or_else(crate::einval)?.declare(fd, interestmask, delivery, statemask))
}

/// Frees the group handle (NULL: nothing); see `hintq.h`.
///
/// # Safety
/// `g` is NULL or a live group, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn hq_group_free(g: *mut hq_group) {
    // SAFETY: NULL, or made by `Arc::into_raw` in `hq_group_new` and given back once.
    unsafe { crate::free_arc(g.cast_const()) };
}
