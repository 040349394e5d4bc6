//! The three experiments. Each point of each repetition is measured for every target in
//! turn (the order rotates with the repetition, so drift on a shared machine falls on every
//! target alike), each on a fresh queue (or epoll instance) with the same descriptors.

use crate::row::{self, Row, Spread};
use crate::sys::{self, RawEpoll, RawUring};
use hintq::{Backend, Event, Interest, Queue};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// fig6a: `array_max` values.
pub const ARRAY_MAX: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// fig6b: idle counts, full and `--quick`.
pub const IDLE: [usize; 5] = [0, 1000, 5000, 10000, 15000];
/// fig6b under `--quick`.
pub const IDLE_QUICK: [usize; 3] = [0, 1000, 5000];
/// fig7: registered counts.
pub const REGISTERED: [usize; 4] = [1000, 5000, 10000, 15000];
/// fig6b: the events array handed to each wait.
pub const CYCLE_ARRAY: usize = 64;
/// fig7: descriptors declared (then revoked) per timed batch.
pub const BATCH: usize = 256;

/// The label of the raw `epoll_wait`/`epoll_ctl` loop every backend is compared with.
pub const RAW: &str = "raw-epoll";
/// The label of the raw io_uring multishot-poll loop the `uring` backend is compared with.
pub const RAW_URING: &str = "raw-uring";
/// The label of the write-then-read baseline of the readiness cycle (no wait at all).
pub const BASELINE: &str = "write+read";

/// What is measured: a hintq backend, the raw epoll loop, or the cycle without any wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The raw `epoll_wait`/`epoll_ctl` loop.
    Raw,
    /// fig6b only, beside `uring`: the raw io_uring multishot-poll loop.
    RawUring,
    /// A [`Queue`] on this backend.
    Queue(Backend),
    /// fig6b only: write and read with no wait in between.
    Baseline,
}

impl Target {
    /// The name in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Target::Raw => RAW,
            Target::RawUring => RAW_URING,
            Target::Queue(b) => b.name(),
            Target::Baseline => BASELINE,
        }
    }
}

/// How long to measure and how often.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Repetitions of every point.
    pub reps: u32,
    /// Wall time aimed at per measurement (the calibration runs before it come on top).
    pub target: Duration,
    /// fig6b idle counts.
    pub idle: Vec<usize>,
    /// The hintq backends whose probe succeeded.
    pub backends: Vec<Backend>,
    /// io_uring rings defer their work to the waiting thread ([`crate::Config::uring_defer`]).
    pub uring_defer: bool,
}

/// The descriptors of fig6b and fig7, created once, in an order that keeps the active pair
/// and the first idle ones at the lowest free numbers (so `select`, limited to numbers below
/// 1024, can take 1000 idle ones). Create it after [`fig6a`], whose pairs are closed by then.
pub struct Fds {
    /// fig6b: the active pair, `(watched, peer)`.
    pub active: (OwnedFd, OwnedFd),
    /// Idle eventfds, never written; fig6b and fig7 register a prefix.
    pub idle: Vec<OwnedFd>,
    /// fig7: the batch declared and revoked.
    pub extra: Vec<OwnedFd>,
}

fn eventfds(n: usize) -> io::Result<Vec<OwnedFd>> {
    (0..n).map(|_| hintq_sys::eventfd()).collect()
}

impl Fds {
    /// Creates the active pair, `idle` eventfds and [`BATCH`] extra eventfds.
    pub fn new(idle: usize) -> io::Result<Fds> {
        Ok(Fds { active: hintq_sys::socketpair()?, idle: eventfds(idle)?, extra: eventfds(BATCH)? })
    }
}

/// The rows gathered so far.
#[derive(Default)]
pub struct Output {
    /// The lab's rows: E3 (Banga Fig. 6: fig6a, fig6b) and E4 (Fig. 7: fig7).
    pub rows: Vec<Row>,
}

