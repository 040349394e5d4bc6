//! epoll in its three trigger modes: level, edge (`EPOLLET`) and one-shot (`EPOLLONESHOT`).
//!
//! Kernel quirks handled here:
//!
//! a. epoll watches open file *descriptions*, not descriptor numbers. A descriptor closed
//!    without `EPOLL_CTL_DEL` stays watched while a dup or a forked child holds the file,
//!    and its events keep coming under the old number. The queue therefore always deletes
//!    before it closes ([`crate::Queue::close`]), and stale reports are filtered by the
//!    generation in the token.
//! b. After close-and-reuse, the kernel forgot the old registration: `MOD` fails with
//!    `ENOENT` and is retried as `ADD`. After `dup2` over a watched number, `ADD` fails with
//!    `EEXIST` and is retried as `MOD` (libevent's epoll.c does the same).
//! c. `DEL` of a descriptor the kernel already dropped (closed: `EBADF`; forgotten:
//!    `ENOENT`) is success: the registration is gone either way.
//! d. `EPOLLRDHUP` is asked for with `READ` interest, so a half-closed peer reads as `HUP`
//!    to a reader. Not for a writer: the half-close stays set, and a level-triggered
//!    registration waiting for buffer space would be reported on every wait (a spin until
//!    the send timeout, seen in `hintq proxy` with a client that half-closed and stopped
//!    reading). A full hang-up (`EPOLLHUP`) and errors reach every registration.
//! e. `EPOLLONESHOT` disarms the registration after one report; the queue re-arms it
//!    with `MOD`, which is exactly the re-activation cost Strebelow & Prehofer measure.
//! f. Hand-off mode ([`crate::Rearm`]): `epoll_ctl` may be called from any thread while
//!    another blocks in `epoll_wait` on the same set. Level-triggered mode deactivates a
//!    delivered descriptor with `DEL` (a `MOD` to no events would still report `HUP` and
//!    `ERR`, over and over) and re-activates it with `ADD`; one-shot needs only the `MOD`.

use super::poller::{Arm, Capabilities, Handoff, Poller, Ready};
use crate::{sys, Event, Interest};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

/// The trigger mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Level,
    Edge,
    Oneshot,
}

pub(crate) struct Epoll {
    epfd: Arc<OwnedFd>,
    /// `epfd`'s number, read without going through the `Arc`.
    fd: RawFd,
    mode: Mode,
    /// The trigger mode's flag (`EPOLLET`, `EPOLLONESHOT` or none), added to every watch.
    flags: u32,
    /// The kernel's reports of one wait, [`WAIT_MAX`] of them (12 KiB), made with the set
    /// so that a wait neither grows nor checks it (its length is the type's).
    buf: Box<[libc::epoll_event; WAIT_MAX]>,
}

/// The most reports one `epoll_wait` takes.
pub(crate) const WAIT_MAX: usize = 1024;

impl Epoll {
    pub(crate) fn new(mode: Mode) -> io::Result<Epoll> {
        let buf = Box::new([libc::epoll_event { events: 0, u64: 0 }; WAIT_MAX]);
        let flags = match mode {
            Mode::Level => 0,
            Mode::Edge => libc::EPOLLET as u32,
            Mode::Oneshot => libc::EPOLLONESHOT as u32,
        };
        let epfd = sys::epoll_create()?;
        Ok(Epoll { fd: epfd.as_raw_fd(), epfd: Arc::new(epfd), mode, flags, buf })
    }
}

/// Watches `fd` in `epfd`, replacing any earlier watch: `ADD` first when `fresh`, else `MOD`,
/// each retried as the other on `EEXIST`/`ENOENT` (quirk b).
#[inline]
pub(crate) fn upsert(epfd: RawFd, fd: RawFd, events: u32, data: u64, fresh: bool) -> io::Result<()> {
    let (first, second, retry_on) = if fresh {
        (libc::EPOLL_CTL_ADD, libc::EPOLL_CTL_MOD, libc::EEXIST)
    } else {
        (libc::EPOLL_CTL_MOD, libc::EPOLL_CTL_ADD, libc::ENOENT)
    };
    match sys::epoll_ctl(epfd, first, fd, events, data) {
        Err(e) if e.raw_os_error() == Some(retry_on) => sys::epoll_ctl(epfd, second, fd, events, data),
        r => r,
    }
}

/// Re-arms a one-shot watch with `MOD`. A descriptor closed meanwhile (`EBADF`, or
/// `ENOENT` once the kernel dropped it) is not re-added: its number may belong to another
/// file by now.
pub(crate) fn rearm(epfd: RawFd, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
    match sys::epoll_ctl(epfd, libc::EPOLL_CTL_MOD, fd, events, data) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EBADF)) => Ok(()),
        r => r,
    }
}

/// Hand-off mode ([`Handoff::Epoll`]): re-activates from any thread the registration `data`
/// of `fd` that a wait delivered, with `EPOLL_CTL_MOD` (one-shot: the kernel disarmed it) or
/// `EPOLL_CTL_ADD` (level: [`Poller::deactivate`] deleted it). A descriptor gone meanwhile
/// (`EBADF`) has nothing to re-activate.
pub(crate) fn handoff_rearm(
    epfd: RawFd,
    (flags, add): (u32, bool),
    fd: RawFd,
    data: u64,
    interest: Interest,
) -> io::Result<()> {
    let events = sys::epoll_events(interest) | flags;
    if !add {
        return rearm(epfd, fd, events, data);
    }
    match upsert(epfd, fd, events, data, true) {
        Err(e) if e.raw_os_error() == Some(libc::EBADF) => Ok(()),
        r => r,
    }
}

