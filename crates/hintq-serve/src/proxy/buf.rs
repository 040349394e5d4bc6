//! Fixed-size relay buffers and the per-thread pool they come from.
//!
//! Every byte the proxy holds sits in a [`Buf`] of [`BUF_SIZE`] bytes: the client's input,
//! the upstream's input, and what waits to be written to each. Reads ask for at most the
//! room left, body data is decoded only into the room the other side's buffer has, and
//! interest in reading is declared only while there is room: a fast sender is slowed to
//! the pace of a slow receiver by TCP itself, never by growing memory. A connection that is
//! idle between requests gives its buffers back, so an idle client costs no buffer at all.

use crate::sys::{read_into_at_most, send_now, Read};
use hintq_patterns::Fds;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Size of every relay buffer. It must hold a whole request or response head
/// (`Limits::max_head`, 16 KiB) plus the lines the proxy adds. 64 KiB: a large body leaves in
/// half the sends (each a completion and a pass of the session) 32 KiB took, and is at most
/// what the ring keeps for reuse (its `POOL_BUF_MAX`) and what its receive holds for one
/// connection before it stops (`INBOX_MAX`), so one take empties it.
pub const BUF_SIZE: usize = 64 * 1024;

/// Buffers kept for reuse per thread; more are freed.
const POOL_KEEP: usize = 256;

/// The capacity asked for each splice pipe. 256 KiB: a 256 KiB body crosses in one splice
/// in and one out when the sockets keep up, and what a stalled client holds in the kernel
/// is bounded by it (plus the two socket buffers). The kernel may give less (a user past
/// `/proc/sys/fs/pipe-user-pages-soft` gets small pipes): the capacity it gives is used.
pub const PIPE_SIZE: usize = 256 * 1024;

/// Empty pipes kept for reuse per thread; more are closed.
const PIPES_KEEP: usize = 64;

/// A pipe a response body is spliced through (upstream socket → pipe → client socket), with
/// the count of bytes in it. The bytes stay in the kernel; the session only counts them.
#[derive(Debug)]
pub(crate) struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
    /// Bytes in the pipe, spliced in and not yet out.
    pub(crate) len: usize,
    /// What it can hold ([`PIPE_SIZE`], or what the kernel gave).
    pub(crate) cap: usize,
    /// A splice in found it full before `cap` (its slots hold partial pages): nothing more
    /// goes in until some has gone out.
    pub(crate) full: bool,
    /// The upstream's socket was tried since the splice began: until then it is tried
    /// whatever its last report said (the session's `splice_in` says why).
    pub(crate) tried: bool,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let (r, w) = hintq_sys::pipe()?;
        let cap = hintq_sys::set_pipe_size(w.as_raw_fd(), PIPE_SIZE)
            .or_else(|_| hintq_sys::pipe_size(w.as_raw_fd()))?;
        Ok(Pipe { r, w, len: 0, cap, full: false, tried: false })
    }

    /// Room for another splice in.
    pub(crate) fn room(&self) -> usize {
        if self.full {
            0
        } else {
            self.cap.saturating_sub(self.len)
        }
    }

    /// Splices at most `max` bytes from socket `fd` into the pipe: `Ok(0)` at the end of the
    /// socket's stream; `WouldBlock` when the socket has nothing now, or when the pipe,
    /// holding bytes, took none (then [`Pipe::full`] is set).
    pub(crate) fn fill_from(&mut self, fd: RawFd, max: usize) -> io::Result<usize> {
        let want = max.min(self.room());
        match hintq_sys::splice(fd, self.w.as_raw_fd(), want) {
            Ok(n) => {
                self.len += n;
                Ok(n)
            }
            Err(e) => {
                if e.kind() == io::ErrorKind::WouldBlock && self.len > 0 {
                    self.full = true;
                }
                Err(e)
            }
        }
    }

    /// Splices what the pipe holds into socket `fd`; returns how many bytes left.
    pub(crate) fn drain_to(&mut self, fd: RawFd) -> io::Result<usize> {
        let n = hintq_sys::splice(self.r.as_raw_fd(), fd, self.len)?;
        self.len -= n;
        if n > 0 {
            self.full = false;
        }
        Ok(n)
    }
}