/// What one measured run of `n` iterations gives: time per phase, calls, events.
#[derive(Clone, Copy)]
struct Sample<const P: usize> {
    ns: [u64; P],
    calls: u64,
    events: u64,
}

impl<const P: usize> Default for Sample<P> {
    fn default() -> Self {
        Sample { ns: [0; P], calls: 0, events: 0 }
    }
}

/// One measured run: its sample, and how much of its wall time this thread was on a CPU.
struct Run<const P: usize> {
    s: Sample<P>,
    /// Wall time of the whole run, untimed parts included.
    wall_ns: u64,
    /// Thread CPU time over the same span.
    cpu_ns: u64,
    /// Involuntary context switches over the same span.
    preempted: u64,
}

impl<const P: usize> Run<P> {
    /// The rows of phase `i` of this run (named `phase`) at swept value `x` of figure `fig` (`fig6a`, `fig6b`,
    /// `fig7`): ns per op (`<fig>_ns_per_<phase>`), and in fig6a ns per event too; E3 holds
    /// Fig. 6, E4 Fig. 7. A run its thread was not on a CPU for says so in the note.
    fn push(&self, out: &mut Output, (fig, phase, i): (&str, &str, usize), t: Target, rep: u32, x: usize) {
        let exp = if fig == "fig7" { "E4" } else { "E3" };
        let note = row::quiet_note(self.wall_ns, self.cpu_ns, self.preempted);
        let mut push = |metric: String, value: f64| {
            out.rows.push(Row { rep, note: note.clone(), ..Row::ok(exp, t.name(), x as f64, &metric, value) })
        };
        push(format!("{fig}_ns_per_{phase}"), self.s.ns[i] as f64 / self.s.calls.max(1) as f64);
        if fig == "fig6a" && self.s.events > 0 {
            push("fig6a_ns_per_event".into(), self.s.ns[i] as f64 / self.s.events as f64);
        }
    }
}

/// Runs `run(n)` with `n` doubling from 1 until a run takes an eighth of `target` (these
/// runs warm caches and allocations up), then once more with `n` sized for `target`, which
/// is the run reported.
fn measure<const P: usize>(
    target: Duration,
    mut run: impl FnMut(u64) -> io::Result<Sample<P>>,
) -> io::Result<Run<P>> {
    let target_ns = target.as_nanos() as u64;
    let mut n = 1u64;
    loop {
        let wall = Instant::now();
        run(n)?;
        let took = wall.elapsed().as_nanos() as u64;
        if took >= target_ns / 8 || n >= 1 << 24 {
            n = (n as u128 * target_ns as u128 / took.max(1) as u128).clamp(1, 1 << 26) as u64;
            let (pre, cpu, wall) = (sys::preemptions(), sys::thread_cpu_ns(), Instant::now());
            let s = run(n)?;
            let wall_ns = ns(wall.elapsed());
            let cpu_ns = sys::thread_cpu_ns() - cpu;
            return Ok(Run { s, wall_ns, cpu_ns, preempted: sys::preemptions() - pre });
        }
        n *= 2;
    }
}

fn ns(d: Duration) -> u64 {
    d.as_nanos() as u64
}

fn raw_of(fds: &[OwnedFd]) -> impl Iterator<Item = BorrowedFd<'_>> + '_ {
    fds.iter().map(AsFd::as_fd)
}

/// The targets in the order of repetition `rep`: rotated by one each time.
fn rotated(targets: &[Target], rep: u32) -> Vec<Target> {
    let mut t = targets.to_vec();
    if !t.is_empty() {
        let k = rep as usize % t.len();
        t.rotate_left(k);
    }
    t
}

fn queue_with<'a>(
    b: Backend,
    uring_defer: bool,
    fds: impl Iterator<Item = BorrowedFd<'a>>,
) -> io::Result<Queue> {
    let mut q = hintq::Builder::new(b).uring_defer(uring_defer).build()?;
    for fd in fds {
        q.declare_interest(fd, Interest::READ)?;
    }
    Ok(q)
}

