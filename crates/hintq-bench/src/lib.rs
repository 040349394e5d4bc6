//! # hintq-bench: micro-benchmarks of the hintq core
//!
//! Reproduces Figs. 6 and 7 of Banga, Mogul & Druschel (USENIX 1999) on this machine, for
//! every backend whose probe succeeds and, in the same run, for a raw `epoll_wait` /
//! `epoll_ctl` loop written directly against libc: the floor each backend is held to.
//!
//! * **fig6a** — `get_next_event(array_max)` collecting `array_max` readable socketpairs,
//!   `array_max` in 1..64: ns per call and per event. Only the call is timed (a clock read
//!   just before and after it; the cost of that pair is measured and recorded).
//! * **fig6b** — the readiness cycle (write 1 byte → `get_next_event` → read) with 1 active
//!   socketpair among N idle eventfds: ns per cycle, timed over a batch of whole cycles. A
//!   `write+read` row (no wait at all) is the floor under every cycle.
//! * **fig7** — with N idle descriptors registered, declaring interest in 256 more and
//!   revoking it, each phase timed apart; the raw loop does `EPOLL_CTL_ADD` / `DEL`.
//!
//! Every repetition of every point is a raw row of the CSV, beside the command, kernel, CPU,
//! pinning, commit and date; the summary and the goal verdicts are made from those rows only
//! (see [`report`]). Goals are evaluated and printed, never asserted: speed is shown by
//! benchmarks, not by timed tests.

#![warn(missing_docs)]

pub mod micro;
pub mod report;
pub mod sys;

use hintq::Backend;
use micro::{Fds, Output, Plan};
use report::Skip;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What `hintq bench micro` was asked for.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Fewer points and repetitions and shorter measurements: under a minute.
    pub quick: bool,
    /// Repetitions of every point (default 3 quick, 5 full).
    pub reps: Option<u32>,
    /// The backends to measure (default: all); the raw epoll loop always runs.
    pub backends: Option<Vec<Backend>>,
    /// The CPU to pin to (default: the last one this process may use).
    pub cpu: Option<usize>,
    /// Where the raw rows go (default: `hintq-micro-<date>.csv` in the current directory).
    pub out: Option<PathBuf>,
    /// The command line, as recorded in the CSV.
    pub command: String,
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The CSV written.
    pub csv: PathBuf,
    /// The raw rows.
    pub rows: Vec<report::Row>,
    /// The goals of the issue, evaluated.
    pub goals: Vec<report::Goal>,
}

