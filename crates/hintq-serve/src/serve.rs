//! `hintq serve`: a static HTTP/1.1 server (GET and HEAD of files under a root) on a
//! `hintq-patterns` thread pattern, with `hintq-http` doing every parse.
//!
//! # One connection
//!
//! [`Files`] is the pattern's [`Handler`]; each connection is a [`Conn`]. On every readiness
//! the handler loops: answer every complete request already read (in order, each response
//! queued behind the previous one in [`Out`]), send, and read more only once everything
//! queued is sent. So output applies back-pressure to input, pipelined responses cannot
//! overtake each other, and a client that stops reading stops being read (row S14).
//! Pipelining depth is bounded (16 queued pieces or 64 KiB) so open files per connection are
//! bounded too.
//!
//! * Requests with a body (any method) have their body read and discarded by its framing
//!   before the answer, so the next pipelined request is found where it starts; with
//!   `Expect: 100-continue` a `100 Continue` goes out first (row S17). GET and HEAD are
//!   served; the other methods of RFC 9110 get 405 with `Allow: GET, HEAD`, unknown ones 501.
//! * A parse error is answered with its status ([`hintq_http::Error::status`]) and
//!   `Connection: close`; then the server closes in stages (RFC 9112 §9.6): `shutdown(SHUT_WR)`,
//!   read and discard until the client closes or [`LINGER`] passes, then close. Closing
//!   straight away with unread input would send an RST that can destroy the error response
//!   before the client reads it.
//! * Timeouts ([`Handler::deadline`], checked every pattern tick): a head must be complete
//!   within the header timeout of its first byte, whatever the trickle (slowloris, row S11;
//!   answered 408 when something was sent); a response must make progress within the send
//!   timeout; a connection between requests closes after the idle timeout (row S12).
//! * Files come from the open-file cache of `serve/cache.rs` (descriptor, metadata and, for a small
//!   file, its bytes; revalidated through the fence after `file_cache_valid`). A small file
//!   leaves with its head in one gathered `sendmsg`; a larger one is sent with `sendfile(2)`
//!   after a head sent with `MSG_MORE`. Paths go through the two fences of `serve/path.rs`: nothing
//!   outside the root is ever opened (row S13).
//! * The common path allocates nothing and makes one `read` and one `sendmsg` per request:
//!   the decoded path goes to a reused buffer, the head's header list is inline
//!   ([`hintq_http::Headers`]), the clocks are read once per readiness handled.
//! * On io_uring (reactor and sharded patterns) the ring sends too ([`Out::flush_via`]): the
//!   reply's bytes go into a buffer of the queue's pool and leave with the thread's next
//!   `io_uring_enter`, the one that also waits for readiness, so a batch of replies costs
//!   one system call and a request about one (`read`). A connection that closes after its
//!   reply, or sends a file range after it, waits for the ring's send to complete; one idle
//!   after a reply is not taken for a stuck send ([`Handler::expire`] asks the ring).
//!   `--uring-sends off` ([`Config::uring_sends`]) turns this off (then `sendmsg` as on the
//!   other backends).
//!
//! # What a GET or HEAD gets (RFC 9110)
//!
//! * Validators (§8.8): `Last-Modified` and a strong `ETag`, `"<inode>-<size>-<mtime ns>"`
//!   in hex (`etag`), on 200, 206 and 304; `Accept-Ranges: bytes` on 200 and 206.
//! * Conditional requests (§13), evaluated by [`hintq_http::select`]: `If-None-Match` (a
//!   list, `*`, weak comparison) gives 304, and when present `If-Modified-Since` is not
//!   looked at; otherwise `If-Modified-Since` gives 304 for a file not changed since. A 304
//!   carries `Date`, `ETag` and `Last-Modified` and no body. `If-Match` and
//!   `If-Unmodified-Since` are not evaluated.
//! * Range requests (§14): one `bytes=` range (`first-last`, `first-`, `-suffix`) gives 206
//!   with `Content-Range: bytes first-last/len`, the body sent with `sendfile` from `first`;
//!   a range starting at or past the end (or `-0`) gives 416 with `Content-Range: bytes */len`.
//!   Several ranges, a syntactically invalid Range, another unit, or an `If-Range` (strong
//!   ETag or exact date) that does not match: the Range is ignored and the whole file sent
//!   with 200, as §14.2 allows (no `multipart/byteranges`). A Range on HEAD is ignored
//!   (§14.2: range handling is defined for GET only): 200 with the whole file's head. Numbers saturate instead of overflowing; parsing stops at a second range,
//!   and the field is bounded by the header-line limit like every other field.
//! * Directories: without the trailing slash, 301 to the same path plus `/`, query kept
//!   (`path::location`: built from the normalised path, so always a local path starting
//!   with a single `/`, never `//host`); with it, its `index.html`, else 403 (no listings).
//!   A regular file named with a trailing slash is 404.
//!
//! # Graceful shutdown
//!
//! [`Serving::drain`] (SIGINT/SIGTERM in [`run`]) stops accepting, lets responses in flight
//! finish with `Connection: close`, closes idle connections at the next tick (on io_uring
//! too: the ring is asked whether a connection's last reply left, see
//! [`Handler::deadline`]), then shuts the pattern down. From the command line the drain
//! lasts at most `--drain-timeout`, and a second signal ends it at once.

