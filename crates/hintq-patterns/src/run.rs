//! The running server: [`start`] builds the connection table ([`crate::dispatch`]), starts
//! the pattern's threads ([`crate::shards`] or [`crate::pool`]) and, with the adaptive
//! policy, its thread; [`Server`] drains, stops and reports on them.

use crate::counters::{Counters, ThreadStats};
use crate::dispatch::Core;
use crate::handoff::Gate;
use crate::launch::{spawn, Started};
use crate::net::Claim;
use crate::pool::start_pool;
use crate::shards::start_shards;
use crate::{Config, Handler, Pattern, Role};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// A running pattern. Dropping it without [`Server::shutdown`] shuts it down too.
pub struct Server {
    addr: SocketAddr,
    threads: Vec<JoinHandle<()>>,
    stop: Option<Box<dyn FnOnce() + Send>>,
    finish: Option<Box<dyn FnOnce() + Send>>,
    /// Wakes every thread that holds an event source.
    wake: Box<dyn Fn() + Send + Sync>,
    draining: Option<Arc<dyn Fn() + Send + Sync>>,
    stats: Box<dyn Fn() -> Vec<Counters> + Send + Sync>,
    gate: Option<Arc<Gate>>,
    /// The claim on the address ([`net::claim`]), released after the threads (and the
    /// listeners with them) are gone: a field is dropped after `Drop::drop` ran.
    _claim: Option<Claim>,
}

impl Server {
    /// The server of the pattern's threads `s`, over `core`.
    fn new<H: Handler>(s: Started, core: &Arc<Core<H>>) -> Server {
        let c = Arc::clone(core);
        let stats = Box::new(move || c.stats.iter().map(ThreadStats::snapshot).collect());
        let c = Arc::clone(core);
        let draining: Arc<dyn Fn() + Send + Sync> = Arc::new(move || c.draining.store(true, SeqCst));
        let c = Arc::clone(core);
        Server {
            addr: s.addr,
            threads: s.threads,
            stop: Some(s.stop),
            finish: Some(Box::new(move || c.close_left())),
            wake: s.wake,
            draining: Some(draining),
            stats,
            gate: s.gate,
            _claim: s.claim,
        }
    }

    /// The address the listener(s) are bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Counters per thread: reactor `[0]`; Leader/Followers and shards `0..N`; Half-Sync the
    /// asynchronous thread at 0, workers `1..=N`.
    pub fn stats(&self) -> Vec<Counters> {
        (self.stats)()
    }

    /// Threads active now (below the configured count while the adaptive policy parks some).
    pub fn active_threads(&self) -> usize {
        self.gate.as_ref().map_or(self.threads.len(), |g| g.active())
    }

    /// Begins a graceful drain and returns at once: every thread that holds an event source
    /// revokes and closes its listener (new connections are refused), calls
    /// [`Handler::draining`], then handles each of its connections once (so that one idle
    /// between requests can see [`Fds::draining`](crate::Fds::draining) and close) and goes on serving the rest.
    /// Deadlines still apply. Waiting for the connections to finish is the caller's part;
    /// then [`Server::shutdown`].
    pub fn drain(&self) {
        if let Some(d) = &self.draining {
            d();
        }
        (self.wake)();
    }

    /// Stops every thread, closes every connection (calling [`Handler::close`] with
    /// [`Why::Shutdown`](crate::Why::Shutdown)), the listeners and the queues, and returns the final counters.
    pub fn shutdown(mut self) -> Vec<Counters> {
        self.stop_and_join();
        self.stats()
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(finish) = self.finish.take() {
            finish();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).field("threads", &self.threads.len()).finish()
    }
}

/// Starts `cfg.pattern` with `handler`.
///
/// # Errors
/// Binding the listener(s), creating the queues (a backend the pattern cannot share:
/// Leader/Followers and Half-Sync need `epoll`, `epoll-et`, `epoll-oneshot`, `select` or
/// `uring`), spawning threads.
pub fn start<H: Handler>(cfg: Config, handler: Arc<H>) -> io::Result<Server> {
    let n = if cfg.pattern == Pattern::Reactor { 1 } else { cfg.threads.max(1) };
    let nstats = if cfg.pattern == Pattern::HalfSync { n + 1 } else { n };
    let core = Arc::new(Core::new(&cfg, handler, nstats));
    let started =
        if cfg.pattern.hands_off() { start_pool(&cfg, n, &core)? } else { start_shards(&cfg, n, &core)? };
    let mut server = Server::new(started, &core);
    if let (Some(policy), Some(gate)) = (cfg.adaptive, server.gate.clone()) {
        let c = Arc::clone(&core);
        let first = usize::from(cfg.pattern == Pattern::HalfSync);
        server.threads.push(spawn("hintq-adapt".into(), None, Role::Worker, 0, move || {
            adapt(&c, &gate, policy, n, first)
        })?);
    }
    Ok(server)
}

/// The adaptive policy's loop (see the crate docs).
fn adapt<H: Handler>(core: &Core<H>, gate: &Gate, p: crate::Adaptive, max: usize, first: usize) {
    let mut last = (Instant::now(), core.busy_ns(first));
    while !core.stopped() {
        std::thread::sleep(p.interval);
        let now = (Instant::now(), core.busy_ns(first));
        let load = (now.1 - last.1) as f64 / (now.0 - last.0).as_nanos().max(1) as f64;
        last = now;
        let active = gate.active();
        let per_thread = load / active as f64;
        if per_thread > p.grow_above && active < max {
            gate.set_active(active + 1);
        } else if per_thread < p.shrink_below && active > p.min.max(1) {
            gate.set_active(active - 1);
        }
    }
}