fn raw_with<'a>(max: usize, fds: impl Iterator<Item = BorrowedFd<'a>>) -> io::Result<RawEpoll> {
    let ep = RawEpoll::new(max)?;
    for fd in fds {
        ep.add(fd.as_raw_fd())?;
    }
    Ok(ep)
}

fn nothing(what: &str) -> io::Error {
    io::Error::other(format!("{what} returned no event although a descriptor was readable"))
}

/// fig6a: `array_max` readable descriptors, one `get_next_event(array_max)` collecting them.
/// Only the call is timed (a clock read before and after it); the writes and reads are not.
/// Its socketpairs are its own, closed when it returns.
pub fn fig6a(plan: &Plan, out: &mut Output) -> io::Result<()> {
    let pairs = (0..ARRAY_MAX[ARRAY_MAX.len() - 1])
        .map(|_| hintq_sys::socketpair())
        .collect::<io::Result<Vec<_>>>()?;
    let mut targets = vec![Target::Raw];
    targets.extend(plan.backends.iter().map(|&b| Target::Queue(b)));
    for rep in 0..plan.reps {
        eprintln!("fig6a rep {}/{}", rep + 1, plan.reps);
        for &k in &ARRAY_MAX {
            let active = &pairs[..k];
            let watched = || active.iter().map(|p| p.0.as_fd());
            for t in rotated(&targets, rep) {
                let write_all = || active.iter().try_for_each(|p| sys::write1(p.1.as_raw_fd()));
                let named = |e: io::Error| {
                    io::Error::new(e.kind(), format!("fig6a, {} at array_max {k}: {e}", t.name()))
                };
                let r = match t {
                    Target::Raw => {
                        let mut ep = raw_with(k, watched())?;
                        measure(plan.target, |n| {
                            let mut s = Sample::<1>::default();
                            for _ in 0..n {
                                write_all()?;
                                let mut got = 0;
                                while got < k {
                                    let t0 = Instant::now();
                                    let ready = ep.wait()?;
                                    s.ns[0] += ns(t0.elapsed());
                                    s.calls += 1;
                                    let before = got;
                                    ready.for_each(|fd| {
                                        sys::drain(fd);
                                        got += 1;
                                    });
                                    if got == before {
                                        return Err(nothing("epoll_wait"));
                                    }
                                }
                                s.events += got as u64;
                            }
                            Ok(s)
                        })
                        .map_err(named)?
                    }
                    Target::Queue(b) => {
                        let mut q = queue_with(b, plan.uring_defer, watched())?;
                        let mut evs = vec![Event::default(); k];
                        measure(plan.target, |n| {
                            let mut s = Sample::<1>::default();
                            for _ in 0..n {
                                write_all()?;
                                let mut got = 0;
                                while got < k {
                                    let t0 = Instant::now();
                                    let m = q.get_next_event(&mut evs, None)?;
                                    s.ns[0] += ns(t0.elapsed());
                                    s.calls += 1;
                                    if m == 0 {
                                        return Err(nothing("get_next_event"));
                                    }
                                    evs[..m].iter().for_each(|ev| sys::drain(ev.fd()));
                                    got += m;
                                }
                                s.events += got as u64;
                            }
                            Ok(s)
                        })
                        .map_err(named)?
                    }
                    Target::Baseline | Target::RawUring => unreachable!("fig6a has no {}", t.name()),
                };
                r.push(out, ("fig6a", "call", 0), t, rep, k);
            }
        }
    }
    Ok(())
}

