//! Leader/Followers and Half-Sync: one queue in hand-off mode ([`hintq::Rearm`]) shared
//! by a pool of threads. The thread holding the queue (the leader, the asynchronous thread)
//! accepts, runs the deferred interest changes and closes, and expires deadlines; handling
//! goes through the same dispatch as the shards' ([`crate::dispatch`]).

use crate::counters::{Counter, ThreadStats};
use crate::dispatch::{Clock, Core, Ctl, Home, Listen, Op, Shared};
use crate::handoff::{Gate, Leadership, WorkQueue};
use crate::launch::{builder, first_listener, spawn, Started};
use crate::{Config, Handler, Pattern, Role};
use hintq::{Acceptor, Event, Interest, Queue, Wheel};
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicI32};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Leader/Followers and Half-Sync: one queue in hand-off mode, shared by a pool.
pub(crate) fn start_pool<H: Handler>(cfg: &Config, n: usize, core: &Arc<Core<H>>) -> io::Result<Started> {
    let (listener, addr, claim) = first_listener(cfg, cfg.reuseport)?;
    let lfd = listener.as_raw_fd();
    let mut q = builder(cfg).build()?;
    let rearm = q.handoff()?;
    let waker = q.waker()?;
    q.declare(listener.as_fd(), Interest::READ)?;
    let shared = Arc::new(Shared {
        lead: Leadership::new(q),
        rearm,
        ops: Mutex::new(Vec::new()),
        waker,
        waiting: AtomicBool::new(false),
        paused: Mutex::new(None),
        listener: Mutex::new(Some(listener)),
        lfd: AtomicI32::new(lfd),
        timers: Mutex::new(Wheel::new(cfg.max_fds, cfg.tick)),
    });
    let active = cfg.adaptive.map_or(n, |a| a.min.clamp(1, n));
    let gate = Arc::new(Gate::new(active));
    let work = Arc::new(WorkQueue::<Event>::default());
    let acc = Arc::new(Mutex::new(Acceptor::new(lfd)?));
    let mut threads = Vec::new();
    let half_sync = cfg.pattern == Pattern::HalfSync;
    let hook = cfg.on_thread_start.clone();
    for i in 0..n + usize::from(half_sync) {
        let (c, s, g, w, a) =
            (Arc::clone(core), Arc::clone(&shared), Arc::clone(&gate), Arc::clone(&work), Arc::clone(&acc));
        let (role, name) = match (half_sync, i) {
            (false, _) => (Role::Worker, format!("hintq-lf-{i}")),
            (true, 0) => (Role::Async, "hintq-hs-async".to_string()),
            (true, _) => (Role::Sync, format!("hintq-hs-{i}")),
        };
        let body: Box<dyn FnOnce() + Send> = match role {
            Role::Worker => Box::new(move || leader_followers(&c, &s, &g, &a, i)),
            Role::Async => Box::new(move || half_sync_async(&c, &s, &w, &a)),
            Role::Sync => Box::new(move || half_sync_worker(&c, &s, &g, &w, i)),
        };
        threads.push(spawn(name, hook.clone(), role, i, body)?);
    }
    let c = Arc::clone(core);
    let g = Arc::clone(&gate);
    let s = Arc::clone(&shared);
    let wake = Box::new(move || drop(s.waker.wake()));
    let stop: Box<dyn FnOnce() + Send> = Box::new(move || {
        c.stop.store(true, SeqCst);
        // Not `lead.stop()`: followers leave one at a time, each after becoming leader and
        // seeing the flag, so no thread exits while another still works the queue. (On
        // io_uring a thread's exit cancels the polls it submitted; a leader cancelling
        // polls meanwhile was seen to wait forever for a completion.)
        let _ = shared.waker.wake();
        work.close();
        g.stop();
    });
    Ok(Started { addr, threads, stop, wake, gate: Some(gate), claim })
}

/// The holder's chores before it waits: the drain's start, deferred closes and interest
/// changes, deadlines.
fn holder_chores<H: Handler>(
    c: &Core<H>,
    s: &Shared,
    q: &mut Queue,
    home: &mut Home<H::Local>,
    next_tick: &mut Instant,
    st: &ThreadStats,
) {
    let lfd = s.lfd.load(Relaxed);
    let mut paused = s.paused.lock().unwrap_or_else(|e| e.into_inner());
    if lfd >= 0 && c.draining() {
        *paused = None;
        s.lfd.store(-1, Relaxed);
        st.counted(q.declare_interest(crate::held(lfd), Interest::empty()));
        drop(s.listener.lock().unwrap_or_else(|e| e.into_inner()).take());
        drop(paused);
        c.begin_drain(&mut Ctl::Shared(s), (0, home), st);
    } else if paused.is_some_and(|t| Instant::now() >= t) {
        *paused = None;
        st.counted(q.declare(crate::held(lfd), Interest::READ));
    }
    let ops = std::mem::take(&mut *s.ops.lock().unwrap_or_else(|e| e.into_inner()));
    for op in ops {
        match op {
            Op::Close(fd) => {
                st.counted(c.meter(st).revoke(q, fd.as_raw_fd()));
                drop(fd);
            }
            Op::Declare(fd, i) => st.counted(c.meter(st).declare(q, fd, i, false)),
        }
    }
    if Instant::now() >= *next_tick {
        c.expire_due(&mut Ctl::Shared(s), (0, home), st);
        *next_tick = Instant::now() + c.tick;
    }
}

