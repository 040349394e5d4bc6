//! One client connection and, while a request is in flight, its upstream connection: the
//! state machine that relays between them.
//!
//! A session is driven by [`Session::pump`] after any event on either descriptor: it moves
//! bytes as far as the buffers and the sockets allow (client → `cin` → request relay →
//! `to_up` → upstream; upstream → `uin` → response relay → `to_client` → client) and returns
//! when nothing more can move. The handler then declares the interest the session wants
//! ([`Session::client_interest`], [`Session::upstream_interest`]): reading only while there
//! is room, writing only while bytes wait and the socket said it was full.
//!
//! Both descriptors belong to the runtime (`hintq-patterns`): the client's is the
//! connection's own, the upstream's is attached to it ([`Fds::attach`]), or parked with the
//! thread while it waits in the idle pool. A session refers to them by number.
//!
//! On io_uring (reactor and sharded patterns) the bytes for the client leave through the
//! ring ([`hintq::RingIo::send`]): copied into a buffer of the queue's pool and sent with the thread's
//! next `io_uring_enter`, with the other sessions' replies. One such send is in flight per
//! client; the session does not send more, half-close or end until it has completed (it
//! asks, and the completion drives it again). The request to the upstream goes the same
//! way: one send in flight per upstream connection, its bytes kept (pinned) until the
//! upstream answers, so that a pooled upstream that turns out dead (the send fails, or the
//! upstream closes) makes the request be sent again on a new one. An upstream connection
//! with a send in flight is never put back in the idle pool.
//!
//! Requests on one client connection are handled one at a time, in order; bytes a client
//! pipelines wait in `cin` until the previous response has been relayed completely, so
//! responses keep the order of requests (RFC 9112 §9.3.2).

use super::buf::{Buf, Pipe, Pool};
use super::settings::Settings;
use super::stats::{Cause, Stats};
use super::sys;
use crate::sys::{peer_addr, shutdown_write, Read};
use hintq::{Interest, State};
use hintq_http::{
    end_to_end, error_body, parse_request, parse_response, write_chunk_end, write_chunk_header,
    write_error_response, write_last_chunk, BodyDecoder, DateCache, Error, Framing, HeadWriter, RequestHead,
    ResponseHead, Side, Version,
};
use hintq_patterns::Fds;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

/// While a body is spliced (io_uring with `--uring-splice on`), the most bytes before it (the
/// head, and body bytes read with it) given to the ring's send; more are written at once with
/// `send(2)`, as on epoll. Given to the ring, a 64 KiB piece made the splice wait for its
/// completion and cost 112 µs per 256 KiB response against 80 written at once (perf and
/// wrk, 50 connections, one thread).
const RING_SEND_MAX: usize = 16 * 1024;

/// Room for a response's head in its first read beside a body of the splice threshold
/// ([`head_read`]): such a body comes in one read with its head and is copied; one with more
/// than the threshold left after that read is spliced from there on.
const HEAD_ROOM: usize = 1024;

/// Space a chunk's size line and closing CRLF need beside its data.
const CHUNK_OVERHEAD: usize = 16 + 2 + 2;

/// Room a response head may need beyond the upstream head it is made from: a longer reason
/// phrase, `Via`, `Content-Length` or `Transfer-Encoding`, `Connection`.
const HEAD_EXTRA: usize = 256;

/// An idle upstream connection older than this is checked before reuse; see [`Ctx::upstream`].
const PEEK_AFTER: Duration = Duration::from_secs(1);

/// How long a closing connection keeps draining the client's input after its last byte was
/// sent, so the kernel does not answer unread input with a reset that destroys the response.
const LINGER: Duration = Duration::from_secs(2);

/// What the handler hands a session besides itself.
pub(crate) struct Ctx<'a, 'b> {
    pub now: Instant,
    pub pool: &'a mut Pool,
    /// Idle upstream connections of this thread, most recently used last.
    pub idle: &'a mut Vec<Upstream>,
    /// Upstream connections the session gave up: `true` to keep in the idle pool, `false` to
    /// close. The handler parks or closes them after the pump.
    pub released: &'a mut Vec<(Upstream, bool)>,
    /// The connection's descriptors: the upstream's is attached here.
    pub fds: &'a mut Fds<'b>,
    pub cfg: &'a Settings,
    pub stats: &'a Stats,
    pub date: &'a mut DateCache,
    pub spare: &'a mut Spare,
}

/// Records of exchanges that ended, kept by the thread for its next ones (up to
/// [`SPARE_MAX`], as many as are in flight at once in a busy batch): an exchange per request
/// cost an allocation and a free each (about 1.5% of the proxy's instructions per request at
/// 1 KiB). Per thread, not per connection: an idle session holds none.
#[derive(Default)]
#[allow(clippy::vec_box)] // the records are the boxes a session holds, handed back whole
pub(crate) struct Spare(Vec<Box<Exchange>>);

/// The most ended exchanges' records a thread keeps.
const SPARE_MAX: usize = 64;

impl Spare {
    /// `ex` in a kept record (its previous contents dropped now), or in a new one.
    fn record(&mut self, ex: Exchange) -> Box<Exchange> {
        match self.0.pop() {
            Some(mut b) => {
                *b = ex;
                b
            }
            None => Box::new(ex),
        }
    }

    fn keep(&mut self, ex: Box<Exchange>) {
        if self.0.len() < SPARE_MAX {
            self.0.push(ex);
        }
    }
}

impl Ctx<'_, '_> {
    /// A graceful drain is under way: no keep-alive after the exchange in flight.
    fn draining(&self) -> bool {
        self.fds.draining()
    }

    /// A connection to the upstream: the most recent idle one that is still alive, else a
    /// new one.
    ///
    /// A close (or stray bytes) from the upstream on an idle connection is an event on its
    /// registration, which drops it from the pool; one that arrived in the batch being
    /// handled has not been seen yet, so a connection idle for [`PEEK_AFTER`] or more is
    /// also checked with a `recv(MSG_PEEK)`. One idle for less was in use a moment ago: an
    /// upstream closing it now is rare, and an idempotent request is then retried anyway.
    fn upstream(&mut self) -> io::Result<Upstream> {
        while let Some(up) = self.idle.pop() {
            self.fds.unpark(up.fd);
            let recent = self.now.saturating_duration_since(up.idle_at) < PEEK_AFTER;
            if recent || sys::idle_alive(up.fd) {
                self.stats.upstream_reused.fetch_add(1, Relaxed);
                return Ok(up);
            }
            self.stats.stale_idle.fetch_add(1, Relaxed);
            self.released.push((up, false));
        }
        self.connect()
    }