/// fig6b: the readiness cycle, write 1 byte -> get_next_event -> read, on one socketpair
/// while `idle` eventfds are registered too. The clock is read around a batch of cycles.
/// Beside `uring`, the raw io_uring loop ([`RawUring`]) runs the same cycle.
pub fn fig6b(plan: &Plan, fds: &Fds, out: &mut Output) -> io::Result<()> {
    let mut targets = vec![Target::Raw, Target::Baseline];
    if plan.backends.contains(&Backend::Uring) {
        targets.push(Target::RawUring);
    }
    targets.extend(plan.backends.iter().map(|&b| Target::Queue(b)));
    let (watched, peer) = (fds.active.0.as_raw_fd(), fds.active.1.as_raw_fd());
    for rep in 0..plan.reps {
        eprintln!("fig6b rep {}/{}", rep + 1, plan.reps);
        for &idle in &plan.idle {
            // Idle first, the active one last: state-based backends scan past every idle one.
            let registered = || raw_of(&fds.idle[..idle]).chain([fds.active.0.as_fd()]);
            for t in rotated(&targets, rep) {
                let r = match t {
                    Target::Raw => {
                        let mut ep = raw_with(CYCLE_ARRAY, registered())?;
                        cycles(plan.target, peer, watched, || match ep.wait()?.count() {
                            0 => Err(nothing("epoll_wait")),
                            _ => Ok(()),
                        })?
                    }
                    Target::Queue(b) => {
                        let mut q = queue_with(b, plan.uring_defer, registered())?;
                        let mut evs = [Event::default(); CYCLE_ARRAY];
                        cycles(plan.target, peer, watched, || match q.get_next_event(&mut evs, None)? {
                            0 => Err(nothing("get_next_event")),
                            _ => Ok(()),
                        })?
                    }
                    Target::RawUring => {
                        let mut ring = RawUring::new(plan.uring_defer)?;
                        registered().try_for_each(|fd| ring.add(fd.as_raw_fd()))?;
                        cycles(plan.target, peer, watched, || match ring.wait()? {
                            0 => Err(nothing("io_uring_enter")),
                            _ => Ok(()),
                        })?
                    }
                    Target::Baseline => cycles(plan.target, peer, watched, || Ok(()))?,
                };
                r.push(out, ("fig6b", "cycle", 0), t, rep, idle);
            }
        }
    }
    Ok(())
}

/// Measures cycles of: write one byte on `peer`, `wait()`, read `watched`.
fn cycles(
    target: Duration,
    peer: RawFd,
    watched: RawFd,
    mut wait: impl FnMut() -> io::Result<()>,
) -> io::Result<Run<1>> {
    measure(target, |n| {
        let t0 = Instant::now();
        for _ in 0..n {
            sys::write1(peer)?;
            wait()?;
            sys::drain(watched);
        }
        Ok(Sample { ns: [ns(t0.elapsed())], calls: n, events: 0 })
    })
}

/// fig7: with `n` idle descriptors registered, declare interest in [`BATCH`] more (timed),
/// then revoke it (timed apart); the raw loop does `EPOLL_CTL_ADD` and `EPOLL_CTL_DEL`.
pub fn fig7(plan: &Plan, fds: &Fds, out: &mut Output) -> io::Result<()> {
    let mut targets = vec![Target::Raw];
    targets.extend(plan.backends.iter().map(|&b| Target::Queue(b)));
    let extra = || raw_of(&fds.extra);
    for rep in 0..plan.reps {
        eprintln!("fig7 rep {}/{}", rep + 1, plan.reps);
        for &n in &REGISTERED {
            let registered = || raw_of(&fds.idle[..n]);
            for t in rotated(&targets, rep) {
                match t {
                    Target::Raw => {
                        let ep = raw_with(1, registered())?;
                        let r = declare_revoke(
                            plan.target,
                            |fd| ep.add(fd.as_raw_fd()),
                            |fd| ep.del(fd.as_raw_fd()),
                            extra,
                        )?;
                        r.push(out, ("fig7", "declare", 0), t, rep, n);
                        r.push(out, ("fig7", "revoke", 1), t, rep, n);
                    }
                    Target::Queue(b) => {
                        // declare_interest (state returned: the call plus a poll(2)), then
                        // declare (the paper's NULL statemask: the call alone).
                        let q = std::cell::RefCell::new(queue_with(b, plan.uring_defer, registered())?);
                        let revoke = |fd| q.borrow_mut().declare(fd, Interest::empty());
                        let with_state = |fd| q.borrow_mut().declare_interest(fd, Interest::READ).map(drop);
                        let r = declare_revoke(plan.target, with_state, revoke, extra)?;
                        r.push(out, ("fig7", "declare", 0), t, rep, n);
                        r.push(out, ("fig7", "revoke", 1), t, rep, n);
                        let no_state = |fd| q.borrow_mut().declare(fd, Interest::READ);
                        let r = declare_revoke(plan.target, no_state, revoke, extra)?;
                        r.push(out, ("fig7", "declare-nostate", 0), t, rep, n);
                    }
                    Target::Baseline | Target::RawUring => unreachable!("fig7 has no {}", t.name()),
                }
            }
        }
    }
    Ok(())
}

