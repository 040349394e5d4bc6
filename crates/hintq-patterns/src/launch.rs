//! What the thread loops need to start: the first listener and the claim on its address,
//! queues with the configured settings, named threads, and what a started pattern hands
//! to [`crate::Server`].

use crate::handoff::Gate;
use crate::net::{self, Claim};
use crate::{Config, Role};
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A pattern's threads, started: what [`crate::start`] makes a [`crate::Server`] of.
pub(crate) struct Started {
    pub(crate) addr: SocketAddr,
    pub(crate) threads: Vec<JoinHandle<()>>,
    /// Stops the threads (they are joined afterwards).
    pub(crate) stop: Box<dyn FnOnce() + Send>,
    /// Wakes every thread that holds an event source.
    pub(crate) wake: Box<dyn Fn() + Send + Sync>,
    /// The thread pools' gate of active threads.
    pub(crate) gate: Option<Arc<Gate>>,
    pub(crate) claim: Option<Claim>,
}

/// The first listener on `cfg.listen`, its address, and the claim on it ([`net::claim`];
/// none for a worker process, whose supervisor holds it): claimed before it binds, or, for
/// port 0, the port it got, once bound.
pub(crate) fn first_listener(
    cfg: &Config,
    reuseport: bool,
) -> io::Result<(OwnedFd, SocketAddr, Option<Claim>)> {
    let listen = || net::listen(cfg.listen, reuseport);
    if cfg.reuseport {
        let first = listen()?;
        let addr = net::local_addr(&first)?;
        return Ok((first, addr, None));
    }
    let (first, addr, claim) = net::claimed(cfg.listen, listen)?;
    Ok((first, addr, Some(claim)))
}

/// Queues on the configured backend with its settings.
pub(crate) fn builder(cfg: &Config) -> hintq::Builder {
    hintq::Builder::new(cfg.backend)
        .rtsig_hybrid(cfg.rtsig_hybrid)
        .coalesce(cfg.coalesce)
        .uring_defer(cfg.uring_defer)
        .uring_sends(cfg.uring_sends)
        .uring_receives(cfg.uring_receives)
}

/// Starts a thread named `name` that calls the thread hook with its `role` and index `i`,
/// then `f`.
pub(crate) fn spawn(
    name: String,
    hook: Option<crate::ThreadHook>,
    role: Role,
    i: usize,
    f: impl FnOnce() + Send + 'static,
) -> io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        if let Some(h) = hook {
            h(role, i);
        }
        f()
    })
}