    fn connect(&mut self) -> io::Result<Upstream> {
        let (fd, done) = sys::connect(self.cfg.upstream)?;
        let fd = self.fds.attach(fd, Interest::empty())?;
        self.stats.upstream_connects.fetch_add(1, Relaxed);
        Ok(Upstream {
            fd,
            readable: false,
            writable: done,
            connecting: !done,
            in_ring: false,
            eof: false,
            hup: false,
            reused: false,
            idle_at: self.now,
        })
    }
}

/// A connection to the upstream.
#[derive(Debug)]
pub(crate) struct Upstream {
    /// Attached to the client's connection, or parked with the thread while idle.
    pub fd: RawFd,
    readable: bool,
    writable: bool,
    connecting: bool,
    /// Bytes of `to_up` were given to the queue's ring and may not have left yet.
    in_ring: bool,
    /// The upstream closed its side (read it).
    eof: bool,
    /// The upstream's close was reported (not read yet, perhaps: a short read then does
    /// not mean drained, since the close arrives as no new event on edge backends).
    hup: bool,
    /// Taken from the idle pool (it may have gone stale: see [`Exchange::retry`]).
    reused: bool,
    /// When it last went idle.
    idle_at: Instant,
}

impl Upstream {
    /// Back into the idle pool: the next user finds nothing pending and a writable socket.
    fn make_idle(mut self, now: Instant) -> Upstream {
        self.idle_at = now;
        self.readable = false;
        self.writable = true;
        self.in_ring = false;
        self.reused = true;
        self
    }

    pub(crate) fn event(&mut self, state: State) {
        self.readable |= state.is_readable();
        self.writable |= state.is_writable();
        self.hup |= state.contains(State::HUP);
    }
}

/// How a relayed body is framed on the way out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Enc {
    /// As it came: Content-Length (the same length), or delimited by closing.
    Plain,
    /// Chunked (what came chunked, or until-close to an HTTP/1.1 client).
    Chunked,
}

/// A body being relayed: decoded from one side, re-framed for the other.
#[derive(Debug)]
struct Body {
    dec: BodyDecoder,
    enc: Enc,
    /// The end (last chunk and trailers) has been written.
    ended: bool,
    /// Data bytes relayed (for the access log).
    sent: u64,
}

/// Why a relay stopped short.
enum RelayError {
    /// The incoming framing was invalid.
    Framing(Error),
}

impl Body {
    fn new(framing: Framing, side: Side, enc: Enc, cfg: &Settings) -> Body {
        Body { dec: BodyDecoder::new(framing, side, &cfg.limits), enc, ended: false, sent: 0 }
    }

    /// Moves body data from `src` to `dst` as far as room allows; true if anything moved.
    fn relay(&mut self, src: &mut Buf, dst: &mut Buf, pool: &mut Pool) -> Result<bool, RelayError> {
        let mut progress = false;
        loop {
            if self.dec.is_done() {
                if !self.ended {
                    pool.fill(dst);
                    if !self.write_end(dst) {
                        return Ok(progress);
                    }
                    progress = true;
                }
                return Ok(progress);
            }
            if src.is_empty() {
                return Ok(progress);
            }
            pool.fill(dst);
            let overhead = if self.enc == Enc::Chunked { CHUNK_OVERHEAD } else { 0 };
            let room = dst.room();
            if room <= overhead {
                return Ok(progress);
            }
            let whole = src.data().len();
            let input = &src.data()[..whole.min(room - overhead)];
            let d = self.dec.decode(input).map_err(RelayError::Framing)?;
            // Every byte of `src` is body and nothing waits in `dst`: the buffer itself changes
            // hands, not a copy of it (a large body's common case).
            if self.enc == Enc::Plain && d.data == (0..whole) && dst.take_whole(src) {
                self.sent += whole as u64;
            } else {
                let data = &src.data()[d.data.clone()];
                if !data.is_empty() {
                    self.sent += data.len() as u64;
                    let out = dst.vec();
                    match self.enc {
                        Enc::Plain => out.extend_from_slice(data),
                        Enc::Chunked => {
                            write_chunk_header(out, data.len());
                            out.extend_from_slice(data);
                            write_chunk_end(out);
                        }
                    }
                }
                src.consume(d.consumed);
            }
            if d.consumed == 0 && !d.done {
                return Ok(progress);
            }
            progress = true;
        }
    }

    /// Writes the end of the body if there is room; true once written.
    fn write_end(&mut self, dst: &mut Buf) -> bool {
        if self.enc == Enc::Chunked {
            let trailers = self.dec.trailers();
            let need = 5 + trailers.iter().map(|h| h.name.len() + h.value.len() + 4).sum::<usize>();
            if dst.room() < need {
                return false;
            }
            write_last_chunk(dst.vec(), trailers);
        }
        self.ended = true;
        true
    }

    /// The sender closed: the body ends here if it was delimited by close; otherwise it was
    /// cut short (row P3: then its end is never written).
    fn finish(&mut self) -> bool {
        self.dec.finish().is_ok()
    }
}

#[derive(Debug)]
enum Resp {
    /// Waiting for the (final) response head.
    Head,
    Body(Body),
    /// Relayed completely.
    Done,
}

/// The request in flight and its response.
#[derive(Debug)]
struct Exchange {
    is_head: bool,
    client_v10: bool,
    /// The client connection may serve another request after this one.
    keep_client: bool,
    expect_continue: bool,
    sent_continue: bool,
    /// Idempotent and without body: may be sent once more on a fresh connection when a
    /// reused one fails before any response byte (row P9: never for other requests).
    retry: bool,
    retried: bool,
    /// Request body still to relay (`None`: none, done, or abandoned).
    req: Option<Body>,
    /// The response came before the request body was relayed: the rest of it is never
    /// sent, so neither connection can carry another request.
    req_abandoned: bool,
    resp: Resp,
    /// The upstream's response allows another request on its connection.
    upstream_keep: bool,
    /// Any response byte came from the upstream.
    upstream_spoke: bool,
    /// The request line, when there is an access log.
    log_line: Option<String>,
    /// The final status relayed, and the body bytes.
    status: u16,
    resp_bytes: u64,
}

