//! `hintq bench rtsig`: the overflow path of the rtsig backend (Provos & Lever §2, §4, §6),
//! with poll, epoll and uring in the same run (DESIGN.md E8).
//!
//! * **overflow** — bursts of K ready socketpairs among [`IDLE`] idle eventfds: write one
//!   byte on each of the K, call `get_next_event` (an array of K) until every one of the K
//!   was reported, read each as it is reported. One cycle is one whole burst, timed as a
//!   batch. rtsig runs with `RLIMIT_SIGPENDING` at its default and lowered to K/4 (every
//!   burst overflows the signal queue), with the hybrid switch off and on.
//! * **scan** — the cost of one recovery scan against registered descriptors N: a burst of
//!   [`SCAN_BURST`] with N idle registered, only the `get_next_event` calls timed (a clock
//!   read around each). Lowered to [`SCAN_LIMIT`], each burst overflows and its first call
//!   takes `SIGIO`, flushes the signal queue and scans all N + 32 with one `poll(2)`; at the
//!   default limit the same burst is 32 queued signals. Their difference is the recovery.
//!
//! `RLIMIT_SIGPENDING` is process-wide, so each limit runs in a child process: the parent
//! re-executes its own command with [`CHILD_ENV`] set, and the child prints its rows (the
//! lab's E8 rows, [`rows`]) on its standard output. Every run uses a fresh queue and no warm-up, so the queue's
//! [`hintq::Stats`] cover exactly the bursts measured.

use crate::meter::Meter;
use crate::rec::Rec;
use crate::row::{self, Row};
use crate::sys;
use hintq::{Backend, Builder, Event, Hybrid, Interest, Queue};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// The environment variable that makes `hintq bench rtsig` a child: `<limit> rep=<n>`.
pub const CHILD_ENV: &str = "HINTQ_BENCH_CHILD";
/// overflow: burst sizes, full and `--quick`.
pub const BURSTS: [usize; 3] = [64, 256, 1024];
/// overflow under `--quick`.
pub const BURSTS_QUICK: [usize; 1] = [256];
/// overflow: idle eventfds registered beside the burst.
pub const IDLE: usize = 1000;
/// scan: registered idle descriptors.
pub const SCAN_N: [usize; 4] = [100, 1000, 5000, 10000];
/// scan: descriptors written per burst.
pub const SCAN_BURST: usize = 32;
/// scan: the lowered `RLIMIT_SIGPENDING`.
pub const SCAN_LIMIT: u64 = 8;
/// How long a get_next_event may wait before the benchmark calls an event lost.
const LOST_AFTER: Duration = Duration::from_secs(2);

/// `RLIMIT_SIGPENDING` as the child runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// As inherited (high enough never to overflow here).
    Default,
    /// Lowered below the burst: K/4 for overflow, [`SCAN_LIMIT`] for scan.
    Lowered,
}

impl Limit {
    /// The name in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Default => "default",
            Limit::Lowered => "lowered",
        }
    }
}

/// What a child is asked to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Child {
    /// The limit it runs under.
    pub limit: Limit,
    /// The repetition (rotates the order of the targets).
    pub rep: u32,
}

impl Child {
    /// The value of [`CHILD_ENV`].
    pub fn encode(self) -> String {
        format!("{} rep={}", self.limit.name(), self.rep)
    }

    /// Parses [`Child::encode`]'s output.
    pub fn parse(s: &str) -> Result<Child, String> {
        let bad = || format!("bad {CHILD_ENV} value {s:?}: expected \"default|lowered rep=N\"");
        let mut words = s.split_whitespace();
        let limit = match words.next() {
            Some("default") => Limit::Default,
            Some("lowered") => Limit::Lowered,
            _ => return Err(bad()),
        };
        let rep =
            words.next().and_then(|w| w.strip_prefix("rep=")).and_then(|r| r.parse().ok()).ok_or_else(bad)?;
        if words.next().is_some() {
            return Err(bad());
        }
        Ok(Child { limit, rep })
    }
}

/// A measured target: rtsig with or without the hybrid switch, or another backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// rtsig; `true`: hybrid switching on (default thresholds).
    Rtsig(bool),
    /// Another backend, at the default limit only.
    Other(Backend),
}

