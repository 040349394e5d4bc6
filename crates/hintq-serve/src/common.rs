//! What both servers share beside the runtime of `hintq-patterns` (listeners, accept,
//! deadlines, drain): `hintq serve` ([`crate::serve`]) uses all of it, `hintq proxy`
//! ([`crate::proxy`]) the socket calls, [`AccessLog`], [`Lifecycle`], the signals and flags.
//!
//! * [`Out`]: a connection's output queue, responses in request order. Bytes (copied or
//!   shared) go out gathered in one `sendmsg(MSG_NOSIGNAL)` (a vanished peer gives `EPIPE`,
//!   never a `SIGPIPE`, row S18), file ranges with `sendfile(2)`; a head followed by a file is
//!   sent with `MSG_MORE` so that the two leave in one segment where they fit.
//! * [`read_into`], [`send_now`], [`shutdown_write`], [`set_nodelay`], [`peer_addr`]: the
//!   socket calls, each `unsafe` with its `SAFETY:` line, `EINTR` retried here.
//! * [`AccessLog`]: the optional access log (Common Log Format), off unless asked for.
//! * [`Lifecycle`]: open-connection count and the draining flag of a graceful shutdown;
//!   [`ShutdownSignals`]: SIGINT/SIGTERM taken synchronously with `sigwait`, and SIGPIPE
//!   ignored ([`ignore_sigpipe`]).
//! * [`ServerArgs`]: the command-line flags both subcommands take (`--listen`, `--backend`,
//!   `--pattern`, `--threads`, `--processes`, `--access-log`, the timeouts), with
//!   [`parse_duration`]; [`run`]: how both run from the command line (one process, or a
//!   supervisor of worker processes and each of those workers, see [`crate::processes`]).

use crate::processes::{Supervisor, WorkerOf, MAX_PROCESSES};
use hintq::Backend;
use hintq_patterns::{Config, Counters, Fds, Pattern, Server};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use hintq_sys::set_nodelay;

