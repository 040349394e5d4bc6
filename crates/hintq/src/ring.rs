//! The io_uring ring's own I/O ([`RingIo`]): sends, and receives into the ring's buffers.
//! No other backend does I/O, so none of it is in the backend trait: a [`crate::Queue`]
//! whose backend is io_uring hands out this view ([`crate::Queue::ring_io`]), and the
//! runtime passes it on unchanged to the servers.

use crate::backend::uring::Uring;
use crate::slots::{generation, Slot};
use crate::token::token;
use std::fmt;
use std::io;
use std::os::fd::RawFd;

/// The io_uring ring of a [`crate::Queue`], for the I/O the ring makes itself: sends
/// ([`RingIo::send`]), and receives into the ring's buffers ([`RingIo::take_received`]) of
/// the descriptors the queue watches. Borrowed from the queue ([`crate::Queue::ring_io`])
/// for as long as it is used; a descriptor is named by its number and must have a live
/// registration in the queue.
///
/// Numbers (`RawFd`), not `BorrowedFd`s, in every call: each acts on a registration, not on
/// a file the caller lends now. The borrow was lent to [`crate::Queue::declare`] and lasts
/// until the revoke (which the caller makes before closing); a number without a live
/// registration is answered `None` or `NotFound`, whatever file it names. So a handler given
/// a number (hintq-patterns) can ask, and a closing connection can ask [`RingIo::sending`].
pub struct RingIo<'q> {
    ring: &'q mut Uring,
    slots: &'q [Slot],
    handoff: bool,
}

/// The ring's send buffers over 64 KiB ([`RingIo::send_buffers`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SendBuffers {
    /// Allocated, or grown, by [`RingIo::send_buffer_for`] since the queue was made: not
    /// found among those kept.
    pub made: u64,
    /// Kept for reuse now.
    pub kept: usize,
    /// Their capacity together (16 MiB at most).
    pub kept_bytes: usize,
}

/// A send the ring did not take ([`RingIo::send`]): why, and the buffer back.
pub struct SendError {
    error: io::Error,
    buf: Vec<u8>,
}

impl SendError {
    fn new(error: io::Error, buf: Vec<u8>) -> SendError {
        SendError { error, buf }
    }

    /// Why the send was not taken.
    pub fn error(&self) -> &io::Error {
        &self.error
    }

    /// Its [`io::ErrorKind`].
    pub fn kind(&self) -> io::ErrorKind {
        self.error.kind()
    }

    /// The error and the buffer given to the send, unchanged.
    pub fn into_parts(self) -> (io::Error, Vec<u8>) {
        (self.error, self.buf)
    }

    /// The buffer given to the send, unchanged.
    pub fn into_buf(self) -> Vec<u8> {
        self.buf
    }
}

impl fmt::Debug for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendError").field("error", &self.error).field("len", &self.buf.len()).finish()
    }
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "send of {} bytes not taken: {}", self.buf.len(), self.error)
    }
}

impl std::error::Error for SendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<SendError> for io::Error {
    fn from(e: SendError) -> io::Error {
        e.error
    }
}