impl Target {
    /// The name in the rows.
    pub fn name(self) -> &'static str {
        match self {
            Target::Rtsig(false) => "rtsig",
            Target::Rtsig(true) => "rtsig-hybrid",
            Target::Other(b) => b.name(),
        }
    }

    fn queue(self) -> io::Result<Queue> {
        match self {
            Target::Rtsig(hybrid) => Builder::new(Backend::Rtsig)
                .rtsig_hybrid(Hybrid { enabled: hybrid, ..Hybrid::default() })
                .build(),
            Target::Other(b) => Queue::new(b),
        }
    }
}

/// The sizes a run uses, from `--quick`.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Repetitions.
    pub reps: u32,
    /// Wall time per measured run.
    pub target: Duration,
    /// overflow burst sizes.
    pub bursts: Vec<usize>,
    /// The backends compared with rtsig at the default limit (those whose probe succeeded).
    pub others: Vec<Backend>,
}

impl Plan {
    /// The plan for `quick` with `reps` repetitions (default 3 quick, 5 full).
    pub fn new(quick: bool, reps: Option<u32>) -> Plan {
        let others =
            [Backend::Poll, Backend::Epoll, Backend::Uring].into_iter().filter(|b| b.probe().is_ok());
        Plan {
            reps: reps.unwrap_or(if quick { 3 } else { 5 }).max(1),
            target: Duration::from_millis(if quick { 60 } else { 250 }),
            bursts: if quick { BURSTS_QUICK.to_vec() } else { BURSTS.to_vec() },
            others: others.collect(),
        }
    }

    fn targets(&self, limit: Limit, hybrid: bool) -> Vec<Target> {
        let mut t = vec![Target::Rtsig(false)];
        if hybrid {
            t.push(Target::Rtsig(true));
        }
        if limit == Limit::Default {
            t.extend(self.others.iter().map(|&b| Target::Other(b)));
        }
        t
    }
}

/// The descriptors of a child: socketpairs to make ready and idle eventfds.
struct Fds {
    pairs: Vec<(OwnedFd, OwnedFd)>,
    idle: Vec<OwnedFd>,
}

/// The rows of one run of `bursts`, before the point is filled in.
struct Measured {
    ops: u64,
    events: u64,
    total_ns: u64,
    meter: (u64, u64, u64),
}

/// Runs bursts on `q` for `target`: write one byte on every pair, collect until each was
/// reported, reading each as it comes. `calls_only`: time only the `get_next_event` calls
/// (a clock read around each); otherwise the whole burst.
fn bursts(
    q: &mut Queue,
    pairs: &[(OwnedFd, OwnedFd)],
    target: Duration,
    calls_only: bool,
) -> io::Result<Measured> {
    let watched: Vec<RawFd> = pairs.iter().map(|p| p.0.as_raw_fd()).collect();
    let top = watched.iter().copied().max().unwrap_or(0) as usize;
    // The burst in which each watched descriptor was last reported (u64::MAX: never).
    let mut seen = vec![u64::MAX; top + 1];
    let mut evs = vec![Event::default(); pairs.len().max(1)];
    let (mut events, mut timed) = (0u64, 0u64);
    let m = Meter::start();
    let mut burst = 0u64;
    while burst == 0 || m.elapsed() < target {
        let t0 = Instant::now();
        pairs.iter().try_for_each(|p| sys::write1(p.1.as_raw_fd()))?;
        let mut left = pairs.len();
        while left > 0 {
            let c0 = Instant::now();
            let n = q.get_next_event(&mut evs, Some(LOST_AFTER))?;
            if calls_only {
                timed += c0.elapsed().as_nanos() as u64;
            }
            if n == 0 {
                return Err(io::Error::other(format!(
                    "{left} of {} descriptors written in burst {burst} were not reported within {LOST_AFTER:?} \
                     ({:?})",
                    pairs.len(),
                    q.stats()
                )));
            }
            events += n as u64;
            for ev in &evs[..n] {
                sys::drain(ev.fd());
                if let Some(s) = seen.get_mut(ev.fd() as usize) {
                    if *s != burst {
                        *s = burst;
                        left -= 1;
                    }
                }
            }
        }
        if !calls_only {
            timed += t0.elapsed().as_nanos() as u64;
        }
        burst += 1;
    }
    Ok(Measured { ops: burst, events, total_ns: timed, meter: m.stop() })
}