mod cache;
mod path;

use crate::access_log::AccessLog;
use crate::args::ServerArgs;
use crate::lifecycle::Lifecycle;
use crate::out::Out;
use crate::run::Running;
use crate::signals::ignore_sigpipe;
use crate::sys::{peer_addr, read_into, send_now, set_nodelay, shutdown_write, Read};
use cache::{Content, Entry, FileCache};
pub use cache::{HOLD_MAX, HOLD_MAX_RING};
use hintq::State;
use hintq_http::{
    error_body, http_date, parse_request, write_error_response, BodyDecoder, DateCache, Framing, HeadWriter,
    Limits, RequestHead, Selected, Side, Validators, Version,
};
use hintq_patterns::{Config, Cx, Fds, Handler, Next, Server, Why};
use std::cell::{Cell, RefCell};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a connection being closed after an error is drained before the final close.
pub const LINGER: Duration = Duration::from_secs(2);
/// Bytes asked of each `read`.
const READ_CHUNK: usize = 16 * 1024;
/// Pipelining bound: queued pieces (heads, files) and bytes before input is left unread.
const MAX_PIECES: usize = 16;
const MAX_QUEUED: usize = 64 * 1024;
/// How many input buffers [`INPUTS`] keeps, and the largest it keeps (a read's reservation).
const INPUTS_KEPT: usize = 64;
const INPUT_KEPT_MAX: usize = 2 * READ_CHUNK;
/// A held body up to this size is copied behind its head rather than sent from the cache's
/// copy as a second piece (see `respond`).
const COPY_BODY: u64 = 4096;
/// Methods RFC 9110 defines (and PATCH): 405 with `Allow`; any other method is 501.
const KNOWN_METHODS: [&str; 7] = ["POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"];

/// What `hintq serve --help` lists after the flags.
pub const HELP_FEATURES: &str = "\
Serves GET and HEAD of regular files under --root (nothing outside it is ever opened):
  ETag (inode-size-mtime) and Last-Modified; If-None-Match and If-Modified-Since -> 304
  Range: one bytes range -> 206 with Content-Range; past the end -> 416; several ranges,
    an invalid Range or a non-matching If-Range -> the whole file (200)
  /dir -> 301 to /dir/; /dir/ -> its index.html, else 403 (no listings)
  an open-file cache (--file-cache-valid, --file-cache-entries, --file-cache-hold): small
    files from memory in one sendmsg with their head, larger ones with sendfile
  keep-alive, pipelining, header/idle/send timeouts, graceful SIGINT/SIGTERM (bounded by
    --drain-timeout; a second signal stops at once)";

/// What `hintq serve`'s flags asked for.
#[derive(Clone, Debug)]
pub struct ServeArgs {
    /// Directory to serve; nothing outside it is ever read.
    pub root: PathBuf,
    pub server: ServerArgs,
    /// Open-file cache: how long a cached file (descriptor, metadata, and the bytes of a small
    /// file) is served before it is opened again; a change to a file shows within this
    /// period (0: no cache).
    pub file_cache_valid: Duration,
    /// Open-file cache: most paths held.
    pub file_cache_entries: usize,
    /// Open-file cache: the largest file whose bytes are held in memory and sent with its
    /// head in one system call; larger files go by `sendfile` (0: every non-empty file).
    /// 64 MiB of bodies in all [default: 32768 where io_uring sends the replies (reactor and
    /// sharded patterns), else 16384].
    pub file_cache_hold: Option<u64>,
}

/// What the static server needs besides the pattern configuration.
#[derive(Debug)]
pub struct ServeConfig {
    /// Directory to serve.
    pub root: PathBuf,
    /// Between requests on a keep-alive connection.
    pub idle_timeout: Duration,
    /// From the first byte of a head to its end (and between reads of a request body).
    pub header_timeout: Duration,
    /// Without progress while sending a response.
    pub send_timeout: Duration,
    /// Parser limits.
    pub limits: Limits,
    /// Optional access log.
    pub access_log: Option<AccessLog>,
    /// How long an open-file cache entry is trusted before it is opened again (zero: no
    /// cache, every request opens its file).
    pub file_cache_valid: Duration,
    /// Most paths the open-file cache holds.
    pub file_cache_entries: usize,
    /// The largest file whose body the open-file cache holds in memory (`None`: by the
    /// backend and pattern, [`default_hold`], when the server is made by [`start`]; a
    /// [`Files::new`] of its own takes [`HOLD_MAX`]).
    pub file_cache_hold: Option<u64>,
}

