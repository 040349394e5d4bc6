//! Reactor, sharded and sharded-shared: every thread owns a queue, its timers and its
//! connections, and runs [`shard`]: wait, accept or dispatch, expire, until stopped.

use crate::dispatch::{Clock, Core, Ctl, Home, Listen};
use crate::launch::{builder, first_listener, spawn, Started};
use crate::net;
use crate::{Config, Handler, Pattern, Role};
use hintq::{Acceptor, Delivery, Event, Group, Interest, Queue, Waker, Wheel};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::Instant;

/// Starts `n` shards (one for the reactor).
pub(crate) fn start_shards<H: Handler>(cfg: &Config, n: usize, core: &Arc<Core<H>>) -> io::Result<Started> {
    let per_thread = cfg.pattern == Pattern::Sharded;
    let group = if cfg.pattern == Pattern::ShardedShared { Some(Group::new(cfg.backend)?) } else { None };
    let (first, addr, claim) = first_listener(cfg, per_thread || cfg.reuseport)?;
    let mut listeners = vec![Arc::new(first)];
    if per_thread {
        for _ in 1..n {
            listeners.push(Arc::new(net::listen(addr, true)?));
        }
    }
    if let Some(g) = &group {
        g.declare_interest(listeners[0].as_fd(), Interest::READ, Delivery::One)?;
    }
    let mut threads = Vec::new();
    // Each thread makes its queue, its waker and its listener's interest itself, so that the
    // thread that waits on a queue is the first to use it: an io_uring ring admits one thread
    // (hintq's uring backend, quirk m), and one filled here and handed over would be moved to
    // a second ring at the thread's first wait. The wakers come back through `made`.
    let (made, ready) = std::sync::mpsc::channel::<io::Result<Waker>>();
    for i in 0..n {
        let listener = Arc::clone(&listeners[i % listeners.len()]);
        let shard_of = Shard {
            core: Arc::clone(core),
            i,
            acc: Acceptor::new(listener.as_raw_fd())?,
            listener,
            // Shared listener: one connection per readiness, so that `Delivery::One` spreads
            // them; an own listener is drained (the kernel already spread by hash).
            limit: if group.is_some() { 1 } else { 64 },
            group: group.clone(),
        };
        let (made, builder) = (made.clone(), builder(cfg));
        let name = format!("hintq-{}-{i}", cfg.pattern);
        threads.push(spawn(name, cfg.on_thread_start.clone(), Role::Worker, i, move || {
            // (A failed send: `start` gave up already.)
            match shard_of.queue(builder) {
                Ok((q, waker)) => {
                    drop(made.send(Ok(waker)));
                    shard(shard_of, q);
                }
                Err(e) => drop(made.send(Err(e))),
            }
        })?);
    }
    drop(made);
    let wakers = match collect_wakers(ready, n) {
        Ok(w) => w,
        Err((e, wakers)) => {
            core.stop.store(true, SeqCst);
            wakers.iter().for_each(|w| drop(w.wake()));
            return Err(e);
        }
    };
    drop(listeners);
    let c = Arc::clone(core);
    let wakers = Arc::new(wakers);
    let w = Arc::clone(&wakers);
    let stop: Box<dyn FnOnce() + Send> = Box::new(move || {
        c.stop.store(true, SeqCst);
        w.iter().for_each(|w| drop(w.wake()));
    });
    let wake = Box::new(move || wakers.iter().for_each(|w| drop(w.wake())));
    Ok(Started { addr, threads, stop, wake, gate: None, claim })
}

/// Every thread answers once (a thread that panicked drops its sender instead): the wakers,
/// or the first error and the wakers of the threads that did start.
fn collect_wakers(
    ready: std::sync::mpsc::Receiver<io::Result<Waker>>,
    n: usize,
) -> Result<Vec<Waker>, (io::Error, Vec<Waker>)> {
    let mut wakers = Vec::with_capacity(n);
    let mut failed = None;
    for _ in 0..n {
        match ready.recv() {
            Ok(Ok(w)) => wakers.push(w),
            Ok(Err(e)) => failed = failed.or(Some(e)),
            Err(_) => {
                failed = failed.or_else(|| Some(io::Error::other("a server thread ended while starting")))
            }
        }
    }
    match failed {
        Some(e) => Err((e, wakers)),
        None => Ok(wakers),
    }
}

