//! Waking a queue from another thread.

use crate::sys;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// Wakes the [`crate::Queue`] it came from: its blocked (or next) `get_next_event` returns,
/// with `Ok(0)` if nothing else was pending. Wake-ups before the queue waits again are merged
/// into one. Cheap to clone; `Send + Sync`.
#[derive(Clone, Debug)]
pub struct Waker {
    fd: Arc<OwnedFd>,
}

impl Waker {
    pub(crate) fn new(fd: Arc<OwnedFd>) -> Waker {
        Waker { fd }
    }

    /// Wakes the queue.
    ///
    /// # Errors
    /// Only if writing the eventfd fails for a reason other than a full counter.
    pub fn wake(&self) -> io::Result<()> {
        sys::eventfd_signal(&self.fd)
    }
}
