//! Waking a queue from another thread.

use crate::sys;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Where a signal-based backend (`rtsig`) wants its wake-ups: a thread id (kept current when the
/// queue moves to another thread) and a signal number.
#[derive(Clone, Debug)]
pub(crate) struct WakeSignal {
    pub tid: std::sync::Arc<std::sync::atomic::AtomicI32>,
    pub signo: libc::c_int,
}

/// Wakes the [`crate::Queue`] it came from: its blocked (or next) `get_next_event` returns,
/// with `Ok(0)` if nothing else was pending. Wake-ups before the queue waits again are merged
/// into one. Cheap to clone; `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Waker {
    how: How,
}

#[derive(Clone, Debug)]
enum How {
    /// An eventfd the queue's backend watches.
    EventFd(Arc<OwnedFd>),
    /// A thread-directed signal, for `rtsig`, whose signals cannot watch an eventfd.
    Signal(WakeSignal),
}

impl Waker {
    pub(crate) fn eventfd(fd: Arc<OwnedFd>) -> Waker {
        Waker { how: How::EventFd(fd) }
    }

    pub(crate) fn signal(sig: WakeSignal) -> Waker {
        Waker { how: How::Signal(sig) }
    }

    /// Wakes the queue. Waking a queue that was dropped does nothing.
    ///
    /// # Errors
    /// Writing the eventfd failed for a reason other than a full counter, or the signal
    /// could not be sent (the queue's thread has exited: `ESRCH`).
    pub fn wake(&self) -> io::Result<()> {
        match &self.how {
            How::EventFd(fd) => sys::eventfd_signal(fd),
            How::Signal(s) => {
                let mut tid = s.tid.load(Ordering::Acquire);
                loop {
                    if tid == 0 {
                        return Ok(()); // the queue is gone (see the rtsig backend's drop)
                    }
                    match sys::tgkill(tid, s.signo) {
                        // The queue was dropped (or moved) and its thread exited between the
                        // load and the signal: wake where it is now, if anywhere.
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                            let now = s.tid.load(Ordering::Acquire);
                            if now == tid {
                                return Err(e);
                            }
                            tid = now;
                        }
                        r => return r,
                    }
                }
            }
        }
    }
}
