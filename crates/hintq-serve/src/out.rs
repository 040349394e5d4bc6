//! [`Out`]: a connection's output queue, responses in request order. Bytes (copied or
//! shared) go out gathered in one `sendmsg(MSG_NOSIGNAL)` (a vanished peer gives `EPIPE`,
//! never a `SIGPIPE`, row S18), file ranges with `sendfile(2)`; a head followed by a file is
//! sent with `MSG_MORE` so that the two leave in one segment where they fit. Bytes can also be
//! given to the queue's ring to send ([`Out::flush_via`]).

use crate::sys::retry;
use hintq_patterns::Fds;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// One queued piece of output.
#[derive(Debug)]
enum Item {
    /// Bytes, of which the first `.1` are sent.
    Bytes(Vec<u8>, usize),
    /// Shared bytes `[.1, .2)` (a cached file's body), sent from where they are.
    Shared(Arc<[u8]>, usize, usize),
    /// A file range `[off, end)`, sent with `sendfile`.
    File { file: Arc<OwnedFd>, off: i64, end: i64 },
}

/// Most pieces gathered into one `sendmsg` (well under `IOV_MAX`).
const GATHER: usize = 32;

/// A connection's output: byte runs, shared bytes and file ranges, sent in the order they
/// were queued. Everything up to the next file range leaves in one gathered `sendmsg`, so a
/// head and a small body, or a pipelined batch of responses, cost one system call.
#[derive(Debug, Default)]
pub struct Out {
    items: VecDeque<Item>,
    /// A cleared buffer kept for the next response (no allocation per request).
    spare: Vec<u8>,
    /// Bytes of this output were given to the queue's ring ([`Out::flush_via`]) and may not
    /// be sent yet.
    in_ring: bool,
    /// [`Out::settled`] found the ring's send still in flight and asked for its completion:
    /// until it comes the connection waits on its peer to take bytes ([`Out::stalled`]).
    awaited: bool,
}

/// What [`Out::flush`] achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flushed {
    /// Everything queued is sent, or given to the ring.
    pub done: bool,
    /// Some bytes left (for send timeouts: progress resets the clock).
    pub progress: bool,
    /// Not done because a send of the ring is in flight: its completion calls the handler
    /// (no need to wait for writability).
    pub ring: bool,
}

