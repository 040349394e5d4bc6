//! `hintq bench gooch`: Gooch's figure (1998) on this machine, and what his active/inactive
//! split saves.
//!
//! * **perfd** — one `poll(2)` with timeout 0 over N idle descriptors that are never ready
//!   (eventfds, and unbound UDP sockets asked for `POLLIN`), timed as a batch of calls: ns
//!   per call and per descriptor. Gooch measured about 3 us per descriptor on a Pentium 100
//!   with Linux 2.1.x ([`GOOCH_NS_PER_FD`]).
//! * **split** — N registered, 1% of them active (socketpairs, at least one), the rest idle
//!   eventfds. One cycle writes one byte on the next active descriptor in rotation, calls
//!   `get_next_event` and reads what it reports; batch timed after a warm-up of
//!   [`WARMUP`] (several epochs of the gooch policy, so the idle ones are demoted). gooch
//!   against poll, with epoll as the floor; cycles per second and thread CPU per cycle.
//!   Each active descriptor is then written once per rotation, about once per gooch epoch
//!   at N = 10,000: the worst case for the split, which demotes it in between.
//! * **split-steady** — the same, but one cycle writes *every* active descriptor and reads
//!   until each was reported: the 1% stay active all the time, the case Gooch designed for.
//! * **wake** — the latency cost of a quiet descriptor that wakes up while others are busy:
//!   [`WAKE_N`] registered, 1% active and busy as in split-steady, and one more socketpair kept
//!   silent for [`QUIET`] plus a varying phase (long enough for gooch to demote it), then
//!   written; the time from that write to its event being delivered is one sample.
//!
//! gooch polls its inactive set every [`INTERVAL`] (100 ms) here, not at the backend's 10 ms
//! default. Gooch gives no interval: the inactive thread "will only be woken up occasionally",
//! the active one "very frequently", and his unit of cost is the 10 ms timeslice (10,000
//! descriptors at 3 us each "span 3 10 ms timeslices, which is way too much"). Once every ten
//! timeslices is occasional on that scale, and it keeps split's rotation (each active
//! descriptor written once per 100 cycles) inside one epoch at 10,000 descriptors, where a
//! 10 ms interval demoted the active descriptors between their writes.

use crate::meter::Meter;
use crate::rec::Rec;
use crate::row::Row;
use crate::sys;
use hintq::{Backend, Builder, Event, GoochPolicy, Interest, Queue};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// Gooch's figure: about 3 us per descriptor per `poll(2)` (Pentium 100, Linux 2.1.x).
pub const GOOCH_NS_PER_FD: f64 = 3000.0;
/// perfd and split: descriptor counts.
pub const NS: [usize; 4] = [100, 1000, 5000, 10000];
/// split and wake: the share of registered descriptors that are active.
pub const ACTIVE_PER_100: usize = 1;
/// split: untimed cycling before the measurement.
pub const WARMUP: Duration = Duration::from_millis(50);
/// wake: registered descriptors.
pub const WAKE_N: usize = 1000;
/// How often gooch polls its inactive set here: Gooch's "occasionally" (see the module text).
pub const INTERVAL: Duration = Duration::from_millis(100);
/// wake: how long the quiet descriptor stays silent before it is written, for gooch (two
/// intervals, so it is demoted), plus a phase of up to one [`INTERVAL`] for every target, so
/// the write falls anywhere in the epoch. poll and epoll keep no state to lose by silence.
pub const QUIET: Duration = Duration::from_millis(2 * INTERVAL.as_millis() as u64);
/// The targets compared in split and wake.
pub const TARGETS: [Target; 4] =
    [Target::Gooch(1), Target::Gooch(2), Target::Other(Backend::Poll), Target::Other(Backend::Epoll)];

/// A measured queue: gooch with `promote_at` (interval [`INTERVAL`]), or another backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// gooch; 1 is the default policy (promote an inactive descriptor on its first report),
    /// 2 waits for a second epoch with a report.
    Gooch(u8),
    /// Another backend.
    Other(Backend),
}

impl Target {
    /// The name in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Target::Gooch(1) => "gooch",
            Target::Gooch(_) => "gooch-p2",
            Target::Other(b) => b.name(),
        }
    }

    fn queue(self) -> io::Result<Queue> {
        match self {
            Target::Gooch(p) => Builder::new(Backend::Gooch)
                .gooch_policy(GoochPolicy { promote_at: p, interval: INTERVAL })
                .build(),
            Target::Other(b) => Queue::new(b),
        }
    }
}
/// The events array of each wait.
const ARRAY: usize = 64;