impl ServeConfig {
    /// Defaults: idle 60 s, header 10 s, send 30 s, `Limits::default()`, no access log, an
    /// open-file cache of 1,024 paths trusted for 1 s, holding files up to the backend's
    /// [`default_hold`].
    pub fn new(root: impl Into<PathBuf>) -> ServeConfig {
        ServeConfig {
            root: root.into(),
            idle_timeout: Duration::from_secs(60),
            header_timeout: Duration::from_secs(10),
            send_timeout: Duration::from_secs(30),
            limits: Limits::default(),
            access_log: None,
            file_cache_valid: Duration::from_secs(1),
            file_cache_entries: 1024,
            file_cache_hold: None,
        }
    }
}

/// The handler: the root directory and the rules above.
#[derive(Debug)]
pub struct Files {
    root: OwnedFd,
    cfg: ServeConfig,
    life: Lifecycle,
    cache: FileCache,
}

/// A request whose body is being read (and discarded) before it is answered.
#[derive(Debug)]
struct Pending {
    decoder: BodyDecoder,
    head: RequestHead<'static>,
}

/// One connection's state.
#[derive(Debug)]
pub struct Conn {
    input: Vec<u8>,
    /// Bytes of `input` already parsed.
    pos: usize,
    out: Out,
    body: Option<Box<Pending>>,
    /// When the first byte of the head being received arrived.
    head_since: Option<Instant>,
    /// Last read or send progress.
    last: Instant,
    /// Close once `out` is sent; `Some(true)`: in stages (after an error, or with input left).
    close: Option<bool>,
    /// Lingering close under way, until then.
    linger_until: Option<Instant>,
    /// The last read was short: the socket is drained for now.
    drained: bool,
    peer: Option<SocketAddr>,
}

impl Conn {
    fn new(peer: Option<SocketAddr>) -> Conn {
        Conn {
            input: Vec::new(),
            pos: 0,
            out: Out::default(),
            body: None,
            head_since: None,
            last: Instant::now(),
            close: None,
            linger_until: None,
            drained: false,
            peer,
        }
    }

    /// Reads from `fd` into `input`. Where the queue receives for the connection (io_uring's
    /// multishot receive, [`Handler::receives`]) the bytes are taken from it, without a
    /// system call. Otherwise a connection without an input buffer (new, or idle since its
    /// last request was parsed) reads into this thread's scratch buffer and keeps only the
    /// bytes that came, typically one request head; so an idle keep-alive connection holds no
    /// buffer, and a read that finds nothing or the end of the stream allocates nothing.
    fn read(&mut self, fds: &mut Fds<'_>, fd: RawFd) -> io::Result<Read> {
        if self.input.capacity() == 0 {
            // A buffer an idle connection gave back (see `release`), not a fresh allocation.
            self.input = INPUTS.with_borrow_mut(Vec::pop).unwrap_or_default();
        }
        match fds.ring_io().and_then(|mut r| r.take_received(fd, &mut self.input, usize::MAX)) {
            // Taken whole: the socket is drained as far as the ring knows, and new bytes come
            // with a new event.
            Some(Ok(0)) => return Ok(Read::Eof),
            Some(Ok(n)) => return Ok(Read::Data { n, short: true }),
            Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Read::Again),
            Some(Err(e)) => return Err(e),
            None => {}
        }
        if self.input.capacity() > 0 {
            return read_into(fd, &mut self.input, READ_CHUNK);
        }
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            let r = read_into(fd, scratch, READ_CHUNK)?;
            self.input.extend_from_slice(scratch);
            Ok(r)
        })
    }

    /// Waiting for the next request: gives the input buffer back once everything in it was
    /// parsed (see [`Conn::read`]), and the output's buffers once everything was sent.
    fn release(&mut self) {
        if self.pos == self.input.len() {
            let mut input = std::mem::take(&mut self.input);
            self.pos = 0;
            if input.capacity() <= INPUT_KEPT_MAX {
                input.clear();
                INPUTS.with_borrow_mut(|pool| (pool.len() < INPUTS_KEPT).then(|| pool.push(input)));
            }
        }
        self.out.release();
    }

    /// Unparsed input holds more than empty lines (a head has begun).
    fn head_begun(&self) -> bool {
        self.input[self.pos..].iter().any(|&b| b != b'\r' && b != b'\n')
    }
}

thread_local! {
    /// The decoded path of the request being answered (reused: no allocation per request).
    static REL: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// What a connection without an input buffer reads into (see [`Conn::read`]).
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// Cleared input buffers of connections gone idle ([`Conn::release`]), for the next
    /// connection to read on this thread.
    static INPUTS: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
    /// The wall clock's current second (see [`second`]).
    static DATES: Cell<DateCache> = const { Cell::new(DateCache::new()) };
}

/// The `Date` of a response made at `at`, and its whole Unix seconds, from this thread's
/// [`DateCache`] (one comparison a request while the second lasts). The handler passes the
/// time of the readiness it handles (the runtime's [`Cx::now`]: one clock read per batch of
/// events) to every request it answers (timeouts, `Date`, the cache's validity), instead of
/// reading a clock five times a request.
fn second(at: Instant) -> (u64, [u8; 29]) {
    let mut dates = DATES.get();
    let s = (dates.unix(at), *dates.get(at));
    DATES.set(dates);
    s
}

/// `Date` for a response made at `at`.
fn date(at: Instant) -> [u8; 29] {
    second(at).1
}