/// A byte queue: data is `v[start..]`; writes append at the end, reads consume the front.
#[derive(Debug, Default)]
pub(crate) struct Buf {
    v: Vec<u8>,
    start: usize,
    /// While pinned, consumed bytes are kept so [`Buf::rewind`] can send them again.
    pinned: bool,
}

impl Buf {
    pub(crate) fn data(&self) -> &[u8] {
        &self.v[self.start..]
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.start == self.v.len()
    }

    fn allocated(&self) -> bool {
        self.v.capacity() > 0
    }

    pub(crate) fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.v.len() && !self.pinned {
            self.v.clear();
            self.start = 0;
        }
    }

    /// Drops everything, pinned bytes included.
    pub(crate) fn clear(&mut self) {
        self.v.clear();
        self.start = 0;
        self.pinned = false;
    }

    /// Keeps consumed bytes until [`Buf::unpin`] (for a retry).
    pub(crate) fn pin(&mut self) {
        self.pinned = true;
    }

    pub(crate) fn unpin(&mut self) {
        self.pinned = false;
        self.consume(0);
    }

    /// Makes the consumed (pinned) bytes pending again.
    pub(crate) fn rewind(&mut self) {
        self.start = 0;
    }

    /// Free space at the end, after moving pending bytes to the front when that helps.
    /// Zero for a buffer not taken from the pool yet: call [`Pool::fill`] first.
    pub(crate) fn room(&mut self) -> usize {
        if self.start > 0 && !self.pinned && self.v.capacity() - self.v.len() < BUF_SIZE / 2 {
            self.v.drain(..self.start);
            self.start = 0;
        }
        BUF_SIZE.min(self.v.capacity()).saturating_sub(self.v.len())
    }

    /// Takes all of `other`'s bytes by exchanging buffers with it, without a copy, when
    /// `self` holds nothing (not even bytes pinned for a retry) and `other` pins nothing:
    /// `other` is left empty, with `self`'s buffer (or none), and the pool's count of buffers
    /// out is unchanged. False, and nothing changed, otherwise.
    pub(crate) fn take_whole(&mut self, other: &mut Buf) -> bool {
        if !self.is_empty() || self.pinned || other.pinned {
            return false;
        }
        std::mem::swap(self, other);
        other.v.clear();
        other.start = 0;
        true
    }

    /// The vector to append to (check [`Buf::room`] first).
    pub(crate) fn vec(&mut self) -> &mut Vec<u8> {
        &mut self.v
    }

    /// Reads from `fd` into the room left (never growing the buffer): what the queue received
    /// for it where it receives (io_uring, `Interest::RECEIVE`; what does not fit is reported
    /// again), else one `recv`.
    pub(crate) fn read_from(&mut self, fds: &mut Fds<'_>, fd: RawFd, max: usize) -> io::Result<Read> {
        let room = self.room().min(max);
        if room == 0 {
            return Ok(Read::Again);
        }
        match fds.ring_io().and_then(|mut r| r.take_received(fd, &mut self.v, room)) {
            Some(Ok(0)) => Ok(Read::Eof),
            // Taken whole or up to the room: the rest, and what comes next, come as events.
            Some(Ok(n)) => Ok(Read::Data { n, short: true }),
            Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => Ok(Read::Again),
            Some(Err(e)) => Err(e),
            None => read_into_at_most(fd, &mut self.v, room),
        }
    }

    /// Writes pending bytes to `fd`; returns how many left.
    pub(crate) fn write_to(&mut self, fd: RawFd) -> io::Result<usize> {
        let n = send_now(fd, self.data())?;
        self.consume(n);
        Ok(n)
    }
}