/// The sizes a run uses, from `--quick`.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Repetitions.
    pub reps: u32,
    /// Wall time per measured run (perfd and split).
    pub target: Duration,
    /// wake: samples per backend and repetition.
    pub samples: u32,
}

impl Plan {
    /// The plan for `quick` with `reps` repetitions (default 3 quick, 5 full).
    pub fn new(quick: bool, reps: Option<u32>) -> Plan {
        Plan {
            reps: reps.unwrap_or(if quick { 3 } else { 5 }).max(1),
            target: Duration::from_millis(if quick { 80 } else { 300 }),
            samples: if quick { 5 } else { 12 },
        }
    }
}

/// The active count for `n` registered.
pub fn active_of(n: usize) -> usize {
    (n * ACTIVE_PER_100 / 100).max(1)
}

fn rotated<T: Clone>(v: &[T], rep: u32) -> Vec<T> {
    let mut v = v.to_vec();
    if !v.is_empty() {
        let k = rep as usize % v.len();
        v.rotate_left(k);
    }
    v
}

/// An unbound UDP socket: idle for `POLLIN`, one descriptor.
fn udp() -> io::Result<OwnedFd> {
    std::net::UdpSocket::bind("127.0.0.1:0").map(OwnedFd::from)
}

/// The idle descriptors perfd polls: eventfds, unbound UDP sockets (`POLLIN`), and
/// `eventfd-wait`: N-1 idle eventfds then one ready socket, with an infinite timeout, so the
/// kernel queues a wait entry on every idle one before it reaches the ready one (what a
/// blocking poll in an event loop pays; timeout 0 skips the wait entries).
const KINDS: [&str; 3] = ["eventfd", "udp", "eventfd-wait"];

/// perfd: `poll(2)` with timeout 0 over `n` idle descriptors of each kind. The kinds take
/// turns (20,000 descriptors at once would pass `RLIMIT_NOFILE` here).
fn perfd(plan: &Plan, rep: u32, rows: &mut Vec<Rec>) -> io::Result<()> {
    let top = NS[NS.len() - 1];
    for kind in rotated(&KINDS, rep) {
        let make = || if kind == "udp" { udp() } else { hintq_sys::eventfd() };
        let fds = (0..top).map(|_| make()).collect::<io::Result<Vec<_>>>()?;
        let ready = hintq_sys::socketpair()?;
        sys::write1(ready.1.as_raw_fd())?;
        let wait = kind == "eventfd-wait";
        for &n in &NS {
            let pollfd = |fd: RawFd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            let mut set: Vec<libc::pollfd> = fds[..n].iter().map(|f| pollfd(f.as_raw_fd())).collect();
            if wait {
                set[n - 1] = pollfd(ready.0.as_raw_fd());
            }
            let (timeout, expect) = if wait { (-1, 1) } else { (0, 0) };
            let m = Meter::start();
            let mut calls = 0u64;
            while calls == 0 || m.elapsed() < plan.target {
                for _ in 0..16 {
                    if hintq_sys::poll(&mut set, timeout)? != expect {
                        return Err(io::Error::other(format!("poll(2) over {kind}: not {expect} ready")));
                    }
                }
                calls += 16;
            }
            let (wall, cpu, pre) = m.stop();
            rows.push(Rec {
                experiment: "perfd".into(),
                target: format!("poll(2)-{kind}"),
                rep,
                registered: n,
                ops: calls,
                total_ns: wall,
                wall_ns: wall,
                cpu_ns: cpu,
                preempted: pre,
                ..Rec::default()
            });
        }
    }
    Ok(())
}

/// A queue on `b` with `idle` then the watched ends of `pairs` registered.
fn registered(t: Target, idle: &[OwnedFd], pairs: &[(OwnedFd, OwnedFd)]) -> io::Result<Queue> {
    let mut q = t.queue()?;
    for fd in idle.iter().map(AsFd::as_fd).chain(pairs.iter().map(|p| p.0.as_fd())) {
        q.declare_interest(fd, Interest::READ)?;
    }
    Ok(q)
}

/// The busy load: one cycle writes the next active peer (or, `steady`, every one), waits,
/// reads what was reported, until each written descriptor was.
struct Busy<'a> {
    pairs: &'a [(OwnedFd, OwnedFd)],
    steady: bool,
    next: usize,
    evs: [Event; ARRAY],
}