/// A queue for `t` with `idle` then `pairs` registered (idle first: a scan passes them all).
fn registered(t: Target, idle: &[OwnedFd], pairs: &[(OwnedFd, OwnedFd)]) -> io::Result<Queue> {
    let mut q = t.queue()?;
    for fd in idle.iter().map(AsFd::as_fd).chain(pairs.iter().map(|p| p.0.as_fd())) {
        q.declare_interest(fd, Interest::READ)?;
    }
    Ok(q)
}

fn rotated(mut t: Vec<Target>, rep: u32) -> Vec<Target> {
    if !t.is_empty() {
        let k = rep as usize % t.len();
        t.rotate_left(k);
    }
    t
}

/// The child: runs every point under `child.limit` and prints the rows on standard output.
///
/// # Errors
/// Setting the limit, creating descriptors, a failing call, or an event not delivered.
pub fn child(plan: &Plan, child: Child) -> io::Result<()> {
    hintq_sys::raise_nofile()?;
    let (default_soft, hard) = sys::sigpending_limit()?;
    let max_pairs = plan.bursts.iter().copied().chain([SCAN_BURST]).max().unwrap_or(1);
    let fds = Fds {
        pairs: (0..max_pairs).map(|_| hintq_sys::socketpair()).collect::<io::Result<_>>()?,
        idle: (0..SCAN_N[SCAN_N.len() - 1].max(IDLE))
            .map(|_| hintq_sys::eventfd())
            .collect::<io::Result<_>>()?,
    };
    let mut out = io::stdout().lock();
    writeln!(out, "# RLIMIT_SIGPENDING inherited: soft {default_soft}, hard {hard}")?;
    let mut emit = |r: Rec| rows(&[r]).iter().try_for_each(|l| writeln!(out, "{}", row::line(l)));
    let lowered = child.limit == Limit::Lowered;
    let row = |exp: &str, t: Target, q: &Queue, m: Measured, n: usize, k: usize| {
        let s = q.stats();
        Rec {
            experiment: exp.into(),
            target: t.name().into(),
            sigpending: child.limit.name().into(),
            rep: child.rep,
            registered: n,
            active: k,
            ops: m.ops,
            events: m.events,
            total_ns: m.total_ns,
            wall_ns: m.meter.0,
            cpu_ns: m.meter.1,
            preempted: m.meter.2,
            recoveries: s.recoveries,
            migrations: s.migrations,
        }
    };

    for &k in &plan.bursts {
        let limit = if lowered { (k as u64 / 4).max(1) } else { default_soft };
        sys::set_sigpending(limit)?;
        let pairs = &fds.pairs[..k];
        for t in rotated(plan.targets(child.limit, true), child.rep) {
            let mut q = registered(t, &fds.idle[..IDLE], pairs)?;
            let m = bursts(&mut q, pairs, plan.target, false)?;
            emit(row("overflow", t, &q, m, IDLE + k, k))?;
        }
    }
    let limit = if lowered { SCAN_LIMIT } else { default_soft };
    sys::set_sigpending(limit)?;
    let pairs = &fds.pairs[..SCAN_BURST];
    for &n in &SCAN_N {
        for t in rotated(plan.targets(child.limit, false), child.rep) {
            let mut q = registered(t, &fds.idle[..n], pairs)?;
            let m = bursts(&mut q, pairs, plan.target, true)?;
            emit(row("scan", t, &q, m, n + SCAN_BURST, SCAN_BURST))?;
        }
    }
    sys::set_sigpending(default_soft)
}