/// Runs a byte-count system call (`-1` and errno on failure) until it is not interrupted.
fn retry(mut f: impl FnMut() -> isize) -> io::Result<usize> {
    hintq_sys::retry(|| hintq_sys::cvt(f()).map(|n| n as usize))
}

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
        if self.in_ring {
            if fds.sending(fd) {
                self.awaited = true;
                return Ok(false);
            }
            (self.in_ring, self.awaited) = (false, false);
            if let Some(e) = fds.send_error(fd) {
                return Err(e);
            }
        }
        Ok(true)
    }

    /// [`Out::flush`], with the byte pieces given to the queue's ring when the connection
    /// can send that way ([`Fds::can_send`]): copied into one buffer that the thread's next
    /// wait sends together with the other connections' replies (one system call for the
    /// batch). A file range waits for the ring's send before it, then goes by `sendfile`.
    /// `done` then means given to the ring, not yet sent: a connection that closes after
    /// its reply waits for [`Out::settled`].
    ///
    /// # Errors
    /// As [`Out::flush`], and the ring's send failing.
    pub fn flush_via(&mut self, fds: &mut Fds<'_>, fd: RawFd) -> io::Result<Flushed> {
        if self.items.is_empty() || !fds.can_send() {
            // Nothing new to send: what the ring has in flight is not waited for (that
            // would ask for a completion event, and stop the caller reading, for nothing).
            return self.flush(fd);
        }
        let waiting = Flushed { done: false, progress: false, ring: true };
        if !self.settled(fds, fd)? {
            return Ok(waiting);
        }
        if !matches!(self.items.front(), Some(Item::Bytes(..) | Item::Shared(..))) {
            return self.flush(fd);
        }
        let mut buf = fds.send_buffer();
        while let Some(item) = self.items.pop_front() {
            match item {
                // A whole run first: it goes to the ring as it is (no copy), and the ring's
                // empty buffer becomes the spare for the next response.
                Item::Bytes(b, 0) if buf.is_empty() => {
                    let empty = std::mem::replace(&mut buf, b);
                    if self.spare.capacity() == 0 {
                        self.spare = empty;
                    }
                }
                Item::Bytes(mut b, sent) => {
                    buf.extend_from_slice(&b[sent..]);
                    if b.capacity() <= 64 * 1024 {
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
        if let Err((e, _)) = fds.send(fd, buf) {
            return Err(e);
        }
        self.in_ring = true;
        if self.items.is_empty() {
            return Ok(Flushed { done: true, progress: true, ring: false });
        }
        // A file range follows: it waits for this send, whose completion is asked for.
        fds.sending(fd);
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

/// What [`read_into`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// This many bytes; `short` when fewer than asked for (the socket is drained for now,
    /// which edge-triggered backends accept in place of reading to `EAGAIN`).
    Data { n: usize, short: bool },
    /// `EAGAIN`.
    Again,
    /// End of stream (the peer shut down its sending side).
    Eof,
}

/// Reads once from socket `fd` into the spare capacity of `buf` (at least `min_room` bytes of
/// it, reserved first) and extends it.
///
/// `recv` rather than `read`: on a socket it goes straight to the protocol, skipping the file
/// layer (`vfs_read`) that `read` passes through; `perf` put that layer at 2–3% of the
/// server's CPU per request on loopback.
///
/// # Errors
/// Socket errors other than `EAGAIN` (`ECONNRESET` and the like).
pub fn read_into(fd: RawFd, buf: &mut Vec<u8>, min_room: usize) -> io::Result<Read> {
    buf.reserve(min_room);
    let room = buf.spare_capacity_mut();
    let want = room.len();
    // SAFETY: `room` is writable spare capacity of `want` bytes.
    match retry(|| unsafe { libc::recv(fd, room.as_mut_ptr().cast(), want, 0) }) {
        Ok(0) => Ok(Read::Eof),
        Ok(n) => {
            // SAFETY: the kernel initialised the first `n` bytes of the spare capacity.
            unsafe { buf.set_len(buf.len() + n) };
            Ok(Read::Data { n, short: n < want })
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(Read::Again),
        Err(e) => Err(e),
    }
}

/// One non-blocking best-effort send (a 408 before closing a timed-out connection, say);
/// returns the bytes sent.
pub fn send_now(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: pointer and length describe `bytes`.
    retry(|| unsafe {
        libc::send(fd, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
    })
}

/// `shutdown(fd, SHUT_WR)`: the first stage of a graceful close (RFC 9112 §9.6).
pub fn shutdown_write(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor the caller owns.
    retry(|| unsafe { libc::shutdown(fd, libc::SHUT_WR) } as isize).map(drop)
}

/// The peer of a connected socket for the access log; `None` (logged as `-`) when the
/// kernel cannot say (the peer is already gone).
pub fn peer_addr(fd: RawFd) -> Option<SocketAddr> {
    hintq_sys::peer_addr(fd).ok()
}

/// The access log: one Common Log Format line per response,
/// `127.0.0.1 - - [22/Nov/2026:13:47:30 +0000] "GET /a.html HTTP/1.1" 200 1024`.
/// Lines are written whole under a lock (threads never interleave inside a line) and flushed
/// per line, so `tail -f` sees them at once.
pub struct AccessLog {
    out: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessLog")
    }
}

impl AccessLog {
    /// `-` for standard output, else a file opened for appending (created if missing).
    ///
    /// # Errors
    /// Opening the file.
    pub fn open(spec: &str) -> io::Result<AccessLog> {
        let out: Box<dyn Write + Send> = if spec == "-" {
            Box::new(io::stdout())
        } else {
            Box::new(std::fs::OpenOptions::new().create(true).append(true).open(spec)?)
        };
        Ok(AccessLog { out: Mutex::new(out) })
    }

    /// Logs one response. `request` is the request line as received (method, target, version).
    pub fn log(&self, peer: Option<SocketAddr>, request: &str, status: u16, bytes: u64) {
        let mut line = String::with_capacity(128);
        match peer {
            Some(p) => {
                let _ = write!(line, "{}", p.ip());
            }
            None => line.push('-'),
        }
        let _ = writeln!(
            line,
            " - - [{}] \"{}\" {status} {bytes}",
            clf_time(SystemTime::now()),
            request.escape_default()
        );
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
    }
}

/// `22/Nov/2026:13:47:30 +0000` (UTC): the fields of the IMF-fixdate that `httpdate`
/// writes for the Date header (`Sun, 22 Nov 2026 13:47:30 GMT`), in the Common Log Format's
/// order, so that no second calendar routine is needed.
fn clf_time(t: SystemTime) -> String {
    let imf = httpdate::fmt_http_date(t.clamp(UNIX_EPOCH, UNIX_EPOCH + Duration::from_secs(253_402_300_799)));
    match imf.split(' ').collect::<Vec<_>>()[..] {
        [_, day, month, year, time, _] => format!("{day}/{month}/{year}:{time} +0000"),
        _ => imf, // not reached: httpdate writes IMF-fixdate
    }
}

/// Returns the heap's free pages to the system (glibc's `malloc_trim`; elsewhere nothing).
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: no arguments but a pad size; glibc locks its arenas itself.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Open connections and the draining flag: a graceful shutdown stops taking connections,
/// lets every response in flight finish (no keep-alive after it), closes idle connections,
/// and waits for the count to reach zero.
#[derive(Debug, Default)]
pub struct Lifecycle {
    open: AtomicUsize,
    draining: AtomicBool,
    /// The most connections open at once since the heap was last trimmed.
    peak: AtomicUsize,
}

/// A server that held at least this many connections at once gives the heap's free memory
/// back to the system when the last of them closes ([`Lifecycle::closed`]).
pub const TRIM_AFTER: usize = 1024;

impl Lifecycle {
    /// Counts a connection in (call from `Handler::accept`).
    pub fn opened(&self) {
        let open = self.open.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(open, SeqCst);
    }

    /// Counts a connection out (call from `Handler::close`). When the last connection of a
    /// server that held [`TRIM_AFTER`] or more at once closes, the allocator gives back what
    /// they used and freed: without it the threads' heaps keep those pages (about 0.7 MB per
    /// thread after 16,000 connections), so memory did not return to its baseline after a
    /// load. One `malloc_trim` per such peak, never on a busy server's path. Returns whether
    /// it trimmed.
    pub fn closed(&self) -> bool {
        let trim = self.open.fetch_sub(1, SeqCst) == 1
            && self.peak.load(SeqCst) >= TRIM_AFTER
            && self.peak.swap(0, SeqCst) >= TRIM_AFTER;
        if trim {
            trim_heap();
        }
        trim
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(SeqCst)
    }

    /// Whether a graceful shutdown is under way.
    pub fn draining(&self) -> bool {
        self.draining.load(SeqCst)
    }

    /// A graceful shutdown of `server`, whose handler counts its connections here: the
    /// draining flag goes up first (so that every connection the runtime's drain then looks
    /// at sees it), then [`Server::drain`] stops accepting and looks at each connection;
    /// waits until none is open or `grace` has passed, shuts the server down, and returns
    /// the connections that were still open and got closed by force.
    pub fn drain(&self, server: Server, grace: Duration) -> usize {
        self.drain_counted(server, grace, &mut Lifecycle::sleep).0
    }

    /// [`Lifecycle::drain`], with the runtime's final counters per thread, cut short when
    /// `stop` says so: it is called with how long to wait at most (10 ms at a time), and
    /// returns true to close every connection now (a second SIGINT or SIGTERM, say).
    pub fn drain_counted(
        &self,
        server: Server,
        grace: Duration,
        stop: &mut dyn FnMut(Duration) -> bool,
    ) -> (usize, Vec<Counters>) {
        self.draining.store(true, SeqCst);
        server.drain();
        let end = Instant::now() + grace;
        while self.open() > 0 {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || stop(left.min(Duration::from_millis(10))) {
                break;
            }
        }
        let left = self.open();
        (left, server.shutdown())
    }

    /// [`Lifecycle::drain_counted`]'s `stop` that only waits.
    pub fn sleep(d: Duration) -> bool {
        std::thread::sleep(d);
        false
    }
}

/// Ignores SIGPIPE, so that writing to a vanished peer (`sendfile` has no `MSG_NOSIGNAL`)
/// gives `EPIPE` instead of killing the process (row S18). Rust binaries start this way
/// already; a library cannot rely on it.
pub fn ignore_sigpipe() {
    // SAFETY: installing SIG_IGN has no handler code to be unsafe about.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// SIGINT and SIGTERM, blocked in the calling thread (and so in every thread it spawns
/// afterwards) and taken with [`wait`](Self::wait): no handler runs at an arbitrary point.
/// Create it before starting any other thread (the server's threads inherit the mask).
#[derive(Debug)]
pub struct ShutdownSignals {
    set: libc::sigset_t,
}

impl ShutdownSignals {
    /// Blocks SIGINT and SIGTERM in this thread.
    ///
    /// # Errors
    /// `pthread_sigmask` failing.
    pub fn block() -> io::Result<ShutdownSignals> {
        ShutdownSignals::blocking(&[libc::SIGINT, libc::SIGTERM])
    }

    /// Blocks SIGINT, SIGTERM and SIGCHLD in this thread, for a supervisor of worker
    /// processes ([`crate::processes::Supervisor`]): [`wait`](Self::wait) also returns when
    /// a child ends.
    ///
    /// # Errors
    /// `pthread_sigmask` failing.
    pub fn with_children() -> io::Result<ShutdownSignals> {
        ShutdownSignals::blocking(&[libc::SIGINT, libc::SIGTERM, libc::SIGCHLD])
    }

    fn blocking(signals: &[libc::c_int]) -> io::Result<ShutdownSignals> {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live sigset_t.
        unsafe { libc::sigemptyset(&mut set) };
        for &sig in signals {
            // SAFETY: as above.
            unsafe { libc::sigaddset(&mut set, sig) };
        }
        // SAFETY: `set` is initialised; the old mask is not wanted.
        let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        // A shell starts background jobs with SIGINT ignored, and an ignored signal is
        // discarded rather than left pending for `sigwait` (an ignored SIGCHLD even makes
        // children reap themselves): restore the default action (harmless while blocked).
        // Threads that exist already must block them too.
        for &sig in signals {
            // SAFETY: installing SIG_DFL runs no code of ours.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
        Ok(ShutdownSignals { set })
    }

    /// Waits for one of the blocked signals (SIGINT or SIGTERM, and SIGCHLD if asked for)
    /// and returns its number.
    pub fn wait(&self) -> i32 {
        let mut sig = 0;
        // SAFETY: `set` is initialised and `sig` a live c_int.
        while unsafe { libc::sigwait(&self.set, &mut sig) } != 0 {}
        sig
    }

    /// [`ShutdownSignals::wait`] for at most `limit`: `None` when none came.
    pub fn wait_for(&self, limit: Duration) -> Option<i32> {
        let ts =
            libc::timespec { tv_sec: limit.as_secs() as libc::time_t, tv_nsec: limit.subsec_nanos() as _ };
        // SAFETY: `set` is initialised, `ts` a live timespec; no siginfo wanted.
        let sig = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) };
        (sig > 0).then_some(sig)
    }
}

/// Writes `line` and a newline to standard error in one `write(2)`, so that the lines of
/// worker processes sharing it do not interleave (`eprintln!` writes piece by piece).
pub fn say(line: &str) {
    let _ = io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// A server started by [`run`]: what it needs to announce itself and to drain.
pub trait Running {
    /// The listening address.
    fn local_addr(&self) -> SocketAddr;
    /// Graceful shutdown for up to `grace`, cut short when `stop` says so (see
    /// [`Lifecycle::drain_counted`]); returns the connections closed by force and the
    /// runtime's final counters per thread.
    fn drain(self, grace: Duration, stop: &mut dyn FnMut(Duration) -> bool) -> (usize, Vec<Counters>);
}

/// The runtime's counters per thread as JSON (`--stats`): `threads`, one object per thread
/// with every field of [`Counters`] (times in ns), and `array_max`.
pub fn stats_json(array_max: usize, counters: &[Counters]) -> String {
    #[derive(serde::Serialize)]
    struct Thread<'a> {
        thread: usize,
        #[serde(flatten)]
        counters: &'a Counters,
    }
    #[derive(serde::Serialize)]
    struct Stats<'a> {
        array_max: usize,
        threads: Vec<Thread<'a>>,
    }
    let threads = counters.iter().enumerate().map(|(thread, counters)| Thread { thread, counters }).collect();
    let mut s = serde_json::to_string_pretty(&Stats { array_max, threads }).expect("counters serialize");
    s.push('\n');
    s
}

/// How `hintq serve` and `hintq proxy` run (`name` is `serve` or `proxy`): as one process,
/// start the server (`start`), announce `describe(address)` on standard error, serve until
/// SIGINT or SIGTERM, then drain: no new connection, responses in flight finish (with
/// `Connection: close`), idle keep-alive connections close at once, and what is still open
/// after `--drain-timeout`, or when a second SIGINT or SIGTERM comes, is closed by force.
/// With `--processes N`, supervise N worker processes instead ([`Supervisor`]), each of
/// which runs this same function as a worker: it starts, tells the supervisor it is ready,
/// and drains on SIGTERM. Returns whether everything ended cleanly: nothing closed by force
/// (with workers: every one exited with status 0).
///
/// # Errors
/// Blocking the signals, starting the server, or starting the workers.
pub fn run<R: Running>(
    name: &'static str,
    args: &ServerArgs,
    describe: impl Fn(SocketAddr) -> String,
    start: impl FnOnce() -> io::Result<R>,
) -> io::Result<bool> {
    if args.processes > 1 && args.worker.is_none() {
        let signals = ShutdownSignals::with_children()?;
        let sup = Supervisor::start(name, args.processes, args.listen)?;
        say(&format!("hintq {name}: {}", describe(sup.local_addr())));
        let pids: Vec<String> = sup.pids().iter().map(u32::to_string).collect();
        say(&format!(
            "hintq {name}: worker processes {}; the kernel spreads connections over them (SO_REUSEPORT)",
            pids.join(" ")
        ));
        return Ok(sup.run(&signals));
    }
    let signals = ShutdownSignals::block()?;
    if let Some(w) = &args.worker {
        w.check_parent()?;
    }
    let server = start()?;
    let who = match &args.worker {
        Some(w) => {
            w.ready()?;
            format!("hintq {name} (worker process {})", std::process::id())
        }
        None => {
            say(&format!("hintq {name}: {}", describe(server.local_addr())));
            format!("hintq {name}")
        }
    };
    let sig = signals.wait();
    let grace = args.drain_timeout;
    say(&format!(
        "{who}: signal {sig}: finishing responses in flight (at most {grace:?}; signal again to stop now)"
    ));
    let mut again = None;
    let (forced, counters) = server.drain(grace, &mut |d| {
        again = signals.wait_for(d);
        again.is_some()
    });
    match again {
        Some(sig) => say(&format!("{who}: signal {sig} again: closed {forced} connections still busy")),
        None if forced > 0 => {
            say(&format!("{who}: closed {forced} connections still busy after the drain timeout ({grace:?})"))
        }
        None => {}
    }
    if let Some(file) = &args.stats {
        // A worker process writes its own file beside the others'.
        let path = match &args.worker {
            Some(_) => format!("{file}.{}", std::process::id()),
            None => file.clone(),
        };
        std::fs::write(&path, stats_json(args.array_max, &counters))
            .map_err(|e| io::Error::new(e.kind(), format!("--stats {path}: {e}")))?;
    }
    Ok(forced == 0)
}

/// `500ms`, `10s`, `2m`, `1h`, or a bare number of seconds.
///
/// # Errors
/// Anything else, with a message naming the accepted forms.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("bad duration {s:?}: expected e.g. 500ms, 10s, 2m"))?;
    let scale = match unit {
        "us" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("bad duration unit in {s:?}: use us, ms, s, m or h")),
    };
    Duration::try_from_secs_f64(n * scale).map_err(|e| format!("bad duration {s:?}: {e}"))
}

fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!("bad thread count {s:?}: expected 1 to 1024")),
    }
}