/// Content-Type by file extension: the types a static site needs, else octet-stream.
const TYPES: [(&str, &str); 26] = [
    ("html", "text/html; charset=utf-8"),
    ("htm", "text/html; charset=utf-8"),
    ("css", "text/css; charset=utf-8"),
    ("js", "text/javascript; charset=utf-8"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("json", "application/json"),
    ("txt", "text/plain; charset=utf-8"),
    ("md", "text/plain; charset=utf-8"),
    ("csv", "text/csv; charset=utf-8"),
    ("xml", "application/xml"),
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("avif", "image/avif"),
    ("ico", "image/x-icon"),
    ("pdf", "application/pdf"),
    ("wasm", "application/wasm"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("mp4", "video/mp4"),
    ("webm", "video/webm"),
    ("mp3", "audio/mpeg"),
    ("zip", "application/zip"),
];

fn content_type(path: &[u8]) -> &'static [u8] {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or_default();
    let ext = match name.iter().rposition(|&b| b == b'.') {
        Some(i) if i > 0 => &name[i + 1..],
        _ => return b"application/octet-stream",
    };
    TYPES
        .iter()
        .find(|(e, _)| e.as_bytes().eq_ignore_ascii_case(ext))
        .map_or(b"application/octet-stream", |(_, t)| t.as_bytes())
}

fn connection_header(w: &mut HeadWriter<'_>, version: Version, keep: bool) {
    match (version, keep) {
        (_, false) => drop(w.connection_close()),
        (Version::Http10, true) => drop(w.header("Connection", b"keep-alive")),
        (Version::Http11, true) => {}
    }
}

/// An open regular file, its `stat` and its Content-Type.
type Opened = (OwnedFd, libc::stat, &'static [u8]);

/// Why a path has no cache entry: a directory named without its slash, or a status to answer.
enum Miss {
    Redirect,
    Status(u16),
}

/// What one answer was, for the access log.
struct Answer {
    status: u16,
    bytes: u64,
}

impl Files {
    /// Opens the root and checks that `openat2` works (Linux 5.6 or later).
    ///
    /// # Errors
    /// The root cannot be opened as a directory, or the kernel lacks `openat2`.
    pub fn new(cfg: ServeConfig) -> io::Result<Files> {
        let dir = std::fs::File::open(&cfg.root)
            .map_err(|e| io::Error::new(e.kind(), format!("root {}: {e}", cfg.root.display())))?;
        if !dir.metadata()?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("root {} is not a directory", cfg.root.display()),
            ));
        }
        let root = OwnedFd::from(dir);
        path::open_beneath(root.as_raw_fd(), b".\0").map_err(|e| match e.raw_os_error() {
            Some(libc::ENOSYS) => {
                io::Error::new(e.kind(), "openat2(2) is missing: hintq serve needs Linux 5.6 or later")
            }
            _ => e,
        })?;
        let hold = cfg.file_cache_hold.unwrap_or(HOLD_MAX);
        let cache = FileCache::new(cfg.file_cache_entries, cfg.file_cache_valid, hold);
        Ok(Files { root, cfg, life: Lifecycle::default(), cache })
    }

    /// Open connections and the draining flag.
    pub fn lifecycle(&self) -> &Lifecycle {
        &self.life
    }

    /// Answers every complete request buffered, as of `now`; returns true when it stopped
    /// because the output queue is full (send, then call again).
    fn process(&self, c: &mut Conn, now: Instant) -> bool {
        loop {
            if c.close.is_some() {
                return false;
            }
            if c.out.pieces() >= MAX_PIECES || c.out.queued_bytes() >= MAX_QUEUED {
                return true;
            }
            if let Some(p) = c.body.as_mut() {
                match discard(&mut p.decoder, &c.input[c.pos..]) {
                    Ok((used, done)) => {
                        c.pos += used;
                        if !done {
                            return false;
                        }
                        let p = c.body.take().expect("matched above");
                        if !self.respond(&mut c.out, c.peer, &p.head, now) {
                            c.close = Some(c.pos < c.input.len());
                        }
                    }
                    Err(e) => self.fail(c, e.status(), now),
                }
                continue;
            }
            let buf = &c.input[c.pos..];
            if buf.is_empty() {
                return false;
            }
            let parsed = parse_request(buf, &self.cfg.limits);
            // The head is looked at where it is, not moved out (it is most of a kilobyte).
            match parsed {
                Ok(None) => {
                    c.head_since.get_or_insert(now);
                    return false;
                }
                Err(e) => self.fail(c, e.status(), now),
                Ok(Some(ref head)) => {
                    let used = head.head_len;
                    c.head_since = None;
                    if matches!(head.framing, Framing::Length(1..) | Framing::Chunked) {
                        // RFC 9110 §10.1.1: no interim response once body bytes have arrived.
                        if head.expect_continue && c.pos + used == c.input.len() {
                            c.out.push_bytes(b"HTTP/1.1 100 Continue\r\n\r\n");
                        }
                        let decoder = BodyDecoder::new(head.framing, Side::Request, &self.cfg.limits);
                        c.body = Some(Box::new(Pending { decoder, head: head.clone().into_owned() }));
                        c.pos += used;
                    } else {
                        // The head borrows the input: no copy on the common path.
                        let keep = self.respond(&mut c.out, c.peer, head, now);
                        c.pos += used;
                        if !keep {
                            c.close = Some(c.pos < c.input.len());
                        }
                    }
                }
            }
        }
    }

    /// Answers a parse or framing error and closes in stages.
    fn fail(&self, c: &mut Conn, status: u16, now: Instant) {
        write_error_response(c.out.buf(), status, Some(&date(now)), true, false);
        c.close = Some(true);
        c.pos = c.input.len();
        c.body = None;
        c.head_since = None;
        if let Some(log) = &self.cfg.access_log {
            log.log(c.peer, "-", status, error_body(status).len() as u64);
        }
    }

    /// Answers `head` at `now`; returns whether the connection stays open after it.
    fn respond(&self, out: &mut Out, peer: Option<SocketAddr>, head: &RequestHead<'_>, now: Instant) -> bool {
        let keep = head.keep_alive && !self.life.draining();
        let a = match &*head.method {
            "GET" | "HEAD" => self.file(out, head, keep, now),
            m => {
                let status = if KNOWN_METHODS.contains(&m) { 405 } else { 501 };
                Self::short(out, status, head.version, keep, false, &[], now)
            }
        };
        if let Some(log) = &self.cfg.access_log {
            let line = format!("{} {} {}", head.method, head.target, head.version.as_str());
            log.log(peer, &line, a.status, a.bytes);
        }
        keep
    }

    /// A short response: status line, Date, text/plain body naming the status (`Allow` on 405),
    /// and `extra` fields (`Location`, `Content-Range`).
    fn short(
        out: &mut Out,
        status: u16,
        version: Version,
        keep: bool,
        head_only: bool,
        extra: &[(&str, &[u8])],
        now: Instant,
    ) -> Answer {
        let body = error_body(status);
        let mut w = HeadWriter::response(out.buf(), Version::Http11, status);
        w.date(&date(now))
            .header("Content-Type", b"text/plain; charset=utf-8")
            .content_length(body.len() as u64);
        if status == 405 {
            w.header("Allow", b"GET, HEAD");
        }
        for (name, value) in extra {
            w.header(name, value);
        }
        connection_header(&mut w, version, keep);
        w.finish();
        if head_only {
            return Answer { status, bytes: 0 };
        }
        out.push_bytes(body.as_bytes());
        Answer { status, bytes: body.len() as u64 }
    }

    /// GET or HEAD of a file: validators, conditional requests, a single range, the
    /// redirect of a directory named without its slash.
    fn file(&self, out: &mut Out, head: &RequestHead<'_>, keep: bool, now: Instant) -> Answer {
        let short = |out: &mut Out, s, extra: &[(&str, &[u8])]| {
            Self::short(out, s, head.version, keep, head.is_head(), extra, now)
        };
        let found = REL.with_borrow_mut(|rel| {
            let target = path::decode_target(&head.target, rel).map_err(Ok)?;
            // The cache key: the path and whether it named a directory.
            rel.push(u8::from(target.dir_form));
            let key = &rel[..];
            let path = &key[..key.len() - 1];
            self.cache.get(key, now, || self.entry(path, target.dir_form)).map_err(|m| match m {
                Miss::Redirect => Err(path::location(&target, path)),
                Miss::Status(s) => Ok(s),
            })
        });
        let f = match found {
            Ok(f) => f,
            Err(Ok(s)) => return short(out, s, &[]),
            Err(Err(location)) => return short(out, 301, &[("Location", &location)]),
        };
        let len = f.len;
        // One look at the clock's second for the validators and the `Date` both.
        let (secs, date) = second(now);
        let v = Validators {
            etag: &f.etag,
            last_modified: f.mtime as u64,
            last_modified_strong: (f.mtime as u64) < secs,
            len,
        };
        // RFC 9110 §14.2: range handling is defined for GET only, and a server MUST ignore a
        // Range on other methods, so HEAD answers what a GET without Range would get.
        let selected = match hintq_http::select(&head.headers, &v) {
            Selected::Partial { .. } | Selected::Unsatisfiable if head.is_head() => Selected::Full,
            s => s,
        };
        let (status, range) = match selected {
            Selected::NotModified => (304, None),
            Selected::Full => (200, None),
            Selected::Partial { first, last } => (206, Some((first, last))),
            Selected::Unsatisfiable => {
                let cr = format!("bytes */{len}");
                let cr = cr.as_bytes();
                return short(out, 416, &[("Content-Range", cr), ("Accept-Ranges", b"bytes")]);
            }
        };
        let (off, send) = match range {
            Some((first, last)) => (first, last - first + 1),
            None => (0, len),
        };
        let mut w = HeadWriter::response(out.buf(), Version::Http11, status);
        w.date(&date);
        match (status, range) {
            (200, _) => {
                w.fields(&f.full);
            }
            (304, _) => {
                w.fields(&f.validators);
            }
            (_, r) => {
                w.header("Content-Type", f.ctype).content_length(send);
                if let Some(r) = r {
                    w.content_range(Some(r), len);
                }
                w.header("Accept-Ranges", b"bytes").fields(&f.validators);
            }
        }
        connection_header(&mut w, head.version, keep);
        w.finish();
        if status == 304 || head.is_head() {
            return Answer { status, bytes: 0 };
        }
        match &f.content {
            // A small body is copied behind its head: one contiguous run goes out in one
            // `send` (a `sendmsg` of two pieces costs more than copying 1 KB here).
            Content::Held(body) if send <= COPY_BODY => {
                out.buf().extend_from_slice(&body[off as usize..(off + send) as usize])
            }
            Content::Held(body) => out.push_shared(Arc::clone(body), off as usize, send as usize),
            Content::File(file) => out.push_file(Arc::clone(file), off, send),
        }
        Answer { status, bytes: send }
    }

    /// Opens `rel` (see [`open`](Self::open)) into a cache entry.
    fn entry(&self, rel: &[u8], dir_form: bool) -> Result<Entry, Miss> {
        let (fd, st, ctype) = self.open(rel, dir_form).map_err(Miss::Status)?.ok_or(Miss::Redirect)?;
        let (tag, tag_len) = etag(&st);
        let last_modified = http_date(st.st_mtime.max(0) as u64);
        Ok(Entry::new(fd, &st, ctype, tag[..tag_len].into(), last_modified, self.cache.hold()))
    }

    /// Opens a regular file (or, for a path ending in `/`, a directory's `index.html`)
    /// beneath the root; returns it with its `stat` and Content-Type, `None` for a directory
    /// named without its slash (to redirect), or the status to answer: a directory without
    /// `index.html` is 403 (no listings), a file named with a trailing slash 404.
    fn open(&self, rel: &[u8], dir_form: bool) -> Result<Option<Opened>, u16> {
        let root = self.root.as_raw_fd();
        let fd = path::open_beneath(root, rel).map_err(|e| path::status_of(&e))?;
        let st = fstat(&fd)?;
        match st.st_mode & libc::S_IFMT {
            libc::S_IFREG if dir_form && rel != b".\0" => Err(404),
            libc::S_IFREG => Ok(Some((fd, st, content_type(&rel[..rel.len() - 1])))),
            libc::S_IFDIR if !dir_form => Ok(None),
            libc::S_IFDIR => {
                drop(fd);
                let mut index = rel[..rel.len() - 1].to_vec();
                index.extend_from_slice(b"/index.html\0");
                let fd = path::open_beneath(root, &index).map_err(|e| match path::status_of(&e) {
                    404 => 403,
                    s => s,
                })?;
                let st = fstat(&fd)?;
                if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                    return Err(403);
                }
                Ok(Some((fd, st, b"text/html; charset=utf-8")))
            }
            _ => Err(403),
        }
    }

    /// The closing stage after `shutdown(SHUT_WR)`: discard input until the client closes.
    fn linger(&self, fds: &mut Fds<'_>, c: &mut Conn, fd: RawFd) -> Next {
        loop {
            c.input.clear();
            c.pos = 0;
            match c.read(fds, fd) {
                Ok(Read::Data { short: false, .. }) => continue,
                Ok(Read::Data { short: true, .. } | Read::Again) => return Next::Read,
                Ok(Read::Eof) | Err(_) => return Next::Close,
            }
        }
    }
}