/// The parent: runs a child per limit and repetition (in rotating order), returns the rows
/// and the children's comment lines (deduplicated).
///
/// # Errors
/// A child that cannot be started, fails, or prints a line that is not a row.
pub fn parent(plan: &Plan) -> io::Result<(Vec<Row>, Vec<String>)> {
    let exe = std::env::current_exe()?;
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let (mut rows, mut notes) = (Vec::new(), Vec::<String>::new());
    for rep in 0..plan.reps {
        let mut limits = [Limit::Default, Limit::Lowered];
        limits.rotate_left(rep as usize % 2);
        for limit in limits {
            let spec = Child { limit, rep }.encode();
            eprintln!("rtsig rep {}/{}: child with RLIMIT_SIGPENDING {}", rep + 1, plan.reps, limit.name());
            let out = std::process::Command::new(&exe)
                .args(&args)
                .env(CHILD_ENV, &spec)
                .stderr(std::process::Stdio::inherit())
                .output()?;
            if !out.status.success() {
                return Err(io::Error::other(format!("child {spec:?} failed: {}", out.status)));
            }
            let text = String::from_utf8_lossy(&out.stdout);
            for note in text.lines().filter_map(|l| l.strip_prefix("# ")) {
                if !notes.iter().any(|n| n == note) {
                    notes.push(note.to_string());
                }
            }
            rows.extend(row::read_csv(&text).map_err(io::Error::other)?);
        }
    }
    Ok((rows, notes))
}

/// The lab's E8 rows of `recs`: µs per burst and recoveries per burst (overflow, against
/// the burst size), ns in `get_next_event` per burst of [`SCAN_BURST`] and per event delivered
/// (scan, against registered); the series is the target, with the signal-queue limit where
/// it matters (`rtsig (lowered limit)`).
pub fn rows(recs: &[Rec]) -> Vec<Row> {
    let mut out = Vec::new();
    for r in recs {
        let series = match r.sigpending.as_str() {
            "" => r.target.clone(),
            s => format!("{} ({s} limit)", r.target),
        };
        let per_op = |n: u64| n as f64 / r.ops.max(1) as f64;
        let (x, metrics) = match r.experiment.as_str() {
            "overflow" => (
                r.active,
                [
                    ("overflow_us_per_burst", r.ns_per_op() / 1000.0),
                    ("overflow_recoveries_per_burst", per_op(r.recoveries)),
                ],
            ),
            "scan" => (
                r.registered,
                [
                    ("scan_ns_per_call", r.ns_per_op()),
                    ("scan_ns_per_event", r.total_ns as f64 / r.events.max(1) as f64),
                ],
            ),
            _ => continue,
        };
        out.extend(metrics.map(|(m, v)| r.row("E8", &series, x, m, v)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_spec_round_trips_and_rejects_junk() {
        let c = Child { limit: Limit::Lowered, rep: 3 };
        assert_eq!(c.encode(), "lowered rep=3");
        assert_eq!(Child::parse(&c.encode()), Ok(c));
        assert_eq!(Child::parse("default rep=0"), Ok(Child { limit: Limit::Default, rep: 0 }));
        for bad in ["", "low rep=1", "default", "default rep=x", "default rep=1 more"] {
            assert!(Child::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn runs_become_rows_with_the_limit_in_the_series_and_recoveries_per_burst() {
        let run = |exp: &str, target: &str, sig: &str, n: usize, k: usize, ops: u64, ns: u64| Rec {
            experiment: exp.into(),
            target: target.into(),
            sigpending: sig.into(),
            registered: n,
            active: k,
            ops,
            events: ops * k as u64,
            total_ns: ns,
            wall_ns: ns,
            cpu_ns: ns,
            ..Rec::default()
        };
        let mut low = run("overflow", "rtsig", "lowered", 1256, 256, 10, 1_000_000);
        low.recoveries = 10;
        let recs = [
            low,
            run("overflow", "poll", "", 1256, 256, 10, 500_000),
            run("scan", "rtsig", "default", 5000, 32, 4, 8000),
        ];
        let got: Vec<(String, String, f64, f64)> =
            rows(&recs).into_iter().map(|r| (r.series, r.metric, r.x, r.value.unwrap())).collect();
        let want = [
            ("rtsig (lowered limit)", "overflow_us_per_burst", 256.0, 100.0),
            ("rtsig (lowered limit)", "overflow_recoveries_per_burst", 256.0, 1.0),
            ("poll", "overflow_us_per_burst", 256.0, 50.0),
            ("poll", "overflow_recoveries_per_burst", 256.0, 0.0),
            ("rtsig (default limit)", "scan_ns_per_call", 5000.0, 2000.0),
            ("rtsig (default limit)", "scan_ns_per_event", 5000.0, 62.5),
        ];
        assert_eq!(got, want.map(|(s, m, x, v)| (s.to_string(), m.to_string(), x, v)));
    }
}