impl<'a> Busy<'a> {
    fn new(pairs: &'a [(OwnedFd, OwnedFd)], steady: bool) -> Busy<'a> {
        Busy { pairs, steady, next: 0, evs: [Event::default(); ARRAY] }
    }

    /// One cycle; returns whether `watch` was among the descriptors reported.
    fn cycle(&mut self, q: &mut Queue, watch: RawFd) -> io::Result<bool> {
        let written = if self.steady { self.pairs } else { std::slice::from_ref(&self.pairs[self.next]) };
        self.next = (self.next + 1) % self.pairs.len();
        for p in written {
            sys::write1(p.1.as_raw_fd())?;
        }
        let mut pending: Vec<RawFd> = written.iter().map(|p| p.0.as_raw_fd()).collect();
        let mut found = false;
        while !pending.is_empty() {
            let n = q.get_next_event(&mut self.evs, Some(Duration::from_secs(2)))?;
            if n == 0 {
                return Err(io::Error::other("a written descriptor was not reported within 2 s"));
            }
            for ev in &self.evs[..n] {
                sys::drain(ev.fd());
                pending.retain(|&fd| fd != ev.fd());
                found |= ev.fd() == watch;
            }
        }
        Ok(found)
    }
}

/// split (`steady` false) and split-steady: readiness cycles with 1% active, per backend and N.
fn split(
    plan: &Plan,
    rep: u32,
    steady: bool,
    pairs: &[(OwnedFd, OwnedFd)],
    idle: &[OwnedFd],
    rows: &mut Vec<Rec>,
) -> io::Result<()> {
    let experiment = if steady { "split-steady" } else { "split" };
    for &n in &NS {
        let a = active_of(n);
        for t in rotated(&TARGETS, rep) {
            let mut q = registered(t, &idle[..n - a], &pairs[..a])?;
            let mut busy = Busy::new(&pairs[..a], steady);
            let warm = Instant::now();
            while warm.elapsed() < WARMUP {
                busy.cycle(&mut q, -1)?;
            }
            let events = q.stats().delivered;
            let m = Meter::start();
            let mut cycles = 0u64;
            while cycles == 0 || m.elapsed() < plan.target {
                busy.cycle(&mut q, -1)?;
                cycles += 1;
            }
            let (wall, cpu, pre) = m.stop();
            let s = q.stats();
            rows.push(Rec {
                experiment: experiment.into(),
                target: t.name().into(),
                rep,
                registered: n,
                active: a,
                ops: cycles,
                events: s.delivered - events,
                total_ns: wall,
                wall_ns: wall,
                cpu_ns: cpu,
                preempted: pre,
                migrations: s.migrations,
                ..Rec::default()
            });
        }
    }
    Ok(())
}

/// wake: samples of the delay from writing a quiet descriptor to its delivery.
fn wake(
    plan: &Plan,
    rep: u32,
    pairs: &[(OwnedFd, OwnedFd)],
    quiet: &(OwnedFd, OwnedFd),
    idle: &[OwnedFd],
    rows: &mut Vec<Rec>,
) -> io::Result<()> {
    let a = active_of(WAKE_N);
    let mut phase = 0x9e37_79b9_u32.wrapping_mul(rep + 1);
    for t in rotated(&TARGETS, rep) {
        let mut q = registered(t, &idle[..WAKE_N - a - 1], &pairs[..a])?;
        q.declare_interest(quiet.0.as_fd(), Interest::READ)?;
        let mut busy = Busy::new(&pairs[..a], true);
        for _ in 0..plan.samples {
            // A phase of 0..INTERVAL on top of the quiet time (xorshift), so writes fall
            // anywhere in gooch's epoch.
            phase ^= phase << 13;
            phase ^= phase >> 17;
            phase ^= phase << 5;
            let quiet_for = if matches!(t, Target::Gooch(_)) { QUIET } else { Duration::ZERO };
            let silent = quiet_for + Duration::from_micros(u64::from(phase) % INTERVAL.as_micros() as u64);
            let since = Instant::now();
            while since.elapsed() < silent {
                busy.cycle(&mut q, -1)?;
            }
            let before = q.stats().migrations;
            let m = Meter::start();
            sys::write1(quiet.1.as_raw_fd())?;
            let t0 = Instant::now();
            let mut cycles = 1u64;
            while !busy.cycle(&mut q, quiet.0.as_raw_fd())? {
                cycles += 1;
                if t0.elapsed() > Duration::from_secs(2) {
                    return Err(io::Error::other(format!(
                        "{}: a quiet descriptor was not reported within 2 s",
                        t.name()
                    )));
                }
            }
            let lat = t0.elapsed().as_nanos() as u64;
            let (wall, cpu, pre) = m.stop();
            sys::drain(quiet.0.as_raw_fd());
            rows.push(Rec {
                experiment: "wake".into(),
                target: t.name().into(),
                rep,
                registered: WAKE_N,
                active: a,
                ops: 1,
                events: cycles,
                total_ns: lat,
                wall_ns: wall,
                cpu_ns: cpu,
                preempted: pre,
                migrations: q.stats().migrations - before,
                ..Rec::default()
            });
        }
    }
    Ok(())
}

/// Runs perfd, split and wake, every repetition in turn.
///
/// # Errors
/// Creating descriptors, a failing call, or an event not delivered.
pub fn run(plan: &Plan) -> io::Result<Vec<Rec>> {
    let top = NS[NS.len() - 1];
    let mut rows = Vec::new();
    for rep in 0..plan.reps {
        eprintln!("gooch rep {}/{}: perfd", rep + 1, plan.reps);
        perfd(plan, rep, &mut rows)?;
    }
    let pairs = (0..active_of(top)).map(|_| hintq_sys::socketpair()).collect::<io::Result<Vec<_>>>()?;
    let quiet = hintq_sys::socketpair()?;
    let idle = (0..top).map(|_| hintq_sys::eventfd()).collect::<io::Result<Vec<_>>>()?;
    for rep in 0..plan.reps {
        eprintln!("gooch rep {}/{}: split, wake", rep + 1, plan.reps);
        split(plan, rep, false, &pairs, &idle, &mut rows)?;
        split(plan, rep, true, &pairs, &idle, &mut rows)?;
        wake(plan, rep, &pairs, &quiet, &idle, &mut rows)?;
    }
    Ok(rows)
}

/// The lab's E7 rows of `recs`: ns per descriptor per `poll(2)` call (perfd), ns per cycle
/// with 1% active in rotation (split) and all busy (split-steady), with the queue's
/// migrations between its sets over the run, µs from write to event of a quiet descriptor
/// (wake); against descriptors registered.
pub fn rows(recs: &[Rec]) -> Vec<Row> {
    let row = |r: &Rec, metric: &str, value: f64| r.row("E7", &r.target, r.registered, metric, value);
    let migrations = |r: &Rec, m: &str| row(r, m, r.migrations as f64);
    recs.iter()
        .flat_map(|r| match r.experiment.as_str() {
            "perfd" => vec![row(r, "perfd_ns_per_fd", r.ns_per_op() / r.registered.max(1) as f64)],
            "split" => vec![row(r, "split_ns_per_cycle", r.ns_per_op()), migrations(r, "split_migrations")],
            "split-steady" => {
                vec![row(r, "steady_ns_per_cycle", r.ns_per_op()), migrations(r, "steady_migrations")]
            }
            "wake" => vec![row(r, "wake_us", r.ns_per_op() / 1000.0)],
            _ => Vec::new(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_is_one_percent_at_least_one() {
        assert_eq!(NS.map(active_of), [1, 10, 50, 100]);
        assert_eq!(TARGETS.map(Target::name), ["gooch", "gooch-p2", "poll", "epoll"]);
        assert_eq!(active_of(10), 1);
    }

    #[test]
    fn runs_become_per_descriptor_per_cycle_and_wake_latency_rows() {
        let run = |exp: &str, target: &str, ops: u64, ns: u64| Rec {
            experiment: exp.into(),
            target: target.into(),
            registered: 1000,
            ops,
            total_ns: ns,
            wall_ns: ns,
            cpu_ns: ns,
            migrations: 3,
            ..Rec::default()
        };
        let mut off = run("wake", "gooch", 1, 25_000);
        off.cpu_ns = 0;
        let recs = [
            run("perfd", "poll(2)-eventfd", 10, 2_000_000),
            run("split", "gooch", 100, 50_000),
            run("split-steady", "gooch", 100, 30_000),
            off,
        ];
        let rows = rows(&recs);
        let got: Vec<(&str, &str, &str, f64, f64)> = rows
            .iter()
            .map(|r| (r.experiment.as_str(), r.series.as_str(), r.metric.as_str(), r.x, r.value.unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                ("E7", "poll(2)-eventfd", "perfd_ns_per_fd", 1000.0, 200.0),
                ("E7", "gooch", "split_ns_per_cycle", 1000.0, 500.0),
                ("E7", "gooch", "split_migrations", 1000.0, 3.0),
                ("E7", "gooch", "steady_ns_per_cycle", 1000.0, 300.0),
                ("E7", "gooch", "steady_migrations", 1000.0, 3.0),
                ("E7", "gooch", "wake_us", 1000.0, 25.0),
            ]
        );
        assert!(rows[..5].iter().all(|r| r.note.is_empty()));
        assert!(rows[5].note.starts_with("on a CPU 0%"), "{}", rows[5].note);
    }
}