impl Exchange {
    /// The response is over (complete or cut short).
    fn response_done(&mut self) {
        if let Resp::Body(b) = &self.resp {
            self.resp_bytes = b.sent;
        }
        self.resp = Resp::Done;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Reading a request head (or idle between requests).
    Head,
    /// A request is in flight: `ex` and `up` are set.
    Exchange,
    /// Sending what is left, then half-closing.
    Closing,
    /// Half-closed: discarding the client's input until it closes or [`LINGER`] passes.
    Linger,
}

/// The session is over: the runtime closes both connections.
pub(crate) struct End;

type Step = Result<bool, End>;

/// A client connection.
pub(crate) struct Session {
    /// The connection's own descriptor.
    pub client: RawFd,
    readable: bool,
    writable: bool,
    eof: bool,
    /// A close was reported (see [`Upstream`]'s).
    hup: bool,
    cin: Buf,
    to_client: Buf,
    /// Bytes of `to_client` were given to the queue's ring ([`hintq::RingIo::send`]) and may not have
    /// left yet: the connection does not close, nor send more, until they have.
    in_ring: bool,
    to_up: Buf,
    uin: Buf,
    /// While a response body is spliced ([`Settings::splice_above`]): the pipe its bytes
    /// cross, which empties into the client only after `to_client` (and the ring's send).
    pipe: Option<Pipe>,
    pub up: Option<Upstream>,
    ex: Option<Box<Exchange>>,
    phase: Phase,
    head_started: bool,
    /// Between requests with the last response still leaving (in `to_client` or the ring's
    /// send): the deadline is the send timeout's until it has left, then the idle timeout's
    /// ([`Session::between_requests`]).
    flushing: bool,
    pub deadline: Instant,
}

impl Session {
    pub(crate) fn new(client: RawFd, deadline: Instant) -> Session {
        Session {
            client,
            readable: false,
            writable: true,
            eof: false,
            hup: false,
            cin: Buf::default(),
            to_client: Buf::default(),
            in_ring: false,
            to_up: Buf::default(),
            uin: Buf::default(),
            pipe: None,
            up: None,
            ex: None,
            phase: Phase::Head,
            head_started: false,
            flushing: false,
            deadline,
        }
    }

    /// The drain began: look at the client once more, as if it were readable (a request that
    /// arrived unseen is answered, with a close), so that an idle connection closes now.
    pub(crate) fn nudge(&mut self) {
        if matches!(self.phase, Phase::Head | Phase::Exchange) && !self.eof {
            self.readable = true;
        }
    }

    pub(crate) fn client_event(&mut self, state: State) {
        self.readable |= state.is_readable();
        self.writable |= state.is_writable();
        self.hup |= state.contains(State::HUP);
    }

    /// The interest the client descriptor should have now. `receiving`: the queue receives
    /// for it (io_uring): reading interest is kept while the buffer is full, since revoking
    /// would drop what the ring received, whose inbox holds the client back meanwhile.
    pub(crate) fn client_interest(&mut self, receiving: bool) -> Interest {
        let mut i = Interest::empty();
        let read = match self.phase {
            Phase::Linger => true,
            Phase::Closing => false,
            Phase::Head | Phase::Exchange => {
                !self.eof && (receiving || self.cin.data().is_empty() || self.cin.room() > 0)
            }
        };
        if read {
            i |= Interest::READ;
        }
        if self.client_pending() && !self.writable {
            i |= Interest::WRITE;
        }
        if self.in_ring && i.is_empty() {
            // Revoking would cancel the ring's send in flight: stay registered (writability,
            // which never changes what the session reads) until its completion comes.
            i |= Interest::WRITE;
        }
        i
    }

    /// The interest the upstream descriptor should have now; `receiving` as for the client;
    /// `receive`: what reading adds, [`Interest::RECEIVE`] where the ring receives upstream
    /// bytes, else nothing (the proxy's `Relay::upstream_receive`).
    pub(crate) fn upstream_interest(&mut self, receiving: bool, receive: Interest) -> Interest {
        let Some(up) = &self.up else { return Interest::empty() };
        let mut i = Interest::empty();
        if up.connecting || (!self.to_up.is_empty() && !up.writable) {
            i |= Interest::WRITE;
        }
        let body = self.ex.as_ref().is_some_and(|ex| matches!(ex.resp, Resp::Body(_)));
        if let Some(pipe) = self.pipe.as_ref().filter(|_| body) {
            // Spliced: read (never received by the ring, whose copy the splice avoids) while
            // there is room where the body's next bytes go: `uin` for those the ring or a
            // read took before the splice began, else the pipe. Once the body is in, the
            // usual interest again (bytes after it are looked for when the exchange ends).
            let room = if self.uin.is_empty() && !receiving {
                pipe.room() > 0
            } else {
                receiving || self.uin.room() > 0
            };
            if !up.connecting && !up.eof && room {
                i |= Interest::READ;
            }
        } else if !up.connecting
            && !up.eof
            && (receiving || self.uin.data().is_empty() || self.uin.room() > 0)
        {
            // Received by the ring where it does (see `Buf::read_from`); the same interest as
            // an idle upstream's in the pool, so that taking one from it changes nothing.
            i |= Interest::READ | receive;
        }
        if up.in_ring && i.is_empty() {
            // As for the client: revoking would cancel the send in flight.
            i |= Interest::WRITE;
        }
        i
    }

    /// Gives every buffer back (the session is being closed).
    pub(crate) fn release_buffers(&mut self, pool: &mut Pool) {
        for b in [&mut self.cin, &mut self.to_client, &mut self.to_up, &mut self.uin] {
            pool.release(b);
        }
        if let Some(p) = self.pipe.take() {
            pool.put_pipe(p);
        }
    }

    /// Response bytes wait for the client: in `to_client` or in the splice pipe.
    fn client_pending(&self) -> bool {
        !self.to_client.is_empty() || self.pipe.as_ref().is_some_and(|p| p.len > 0)
    }

    /// Moves everything that can move; see the module docs.
    pub(crate) fn pump(&mut self, ctx: &mut Ctx<'_, '_>) -> Result<(), End> {
        let mut moved = false;
        loop {
            let mut progress = self.read_client(ctx)?;
            if self.phase == Phase::Head {
                progress |= self.parse_head(ctx)?;
            }
            if self.phase == Phase::Exchange {
                // The head and the body bytes that came with it leave in one send.
                progress |= self.relay_request(ctx)?;
                progress |= self.write_upstream(ctx)?;
                progress |= self.read_upstream(ctx)?;
                progress |= self.relay_response(ctx)?;
            }
            progress |= self.write_client(ctx)?;
            progress |= self.advance(ctx)?;
            if progress && self.phase == Phase::Exchange {
                // Waiting on a client that does not take the response: the send timeout;
                // else the upstream's.
                let stalled_on_client = self.client_pending() && (!self.writable || self.in_ring);
                let t = if stalled_on_client { ctx.cfg.send_timeout } else { ctx.cfg.upstream_timeout };
                self.deadline = ctx.now + t;
            }
            if !progress {
                break;
            }
            moved = true;
        }
        self.between_requests(ctx, moved)?;
        for b in [&mut self.cin, &mut self.to_client, &mut self.to_up, &mut self.uin] {
            ctx.pool.settle(b);
        }
        Ok(())
    }