impl<'q> RingIo<'q> {
    pub(crate) fn new(ring: &'q mut Uring, slots: &'q [Slot], handoff: bool) -> RingIo<'q> {
        RingIo { ring, slots, handoff }
    }

    /// What the ring received for `fd` ([`crate::Interest::RECEIVE`]), at most `max` bytes
    /// of it, appended to `buf` (moved into it, without a copy, when `buf` has no capacity
    /// yet); what is left over is reported again as an event: `Some(Ok(n))` with `n > 0`
    /// bytes, `Some(Ok(0))` at the end of the stream, `Some(Err(WouldBlock))` when nothing
    /// came since the last call, `Some(Err(e))` when the receive failed (`ECONNRESET`).
    /// `None` when the ring does not receive for `fd` (a kernel without multishot receive,
    /// [`crate::Builder::uring_receives`]`(false)`, hand-off mode, or `WRITE` in the interest
    /// for now): read from the descriptor yourself. Bytes the ring received before the
    /// interest changed are still handed out here first.
    ///
    /// The data is received in the ring by the kernel entry that waits for events, and
    /// taking it makes no system call; a registration whose bytes are not taken stops
    /// receiving at 64 KiB until they are, so a fast sender is held back by TCP.
    pub fn take_received(&mut self, fd: RawFd, buf: &mut Vec<u8>, max: usize) -> Option<io::Result<usize>> {
        let gen = generation(self.slots, fd)?;
        self.ring.take_received(fd, token(fd, gen), buf, max)
    }

    /// True if the ring receives for `fd` now ([`RingIo::take_received`] answers for it).
    /// Revoking a registration drops what was received and not taken, as closing a socket
    /// drops its unread bytes: an application that stops reading for a while (its buffer is
    /// full) keeps the interest while receiving, and the inbox, stopped at 64 KiB, holds the
    /// sender back instead.
    pub fn receiving(&self, fd: RawFd) -> bool {
        generation(self.slots, fd).is_some_and(|gen| self.ring.receiving(fd, token(fd, gen)))
    }

    /// True if the ring makes sends ([`RingIo::send`]): a kernel with `IORING_OP_SEND`,
    /// unless [`crate::Builder::uring_sends`]`(false)`; never in hand-off mode.
    pub fn can_send(&self) -> bool {
        !self.handoff && self.ring.sends()
    }

    /// Has the kernel send all of `buf` on `fd`, which the queue watches. The send is queued
    /// in the ring and made by the next `get_next_event`'s kernel entry, together with
    /// every other send queued meanwhile and the wait for readiness: one system call for a
    /// batch of replies. A send that succeeds is silent (its buffer is kept for
    /// [`RingIo::send_buffer`]) unless [`RingIo::sending`] asked to hear of it; one that
    /// fails is reported as an event of `fd`'s registration with
    /// `State::SENT | State::ERR`, and [`RingIo::send_error`] says why.
    ///
    /// One send per descriptor is in flight at a time, so bytes leave in the order they
    /// were given. The ring owns the buffer meanwhile; revoking interest in `fd` cancels
    /// the send (the socket can then really close, but what was not sent is lost: a
    /// connection that closes after its last reply waits until [`RingIo::sending`] is false).
    ///
    /// # Errors
    /// `Unsupported` when the ring cannot send ([`RingIo::can_send`]); `NotFound` if `fd`
    /// has no live registration in the queue; `WouldBlock` while a send of `fd` is in
    /// flight; the failure of `fd`'s previous send if it failed and was not taken; ring
    /// errors. The buffer comes back with the error.
    pub fn send(&mut self, fd: RawFd, buf: Vec<u8>) -> Result<(), SendError> {
        if !self.can_send() {
            return Err(SendError::new(io::Error::from(io::ErrorKind::Unsupported), buf));
        }
        let Some(gen) = generation(self.slots, fd) else {
            return Err(SendError::new(
                io::Error::new(io::ErrorKind::NotFound, "descriptor not registered"),
                buf,
            ));
        };
        self.ring.send(fd, token(fd, gen), buf).map_err(|(e, buf)| SendError::new(e, buf))
    }

    /// True while a send of `fd` ([`RingIo::send`]) is in flight. Asking arms a report: its
    /// completion, success or failure, comes as an event with [`crate::State::SENT`].
    pub fn sending(&mut self, fd: RawFd) -> bool {
        generation(self.slots, fd).is_some_and(|gen| self.ring.sending(fd, token(fd, gen)))
    }

    /// Why `fd`'s last send failed (`EPIPE`, `ECONNRESET`: the peer is gone; `WriteZero`:
    /// only part was sent), once; `None` if it did not fail or is in flight.
    pub fn send_error(&mut self, fd: RawFd) -> Option<io::Error> {
        let gen = generation(self.slots, fd)?;
        self.ring.send_error(fd, token(fd, gen))
    }

    /// An empty buffer to fill and give to [`RingIo::send`]: one of a completed send when
    /// the ring kept it, so that replies cost no allocation.
    pub fn send_buffer(&mut self) -> Vec<u8> {
        self.ring.send_buffer()
    }

    /// An empty buffer that holds `len` bytes without growing, to fill and give to
    /// [`RingIo::send`]: for a reply over 64 KiB (a large file), one the ring kept from an
    /// earlier send of about that size when it has one, so that large replies are not
    /// allocated and freed on every send. The ring keeps such buffers up to 4 MiB each and
    /// 16 MiB in all, per queue ([`RingIo::send_buffers`] counts them).
    pub fn send_buffer_for(&mut self, len: usize) -> Vec<u8> {
        self.ring.send_buffer_for(len)
    }

    /// The ring's large send buffers (over 64 KiB): how many were allocated or grown, and
    /// what it keeps now.
    pub fn send_buffers(&self) -> SendBuffers {
        let (made, kept, kept_bytes) = self.ring.large_send_buffers();
        SendBuffers { made, kept, kept_bytes }
    }
}

impl fmt::Debug for RingIo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingIo").field("can_send", &self.can_send()).finish_non_exhaustive()
    }
}