fn parse_array_max(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=65_536).contains(&n) => Ok(n),
        _ => Err(format!("bad array_max {s:?}: expected 1 to 65536")),
    }
}

fn parse_processes(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=MAX_PROCESSES).contains(&n) => Ok(n),
        _ => Err(format!("bad process count {s:?}: expected 1 to {MAX_PROCESSES}")),
    }
}

/// The flags `hintq serve` and `hintq proxy` share.
#[derive(clap::Args, Clone, Debug)]
pub struct ServerArgs {
    /// Address to listen on, e.g. 127.0.0.1:8080 (port 0: any free port).
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Event backend [default: $HINTQ_BACKEND, else uring where it works, else epoll].
    #[arg(long, value_name = "NAME")]
    pub backend: Option<Backend>,
    /// Thread pattern: reactor, leader-followers, half-sync, sharded, sharded-shared.
    #[arg(long, value_name = "NAME", default_value = "reactor")]
    pub pattern: Pattern,
    /// Threads (Half-Sync: workers; ignored by the reactor).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_threads)]
    pub threads: usize,
    /// Worker processes, each running the pattern and threads above with its own SO_REUSEPORT
    /// listener on the same address; the kernel spreads connections over them by hashing.
    /// Each process has its own descriptor limit (RLIMIT_NOFILE), so N processes hold N times
    /// the connections of one. SIGINT/SIGTERM drain them all.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_processes)]
    pub processes: usize,
    /// Internal: run as a worker process of a `--processes` supervisor (see
    /// `hintq_serve::processes`).
    #[arg(long, hide = true, value_name = "PID,FD,ADDR")]
    pub worker: Option<WorkerOf>,
    /// Access log file, or - for standard output [default: none].
    #[arg(long, value_name = "FILE|-")]
    pub access_log: Option<String>,
    /// Close a keep-alive connection after this long without a request.
    #[arg(long, value_name = "D", default_value = "60s", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// Total time a client has to send a request head, from its first byte (slowloris: 408).
    #[arg(long, value_name = "D", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: Duration,
    /// Close a connection whose response made no progress for this long.
    #[arg(long, value_name = "D", default_value = "30s", value_parser = parse_duration)]
    pub send_timeout: Duration,
    /// On SIGINT/SIGTERM: no new connections, idle keep-alive connections closed at once,
    /// responses in flight finished for up to this long; then what is left is closed. A
    /// second SIGINT/SIGTERM closes everything at once.
    #[arg(long, value_name = "D", default_value = "10s", value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// rtsig only: RT signals alone, as Provos & Lever's phhttpd, never switching to
    /// polling under load (a signal-queue overflow still recovers with one poll scan). By
    /// default rtsig is their hybrid, which polls while the load is heavy.
    #[arg(long)]
    pub no_hybrid: bool,
    /// The most events one get_next_event call returns (Banga's array_max): the length of
    /// each waiting thread's event array. Leader-followers takes one per call whatever this
    /// says.
    #[arg(long, value_name = "N", default_value_t = Config::ARRAY_MAX, value_parser = parse_array_max)]
    pub array_max: usize,
    /// io_uring: a thread that waits for events sleeps through this window for a batch
    /// (returning early only once 64 completions are in), unless its first event comes after
    /// the window. Fewer, larger batches cost less CPU per request while the server has idle
    /// time, and each event waits up to the window longer: a trade of latency for CPU, which
    /// loses throughput where few clients wait on each reply (see the README). Needs Linux
    /// 6.12; ignored by other backends [default: 0, off].
    #[arg(long, value_name = "D", default_value = "0", hide_default_value = true, value_parser = parse_duration)]
    pub coalesce: Duration,
    /// Measure the event API inside the server and write the runtime's counters per thread
    /// as JSON to FILE when it exits (after the drain; with --processes, one FILE.<pid> per
    /// worker): get_next_event calls, events and ns, split into waits whose first,
    /// zero-timeout call found events (ready_*: no blocking, Banga's Fig. 6) and the others
    /// (blocked_*: sleep included); declares (declares_new: descriptors added to the interest
    /// set) and revokes with their ns (Fig. 7). Costs two clock reads per operation and one
    /// more get_next_event call per wait that blocks [default: off].
    #[arg(long, value_name = "FILE")]
    pub stats: Option<String>,
}