/// The per-thread pool of [`BUF_SIZE`] buffers and of splice [`Pipe`]s, with the counters
/// the memory-bound tests read.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    free: Vec<Vec<u8>>,
    pipes: Vec<Pipe>,
    /// Pipes taken and not given back.
    pub(crate) pipes_out: usize,
    /// The most pipes ever out at once.
    pub(crate) peak_pipes: usize,
    /// Buffers taken and not given back.
    pub(crate) out: usize,
    /// The most ever out at once.
    pub(crate) peak_out: usize,
    /// The most bytes ever held in one buffer.
    pub(crate) peak_len: usize,
}

impl Pool {
    /// Gives `b` a buffer if it has none.
    pub(crate) fn fill(&mut self, b: &mut Buf) {
        if !b.allocated() {
            b.v = self.free.pop().unwrap_or_else(|| Vec::with_capacity(BUF_SIZE));
            self.out += 1;
            self.peak_out = self.peak_out.max(self.out);
        }
    }

    /// Notes how full `b` is (for the peak), and takes its buffer back if it is empty.
    /// Inlined: a session's four buffers are settled after each of its pumps, about a dozen
    /// calls a proxied request, most of which find nothing to do.
    #[inline]
    pub(crate) fn settle(&mut self, b: &mut Buf) {
        self.peak_len = self.peak_len.max(b.v.len());
        if b.allocated() && b.is_empty() && !b.pinned {
            self.put(std::mem::take(&mut b.v));
            b.start = 0;
        }
    }

    /// Takes `b`'s buffer back whatever it holds.
    pub(crate) fn release(&mut self, b: &mut Buf) {
        b.clear();
        if b.allocated() {
            self.put(std::mem::take(&mut b.v));
        }
    }

    /// The bytes of `b` for a send of the queue's ring, and whether `b` gave its buffer for
    /// them. When the bytes fill `b`'s buffer from its start (nothing consumed, nothing
    /// pinned for a retry), the buffer itself goes, without a copy, and `b` gets `spare` (the
    /// ring's cleared buffer from [`hintq::RingIo::send_buffer`]) if it is of this pool's size, else one
    /// of the pool's; `b` is then empty, and still counts as holding one buffer. Otherwise the
    /// bytes are copied into `spare` and `b` is unchanged (consume them once the ring took
    /// them). [`Pool::take_back`] undoes a hand-off the ring refused.
    pub(crate) fn hand_off(&mut self, b: &mut Buf, mut spare: Vec<u8>) -> (Vec<u8>, bool) {
        if b.start == 0 && !b.pinned && !b.v.is_empty() && b.v.capacity() == BUF_SIZE {
            let fresh = if spare.capacity() == BUF_SIZE {
                spare.clear();
                spare
            } else {
                self.free.pop().unwrap_or_else(|| Vec::with_capacity(BUF_SIZE))
            };
            return (std::mem::replace(&mut b.v, fresh), true);
        }
        spare.extend_from_slice(b.data());
        (spare, false)
    }

    /// Gives `b` back the buffer [`Pool::hand_off`] took from it (the ring refused the send).
    pub(crate) fn take_back(&mut self, b: &mut Buf, data: Vec<u8>) {
        let fresh = std::mem::replace(&mut b.v, data);
        if self.free.len() < POOL_KEEP && fresh.capacity() == BUF_SIZE {
            self.free.push(fresh);
        }
    }

    /// An empty pipe, reused or new.
    ///
    /// # Errors
    /// Making a new one (`EMFILE`, ...): the caller relays by copying instead.
    pub(crate) fn pipe(&mut self) -> io::Result<Pipe> {
        let p = match self.pipes.pop() {
            Some(p) => p,
            None => Pipe::new()?,
        };
        self.pipes_out += 1;
        self.peak_pipes = self.peak_pipes.max(self.pipes_out);
        Ok(p)
    }