    /// Between requests, while the last response is still leaving: the send timeout runs
    /// (again from each `moved`, bytes having left), as it did during the exchange; once all
    /// has left, the idle timeout. Asking the ring whether its send is still in flight arms
    /// the report of its completion, which drives the session here again.
    fn between_requests(&mut self, ctx: &mut Ctx<'_, '_>, moved: bool) -> Result<(), End> {
        if self.phase != Phase::Head || self.head_started || !self.flushing {
            return Ok(());
        }
        if self.to_client.is_empty() && self.client_settled(ctx.fds)? {
            self.flushing = false;
            self.deadline = ctx.now + ctx.cfg.idle_timeout;
        } else if moved {
            self.deadline = ctx.now + ctx.cfg.send_timeout;
        }
        Ok(())
    }

    /// The session's deadline passed: answer what the phase calls for.
    pub(crate) fn expire(&mut self, ctx: &mut Ctx<'_, '_>) -> Result<(), End> {
        match self.phase {
            // Slowloris (S11): 408 at the header deadline; an idle connection just closes (S12).
            Phase::Head if !self.cin.is_empty() => self.fail_client(408, ctx),
            Phase::Exchange if !self.response_started() => {
                // Still waiting for the client's body: its fault; else the upstream's (P1: 504).
                if self.ex.as_ref().is_some_and(|ex| ex.req.is_some()) {
                    self.fail_client(408, ctx);
                } else {
                    self.fail_upstream(Cause::Timeout, ctx);
                }
            }
            _ => return Err(End),
        }
        Ok(())
    }

    fn response_started(&self) -> bool {
        self.ex.as_ref().is_some_and(|ex| !matches!(ex.resp, Resp::Head))
    }

    fn read_client(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        if !self.readable || self.eof || self.phase == Phase::Closing {
            return Ok(false);
        }
        ctx.pool.fill(&mut self.cin);
        if self.cin.room() == 0 {
            return Ok(false);
        }
        match self.cin.read_from(ctx.fds, self.client, usize::MAX) {
            Ok(Read::Eof) => {
                self.eof = true;
                self.readable = false;
            }
            Ok(Read::Data { short, .. }) => self.readable = !(short && ctx.cfg.short_read_drains) || self.hup,
            Ok(Read::Again) => {
                self.readable = false;
                return Ok(false);
            }
            Err(_) => return Err(End),
        }
        if self.phase == Phase::Linger {
            self.cin.clear();
            if self.eof {
                return Err(End);
            }
        }
        Ok(true)
    }

    /// True once nothing given to the ring for the client is still in flight; otherwise asks
    /// for the send's completion to drive the session again. A failed send ends it.
    fn client_settled(&mut self, fds: &mut Fds<'_>) -> Result<bool, End> {
        if self.in_ring {
            if fds.ring_io().is_some_and(|mut r| r.sending(self.client)) {
                return Ok(false);
            }
            self.in_ring = false;
            if fds.ring_io().and_then(|mut r| r.send_error(self.client)).is_some() {
                return Err(End);
            }
        }
        Ok(true)
    }

    fn write_client(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        if !self.writable {
            return Ok(false);
        }
        if self.to_client.is_empty() {
            return self.splice_to_client(ctx);
        }
        if ctx.fds.ring_io().is_some_and(|r| r.can_send()) {
            // io_uring: the ring sends, with the thread's next wait and the other sessions'
            // replies. One send in flight: the rest waits for its completion, which drives
            // the session again.
            if !self.client_settled(ctx.fds)? {
                return Ok(false);
            }
            // Not taken when the client's descriptor is not watched now (it had nothing to
            // read or to write while the upstream answered), nor given when a spliced body
            // follows more than RING_SEND_MAX bytes: sent here, as on other backends.
            let to_ring = self.pipe.is_none() || self.to_client.data().len() <= RING_SEND_MAX;
            let sent = if to_ring {
                ring_send(ctx.fds, self.client, &mut self.to_client, ctx.pool)
            } else {
                Ok(false)
            };
            match sent {
                Ok(true) => {
                    self.in_ring = true;
                    return Ok(true);
                }
                Ok(false) => {}
                Err(_) => return Err(End),
            }
        }
        match self.to_client.write_to(self.client) {
            Ok(_) => {
                self.writable = self.to_client.is_empty();
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.writable = false;
                Ok(false)
            }
            // The client vanished (EPIPE, reset: S18).
            Err(_) => Err(End),
        }
    }

    /// Splices what the pipe holds into the client, once everything before it has left
    /// (`to_client` is empty, and the ring's send of it has completed).
    fn splice_to_client(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        if self.pipe.as_ref().is_none_or(|p| p.len == 0) || !self.client_settled(ctx.fds)? {
            return Ok(false);
        }
        let Some(pipe) = self.pipe.as_mut() else { return Ok(false) };
        match pipe.drain_to(self.client) {
            Ok(n) => {
                // All of it left: the socket may take more; part of it: the socket is full.
                self.writable = pipe.len == 0;
                Ok(n > 0)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.writable = false;
                Ok(false)
            }
            // The client vanished (EPIPE, reset: S18).
            Err(_) => Err(End),
        }
    }