impl ServerArgs {
    /// The pattern configuration these flags ask for.
    ///
    /// # Errors
    /// `HINTQ_BACKEND` naming no backend.
    pub fn pattern_config(&self) -> io::Result<Config> {
        let backend = match self.backend {
            Some(b) => b,
            None => Backend::from_env()?,
        };
        let mut cfg = Config::new(self.pattern, self.threads, backend, self.listen_addr());
        cfg.reuseport = self.worker.is_some();
        cfg.rtsig_hybrid.enabled = !self.no_hybrid;
        cfg.array_max = self.array_max;
        cfg.coalesce = self.coalesce;
        cfg.measure = self.stats.is_some();
        cfg.probe_waits = self.stats.is_some();
        Ok(cfg)
    }

    /// Where this process listens: a worker's concrete address, else `--listen`.
    pub fn listen_addr(&self) -> SocketAddr {
        self.worker.map_or(self.listen, |w| w.listen)
    }

    /// `backend B, pattern P, threads T` and, with `--processes`, `, processes N`: the
    /// shape of the server for its start-up line.
    pub fn shape(&self, backend: Backend, pattern: Pattern, threads: usize) -> String {
        let mut s = format!("backend {backend}, pattern {pattern}, threads {threads}");
        if self.processes > 1 {
            let _ = write!(s, ", processes {}", self.processes);
        }
        s
    }