/// Rounds of: `declare` every extra descriptor (timed), then `revoke` each (timed apart).
fn declare_revoke<'a, I: Iterator<Item = BorrowedFd<'a>>>(
    target: Duration,
    mut declare: impl FnMut(BorrowedFd<'a>) -> io::Result<()>,
    mut revoke: impl FnMut(BorrowedFd<'a>) -> io::Result<()>,
    extra: impl Fn() -> I,
) -> io::Result<Run<2>> {
    measure(target, |n| {
        let mut s = Sample::<2>::default();
        for _ in 0..n {
            let t0 = Instant::now();
            extra().try_for_each(&mut declare)?;
            let t1 = Instant::now();
            extra().try_for_each(&mut revoke)?;
            s.ns[0] += ns(t1 - t0);
            s.ns[1] += ns(t1.elapsed());
        }
        s.calls = n * BATCH as u64;
        Ok(s)
    })
}

/// The cost of a null system call, in ns: median of 9 runs of 100,000. A machine check, set
/// beside the floor in PERF.md (75-88 ns): far above it, the machine is slower than usual.
pub fn null_syscall_ns() -> f64 {
    median_of_9(|| {
        let t0 = Instant::now();
        (0..100_000).for_each(|_| sys::null_syscall());
        ns(t0.elapsed())
    })
}

/// The cost of the clock reads that bracket each fig6a call: the time between two
/// back-to-back `Instant::now()`, median of 9 runs of 100,000, in ns.
pub fn clock_pair_ns() -> f64 {
    median_of_9(|| (0..100_000).map(|_| Instant::now()).map(|a| ns(a.elapsed())).sum())
}

/// The median of 9 calls of `run`, each giving the ns taken by 100,000 iterations, per iteration.
fn median_of_9(mut run: impl FnMut() -> u64) -> f64 {
    let runs: Vec<f64> = (0..9).map(|_| run() as f64 / 100_000.0).collect();
    Spread::of(&runs).map_or(0.0, |s| s.median)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fig6a gives ns per call and per event (E3), fig7 each phase apart (E4), and a run its
    /// thread spent off the CPU is noted.
    #[test]
    fn runs_become_the_lab_s_rows() {
        let run = |ns: [u64; 2], cpu_ns| Run {
            s: Sample { ns, calls: 100, events: 400 },
            wall_ns: 1000,
            cpu_ns,
            preempted: 3,
        };
        let mut out = Output::default();
        run([50_000, 0], 1000).push(&mut out, ("fig6a", "call", 0), Target::Raw, 2, 4);
        run([25_600, 51_200], 500).push(
            &mut out,
            ("fig7", "revoke", 1),
            Target::Queue(Backend::Epoll),
            0,
            1000,
        );
        let got: Vec<String> = out.rows.iter().map(row::line).collect();
        assert_eq!(
            got[..2],
            ["E3,raw-epoll,4,2,fig6a_ns_per_call,500,ok,", "E3,raw-epoll,4,2,fig6a_ns_per_event,125,ok,"]
        );
        assert!(
            got[2].starts_with(
                "E4,epoll,1000,0,fig7_ns_per_revoke,512,ok,\"on a CPU 50% of its run (3 preemptions)"
            ),
            "{}",
            got[2]
        );
        assert_eq!(got.len(), 3);
    }
}