/// Reads and discards body bytes from `input`; returns (bytes used, body complete).
fn discard(decoder: &mut BodyDecoder, input: &[u8]) -> Result<(usize, bool), hintq_http::Error> {
    let mut pos = 0;
    loop {
        let d = decoder.decode(&input[pos..])?;
        pos += d.consumed;
        if d.done {
            return Ok((pos, true));
        }
        if d.consumed == 0 || pos == input.len() {
            return Ok((pos, false));
        }
    }
}

/// The entity-tag of a file: `"<inode>-<size>-<mtime in ns>"` in hex, as nginx's
/// `"<mtime>-<size>"` but with the inode (a file replaced by another of the same size and
/// second) and nanoseconds. Sent as a strong validator: it changes whenever the file's
/// content can have changed, except for a write within one tick of the kernel's coarse
/// timestamp clock that keeps the size (the same limit as every mtime-based ETag).
fn etag(st: &libc::stat) -> ([u8; 56], usize) {
    use std::io::Write as _;
    let ns = (st.st_mtime as u64).wrapping_mul(1_000_000_000).wrapping_add(st.st_mtime_nsec as u64);
    let mut buf = [0u8; 56];
    let mut w = &mut buf[..];
    let _ = write!(w, "\"{:x}-{:x}-{:x}\"", st.st_ino, st.st_size as u64, ns);
    let len = 56 - w.len();
    (buf, len)
}