/// Waits on the shared queue as its holder until something other than a listener event
/// arrives (accepting on the way), with the `waiting` flag raised for deferred work. 0 when
/// the server stops or the waits keep failing.
fn hold_and_wait<H: Handler>(
    c: &Core<H>,
    s: &Shared,
    q: &mut Queue,
    evs: &mut [Event],
    (acc, home): (&Mutex<Acceptor>, &mut Home<H::Local>),
    next_tick: &mut Instant,
    st: &ThreadStats,
) -> usize {
    while !c.stopped() {
        holder_chores(c, s, q, home, next_tick, st);
        s.waiting.store(true, SeqCst);
        if !s.ops.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            s.waiting.store(false, SeqCst);
            continue;
        }
        let Some(n) = c.wait(q, evs, &mut home.batch, st) else {
            s.waiting.store(false, SeqCst);
            return 0;
        };
        s.waiting.store(false, SeqCst);
        let lfd = s.lfd.load(Relaxed);
        let mut kept = 0;
        for k in 0..n {
            let ev = evs[k];
            if ev.fd() == lfd {
                let mut acc = acc.lock().unwrap_or_else(|e| e.into_inner());
                let r = match c.accept(&mut acc, (&mut *q, &mut Clock::Shared(&s.timers)), (0, home), st, 64)
                {
                    Listen::Drained => s.rearm.rearm(&ev, Interest::READ),
                    Listen::More => q.declare(crate::held(lfd), Interest::READ),
                    Listen::Pause(until) => {
                        *s.paused.lock().unwrap_or_else(|e| e.into_inner()) = Some(until);
                        q.declare_interest(crate::held(lfd), Interest::empty()).map(drop)
                    }
                };
                st.counted(r);
            } else {
                evs[kept] = ev;
                kept += 1;
            }
        }
        if kept > 0 {
            return kept;
        }
    }
    0
}

fn leader_followers<H: Handler>(c: &Core<H>, s: &Shared, gate: &Gate, acc: &Mutex<Acceptor>, i: usize) {
    let st = &c.stats[i];
    let mut home = Home::<H::Local>::new();
    let mut next_tick = Instant::now() + c.tick;
    let mut evs = [Event::default(); 1];
    while !c.stopped() && gate.pass(i) {
        let Some(mut leader) = s.lead.lead() else { break };
        let n = leader.with(|q| hold_and_wait(c, s, q, &mut evs, (acc, &mut home), &mut next_tick, st));
        drop(leader); // promote a follower, then handle
        if n == 0 {
            break;
        }
        c.dispatch(evs[0], &mut Ctl::Shared(s), (0, &mut home), st);
    }
}

fn half_sync_async<H: Handler>(c: &Core<H>, s: &Shared, work: &WorkQueue<Event>, acc: &Mutex<Acceptor>) {
    let st = &c.stats[0];
    let Some(mut leader) = s.lead.lead() else { return };
    let mut home = Home::<H::Local>::new();
    let mut next_tick = Instant::now() + c.tick;
    let mut evs = vec![Event::default(); c.array_max];
    leader.with(|q| {
        while !c.stopped() {
            let n = hold_and_wait(c, s, q, &mut evs, (acc, &mut home), &mut next_tick, st);
            if n == 0 {
                return; // stopped, or the waits keep failing
            }
            for ev in &evs[..n] {
                let t0 = c.clock();
                if work.push(*ev).is_err() {
                    return;
                }
                st.add(Counter::Inserts, 1);
                st.add_since(Counter::InsertNs, t0);
            }
        }
    });
}

/// A Half-Sync worker: pops what the asynchronous thread queued and dispatches it, while
/// the gate lets worker `i - 1` run.
fn half_sync_worker<H: Handler>(c: &Core<H>, s: &Shared, gate: &Gate, work: &WorkQueue<Event>, i: usize) {
    // Its events come from another thread: no batch time of its own.
    let mut home = Home::<H::Local>::new();
    while !c.stopped() && gate.pass(i - 1) {
        let Some(ev) = work.pop() else { break };
        c.dispatch(ev, &mut Ctl::Shared(s), (0, &mut home), &c.stats[i]);
    }
}