/// What one shard thread starts with.
struct Shard<H: Handler> {
    core: Arc<Core<H>>,
    /// Its index: its counters, and the source its connections are registered in.
    i: usize,
    listener: Arc<OwnedFd>,
    acc: Acceptor,
    /// Connections accepted per readiness of the listener.
    limit: usize,
    /// Sharded-shared: the group that spreads the one listener's connections.
    group: Option<Group>,
}

impl<H: Handler> Shard<H> {
    /// The shard's queue (in the group, if any) watching its listener, and its waker.
    fn queue(&self, builder: hintq::Builder) -> io::Result<(Queue, Waker)> {
        let mut q = match &self.group {
            Some(g) => g.queue()?,
            None => builder.build()?,
        };
        let waker = q.waker()?;
        if self.group.is_none() {
            q.declare(self.listener.as_fd(), Interest::READ)?;
        }
        Ok((q, waker))
    }
}

/// A shard's loop: waits on its own queue, accepts from its listener, dispatches the rest,
/// expires deadlines every tick, and begins the drain when asked; closes its connections
/// when stopped.
fn shard<H: Handler>(s: Shard<H>, mut q: Queue) {
    let Shard { core: c, i, listener, acc, limit, group: keep } = s;
    let st = &c.stats[i];
    let mut lfd = listener.as_raw_fd();
    // Until the drain closes it (this thread's share of it, for the group's).
    let mut listening = Some((listener, acc));
    let mut home = Home::<H::Local>::new();
    let mut evs = vec![Event::default(); c.array_max];
    let mut next_tick = Instant::now() + c.tick;
    let mut timers = Wheel::new(c.slots.len(), c.tick);
    // Out of descriptors: the listener is not watched until then.
    let mut paused: Option<Instant> = None;
    while !c.stopped() {
        if listening.is_some() && c.draining() {
            st.counted(watch(&mut q, keep.as_ref(), lfd, Interest::empty()));
            (listening, lfd, paused) = (None, -1, None);
            c.begin_drain(&mut Ctl::Own(&mut q, &mut timers), (i, &mut home), st);
        }
        let Some(n) = c.wait(&mut q, &mut evs, &mut home.batch, st) else { break };
        for ev in &evs[..n] {
            let Some((_, acc)) = listening.as_mut().filter(|_| ev.fd() == lfd) else {
                c.dispatch(*ev, &mut Ctl::Own(&mut q, &mut timers), (i, &mut home), st);
                continue;
            };
            let clock = &mut Clock::Own(&mut timers);
            match (c.accept(acc, (&mut q, clock), (i, &mut home), st, limit), &keep) {
                // A group re-arms its one-shot registration at the next wait,
                // which reports the connections still pending.
                (Listen::Drained, _) | (Listen::More, Some(_)) => {}
                (Listen::More, None) => st.counted(c.meter(st).declare(&mut q, lfd, Interest::READ, false)),
                (Listen::Pause(until), g) => {
                    paused = Some(until);
                    st.counted(watch(&mut q, g.as_ref(), lfd, Interest::empty()));
                }
            }
        }
        if paused.is_some_and(|t| Instant::now() >= t) {
            // Declared anew, the listener reports the connections still pending.
            paused = None;
            st.counted(watch(&mut q, keep.as_ref(), lfd, Interest::READ));
        }
        if Instant::now() >= next_tick {
            c.expire_due(&mut Ctl::Own(&mut q, &mut timers), (i, &mut home), st);
            next_tick = Instant::now() + c.tick;
        }
    }
    c.close_own(&mut Ctl::Own(&mut q, &mut timers), (i, &mut home), st);
    // Parked descriptors are closed with the queue they are registered in.
    drop(home);
    drop(q);
    drop(keep);
    drop(listening);
}

/// Declares interest in a shard's listener, in the group if it is shared.
fn watch(q: &mut Queue, group: Option<&Group>, lfd: RawFd, interest: Interest) -> io::Result<()> {
    match group {
        Some(g) => g.declare_interest(crate::held(lfd), interest, Delivery::One).map(drop),
        None => q.declare(crate::held(lfd), interest),
    }
}
