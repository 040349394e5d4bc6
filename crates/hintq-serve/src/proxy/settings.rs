//! What every session of the proxy reads: its configuration, in the form the state machine
//! uses (made from [`super::Config`] by [`super::start`]).

use crate::access_log::AccessLog;
use hintq_http::Limits;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// What every session reads: the configuration in the form the state machine uses.
pub(crate) struct Settings {
    /// A short read means the socket is drained, and a close still to come arrives as an
    /// event or as `HUP` in one. Not on `rtsig`: its signal for a close says only "readable"
    /// and coalesces with the data's, so there the proxy reads until `EAGAIN`.
    pub(super) short_read_drains: bool,
    pub(super) upstream: SocketAddr,
    pub(super) upstream_host: String,
    pub(super) limits: Limits,
    pub(super) upstream_timeout: Duration,
    pub(super) idle_timeout: Duration,
    pub(super) header_timeout: Duration,
    pub(super) send_timeout: Duration,
    pub(super) max_idle_upstream: usize,
    pub(super) access_log: Option<Arc<AccessLog>>,
    /// [`Config::splice_above`](super::Config::splice_above).
    pub(super) splice_above: Option<u64>,
    /// [`Config::uring_splice`](super::Config::uring_splice).
    pub(super) uring_splice: bool,
}
