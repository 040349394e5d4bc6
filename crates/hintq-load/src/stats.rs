//! Counters and histograms: kept per worker thread without sharing, merged at the end.
//!
//! Accounting identity, checked by the tests: every request started ends exactly once, so
//! `started = successes + request errors + unfinished`, where request errors are all
//! [`Errors`] fields except the connection-level `connect`, `connect_timeout`,
//! `addr_not_avail` and `unsolicited`.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::io;

macro_rules! counters {
    ($(#[$m:meta])* pub struct $name:ident { $($(#[$fm:meta])* pub $f:ident: $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct $name { $($(#[$fm])* pub $f: $t,)* }
        impl $name {
            /// Adds `o` field by field.
            pub fn add(&mut self, o: &$name) { $(self.$f.add(&o.$f);)* }
        }
    };
}

trait Add {
    fn add(&mut self, o: &Self);
}
impl Add for u64 {
    fn add(&mut self, o: &u64) {
        *self += o;
    }
}

counters! {
    /// Failures, each counted under exactly one kind.
    pub struct Errors {
        /// Connect refused or failed (`ECONNREFUSED`, `SO_ERROR` after `EINPROGRESS`, ...).
        pub connect: u64,
        /// Connect not finished within `--timeout` (a full listen backlog looks like this).
        pub connect_timeout: u64,
        /// `EADDRNOTAVAIL`: the ephemeral ports of a source/destination pair are used up.
        pub addr_not_avail: u64,
        /// `ECONNRESET`, `EPIPE` or another socket error while a request was in flight.
        pub reset: u64,
        /// The server closed the connection after a request was sent, before any byte of
        /// the response.
        pub closed_before_response: u64,
        /// The server closed the connection in the middle of a response (head or body).
        pub truncated: u64,
        /// Bad status line, bad header, bad framing or chunked coding in a response.
        pub parse: u64,
        /// A response with status 400 or above (complete, but not a success).
        pub status: u64,
        /// No complete response within `--timeout` of the request's (intended) send time.
        pub timeout: u64,
        /// Bytes from the server when no request was in flight (an extra, pipelined or
        /// unsolicited response); the connection is closed.
        pub unsolicited: u64,
    }
}

impl Errors {
    /// Errors that ended a request (everything but the connection-level kinds).
    pub fn request_errors(&self) -> u64 {
        self.reset + self.closed_before_response + self.truncated + self.parse + self.status + self.timeout
    }

    /// All errors.
    pub fn total(&self) -> u64 {
        self.request_errors() + self.connect + self.connect_timeout + self.addr_not_avail + self.unsolicited
    }

    /// The kind of a failed connect.
    pub fn count_connect(&mut self, e: &io::Error) {
        match e.raw_os_error() {
            Some(libc::EADDRNOTAVAIL) => self.addr_not_avail += 1,
            Some(libc::ETIMEDOUT) => self.connect_timeout += 1,
            _ => self.connect += 1,
        }
    }
}

counters! {
    /// Hot connections: the requests.
    pub struct Hot {
        /// Requests started (closed loop: sent; open loop: due on the schedule).
        pub started: u64,
        /// Complete responses with a status below 400.
        pub successes: u64,
        /// Requests started but neither answered nor failed when the run ended.
        pub unfinished: u64,
        /// Failures by kind.
        pub errors: Errors,
        /// Connections established.
        pub connects: u64,
        /// Idle connections (no request in flight) the server closed or reset: not errors;
        /// the connection is re-opened at once.
        pub closed_idle: u64,
        /// Responses that ended the connection (`Connection: close`, HTTP/1.0, body until
        /// close): not errors; the connection is re-opened at once.
        pub connection_close: u64,
    }
}

counters! {
    /// Cold connections: counted apart from the hot load and its errors.
    pub struct Cold {
        /// Cold connections asked for.
        pub target: u64,
        /// Connections established (first opens and re-opens).
        pub opened: u64,
        /// Closed (or reset) by the server, then re-opened.
        pub closed_by_server: u64,
        /// Closed by us at the end of a heavy-tailed lifetime, then replaced.
        pub expired: u64,
        /// Established at the end of the run.
        pub held_at_end: u64,
        /// Most established at once (summed over workers).
        pub peak_held: u64,
        /// Connect failures (retried after a short pause).
        pub errors: Errors,
    }
}

/// Cold connections in one second of the hot phase (summed over workers by second).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColdSecond {
    /// Established at the end of the second.
    pub held: u64,
    /// Established during the second (re-opens and replacements).
    pub opened: u64,
    /// Closed during the second: expired, or closed by the server.
    pub closed: u64,
}

impl ColdSecond {
    /// Adds `o` field by field.
    pub fn add(&mut self, o: &ColdSecond) {
        self.held += o.held;
        self.opened += o.opened;
        self.closed += o.closed;
    }
}

/// Latency histogram in microseconds, 1 µs to 1 h, three significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds")
}

/// A histogram as (value, count) pairs: how workers in other processes send theirs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Pairs(pub Vec<(u64, u64)>);

impl Pairs {
    /// The recorded values of `h`.
    pub fn of(h: &Histogram<u64>) -> Pairs {
        Pairs(h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect())
    }

    /// Adds the pairs to `h`.
    pub fn add_to(&self, h: &mut Histogram<u64>) {
        for &(v, n) in &self.0 {
            h.saturating_record_n(v, n);
        }
    }
}

/// The figures of one latency histogram, in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Percentiles {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest value.
    pub max: u64,
}

impl Percentiles {
    /// The figures of `h`.
    pub fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let q = |p| h.value_at_quantile(p);
        Percentiles {
            count: h.len(),
            mean: h.mean(),
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            p999: q(0.999),
            max: h.max(),
        }
    }
}