fn fstat(fd: &OwnedFd) -> Result<libc::stat, u16> {
    // SAFETY: stat is plain data, filled by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` a live stat.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(500);
    }
    Ok(st)
}

impl Handler for Files {
    type Conn = Conn;
    type Local = ();

    fn receives(&self) -> bool {
        true
    }

    fn accept(&self, fd: RawFd) -> Option<Conn> {
        if self.life.draining() {
            return None;
        }
        let _ = set_nodelay(fd);
        self.life.opened();
        let peer = self.cfg.access_log.as_ref().and_then(|_| peer_addr(fd));
        Some(Conn::new(peer))
    }

    fn event(&self, cx: &mut Cx<'_, ()>, c: &mut Conn, fd: RawFd, state: State) -> Next {
        let now = cx.now();
        if state.is_readable() {
            // New bytes may have come since the last short read (with the ring's receives,
            // they wait in its inbox and are reported once).
            c.drained = false;
        }
        let fds = cx.fds();
        if state.contains(State::SENT) && c.out.in_ring() {
            // The ring's send whose completion was asked for completed: progress, and what
            // the connection waits for changed (its deadline is asked again after this call).
            match c.out.settled(fds, fd) {
                Ok(true) => c.last = now,
                Ok(false) => {}
                Err(_) => return Next::Close,
            }
        }
        if c.linger_until.is_some() {
            return self.linger(fds, c, fd);
        }
        loop {
            let full = self.process(c, now);
            match c.out.flush_via(fds, fd) {
                Err(_) => return Next::Close,
                Ok(f) => {
                    if f.progress {
                        c.last = now;
                    }
                    if f.ring {
                        // The ring's send in flight calls again when it completes.
                        return Next::Read;
                    }
                    if !f.done {
                        return Next::Write;
                    }
                }
            }
            if full {
                continue;
            }
            if let Some(linger) = c.close {
                // What the ring was given must leave before the connection closes.
                match c.out.settled(fds, fd) {
                    Ok(true) => {}
                    Ok(false) => return Next::Read,
                    Err(_) => return Next::Close,
                }
                if !linger {
                    return Next::Close;
                }
                let _ = shutdown_write(fd);
                c.linger_until = Some(now + LINGER);
                return self.linger(fds, c, fd);
            }
            if std::mem::take(&mut c.drained) {
                c.release();
                return Next::Read;
            }
            if c.pos > 0 {
                c.input.drain(..c.pos);
                c.pos = 0;
            }
            match c.read(fds, fd) {
                Ok(Read::Data { short, .. }) => {
                    c.last = now;
                    c.drained = short;
                }
                Ok(Read::Again) => {
                    c.release();
                    return Next::Read;
                }
                Ok(Read::Eof) | Err(_) => return Next::Close,
            }
        }
    }