/// Runs fig6a, fig6b and fig7, writes the CSV and prints the summary and the goals.
///
/// # Errors
/// Setting up (pinning, descriptors) and any failing system call of a measured loop.
pub fn run_micro(cfg: &Config) -> io::Result<Outcome> {
    let started = SystemTime::now();
    let mut meta: Vec<(String, String)> = vec![
        ("command".into(), cfg.command.clone()),
        ("date".into(), utc(started)),
        ("hintq".into(), env!("CARGO_PKG_VERSION").into()),
        ("commit".into(), commit()),
        ("kernel".into(), sys::kernel_release()),
        ("cpu".into(), cpu_model()),
        ("cpus online".into(), std::thread::available_parallelism().map_or(0, |n| n.get()).to_string()),
        ("loadavg before".into(), loadavg()),
    ];

    let (soft, hard) = sys::raise_nofile()?;
    meta.push(("RLIMIT_NOFILE".into(), format!("soft {soft}, hard {hard} (soft raised to hard)")));
    let allowed = sys::affinity()?;
    let cpu = cfg.cpu.or(allowed.last().copied()).unwrap_or(0);
    sys::pin(cpu)?;
    let pinning =
        format!("pinned to CPU {cpu} (sched_getaffinity now {:?}; before {:?})", sys::affinity()?, allowed);
    println!("{pinning}");
    meta.push(("pinning".into(), pinning));

    let mut out = Output::default();
    let wanted = cfg.backends.clone().unwrap_or_else(|| Backend::ALL.to_vec());
    let mut backends = Vec::new();
    for b in wanted {
        match b.probe() {
            Ok(()) => backends.push(b),
            Err(reason) => {
                let s = Skip { experiment: None, backend: b.name().into(), points: String::new(), reason };
                println!("{s}");
                out.skips.push(s);
            }
        }
    }
    let reps = cfg.reps.unwrap_or(if cfg.quick { 3 } else { 5 }).max(1);
    let plan = Plan {
        reps,
        target: Duration::from_millis(if cfg.quick { 25 } else { 200 }),
        idle: if cfg.quick { micro::IDLE_QUICK.to_vec() } else { micro::IDLE.to_vec() },
        backends,
    };
    let names: Vec<&str> = plan.backends.iter().map(|b| b.name()).collect();
    println!(
        "measuring {} and {} ({reps} repetitions{})",
        report::RAW,
        names.join(", "),
        if cfg.quick { ", quick" } else { "" }
    );
    let clock = micro::clock_pair_ns();
    let null = micro::null_syscall_ns();
    println!(
        "machine check: null system call {null:.0} ns (PERF.md floor: 75-88 ns), clock read {clock:.1} ns"
    );
    meta.extend([
        ("backends".into(), names.join(" ")),
        ("quick".into(), cfg.quick.to_string()),
        ("repetitions".into(), reps.to_string()),
        ("time per measurement".into(), format!("{} ms after calibration", plan.target.as_millis())),
        ("null system call".into(), format!("{null:.0} ns (getppid, median of 9 x 100,000; PERF.md floor 75-88 ns)")),
        ("clock read pair".into(), format!("{clock:.1} ns (Instant::now, included in every fig6a call time)")),
        ("fig6a method".into(), "clock read just before and after each get_next_event / epoll_wait call; writes and reads untimed; ops = calls".into()),
        ("fig6b method".into(), format!("clock read around a batch of whole cycles (write 1 byte, wait with a {}-event array, read); ops = cycles", micro::CYCLE_ARRAY)),
        ("fig7 method".into(), format!("clock read around a batch of {} declare_interest(READ) calls, then around their {} revokes; raw-epoll = epoll_ctl ADD / DEL; ops = calls", micro::BATCH, micro::BATCH)),
        ("descriptors".into(), "active: AF_UNIX stream socketpairs (non-blocking); idle: eventfds never written, registered for READ".into()),
    ]);

    let max_idle = plan.idle.iter().chain(&micro::REGISTERED).copied().max().unwrap_or(0);
    micro::fig6a(&plan, &mut out)?;
    let fds = Fds::new(max_idle)?;
    micro::fig6b(&plan, &fds, &mut out)?;
    micro::fig7(&plan, &fds, &mut out)?;
    drop(fds);
    meta.push(("loadavg after".into(), loadavg()));
    let secs = started.elapsed().map_or(0.0, |d| d.as_secs_f64());
    meta.push(("duration".into(), format!("{secs:.1} s")));

    let csv = cfg.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("hintq-micro-{}.csv", utc(started).replace([':', '-'], "")))
    });
    let mut w = BufWriter::new(File::create(&csv)?);
    report::write_csv(&mut w, &meta, &out.skips, &out.rows)?;
    io::Write::flush(&mut w)?;

    print!("{}", report::summary(&out.rows));
    if out.skips.iter().any(|s| s.experiment.is_some()) {
        println!();
        out.skips.iter().filter(|s| s.experiment.is_some()).for_each(|s| println!("{s}"));
    }
    let goals = report::goals(&out.rows, &out.skips);
    println!("\ngoals (evaluated on medians, not asserted):");
    goals.iter().for_each(|g| println!("{g}"));
    println!(
        "\nclock read pair {clock:.1} ns; load average before {} / after {}",
        meta_get(&meta, "loadavg before"),
        meta_get(&meta, "loadavg after")
    );
    println!("{} rows written to {} in {secs:.1} s", out.rows.len(), csv.display());
    Ok(Outcome { csv, rows: out.rows, goals })
}

fn meta_get<'a>(meta: &'a [(String, String)], key: &str) -> &'a str {
    meta.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or("unknown".into(), |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|(_, v)| v.trim().to_string()));
    model.unwrap_or_else(|| "unknown".into())
}

/// `git rev-parse HEAD` of the source tree this was built from, marked when the tree has
/// uncommitted changes to tracked files.
fn commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match git(&["rev-parse", "HEAD"]) {
        None => "unknown (no git)".into(),
        Some(head) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(s) if !s.is_empty() => format!("{head} (tracked files modified)"),
            _ => head,
        },
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ`.
fn utc(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_formats_known_instants() {
        use std::time::{Duration, UNIX_EPOCH};
        assert_eq!(super::utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc(UNIX_EPOCH + Duration::from_secs(951_782_400 + 3661)), "2000-02-29T01:01:01Z");
    }
}