    /// Takes a pipe back: kept for reuse when empty, else closed (its bytes are dropped).
    pub(crate) fn put_pipe(&mut self, p: Pipe) {
        self.pipes_out -= 1;
        if p.len == 0 && self.pipes.len() < PIPES_KEEP {
            self.pipes.push(Pipe { full: false, tried: false, ..p });
        }
    }

    fn put(&mut self, mut v: Vec<u8>) {
        self.out -= 1;
        if self.free.len() < POOL_KEEP && v.capacity() == BUF_SIZE {
            v.clear();
            self.free.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(pool: &mut Pool, bytes: &[u8]) -> Buf {
        let mut b = Buf::default();
        pool.fill(&mut b);
        b.vec().extend_from_slice(bytes);
        b
    }

    /// A buffer whose bytes start at its start goes to the ring itself, not a copy; the
    /// connection keeps a buffer of the pool's size and the count of buffers out stays.
    #[test]
    fn a_whole_buffer_is_handed_over_not_copied() {
        let mut pool = Pool::default();
        let mut b = filled(&mut pool, b"response");
        let at = b.data().as_ptr();
        let (out, whole) = pool.hand_off(&mut b, Vec::new());
        assert!(whole);
        assert_eq!((out.as_ptr(), &out[..]), (at, &b"response"[..]), "the buffer itself");
        assert!(b.is_empty() && b.room() == BUF_SIZE && pool.out == 1);
        // The ring refused it: the bytes are back where they were, and nothing leaked.
        pool.take_back(&mut b, out);
        assert_eq!(b.data(), b"response");
        assert_eq!((pool.out, pool.free.len()), (1, 1));
        // A spare of the pool's size is used in place of one of the pool's.
        let (out, _) = pool.hand_off(&mut b, Vec::with_capacity(BUF_SIZE));
        assert_eq!((pool.free.len(), out.len()), (1, 8));
    }

    /// A relay takes all of a buffer's bytes by exchanging buffers, not copying: the bytes
    /// keep their address, the source is left empty with a buffer of its own, the count of
    /// buffers out stays; a destination holding bytes, or pinned ones, takes nothing.
    #[test]
    fn a_whole_buffer_changes_hands_without_a_copy() {
        let mut pool = Pool::default();
        let mut src = filled(&mut pool, b"headbody");
        src.consume(4);
        let at = src.data().as_ptr();
        let mut dst = Buf::default();
        pool.fill(&mut dst);
        assert!(dst.take_whole(&mut src));
        assert_eq!((dst.data(), dst.data().as_ptr()), (&b"body"[..], at));
        assert!(src.is_empty() && src.room() == BUF_SIZE && pool.out == 2);
        let mut more = filled(&mut pool, b"more");
        assert!(!dst.take_whole(&mut more), "dst holds bytes");
        assert_eq!((dst.data(), more.data()), (&b"body"[..], &b"more"[..]));
        let mut pinned = filled(&mut pool, b"request");
        pinned.pin();
        pinned.consume(7);
        assert!(pinned.is_empty() && !pinned.take_whole(&mut more), "pinned bytes are kept");
        assert_eq!(more.data(), b"more");
    }

    /// Bytes after a consumed part, or pinned for a retry, are copied: the buffer stays.
    #[test]
    fn a_partly_consumed_or_pinned_buffer_is_copied() {
        let mut pool = Pool::default();
        let mut b = filled(&mut pool, b"xxresponse");
        b.consume(2);
        let (out, whole) = pool.hand_off(&mut b, Vec::new());
        assert_eq!((&out[..], whole, b.data()), (&b"response"[..], false, &b"response"[..]));
        let mut b = filled(&mut pool, b"request");
        b.pin();
        let (out, whole) = pool.hand_off(&mut b, Vec::new());
        assert_eq!((&out[..], whole, b.data()), (&b"request"[..], false, &b"request"[..]));
    }
}