    /// A deadline passed while bytes given to the ring were not known to have left (see
    /// [`Handler::deadline`]): the ring is asked now. Sent: the connection waits for its
    /// next request, whose deadline (idle, header, body, drain) decides. Still in flight:
    /// the peer does not read, the send timeout decides, and the send's completion calls
    /// the handler (asked for by `settled`), which moves the deadline again.
    fn expire(&self, cx: &mut Cx<'_, ()>, c: &mut Conn, fd: RawFd) -> Next {
        let asked = c.out.in_ring() && c.out.pieces() == 0 && c.out.settled(cx.fds(), fd).is_ok();
        if asked && self.deadline(c).is_some_and(|d| d > Instant::now()) {
            return Next::Read;
        }
        Next::Close
    }

    fn close(&self, c: Conn, fd: RawFd, why: Why) {
        self.life.closed();
        let timed_out_in_head = why == Why::Timeout
            && c.out.is_empty()
            && c.linger_until.is_none()
            && c.body.is_none()
            && c.head_since.is_some()
            && c.head_begun();
        if timed_out_in_head {
            let mut b = Vec::with_capacity(160);
            write_error_response(&mut b, 408, Some(&date(Instant::now())), true, false);
            let _ = send_now(fd, &b);
            if let Some(log) = &self.cfg.access_log {
                log.log(c.peer, "-", 408, b.len() as u64);
            }
        }
    }

    /// What the connection waits for decides: the linger's end; the peer taking bytes (send
    /// timeout from the last progress); the rest of a body or of a head (header timeout); its
    /// next request (idle timeout, or at once while draining). Bytes given to the ring and
    /// not known to have left may be either of the first and the last (a send that
    /// succeeds is silent): the sooner of the two deadlines, when [`Handler::expire`] asks
    /// the ring which it is. So an idle timeout shorter than the send timeout holds on
    /// io_uring as with `sendmsg`, and so does a drain.
    fn deadline(&self, c: &Conn) -> Option<Instant> {
        let cfg = &self.cfg;
        if let Some(t) = c.linger_until {
            return Some(t);
        }
        let send = c.last + cfg.send_timeout;
        if c.out.stalled() {
            return Some(send);
        }
        let next = if c.body.is_some() {
            c.last + cfg.header_timeout
        } else if let Some(t) = c.head_since {
            t + cfg.header_timeout
        } else if self.life.draining() {
            c.last // already past: closed at the next tick
        } else {
            c.last + cfg.idle_timeout
        };
        Some(if c.out.in_ring() { next.min(send) } else { next })
    }
}