thread_local! {
    /// Cleared response buffers of connections gone idle ([`Out::release`]), for the next
    /// connection's response on this thread.
    static SPARES: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

thread_local! {
    /// Emptied piece queues of connections gone idle ([`Out::release`]).
    static QUEUES: std::cell::RefCell<Vec<VecDeque<Item>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The largest piece queue [`QUEUES`] keeps (pipelining bounds the pieces queued).
const MAX_KEPT_ITEMS: usize = 64;

/// How many buffers [`SPARES`] (and [`QUEUES`]) keeps: enough for the connections one wait returns at once.
const SPARES_KEPT: usize = 64;
/// The largest buffer the pool keeps (a head and a small body fit many times over).
const SPARE_MAX: usize = 16 * 1024;
/// The largest send the ring's small buffers hold ([`hintq::RingIo::send_buffer`]); a larger
/// one asks the ring for a buffer of its size ([`hintq::RingIo::send_buffer_for`]).
const RING_SMALL: usize = 64 * 1024;
/// On io_uring, a response whose file range is at most this many bytes is sent at once, head
/// and file (`Out::flush`), not head by the ring and file after its completion.
/// `crates/hintq-serve/bench/sizes-vs-nginx.sh` (KINDS=static RUNS=3 DUR=3, 2026-11-28), CPU
/// per request ÷ nginx's, by the ring then at once: 64 KiB 0.88 / 0.75, 256 KiB 1.13 / 1.72,
/// 1 MiB 1.00 / 1.41.
const DIRECT_FILE_MAX: i64 = 128 * 1024;

impl Out {
    /// For a connection going idle with nothing queued: gives its spare buffer to the
    /// thread's pool and its queue's memory back, so that an idle connection holds no
    /// buffer (a busy one takes a buffer from the pool, allocating none per request).
    pub fn release(&mut self) {
        if !self.items.is_empty() {
            return;
        }
        if self.items.capacity() > 0 {
            let q = std::mem::take(&mut self.items);
            QUEUES.with_borrow_mut(|pool| {
                (pool.len() < SPARES_KEPT && q.capacity() <= MAX_KEPT_ITEMS).then(|| pool.push(q))
            });
        }
        if self.spare.capacity() > 0 {
            let b = std::mem::take(&mut self.spare);
            SPARES.with_borrow_mut(|pool| {
                if pool.len() < SPARES_KEPT && b.capacity() <= SPARE_MAX {
                    pool.push(b);
                }
            });
        }
    }

    /// Nothing left to send, nor possibly in flight in the ring.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && !self.in_ring
    }

    /// Whether bytes given to the ring may still be in flight (until [`Out::settled`] says).
    pub fn in_ring(&self) -> bool {
        self.in_ring
    }

    /// The output waits on the peer to take bytes (the send timeout's case): some are queued
    /// here, or [`Out::settled`] found the ring's send still in flight. Bytes given to the
    /// ring and not asked about since are not counted: a send that succeeds is silent, so
    /// whether they left is known only by asking ([`Out::settled`]).
    pub fn stalled(&self) -> bool {
        !self.items.is_empty() || self.awaited
    }

    /// True once nothing of this output is in flight in the ring; otherwise asks for the
    /// send's completion to call the handler.
    ///
    /// # Errors
    /// The ring's send failed (the peer is gone).
    pub fn settled(&mut self, fds: &mut Fds<'_>, fd: RawFd) -> io::Result<bool> {
        if !self.in_ring {
            return Ok(true);
        }
        // Bytes went to the ring, so the queue has one.
        let Some(mut ring) = fds.ring_io() else {
            (self.in_ring, self.awaited) = (false, false);
            return Ok(true);
        };
        if ring.sending(fd) {
            self.awaited = true;
            return Ok(false);
        }
        (self.in_ring, self.awaited) = (false, false);
        match ring.send_error(fd) {
            Some(e) => Err(e),
            None => Ok(true),
        }
    }

    /// [`Out::flush`], with the byte pieces given to the queue's ring when the connection
    /// can send that way ([`hintq::RingIo::can_send`]): copied into one buffer that the thread's next
    /// wait sends together with the other connections' replies (one system call for the
    /// batch). A response with a file range of at most `DIRECT_FILE_MAX` bytes is sent at
    /// once instead ([`Out::flush`]: head with `MSG_MORE`, then `sendfile`); a larger file range
    /// waits for the ring's send before it, then goes by `sendfile`.
    /// `done` then means given to the ring, not yet sent: a connection that closes after
    /// its reply waits for [`Out::settled`].
    ///
    /// # Errors
    /// As [`Out::flush`], and the ring's send failing.
    pub fn flush_via(&mut self, fds: &mut Fds<'_>, fd: RawFd) -> io::Result<Flushed> {
        if self.items.is_empty() || !fds.ring_io().is_some_and(|r| r.can_send()) {
            // Nothing new to send: what the ring has in flight is not waited for (that
            // would ask for a completion event, and stop the caller reading, for nothing).
            return self.flush(fd);
        }
        let waiting = Flushed { done: false, progress: false, ring: true };
        if !self.settled(fds, fd)? {
            return Ok(waiting);
        }
        // A file range of at most DIRECT_FILE_MAX bytes queued: everything goes by `flush`
        // now, the head with `MSG_MORE` and the file by `sendfile` in the same pass, as on
        // epoll, where given to the ring the head made the file wait for its send's
        // completion. Larger files keep that wait: sent at once they cost more (below).
        let file = self.items.iter().find_map(|i| match i {
            Item::File { off, end, .. } => Some(end - off),
            _ => None,
        });
        if file.is_some_and(|n| n <= DIRECT_FILE_MAX) {
            return self.flush(fd);
        }
        if !matches!(self.items.front(), Some(Item::Bytes(..) | Item::Shared(..))) {
            return self.flush(fd);
        }
        let Some(mut ring) = fds.ring_io() else { return self.flush(fd) };
        // What goes in this send: the pieces up to the first file range.
        let len: usize =
            self.items.iter().take_while(|i| !matches!(i, Item::File { .. })).map(Item::unsent).sum();
        let alone = matches!(self.items.front(), Some(Item::Bytes(b, 0)) if b.len() == len);
        // A large reply (a held file over 64 KiB) is gathered in a buffer the ring kept from
        // an earlier one of about its size, not one allocated (and freed) per send.
        let large = len > RING_SMALL && !alone;
        let mut buf = if large { ring.send_buffer_for(len) } else { ring.send_buffer() };
        if !alone {
            buf.reserve(len);
        }
        while let Some(item) = self.items.pop_front() {
            match item {
                // A whole run alone: it goes to the ring as it is (no copy), and the ring's
                // empty buffer becomes the spare for the next response. A head with a body
                // after it is copied into the ring's buffer instead, which the ring kept from
                // an earlier reply of about this size: grown to take the body, the head's
                // own small buffer was reallocated on every response (a cached 16 KiB file:
                // `realloc` and `malloc` about 3% of the server's CPU).
                Item::Bytes(b, 0) if buf.is_empty() && alone => {
                    let empty = std::mem::replace(&mut buf, b);
                    if self.spare.capacity() == 0 {
                        self.spare = empty;
                    }
                }
                Item::Bytes(mut b, sent) => {
                    buf.extend_from_slice(&b[sent..]);
                    if b.capacity() <= RING_SMALL {
                        b.clear();
                        self.spare = b;
                    }
                }
                Item::Shared(b, off, end) => buf.extend_from_slice(&b[off..end]),
                file @ Item::File { .. } => {
                    self.items.push_front(file);
                    break;
                }
            }
        }
        ring.send(fd, buf)?;
        self.in_ring = true;
        if self.items.is_empty() {
            return Ok(Flushed { done: true, progress: true, ring: false });
        }
        // A file range follows: it waits for this send, whose completion is asked for.
        ring.sending(fd);
        Ok(Flushed { progress: true, ..waiting })
    }

    /// Queued pieces (byte runs, shared bytes and files): bounds pipelining depth and open files.
    pub fn pieces(&self) -> usize {
        self.items.len()
    }

    /// Bytes queued in memory (file ranges not counted).
    pub fn queued_bytes(&self) -> usize {
        self.items.iter().map(Item::unsent).sum()
    }

    /// The byte run at the tail, to append a head or a small body to.
    pub fn buf(&mut self) -> &mut Vec<u8> {
        if !matches!(self.items.back(), Some(Item::Bytes(..))) {
            if self.spare.capacity() == 0 {
                self.spare = SPARES.with_borrow_mut(Vec::pop).unwrap_or_default();
            }
            let b = std::mem::take(&mut self.spare);
            self.push(Item::Bytes(b, 0));
        }
        let Some(Item::Bytes(b, _)) = self.items.back_mut() else { unreachable!("pushed above") };
        b
    }

    /// Queues a piece; the first one of a response takes a queue an idle connection gave back
    /// ([`Out::release`]) rather than allocating one.
    fn push(&mut self, item: Item) {
        if self.items.capacity() == 0 {
            self.items = QUEUES.with_borrow_mut(Vec::pop).unwrap_or_default();
        }
        self.items.push_back(item);
    }

    /// Appends bytes.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        self.buf().extend_from_slice(bytes);
    }

    /// Appends `len` bytes of `shared` from offset `off`, without copying them.
    pub fn push_shared(&mut self, shared: Arc<[u8]>, off: usize, len: usize) {
        if len > 0 {
            debug_assert!(off + len <= shared.len());
            self.push(Item::Shared(shared, off, off + len));
        }
    }

    /// Appends `len` bytes of `file` from offset `off`.
    pub fn push_file(&mut self, file: Arc<OwnedFd>, off: u64, len: u64) {
        if len > 0 {
            self.push(Item::File { file, off: off as i64, end: (off + len) as i64 });
        }
    }

    /// Sends as much as the socket takes. `Ok` with `done: false` means the socket is full
    /// (a short `sendmsg`, or `EAGAIN`: wait for writability). An error means the peer is
    /// gone (`EPIPE`, `ECONNRESET`) or a file shrank under us (`UnexpectedEof`: the promised
    /// length cannot be kept, so close).
    ///
    /// A short `sendfile` is *not* taken for a full socket: it is called again until it says
    /// `EAGAIN`. On an edge-triggered queue (io_uring's multishot poll) a writability event
    /// comes only after a send found the buffer full; `sendfile` can stop short with room
    /// left (seen on Linux 6.18 with io_uring: 196,608 bytes sent, then at once 3,175,740
    /// more), and waiting for writability after it waited forever: the connection stalled
    /// with its send queue empty.
    ///
    /// # Errors
    /// As above.
    pub fn flush(&mut self, fd: RawFd) -> io::Result<Flushed> {
        let mut progress = false;
        let full = loop {
            let r = match self.items.front_mut() {
                None => break false,
                Some(Item::File { file, off, end }) => {
                    let want = (*end - *off).min(1 << 30) as usize;
                    // SAFETY: `off` is a live i64 the kernel advances; both descriptors are open.
                    match retry(|| unsafe { libc::sendfile(fd, file.as_raw_fd(), off, want) }) {
                        Ok(0) => {
                            Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank while being sent"))
                        }
                        Ok(_) => {
                            if *off == *end {
                                self.items.pop_front();
                            }
                            // Short or not: go on until done or `EAGAIN` (see above).
                            Ok(false)
                        }
                        Err(e) => Err(e),
                    }
                }
                Some(_) => self.send_gathered(fd),
            };
            match r {
                Ok(short) => {
                    progress = true;
                    if short {
                        break true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
                Err(e) => return Err(e),
            }
        };
        Ok(Flushed { done: !full && self.items.is_empty(), progress, ring: false })
    }

    /// Sends the byte pieces at the front, up to the next file range, in one `sendmsg`
    /// (`MSG_MORE` when a file range follows, so a head and its file share a segment);
    /// drops what was sent whole; returns whether the send was short.
    fn send_gathered(&mut self, fd: RawFd) -> io::Result<bool> {
        let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; GATHER];
        let (mut n, mut total, mut file_follows) = (0, 0, false);
        for item in self.items.iter().take(GATHER) {
            let s: &[u8] = match item {
                Item::Bytes(b, sent) => &b[*sent..],
                Item::Shared(b, off, end) => &b[*off..*end],
                Item::File { .. } => {
                    file_follows = true;
                    break;
                }
            };
            iov[n] = libc::iovec { iov_base: s.as_ptr() as *mut libc::c_void, iov_len: s.len() };
            n += 1;
            total += s.len();
        }
        // SAFETY: msghdr is plain data; all-zero is an empty message.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = n;
        let flags = libc::MSG_NOSIGNAL | if file_follows { libc::MSG_MORE } else { 0 };
        // SAFETY: each iovec describes live bytes of an item, kept alive (and unmoved) by
        // `self.items` until the call returns. One piece goes by `send`, which spares the
        // kernel copying in a message header and an iovec array.
        let mut sent = retry(|| unsafe {
            if n == 1 {
                libc::send(fd, iov[0].iov_base, iov[0].iov_len, flags)
            } else {
                libc::sendmsg(fd, &msg, flags)
            }
        })?;
        let short = sent < total;
        while sent > 0 {
            let Some(front) = self.items.front_mut() else { break };
            let left = front.unsent();
            if sent < left {
                match front {
                    Item::Bytes(_, s) | Item::Shared(_, s, _) => *s += sent,
                    Item::File { .. } => unreachable!("only byte pieces were gathered"),
                }
                break;
            }
            sent -= left;
            if let Some(Item::Bytes(mut b, _)) = self.items.pop_front() {
                if b.capacity() <= 64 * 1024 {
                    b.clear();
                    self.spare = b;
                }
            }
        }
        Ok(short)
    }
}

impl Item {
    fn unsent(&self) -> usize {
        match self {
            Item::Bytes(b, sent) => b.len() - sent,
            Item::Shared(_, off, end) => end - off,
            Item::File { .. } => 0,
        }
    }
}