    /// The access log, if asked for.
    ///
    /// # Errors
    /// Opening the file.
    pub fn open_access_log(&self) -> io::Result<Option<AccessLog>> {
        self.access_log.as_deref().map(AccessLog::open).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heap is trimmed once when the last connection of a peak of `TRIM_AFTER` or more
    /// closes: not below that peak, not at every return to zero.
    #[test]
    fn the_heap_is_trimmed_once_per_large_peak() {
        let life = Lifecycle::default();
        let cycle = |n: usize| {
            (0..n).for_each(|_| life.opened());
            (0..n).map(|_| life.closed()).collect::<Vec<bool>>()
        };
        assert!(cycle(TRIM_AFTER - 1).iter().all(|&t| !t), "below the peak");
        let trims = cycle(TRIM_AFTER);
        assert_eq!(trims.iter().filter(|&&t| t).count(), 1);
        assert!(trims[TRIM_AFTER - 1], "trimmed when the last one closed");
        assert!(cycle(10).iter().all(|&t| !t), "a small load after it trims nothing");
        assert_eq!(life.open(), 0);
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        server: ServerArgs,
    }

    #[test]
    fn rtsig_is_the_hybrid_unless_no_hybrid_is_given() {
        use clap::Parser as _;
        let cfg = |extra: &[&str]| {
            let args = ["x", "--listen", "127.0.0.1:0", "--backend", "rtsig"].iter().chain(extra);
            Cli::try_parse_from(args).unwrap().server.pattern_config().unwrap()
        };
        assert!(cfg(&[]).rtsig_hybrid.enabled);
        assert!(!cfg(&["--no-hybrid"]).rtsig_hybrid.enabled);
    }

    #[test]
    fn array_max_stats_and_coalesce_reach_the_runtime() {
        use clap::Parser as _;
        let cfg = |extra: &[&str]| {
            let args = ["x", "--listen", "127.0.0.1:0", "--backend", "epoll"].iter().chain(extra);
            Cli::try_parse_from(args).unwrap().server.pattern_config().unwrap()
        };
        let plain = cfg(&[]);
        assert_eq!(plain.array_max, Config::ARRAY_MAX);
        assert!(!plain.measure && !plain.probe_waits);
        assert_eq!(plain.coalesce, Duration::ZERO, "coalescing is off unless asked for");
        let asked = cfg(&["--array-max", "4", "--stats", "s.json", "--coalesce", "50us"]);
        assert_eq!(asked.array_max, 4);
        assert!(asked.measure && asked.probe_waits);
        assert_eq!(asked.coalesce, Duration::from_micros(50));
        let bad = ["x", "--listen", "127.0.0.1:0", "--array-max", "0"];
        assert!(Cli::try_parse_from(bad).is_err());
        let c = Counters { waits: 3, ready_ns: 7, ..Counters::default() };
        let json = stats_json(4, &[c, Counters::default()]);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["array_max"], 4, "{json}");
        let threads = v["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2, "{json}");
        assert_eq!((&threads[0]["thread"], &threads[1]["thread"]), (&0.into(), &1.into()), "{json}");
        assert_eq!((&threads[0]["waits"], &threads[0]["ready_ns"]), (&3.into(), &7.into()), "{json}");
        // Every counter, under the names scripts and the lab read.
        for k in [
            "handled",
            "accepted",
            "closed",
            "wait_ns",
            "events",
            "most_events",
            "ready_waits",
            "ready_events",
            "blocked_waits",
            "blocked_ns",
            "declares",
            "declare_ns",
            "declares_new",
            "declare_new_ns",
            "revokes",
            "revoke_ns",
            "inserts",
            "insert_ns",
            "rearms",
            "rearm_ns",
            "busy_ns",
            "wait_errors",
            "interest_errors",
            "again",
        ] {
            assert_eq!(threads[1][k], 0, "{k} in {json}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("50us"), Ok(Duration::from_micros(50)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn clf_dates() {
        assert_eq!(clf_time(UNIX_EPOCH), "01/Jan/1970:00:00:00 +0000");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_355_250);
        assert_eq!(clf_time(t), "22/Nov/2026:13:47:30 +0000");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(clf_time(leap), "29/Feb/2000:00:00:00 +0000");
    }
}