/// Stops watching `fd` in `epfd`; a descriptor the kernel already dropped is fine (quirk c).
#[inline]
pub(crate) fn remove(epfd: RawFd, fd: RawFd) -> io::Result<()> {
    match sys::epoll_ctl(epfd, libc::EPOLL_CTL_DEL, fd, 0, 0) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EBADF)) => Ok(()),
        r => r,
    }
}

impl Poller for Epoll {
    fn capabilities(&self) -> Capabilities {
        // `epoll_wait` returns each ready item once per call.
        Capabilities { oneshot: self.mode == Mode::Oneshot, reports_once: true, ..Capabilities::PLAIN }
    }

    // Always: a call cost a third of it in register saves (E9's re-registration).
    #[inline(always)]
    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, arm: Arm) -> io::Result<()> {
        let events = sys::epoll_events(interest) | self.flags;
        match arm {
            Arm::Rearm => rearm(self.fd, fd, events, token),
            _ => upsert(self.fd, fd, events, token, arm == Arm::Fresh),
        }
    }

    #[inline]
    fn delete(&mut self, fd: RawFd, _token: u64) -> io::Result<()> {
        remove(self.fd, fd)
    }

    fn handoff(&mut self) -> Option<Handoff> {
        Some(match self.mode {
            Mode::Edge => Handoff::Edge,
            Mode::Level | Mode::Oneshot => Handoff::Epoll {
                epfd: Arc::clone(&self.epfd),
                flags: self.flags,
                add: self.mode == Mode::Level,
            },
        })
    }

    fn deactivate(&mut self, fd: RawFd, _token: u64) {
        if self.mode == Mode::Level {
            // Quirk f. A failure means the descriptor is gone, which deactivates it too.
            let _ = remove(self.fd, fd);
        }
    }

    fn wait(&mut self, out: &mut Vec<Ready>, max: usize, timeout: Option<Duration>) -> io::Result<()> {
        let got = self.wait_raw(max, sys::timeout_ms(timeout))?;
        out.extend(
            got.iter().map(|ev| Ready { token: ev.u64, state: crate::event::state_from_epoll(ev.events) }),
        );
        Ok(())
    }
}

impl Epoll {
    /// One `epoll_wait` for at most `max` (taken as 1 to [`WAIT_MAX`]) reports: the
    /// kernel's own records, which the queue's common path turns into the caller's events in
    /// place.
    #[inline(always)]
    pub(crate) fn wait_raw(
        &mut self,
        max: usize,
        timeout_ms: libc::c_int,
    ) -> io::Result<&[libc::epoll_event]> {
        let max = max.clamp(1, WAIT_MAX);
        let n = sys::epoll_wait(self.fd, &mut self.buf[..max], timeout_ms)?;
        Ok(&self.buf[..n.min(max)])
    }

    /// The reports of the last wait from `from` on (`from..got` of [`Epoll::wait_raw`]'s answer).
    pub(crate) fn reports(&self, from: usize, got: usize) -> &[libc::epoll_event] {
        &self.buf[from..got]
    }

    /// One `epoll_wait` straight into the caller's array (at most [`WAIT_MAX`] reports):
    /// returns how many the kernel wrote. Each record is its event where it lies (the
    /// layouts agree, [`IN_PLACE`], and an event keeps the kernel's bits) once its token is
    /// checked; read them through [`report_in`] (any bytes are a valid `Event`).
    #[inline(always)]
    pub(crate) fn wait_into(&mut self, events: &mut [Event], timeout_ms: libc::c_int) -> io::Result<usize> {
        if !IN_PLACE {
            // Never called there (the queue checks `IN_PLACE` first); the kernel's records
            // would not fit.
            return Err(io::ErrorKind::Unsupported.into());
        }
        let max = events.len().min(WAIT_MAX) as libc::c_int;
        // SAFETY: `events` is exclusively borrowed and at least `max` records long (an
        // `Event` is an `epoll_event`'s 12 bytes, of alignment 4 where the kernel's needs 1),
        // and every bit pattern the kernel writes is a valid `Event` (three 32-bit integers).
        let n = unsafe { libc::epoll_wait(self.fd, events.as_mut_ptr().cast(), max, timeout_ms) };
        sys::cvt(n).map(|n| n as usize)
    }
}

/// True where an [`Event`] is an `epoll_event` with a registration's token (x86-64, where
/// the kernel's record is packed): the kernel's `events` where the event's bits go, then the
/// token's low half (the descriptor) and high half (the generation). Only then does
/// [`Epoll::wait_into`] run; elsewhere the reports go through the set's own buffer.
pub(crate) const IN_PLACE: bool = std::mem::size_of::<Event>() == std::mem::size_of::<libc::epoll_event>()
    && std::mem::offset_of!(Event, bits) == 0
    && std::mem::offset_of!(Event, fd) == 4
    && std::mem::offset_of!(Event, gen) == 8
    && std::mem::align_of::<Event>() >= std::mem::align_of::<libc::epoll_event>()
    && cfg!(target_endian = "little");

/// The kernel's record at `i` of an array [`Epoll::wait_into`] filled: read through a raw
/// pointer, so that events may be written at `i` and below meanwhile.
///
/// # Safety
/// `events` points to an array of more than `i` records, and record `i` is as the kernel
/// wrote it (not yet overwritten with an event).
#[inline(always)]
pub(crate) unsafe fn report_in(events: *const Event, i: usize) -> libc::epoll_event {
    // SAFETY: in bounds by the caller's promise; an `epoll_event` may be read from any
    // address (it is packed) and from any bytes (integers).
    unsafe { events.add(i).cast::<libc::epoll_event>().read_unaligned() }
}