    /// Splices body bytes from the upstream into the pipe: at most what the Content-Length
    /// still allows, so no byte of what follows the body is taken; only once `uin` is empty
    /// and the ring holds nothing for the upstream (its receive stopped with the interest
    /// that dropped `RECEIVE`), so bytes keep their order. `Ok(true)` if anything moved or
    /// the upstream's end was read (`up.eof`: the caller judges the body).
    fn splice_in(&mut self, ctx: &mut Ctx<'_, '_>) -> io::Result<bool> {
        let (Some(pipe), Some(up), Some(ex)) = (self.pipe.as_mut(), self.up.as_mut(), self.ex.as_mut())
        else {
            return Ok(false);
        };
        let Resp::Body(body) = &mut ex.resp else { return Ok(false) };
        let Some(left) = body.dec.length_remaining().filter(|&n| n > 0) else { return Ok(false) };
        let ring = ctx.fds.ring_io();
        // On io_uring the socket is tried whenever the pipe has room, whatever its last
        // report said: a whole body often arrives at once, so its one report (an edge) may
        // have been taken while the pipe was full or the ring's inbox was being emptied, and
        // no other comes while nothing more arrives. Trusting the report there stalled a
        // third of the 1 MiB responses with 10 connections (bytes left in the upstream's
        // socket, an empty pipe, no report); an `EAGAIN` splice per pass is its price.
        let edge_lost = ring.is_some();
        if !self.uin.is_empty() || up.eof || pipe.room() == 0 || (!up.readable && pipe.tried && !edge_lost) {
            return Ok(false);
        }
        if ring.is_some_and(|r| r.receiving(up.fd)) {
            return Ok(false);
        }
        // The socket itself is tried once whatever its last report said, on every backend:
        // the report of its bytes may have come while the ring's inbox was being emptied,
        // and no other comes while a full socket holds the sender back.
        pipe.tried = true;
        match pipe.fill_from(up.fd, usize::try_from(left).unwrap_or(usize::MAX)) {
            Ok(0) => {
                up.eof = true;
                up.readable = false;
                ex.upstream_keep = false;
                Ok(true)
            }
            Ok(n) => {
                body.dec.skip(n as u64);
                body.sent += n as u64;
                body.ended = body.dec.is_done();
                ctx.stats.spliced_bytes.fetch_add(n as u64, Relaxed);
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // Nothing in the socket (when the pipe was empty; a pipe holding bytes that
                // took none is full, and is tried again once some have gone out).
                if pipe.len == 0 {
                    up.readable = false;
                }
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Head phase: parses the request head, and starts the exchange when it is complete.
    fn parse_head(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        if self.cin.is_empty() {
            let done = self.eof && self.to_client.is_empty() && self.client_settled(ctx.fds)?;
            return if done { Err(End) } else { Ok(false) };
        }
        if !self.head_started {
            self.head_started = true;
            self.flushing = false;
            self.deadline = ctx.now + ctx.cfg.header_timeout;
        }
        // The head is looked at where it is, not moved out (it is most of a kilobyte).
        let parsed = parse_request(self.cin.data(), &ctx.cfg.limits);
        let head = match &parsed {
            Ok(Some(head)) => head,
            // A partial head and the client closed: nothing to answer (S19).
            Ok(None) if self.eof => return Err(End),
            Ok(None) => return Ok(false),
            // S1-S10 and P5: ambiguous or invalid framing is refused here, never forwarded.
            Err(e) => {
                self.fail_client(e.status(), ctx);
                return Ok(true);
            }
        };
        if head.method == "CONNECT" {
            self.answer_error(501, request_line(head, ctx.cfg).as_deref(), ctx);
            return Ok(true);
        }
        ctx.stats.requests.fetch_add(1, Relaxed);
        let up = match ctx.upstream() {
            Ok(up) => up,
            Err(e) => {
                self.fail_upstream(Cause::Failed(e), ctx);
                return Ok(true);
            }
        };
        ctx.pool.fill(&mut self.to_up);
        write_request_head(head, self.to_up.vec(), ctx.cfg);
        let idempotent = matches!(&*head.method, "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE");
        let retry = idempotent && head.framing == Framing::None && up.reused;
        if retry {
            self.to_up.pin();
        }
        let req = match head.framing {
            Framing::None => None,
            Framing::Chunked => Some(Body::new(Framing::Chunked, Side::Request, Enc::Chunked, ctx.cfg)),
            f => Some(Body::new(f, Side::Request, Enc::Plain, ctx.cfg)),
        };
        self.ex = Some(ctx.spare.record(Exchange {
            is_head: head.is_head(),
            client_v10: head.version == Version::Http10,
            keep_client: head.keep_alive && !ctx.draining(),
            expect_continue: head.expect_continue,
            sent_continue: false,
            retry,
            retried: false,
            req,
            req_abandoned: false,
            resp: Resp::Head,
            upstream_keep: false,
            upstream_spoke: false,
            log_line: request_line(head, ctx.cfg),
            status: 0,
            resp_bytes: 0,
        }));
        let used = head.head_len;
        self.cin.consume(used);
        self.up = Some(up);
        self.phase = Phase::Exchange;
        Ok(true)
    }

    fn relay_request(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        let Some(ex) = self.ex.as_mut() else { return Ok(false) };
        let Some(body) = ex.req.as_mut() else { return Ok(false) };
        let progress = match body.relay(&mut self.cin, &mut self.to_up, ctx.pool) {
            Ok(p) => p,
            Err(RelayError::Framing(e)) => {
                // A bad chunk in the request body (S4-S6): the upstream has a partial request
                // and cannot be reused; the client gets the error if no response started.
                if self.response_started() {
                    return Err(End);
                }
                self.fail_client(e.status(), ctx);
                return Ok(true);
            }
        };
        if body.ended {
            ex.req = None;
        } else if self.eof && self.cin.is_empty() {
            // The client closed in the middle of its body: nothing can be completed.
            return Err(End);
        }
        Ok(progress)
    }

    fn write_upstream(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        let Some(up) = self.up.as_mut() else { return Ok(false) };
        if up.connecting {
            if !(up.writable || up.readable) {
                return Ok(false);
            }
            if let Err(e) = sys::take_error(up.fd) {
                return self.upstream_failed(e, ctx);
            }
            up.connecting = false;
            up.writable = true;
            up.readable = false;
        }
        if up.in_ring {
            // One send in flight: its completion (asked for here) drives the session again.
            if ctx.fds.ring_io().is_some_and(|mut r| r.sending(up.fd)) {
                return Ok(false);
            }
            up.in_ring = false;
            if let Some(e) = ctx.fds.ring_io().and_then(|mut r| r.send_error(up.fd)) {
                return self.upstream_failed(e, ctx);
            }
        }
        if self.to_up.is_empty() || !up.writable {
            return Ok(false);
        }
        if ctx.fds.ring_io().is_some_and(|r| r.can_send()) {
            // io_uring: the ring sends it with the thread's next wait (see the module doc).
            // Not taken when not watched at this moment (taken from the idle pool, say).
            match ring_send(ctx.fds, up.fd, &mut self.to_up, ctx.pool) {
                Ok(true) => {
                    up.in_ring = true;
                    return Ok(true);
                }
                Ok(false) => {}
                Err(e) => return self.upstream_failed(e, ctx),
            }
        }
        match self.to_up.write_to(up.fd) {
            Ok(_) => {
                up.writable = self.to_up.is_empty();
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                up.writable = false;
                Ok(false)
            }
            Err(e) => self.upstream_failed(e, ctx),
        }
    }

    fn read_upstream(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        let (Some(up), Some(ex)) = (self.up.as_mut(), self.ex.as_mut()) else { return Ok(false) };
        if !up.readable || up.eof || up.connecting || matches!(ex.resp, Resp::Done) {
            return Ok(false);
        }
        // A spliced body: the bytes go from the socket to the pipe (splice_in), not through
        // `uin`, once what came before them has been taken.
        if self.pipe.is_some()
            && self.uin.is_empty()
            && !ctx.fds.ring_io().is_some_and(|r| r.receiving(up.fd))
        {
            return Ok(false);
        }
        ctx.pool.fill(&mut self.uin);
        if self.uin.room() == 0 {
            return Ok(false);
        }
        // A response's first read stops short of a body to splice, whose bytes read with the
        // head are copied (`head_read`); a head longer than that is read on as usual.
        let max = match ex.resp {
            Resp::Head => head_read(ctx.cfg, ctx.fds.ring_io().is_some())
                .checked_sub(self.uin.data().len())
                .filter(|&n| n > 0)
                .unwrap_or(usize::MAX),
            _ => usize::MAX,
        };
        match self.uin.read_from(ctx.fds, up.fd, max) {
            Ok(Read::Eof) => {
                up.readable = false;
                up.eof = true;
                self.upstream_eof(ctx)
            }
            Ok(Read::Data { short, .. }) => {
                up.readable = !(short && ctx.cfg.short_read_drains) || up.hup;
                if !ex.upstream_spoke {
                    ex.upstream_spoke = true;
                    self.to_up.unpin();
                }
                Ok(true)
            }
            Ok(Read::Again) => {
                up.readable = false;
                Ok(false)
            }
            Err(e) => self.upstream_failed(e, ctx),
        }
    }

    /// The upstream closed its side.
    fn upstream_eof(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        let Some(ex) = self.ex.as_mut() else { return Ok(false) };
        match &mut ex.resp {
            Resp::Head if !ex.upstream_spoke => {
                self.upstream_failed(io::Error::from(io::ErrorKind::UnexpectedEof), ctx)
            }
            // Part of a head, then nothing: an invalid response (P1/P2).
            Resp::Head => self.bad_gateway(Cause::Closed, ctx),
            Resp::Body(_) => {
                // The body is judged once what is buffered has been relayed (relay_response).
                ex.upstream_keep = false;
                Ok(true)
            }
            Resp::Done => Ok(false),
        }
    }

    /// The upstream connection failed (refused, reset, closed) before a response started.
    fn upstream_failed(&mut self, e: io::Error, ctx: &mut Ctx<'_, '_>) -> Step {
        let Some(ex) = self.ex.as_mut() else { return Err(End) };
        let stale = self.up.as_ref().is_some_and(|u| u.reused);
        if ex.retry && stale && !ex.upstream_spoke && !ex.retried && matches!(ex.resp, Resp::Head) {
            // A pooled connection the upstream had closed: the idempotent request is sent
            // once more on a new connection (P9 allows it for these only).
            ex.retried = true;
            if let Some(up) = self.up.take() {
                ctx.released.push((up, false));
            }
            ctx.stats.retries.fetch_add(1, Relaxed);
            self.to_up.rewind();
            self.to_up.unpin();
            self.uin.clear();
            return match ctx.connect() {
                Ok(up) => {
                    self.up = Some(up);
                    Ok(true)
                }
                Err(e) => self.bad_gateway(Cause::Failed(e), ctx),
            };
        }
        self.bad_gateway(Cause::Failed(e), ctx)
    }

    /// The upstream failed: the client gets a 502 if no response started (see
    /// [`Session::fail_upstream`]), else a truncated response.
    fn bad_gateway(&mut self, why: Cause, ctx: &mut Ctx<'_, '_>) -> Step {
        if self.response_started() {
            self.truncate();
        } else {
            self.fail_upstream(why, ctx);
        }
        Ok(true)
    }

    /// Answers 502 (504 for [`Cause::Timeout`]) and closes, and says why on standard error
    /// ([`super::Complaints`]).
    fn fail_upstream(&mut self, why: Cause, ctx: &mut Ctx<'_, '_>) {
        let status = if matches!(why, Cause::Timeout) { 504 } else { 502 };
        ctx.stats.complaints.complain(status, &why, ctx.cfg);
        self.fail_client(status, ctx);
    }

    /// Gives up the upstream and ends the client connection after what is buffered for it.
    fn truncate(&mut self) {
        if let Some(ex) = self.ex.as_mut() {
            ex.keep_client = false;
            ex.upstream_keep = false;
            ex.response_done();
            ex.req = None;
            ex.req_abandoned = true;
        }
    }

    /// Answers `status` and closes: drops the request, the upstream and any input.
    fn fail_client(&mut self, status: u16, ctx: &mut Ctx<'_, '_>) {
        let line = self.ex.as_mut().and_then(|ex| ex.log_line.take());
        self.answer_error(status, line.as_deref(), ctx);
    }

    /// [`Session::fail_client`], logged with `line` (`-` when no request line was read).
    fn answer_error(&mut self, status: u16, line: Option<&str>, ctx: &mut Ctx<'_, '_>) {
        match status {
            502 => ctx.stats.bad_gateway.fetch_add(1, Relaxed),
            504 => ctx.stats.gateway_timeout.fetch_add(1, Relaxed),
            _ => ctx.stats.client_errors.fetch_add(1, Relaxed),
        };
        if let Some(up) = self.up.take() {
            ctx.released.push((up, false));
        }
        let ex = self.ex.take();
        let is_head = ex.is_some_and(|ex| ex.is_head);
        if let Some(log) = &ctx.cfg.access_log {
            let body = if is_head { 0 } else { error_body(status).len() as u64 };
            log.log(peer_addr(self.client), line.unwrap_or("-"), status, body);
        }
        self.to_up.clear();
        self.uin.clear();
        self.cin.clear();
        if let Some(p) = self.pipe.take() {
            ctx.pool.put_pipe(p);
        }
        ctx.pool.fill(&mut self.to_client);
        let date = *ctx.date.get(ctx.now);
        write_error_response(self.to_client.vec(), status, Some(&date), true, is_head);
        self.enter_closing(ctx);
    }

    fn enter_closing(&mut self, ctx: &Ctx<'_, '_>) {
        self.phase = Phase::Closing;
        self.deadline = ctx.now + ctx.cfg.send_timeout;
    }

    fn log(&self, ex: &Exchange, status: u16, bytes: u64, ctx: &Ctx<'_, '_>) {
        if let (Some(log), Some(line)) = (&ctx.cfg.access_log, &ex.log_line) {
            log.log(peer_addr(self.client), line, status, bytes);
        }
    }

    fn relay_response(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        // The head, then at once the body bytes that came with it: one send for both.
        let mut progress = false;
        while self.ex.as_ref().is_some_and(|ex| matches!(ex.resp, Resp::Head)) {
            if !self.parse_response_head(ctx)? {
                return Ok(progress);
            }
            progress = true;
        }
        let Some(ex) = self.ex.as_mut() else { return Ok(progress) };
        let Resp::Body(body) = &mut ex.resp else { return Ok(progress) };
        // A bad chunk mid-body, or the upstream failing while its body is spliced: the
        // client must not get a complete body (P3).
        let relayed = body.relay(&mut self.uin, &mut self.to_client, ctx.pool).map_err(drop);
        // A spliced body's next bytes, once the copied ones are out of `uin`.
        let moved = relayed.and_then(|p| Ok(p | self.splice_in(ctx).map_err(drop)?));
        let Ok(p) = moved else {
            ctx.stats.truncated.fetch_add(1, Relaxed);
            self.truncate();
            return Ok(true);
        };
        progress |= p;
        let Some(ex) = self.ex.as_mut() else { return Ok(progress) };
        let Resp::Body(body) = &mut ex.resp else { return Ok(progress) };
        let closed = self.up.as_ref().is_some_and(|u| u.eof);
        if closed && self.uin.is_empty() && !body.ended {
            if !body.finish() {
                // P3: cut short upstream, so cut short downstream: never the last chunk,
                // never the missing Content-Length bytes; then a close.
                ctx.stats.truncated.fetch_add(1, Relaxed);
                self.truncate();
                return Ok(true);
            }
            progress |= body.relay(&mut self.uin, &mut self.to_client, ctx.pool).unwrap_or(false);
        }
        if body.ended {
            ex.response_done();
        }
        Ok(progress)
    }

    fn parse_response_head(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        let Some(ex) = self.ex.as_mut() else { return Ok(false) };
        if self.uin.is_empty() {
            return Ok(false);
        }
        let parsed = parse_response(self.uin.data(), &ctx.cfg.limits, ex.is_head);
        let head = match &parsed {
            Ok(Some(head)) => head,
            Ok(None) => return Ok(false),
            // P2: invalid CL, CL+TE, bad TE, bad bytes (P7): discarded, 502.
            Err(e) => return self.bad_gateway(Cause::Garbage(e.to_string()), ctx),
        };
        ctx.pool.fill(&mut self.to_client);
        if self.to_client.room() < head.head_len + HEAD_EXTRA {
            return Ok(false); // the client has not taken the previous response yet
        }
        let used = head.head_len;
        if head.is_informational() {
            if head.status == 101 {
                // No protocol switch was asked for.
                return self.bad_gateway(Cause::Garbage("101 Switching Protocols unasked".into()), ctx);
            }
            // P8: the upstream's 100 goes to a client that is waiting for it; other interim
            // responses are dropped.
            if head.status == 100 && ex.expect_continue && !ex.sent_continue {
                ex.sent_continue = true;
                self.to_client.vec().extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
            }
            self.uin.consume(used);
            return Ok(true);
        }
        if ex.req.is_some() {
            // A final answer before the request body was sent (an error, or a 100-continue
            // refusal): the rest of the body is not relayed, so neither connection is reused.
            ex.req = None;
            ex.req_abandoned = true;
            ex.keep_client = false;
            self.to_up.clear();
        }
        ex.upstream_keep = head.keep_alive;
        ex.status = head.status;
        if ctx.draining() {
            ex.keep_client = false; // the drain closes the connection after this response
        }
        let enc = match head.framing {
            Framing::None | Framing::Length(_) => Enc::Plain,
            Framing::Chunked | Framing::UntilClose if ex.client_v10 => Enc::Plain,
            Framing::Chunked | Framing::UntilClose => Enc::Chunked,
        };
        if ex.client_v10 && matches!(head.framing, Framing::Chunked | Framing::UntilClose) {
            ex.keep_client = false; // an HTTP/1.0 client learns the end from the close
        }
        write_response_head(head, enc, ex, self.to_client.vec());
        ex.resp = match head.framing {
            Framing::None => Resp::Done,
            f => Resp::Body(Body::new(f, Side::Response, enc, ctx.cfg)),
        };
        // A Content-Length body with more than the threshold still to come (past what the
        // first read took, `head_read`) goes by splice: a few KiB more cost less to copy than
        // the splices in and out. Chunked and until-close bodies, whose framing is read (or
        // written) in user space, keep the copy. Without a pipe (out of descriptors, say) it
        // is copied too. On io_uring unless `Config::uring_splice` is off: then the ring
        // receives the upstream's bytes, and they are copied.
        let read = (self.uin.data().len() - used) as u64;
        let above = ctx
            .cfg
            .splice_above
            .is_some_and(|min| matches!(head.framing, Framing::Length(n) if n.saturating_sub(read) > min));
        let ring = ctx.fds.ring_io().is_some();
        if above && enc == Enc::Plain && self.pipe.is_none() && (!ring || ctx.cfg.uring_splice) {
            if let Ok(p) = ctx.pool.pipe() {
                self.pipe = Some(p);
                ctx.stats.spliced_responses.fetch_add(1, Relaxed);
            }
        }
        self.uin.consume(used);
        Ok(true)
    }

    /// Moves to the next phase when the current one is over.
    fn advance(&mut self, ctx: &mut Ctx<'_, '_>) -> Step {
        let phase = self.phase;
        match phase {
            Phase::Exchange => {
                // A spliced body is done once its pipe has emptied into the client: nothing
                // may be written to it after the body meanwhile.
                let done =
                    self.ex.as_ref().is_some_and(|ex| matches!(ex.resp, Resp::Done) && ex.req.is_none())
                        && self.pipe.as_ref().is_none_or(|p| p.len == 0);
                if !done {
                    return Ok(false);
                }
                let ex = self.ex.take().expect("checked above");
                // Looked at only when the socket was spliced from (else `uin` saw every byte).
                let spliced = self.pipe.take().is_some_and(|p| {
                    let tried = p.tried;
                    ctx.pool.put_pipe(p);
                    tried
                });
                self.log(&ex, ex.status, ex.resp_bytes, ctx);
                if let Some(up) = self.up.take() {
                    // An upstream that answered before taking the whole request may still
                    // have the ring's send of it in flight: closed, not pooled.
                    let settled = !up.in_ring
                        || ctx
                            .fds
                            .ring_io()
                            .is_none_or(|mut r| !r.sending(up.fd) && r.send_error(up.fd).is_none());
                    // P4: bytes after the response (or a body to HEAD/204/304) mean the
                    // upstream's framing cannot be trusted: those bytes are dropped and the
                    // connection is not reused.
                    // A spliced body took exactly its length from the socket: what follows it,
                    // if anything, is still there (a peek finds it).
                    let reuse = settled
                        && ex.upstream_keep
                        && !up.eof
                        && !up.hup
                        && !ex.req_abandoned
                        && self.uin.is_empty()
                        && self.to_up.is_empty()
                        && (!spliced || nothing_after(ctx.fds, up.fd));
                    ctx.released.push((up.make_idle(ctx.now), reuse));
                }
                self.uin.clear();
                self.to_up.clear();
                // A client that half-closed after pipelining still gets every answer (S16).
                if ex.keep_client && !ctx.draining() && !(self.eof && self.cin.is_empty()) {
                    // The response may still be leaving: the send timeout until it has left
                    // (between_requests), not the idle timeout.
                    self.phase = Phase::Head;
                    self.head_started = false;
                    self.flushing = true;
                    self.deadline = ctx.now + ctx.cfg.send_timeout;
                } else {
                    self.enter_closing(ctx);
                }
                ctx.spare.keep(ex);
                Ok(true)
            }
            Phase::Closing if !self.client_pending() && self.client_settled(ctx.fds)? => {
                let _ = shutdown_write(self.client);
                self.cin.clear();
                self.phase = Phase::Linger;
                self.deadline = ctx.now + LINGER.min(ctx.cfg.idle_timeout);
                if self.eof {
                    return Err(End);
                }
                self.readable = true;
                Ok(true)
            }
            Phase::Head
                if self.eof
                    && self.cin.is_empty()
                    && self.to_client.is_empty()
                    && self.client_settled(ctx.fds)? =>
            {
                Err(End)
            }
            // Draining: an idle connection (no request begun) is closed after what it still
            // has to receive, with a write shutdown and the linger, like any other close.
            Phase::Head if ctx.draining() && self.cin.is_empty() => {
                self.enter_closing(ctx);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The descriptor of the upstream connection in use, if any.
    pub(crate) fn upstream_fd(&self) -> Option<RawFd> {
        self.up.as_ref().map(|u| u.fd)
    }
}

/// The most bytes the first read of a response takes where its body may be spliced
/// ([`Settings::splice_above`]; no bound where none is): the threshold and [`HEAD_ROOM`]. What
/// is read with the head is copied, so a first read of a whole buffer copied the first
/// 64 KiB of every body, and a body that came with its head in one write (the common case up
/// to a few hundred KiB on loopback) was copied whatever its size.
fn head_read(cfg: &Settings, ring: bool) -> usize {
    match cfg.splice_above {
        Some(min) if !ring || cfg.uring_splice => {
            usize::try_from(min).map_or(usize::MAX, |m| m.saturating_add(HEAD_ROOM))
        }
        _ => usize::MAX,
    }
}

/// Gives the bytes of `buf` to the queue's ring to send on `fd` ([`hintq::RingIo::send`]): `Ok(true)`
/// when taken (and gone from `buf`), `Ok(false)` when `fd` is not watched at this moment
/// (the caller writes them itself). A buffer whose bytes start at its start goes to the ring
/// whole ([`Pool::hand_off`]): a response's head and body are not copied once more.
fn ring_send(fds: &mut Fds<'_>, fd: RawFd, buf: &mut Buf, pool: &mut Pool) -> io::Result<bool> {
    let Some(mut ring) = fds.ring_io() else { return Ok(false) };
    let (out, whole) = pool.hand_off(buf, ring.send_buffer());
    let n = out.len();
    match ring.send(fd, out).map_err(hintq::SendError::into_parts) {
        Ok(()) => {
            if !whole {
                buf.consume(n);
            }
            Ok(true)
        }
        Err((e, out)) => {
            if whole {
                pool.take_back(buf, out);
            }
            if e.kind() == io::ErrorKind::NotFound {
                Ok(false)
            } else {
                Err(e)
            }
        }
    }
}

/// Whether nothing follows a spliced body on upstream connection `fd`: neither bytes nor
/// its end, in the ring's inbox (taken, the connection being given up then) or in the
/// socket (a peek).
fn nothing_after(fds: &mut Fds<'_>, fd: RawFd) -> bool {
    match fds.ring_io().and_then(|mut r| r.take_received(fd, &mut Vec::new(), 1)) {
        Some(Err(e)) if e.kind() == io::ErrorKind::WouldBlock => sys::idle_alive(fd),
        None => sys::idle_alive(fd),
        Some(_) => false,
    }
}

/// The request line for the access log (as received: method, target, version), if it is kept.
fn request_line(head: &RequestHead<'_>, cfg: &Settings) -> Option<String> {
    cfg.access_log.is_some().then(|| format!("{} {} {}", head.method, head.target, head.version.as_str()))
}

/// The value of the `Via` entry added to a message received with `version` (RFC 9110 §7.6.3),
/// `hintq` the pseudonym: `add_via`'s, written without a copy of the header list.
fn via(version: Version) -> &'static [u8] {
    match version {
        Version::Http10 => b"1.0 hintq",
        Version::Http11 => b"1.1 hintq",
    }
}

/// The request head as it goes upstream: HTTP/1.1, hop-by-hop fields removed (P6), framing
/// written from the parsed [`Framing`] (never a received Content-Length copied: P5), `Via`
/// added, `Host` added for an HTTP/1.0 request without one. Values cannot carry CR, LF or NUL
/// (refused by the parser, and [`HeadWriter`] would blank them: P7).
fn write_request_head(head: &RequestHead<'_>, out: &mut Vec<u8>, cfg: &Settings) {
    let mut w = HeadWriter::request(out, &head.method, &head.target, Version::Http11);
    for h in end_to_end(&head.headers) {
        if !h.is("content-length") && (head.expect_continue || !h.is("expect")) {
            w.header(&h.name, &h.value);
        }
    }
    w.header("Via", via(head.version));
    if head.header("host").is_none() {
        w.header("Host", cfg.upstream_host.as_bytes());
    }
    match head.framing {
        Framing::Length(n) => drop(w.content_length(n)),
        Framing::Chunked => drop(w.chunked()),
        Framing::None | Framing::UntilClose => {}
    }
    w.finish();
}

/// The response head as it goes to the client; see [`write_request_head`]. A body-less
/// response (HEAD, 204, 304) keeps its Content-Length: it describes the representation.
fn write_response_head(head: &ResponseHead<'_>, enc: Enc, ex: &Exchange, out: &mut Vec<u8>) {
    let mut w = HeadWriter::response(out, Version::Http11, head.status);
    for h in end_to_end(&head.headers) {
        if head.framing == Framing::None || !h.is("content-length") {
            w.header(&h.name, &h.value);
        }
    }
    w.header("Via", via(head.version));
    match (head.framing, enc) {
        (Framing::Length(n), _) => drop(w.content_length(n)),
        (Framing::Chunked | Framing::UntilClose, Enc::Chunked) => drop(w.chunked()),
        _ => {}
    }
    if !ex.keep_client {
        w.connection_close();
    } else if ex.client_v10 {
        w.header("Connection", b"keep-alive");
    }
    w.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `Via` written from a constant is the one `add_via` makes.
    #[test]
    fn via_is_add_vias() {
        for v in [Version::Http10, Version::Http11] {
            let mut headers = hintq_http::Headers::new();
            hintq_http::add_via(&mut headers, v, "hintq");
            assert_eq!(&*headers[0].value, via(v));
        }
    }

    /// An idle client connection holds no buffer: only its session record.
    #[test]
    fn an_idle_session_is_small() {
        let size = std::mem::size_of::<Session>();
        eprintln!("session record: {size} bytes");
        assert!(size <= 320, "{size}");
    }
}
