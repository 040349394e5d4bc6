//! The proxy's counters over all threads, and the rate-limited lines that say why it
//! answered 502 or 504.

use super::settings::Settings;
use crate::signals::say;
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::{Duration, Instant};

/// Why the proxy answered 502 or 504.
#[derive(Debug)]
pub(crate) enum Cause {
    /// The upstream connection failed: refused, reset, or another error.
    Failed(io::Error),
    /// The upstream closed before a complete response head.
    Closed,
    /// The upstream's response was not valid HTTP/1.1 (what the parser said).
    Garbage(String),
    /// No response within the upstream timeout (504).
    Timeout,
}

/// The kinds of [`Cause`] that [`Complaints`] limits apart.
const KINDS: usize = 6;

impl Cause {
    pub(super) fn kind(&self) -> usize {
        match self {
            Cause::Failed(e) => match e.kind() {
                io::ErrorKind::ConnectionRefused => 0,
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted => 1,
                io::ErrorKind::UnexpectedEof => 2,
                _ => 5,
            },
            Cause::Closed => 2,
            Cause::Garbage(_) => 3,
            Cause::Timeout => 4,
        }
    }

    pub(super) fn describe(&self, cfg: &Settings) -> String {
        match self {
            Cause::Failed(e) if e.kind() == io::ErrorKind::ConnectionRefused => "connection refused".into(),
            Cause::Failed(e) if self.kind() == 1 => format!("connection reset ({e})"),
            Cause::Failed(e) if self.kind() != 2 => e.to_string(),
            Cause::Failed(_) | Cause::Closed => {
                "closed the connection before a complete response head".into()
            }
            Cause::Garbage(why) => format!("invalid response ({why})"),
            Cause::Timeout => format!("no response within the upstream timeout ({:?})", cfg.upstream_timeout),
        }
    }
}

/// The proxy's lines on standard error saying why it answered 502 or 504: at most one a
/// second for each kind of cause (refused, reset, closed, invalid response, timeout, other),
/// with the count of those left unsaid since the last line of that kind, so that an
/// upstream that is down does not flood the terminal at the load's rate.
#[derive(Default)]
pub(crate) struct Complaints {
    /// Per kind: when its last line was written, and the complaints since.
    last: std::sync::Mutex<[(Option<Instant>, u64); KINDS]>,
}

impl Complaints {
    pub(crate) fn complain(&self, status: u16, why: &Cause, cfg: &Settings) {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let (at, unsaid) = &mut last[why.kind()];
        if at.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            *unsaid += 1;
            return;
        }
        let more = std::mem::take(unsaid);
        *at = Some(now);
        drop(last);
        let reason = if status == 504 { "504 Gateway Timeout" } else { "502 Bad Gateway" };
        let mut line = format!("hintq proxy: {reason}: upstream {}: {}", cfg.upstream, why.describe(cfg));
        if more > 0 {
            line.push_str(&format!(" (and {more} more since the last such line)"));
        }
        say(&line);
    }
}

/// Counters over all threads (see [`Proxy::stats`]), and the rate limit of the lines that
/// say why the proxy answered 502 or 504.
#[derive(Default)]
pub(crate) struct Stats {
    pub(super) complaints: Complaints,
    pub(super) accepted: AtomicU64,
    pub(super) requests: AtomicU64,
    pub(super) upstream_connects: AtomicU64,
    pub(super) upstream_reused: AtomicU64,
    pub(super) stale_idle: AtomicU64,
    pub(super) retries: AtomicU64,
    pub(super) bad_gateway: AtomicU64,
    pub(super) gateway_timeout: AtomicU64,
    pub(super) client_errors: AtomicU64,
    pub(super) truncated: AtomicU64,
    pub(super) spliced_responses: AtomicU64,
    pub(super) spliced_bytes: AtomicU64,
    pub(super) peak_buffers: AtomicUsize,
    pub(super) peak_buffered: AtomicUsize,
    pub(super) peak_pipes: AtomicUsize,
}

/// A snapshot of the proxy's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProxyStats {
    /// Client connections accepted.
    pub accepted: u64,
    /// Request heads parsed and sent upstream.
    pub requests: u64,
    /// New upstream connections opened.
    pub upstream_connects: u64,
    /// Requests sent on an idle upstream connection from the pool.
    pub upstream_reused: u64,
    /// Idle upstream connections found closed (or talking) and dropped: at the reuse check,
    /// or while idle.
    pub stale_idle: u64,
    /// Idempotent requests sent again after a reused connection failed (P9).
    pub retries: u64,
    /// `502` answers.
    pub bad_gateway: u64,
    /// `504` answers.
    pub gateway_timeout: u64,
    /// Other error answers (4xx/5xx for bad requests, 408).
    pub client_errors: u64,
    /// Responses cut short because the upstream's was (P3).
    pub truncated: u64,
    /// Responses whose body went by splice ([`Config::splice_above`](super::Config::splice_above)).
    pub spliced_responses: u64,
    /// Body bytes spliced from upstream sockets into the pipes.
    pub spliced_bytes: u64,
    /// The most relay buffers one thread held at once (each [`BUF_SIZE`](super::BUF_SIZE) bytes).
    pub peak_buffers: usize,
    /// The most bytes one relay buffer ever held.
    pub peak_buffered: usize,
    /// The most splice pipes one thread held at once (each [`PIPE_SIZE`](super::PIPE_SIZE) bytes at most, in
    /// the kernel).
    pub peak_pipes: usize,
}

impl Stats {
    pub(super) fn snapshot(&self) -> ProxyStats {
        let g = |a: &AtomicU64| a.load(Relaxed);
        ProxyStats {
            accepted: g(&self.accepted),
            requests: g(&self.requests),
            upstream_connects: g(&self.upstream_connects),
            upstream_reused: g(&self.upstream_reused),
            stale_idle: g(&self.stale_idle),
            retries: g(&self.retries),
            bad_gateway: g(&self.bad_gateway),
            gateway_timeout: g(&self.gateway_timeout),
            client_errors: g(&self.client_errors),
            truncated: g(&self.truncated),
            spliced_responses: g(&self.spliced_responses),
            spliced_bytes: g(&self.spliced_bytes),
            peak_buffers: self.peak_buffers.load(Relaxed),
            peak_buffered: self.peak_buffered.load(Relaxed),
            peak_pipes: self.peak_pipes.load(Relaxed),
        }
    }
}