/// A running static server.
#[derive(Debug)]
pub struct Serving {
    server: Server,
    files: Arc<Files>,
}

/// The open-file cache's hold limit for `pattern` when none was given: [`HOLD_MAX_RING`]
/// where the io_uring ring sends the replies ([`Config::ring_sends`]: a held body leaves with
/// the batch's one kernel entry), [`HOLD_MAX`] elsewhere (a `sendmsg` of head and body);
/// measured by `crates/hintq-serve/bench/hold-threshold.sh`.
pub fn default_hold(pattern: &Config) -> u64 {
    if pattern.ring_sends() {
        HOLD_MAX_RING
    } else {
        HOLD_MAX
    }
}

/// Starts the static server on `pattern` (its backend, threads and address).
///
/// # Errors
/// The root (see [`Files::new`]) or the pattern failing to start (see
/// [`hintq_patterns::start`]: Leader/Followers and Half-Sync refuse some backends).
pub fn start(mut cfg: ServeConfig, pattern: Config) -> io::Result<Serving> {
    ignore_sigpipe();
    cfg.file_cache_hold.get_or_insert_with(|| default_hold(&pattern));
    let files = Arc::new(Files::new(cfg)?);
    let server = hintq_patterns::start(pattern, Arc::clone(&files))?;
    Ok(Serving { server, files })
}

impl Serving {
    /// The listening address.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.files.life.open()
    }

    /// Graceful shutdown: stop accepting, finish responses in flight, close idle connections,
    /// wait up to `grace`, then stop. Returns the connections that were still open and got
    /// closed by force.
    pub fn drain(self, grace: Duration) -> usize {
        self.files.life.drain(self.server, grace)
    }

    /// [`Serving::drain`], with the runtime's final counters per thread, cut short when
    /// `stop` says so ([`Lifecycle::drain_counted`]).
    pub fn drain_counted(
        self,
        grace: Duration,
        stop: &mut dyn FnMut(Duration) -> bool,
    ) -> (usize, Vec<hintq_patterns::Counters>) {
        self.files.life.drain_counted(self.server, grace, stop)
    }

    /// Immediate shutdown: every connection is closed now.
    pub fn shutdown(self) {
        self.server.shutdown();
    }
}

impl Running for Serving {
    fn local_addr(&self) -> SocketAddr {
        Serving::local_addr(self)
    }

    fn drain(
        self,
        grace: Duration,
        stop: &mut dyn FnMut(Duration) -> bool,
    ) -> (usize, Vec<hintq_patterns::Counters>) {
        Serving::drain_counted(self, grace, stop)
    }
}

/// `hintq serve`: starts, reports where it listens on standard error, serves until SIGINT or
/// SIGTERM, then drains gracefully; with `--processes`, the same over worker processes
/// ([`crate::run::run`]). Returns whether everything ended cleanly.
///
/// # Errors
/// Starting (root, address, backend, pattern, worker processes) or opening the access log.
pub fn run(args: &ServeArgs) -> io::Result<bool> {
    let s = &args.server;
    let pattern = s.pattern_config()?;
    let shape = s.shape(pattern.backend, pattern.pattern, pattern.threads);
    let describe = |addr| format!("{} on http://{addr} ({shape})", args.root.display());
    crate::run::run("serve", s, describe, || {
        let cfg = ServeConfig {
            root: args.root.clone(),
            idle_timeout: s.idle_timeout,
            header_timeout: s.header_timeout,
            send_timeout: s.send_timeout,
            limits: Limits::default(),
            access_log: s.open_access_log()?,
            file_cache_valid: args.file_cache_valid,
            file_cache_entries: args.file_cache_entries,
            file_cache_hold: args.file_cache_hold,
        };
        start(cfg, pattern)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_change_with_each_part() {
        // SAFETY: stat is plain data.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        (st.st_ino, st.st_size, st.st_mtime, st.st_mtime_nsec) = (0x1a, 6, 1, 5);
        let tag = |st: &libc::stat| {
            let (b, n) = etag(st);
            String::from_utf8(b[..n].to_vec()).unwrap()
        };
        assert_eq!(tag(&st), "\"1a-6-3b9aca05\"");
        let base = tag(&st);
        let changes: [fn(&mut libc::stat); 3] =
            [|s| s.st_ino += 1, |s| s.st_size += 1, |s| s.st_mtime_nsec += 1];
        for change in changes {
            let mut other = st;
            change(&mut other);
            assert_ne!(tag(&other), base);
        }
        (st.st_ino, st.st_size, st.st_mtime, st.st_mtime_nsec) = (u64::MAX, i64::MAX, i64::MAX, 999_999_999);
        assert!(tag(&st).len() <= 56);
    }

    #[test]
    fn content_types() {
        assert_eq!(content_type(b"a/b.HTML"), b"text/html; charset=utf-8");
        assert_eq!(content_type(b"x.png"), b"image/png");
        assert_eq!(content_type(b".bashrc"), b"application/octet-stream");
        assert_eq!(content_type(b"dir.d/noext"), b"application/octet-stream");
    }
}
