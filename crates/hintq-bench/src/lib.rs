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
//!   `write+read` row (no wait at all) is the floor under every cycle; beside `uring`, a raw
//!   io_uring multishot-poll loop (`raw-uring`, [`sys::RawUring`]) is the floor of its own
//!   mechanism.
//! * **fig7** — with N idle descriptors registered, declaring interest in 256 more and
//!   revoking it, each phase timed apart; the raw loop does `EPOLL_CTL_ADD` / `DEL`.
//!
//! Every command the lab runs writes the lab's own rows ([`row`]: `experiment,series,x,rep,
//! metric,value,status,note`, one measured value of one repetition each, `experiment` the lab's
//! E3 and E4 here), under a header of the command, kernel, CPU, pinning, commit and date; the
//! summary printed is made from those rows only. Verdicts on them are the lab's alone (`hintq
//! lab --reanalyse`, or the lines `hintq bench micro` prints from the lab's E3): speed is shown
//! by benchmarks, not by timed tests.
//!
//! Two more commands measure the historical backends the same way (rows, header,
//! repetitions with median and spread, one pinned core), measured as [`rec::Rec`]s:
//! `hintq bench rtsig` ([`overflow`]: readiness cycles with the RT signal queue below and
//! above `RLIMIT_SIGPENDING`, the cost of one recovery scan, poll/epoll/uring beside) and
//! `hintq bench gooch` ([`gooch`]: Gooch's per-descriptor `poll(2)` cost, the saving of the
//! active/inactive split with 1% active, and the wake-up latency of a quiet descriptor).
//! `hintq bench patterns` ([`patterns`]) is Strebelow & Prehofer's benchmark of the thread
//! patterns of `hintq-patterns`: it lives here, not in that runtime library, so that no
//! library depends on a benchmark crate.
//!
//! `hintq bench floor` ([`floor`]) is no benchmark but a measuring instrument: the least a
//! static server can do per request (receive it, send a response prepared once) on epoll or
//! io_uring, to set `hintq serve`'s CPU per request against; with `--relay UPSTREAM`
//! ([`relay`]), the least a proxy can do (relay each connection's bytes to an upstream
//! connection of its own and back), to set `hintq proxy`'s and nginx's against.
//!
//! `hintq bench wake-one` ([`wake`]) counts the threads woken per readiness of a descriptor
//! shared by 1, 2, 4 and 8 blocked threads: a `Group` with `Delivery::One` on each backend,
//! beside plain shared epoll and `EPOLLEXCLUSIVE` in the same run.

#![warn(missing_docs)]

pub mod floor;
pub mod gooch;
pub mod meter;
pub mod micro;
pub mod overflow;
pub mod patterns;
pub mod rec;
pub mod relay;
pub mod row;
pub mod sys;
pub mod wake;

use hintq::Backend;
use micro::{Fds, Output, Plan};
use row::Row;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What `hintq bench micro` was asked for.
#[derive(Clone, Debug)]
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
    /// io_uring rings (the `uring` backend's and the raw loop's) that defer their work to
    /// the one thread that waits (`SINGLE_ISSUER | DEFER_TASKRUN`) where the kernel has it:
    /// `hintq bench micro --uring-defer on|off` (default on).
    pub uring_defer: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            quick: false,
            reps: None,
            backends: None,
            cpu: None,
            out: None,
            command: String::new(),
            uring_defer: true,
        }
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The CSV written.
    pub csv: PathBuf,
    /// The rows, as written.
    pub rows: Vec<Row>,
}

/// Runs fig6a, fig6b and fig7, writes the rows and prints their summary.
///
/// # Errors
/// Setting up (pinning, descriptors) and any failing system call of a measured loop.
pub fn run_micro(cfg: &Config) -> io::Result<Outcome> {
    let mut set = setup(cfg)?;
    let (meta, clock) = (&mut set.meta, set.clock);

    let mut out = Output::default();
    let wanted = cfg.backends.clone().unwrap_or_else(|| Backend::ALL.to_vec());
    let mut backends = Vec::new();
    for b in wanted {
        match b.probe() {
            Ok(()) => backends.push(b),
            Err(reason) => {
                println!("skipped {b}: {reason}");
                meta.push(("skipped".into(), format!("{b}: {reason}")));
            }
        }
    }
    let reps = cfg.reps.unwrap_or(if cfg.quick { 3 } else { 5 }).max(1);
    let plan = Plan {
        reps,
        target: Duration::from_millis(if cfg.quick { 25 } else { 200 }),
        idle: if cfg.quick { micro::IDLE_QUICK.to_vec() } else { micro::IDLE.to_vec() },
        backends,
        uring_defer: cfg.uring_defer,
    };
    let names: Vec<&str> = plan.backends.iter().map(|b| b.name()).collect();
    println!(
        "measuring {} and {} ({reps} repetitions{})",
        micro::RAW,
        names.join(", "),
        if cfg.quick { ", quick" } else { "" }
    );
    meta.extend([
        ("backends".into(), names.join(" ")),
        ("quick".into(), cfg.quick.to_string()),
        ("repetitions".into(), reps.to_string()),
        ("time per measurement".into(), format!("{} ms after calibration", plan.target.as_millis())),
        ("fig6a method".into(), "clock read just before and after each get_next_event / epoll_wait call; writes and reads untimed; ops = calls".into()),
        ("fig6b method".into(), format!("clock read around a batch of whole cycles (write 1 byte, wait with a {}-event array, read); ops = cycles; raw-uring (with uring) = a multishot POLL_ADD per descriptor on a ring set up as the uring backend's (CQ 4096, SINGLE_ISSUER + DEFER_TASKRUN + TASKRUN_FLAG, or COOP_TASKRUN + TASKRUN_FLAG where DEFER_TASKRUN is refused or --uring-defer off), CQEs reaped from the ring, io_uring_enter only when none is there or the kernel flags work", micro::CYCLE_ARRAY)),
        ("fig7 method".into(), format!("clock read around a batch of {} declare_interest(READ) calls, then around their {} revokes; raw-epoll = epoll_ctl ADD / DEL; ops = calls", micro::BATCH, micro::BATCH)),
        ("descriptors".into(), "active: AF_UNIX stream socketpairs (non-blocking); idle: eventfds never written, registered for READ".into()),
        ("rows".into(), "E3 fig6a_ns_per_call and fig6a_ns_per_event (x = array_max), fig6b_ns_per_cycle (x = idle); E4 fig7_ns_per_declare (declare_interest, state returned), fig7_ns_per_declare-nostate (declare, the paper's NULL statemask), fig7_ns_per_revoke (x = idle registered); series = backend, raw-epoll, raw-uring or write+read".into()),
    ]);

    let max_idle = plan.idle.iter().chain(&micro::REGISTERED).copied().max().unwrap_or(0);
    micro::fig6a(&plan, &mut out)?;
    let fds = Fds::new(max_idle)?;
    micro::fig6b(&plan, &fds, &mut out)?;
    micro::fig7(&plan, &fds, &mut out)?;
    drop(fds);
    let csv = set.end(cfg, "micro", &out.rows, &format!("\nclock read pair {clock:.1} ns\n"))?;
    Ok(Outcome { csv, rows: out.rows })
}

/// What every run starts with: the header lines (command, date, commit, kernel, CPU, load,
/// descriptor limit, pinning, and the machine check), the process pinned to one core.
struct Setup {
    meta: Vec<(String, String)>,
    started: SystemTime,
    /// Null system call, ns.
    null: f64,
    /// Back-to-back clock reads, ns.
    clock: f64,
}

fn setup(cfg: &Config) -> io::Result<Setup> {
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
    let (soft, hard) = hintq_sys::raise_nofile()?;
    meta.push(("RLIMIT_NOFILE".into(), format!("soft {soft}, hard {hard} (soft raised to hard)")));
    let allowed = hintq_sys::affinity()?;
    let cpu = cfg.cpu.or(allowed.last().copied()).unwrap_or(0);
    hintq_sys::pin(cpu)?;
    let pinning = format!(
        "pinned to CPU {cpu} (sched_getaffinity now {:?}; before {:?})",
        hintq_sys::affinity()?,
        allowed
    );
    println!("{pinning}");
    meta.push(("pinning".into(), pinning));
    let clock = micro::clock_pair_ns();
    let null = micro::null_syscall_ns();
    println!(
        "machine check: null system call {null:.0} ns (PERF.md floor: 75-88 ns), clock read {clock:.1} ns; \
         load average {}",
        meta_get(&meta, "loadavg before")
    );
    meta.extend([
        (
            "null system call".into(),
            format!("{null:.0} ns (getppid, median of 9 x 100,000; PERF.md floor 75-88 ns)"),
        ),
        (
            "clock read pair".into(),
            format!("{clock:.1} ns (Instant::now; included in every call timed alone)"),
        ),
    ]);
    Ok(Setup { meta, started, null, clock })
}

impl Setup {
    /// The end of every run: the closing header lines, the rows written to `--out` (or
    /// `hintq-<what>-<date>.csv`) under the header, their summary printed, then `after`, the
    /// noise and the machine check again. Returns the CSV's path.
    fn end(mut self, cfg: &Config, what: &str, rows: &[Row], after: &str) -> io::Result<PathBuf> {
        self.meta.push(("loadavg after".into(), loadavg()));
        let secs = self.started.elapsed().map_or(0.0, |d| d.as_secs_f64());
        self.meta.push(("duration".into(), format!("{secs:.1} s")));
        let date = utc(self.started).replace([':', '-'], "");
        let csv = cfg.out.clone().unwrap_or_else(|| PathBuf::from(format!("hintq-{what}-{date}.csv")));
        row::write_file(&csv, &self.meta, rows)?;
        print!("{}{after}", row::summary(rows));
        closing(rows, self.null, &self.meta, &csv, secs);
        Ok(csv)
    }
}

/// Runs `hintq bench rtsig`: writes the lab's E8 rows, prints their summary, returns them. In
/// a child (with [`overflow::CHILD_ENV`] set) runs its share and prints its rows instead.
///
/// # Errors
/// Setting up, a child failing, a failing call, or an event not delivered.
pub fn run_rtsig(cfg: &Config) -> io::Result<Vec<Row>> {
    let plan = overflow::Plan::new(cfg.quick, cfg.reps);
    if let Ok(spec) = std::env::var(overflow::CHILD_ENV) {
        let child = overflow::Child::parse(&spec).map_err(io::Error::other)?;
        overflow::child(&plan, child)?;
        return Ok(Vec::new());
    }
    let mut set = setup(cfg)?;
    let others: Vec<&str> = plan.others.iter().map(|b| b.name()).collect();
    let mut notes: Vec<String> = [Backend::Uring]
        .into_iter()
        .filter_map(|b| b.probe().err().map(|why| format!("skipped {}: {why}", b.name())))
        .collect();
    set.meta.extend([
        ("quick".into(), cfg.quick.to_string()),
        ("repetitions".into(), plan.reps.to_string()),
        ("time per measurement".into(), format!("{} ms of bursts, fresh queue, no warm-up", plan.target.as_millis())),
        ("targets".into(), format!("rtsig (hybrid off), rtsig-hybrid (Hybrid::default(): {:?}); at the default limit also {}", hintq::Hybrid::default(), others.join(", "))),
        ("children".into(), format!("RLIMIT_SIGPENDING is process-wide: each repetition re-executes this command twice with {}=\"default|lowered rep=N\" (order alternating); the child inherits the pinning and prints raw rows", overflow::CHILD_ENV)),
        ("overflow method".into(), format!("K socketpairs (K in {:?}) among {} idle eventfds registered for READ; a cycle writes 1 byte on each of the K, calls get_next_event(array of K, timeout 2 s) until every one of the K was reported, reading each as reported; clock around the batch of cycles; lowered limit = K/4, so every burst overflows; ops = cycles, events = events delivered", plan.bursts, overflow::IDLE)),
        ("scan method".into(), format!("a burst of {} socketpairs with N idle eventfds registered (N in {:?}), clock read around each get_next_event call only (writes and reads untimed), rtsig hybrid off; lowered limit {}: each burst is one recovery (take SIGIO, flush the RT queue, one poll(2) over N+{}), checked by recoveries per burst; default limit: {} queued signals; recovery cost = lowered - default", overflow::SCAN_BURST, overflow::SCAN_N, overflow::SCAN_LIMIT, overflow::SCAN_BURST, overflow::SCAN_BURST)),
        ("descriptors".into(), "active: AF_UNIX stream socketpairs (non-blocking); idle: eventfds never written".into()),
    ]);
    let (rows, child_notes) = overflow::parent(&plan)?;
    notes.extend(child_notes);
    set.meta.extend(notes.iter().map(|n| ("note".to_string(), n.clone())));
    let notes: String = notes.iter().map(|n| format!("{n}\n")).collect();
    set.end(cfg, "rtsig", &rows, &notes)?;
    Ok(rows)
}

/// Runs `hintq bench gooch`: writes the lab's E7 rows, prints their summary, returns them.
///
/// # Errors
/// Setting up, a failing call, or an event not delivered.
pub fn run_gooch(cfg: &Config) -> io::Result<Vec<Row>> {
    let plan = gooch::Plan::new(cfg.quick, cfg.reps);
    let mut set = setup(cfg)?;
    set.meta.extend([
        ("quick".into(), cfg.quick.to_string()),
        ("repetitions".into(), plan.reps.to_string()),
        ("time per measurement".into(), format!("{} ms (perfd, split)", plan.target.as_millis())),
        ("gooch policy".into(), format!("gooch = promote_at 1, inactive set polled every {} ms (Gooch's \"occasionally\": once every ten 10 ms timeslices; the backend's default is {:?}); gooch-p2 = the same with promote_at 2", gooch::INTERVAL.as_millis(), hintq::GoochPolicy::default())),
        ("perfd method".into(), format!("poll(2) with timeout 0 over N idle descriptors (N in {:?}), eventfds or unbound UDP sockets asked for POLLIN, clock around a batch of calls; eventfd-wait: N-1 idle eventfds then 1 ready socket, timeout -1 (wait entries queued on every idle fd); Gooch 1998: about {} ns per fd (Pentium 100, Linux 2.1.x)", gooch::NS, gooch::GOOCH_NS_PER_FD)),
        ("split method".into(), format!("N registered (N in {:?}): 1% (at least 1) AF_UNIX socketpairs, the rest idle eventfds; a cycle writes 1 byte on the next active one in rotation, get_next_event (array of 64) until it is reported, reading what is reported; {} ms untimed warm-up, then clock around the batch; migrations = Stats::migrations over the queue's life (warm-up included)", gooch::NS, gooch::WARMUP.as_millis())),
        ("wake method".into(), format!("{} registered, 1% cycling as in split, one more socketpair silent for {} ms (gooch only, so it is demoted) + 0..{} ms (xorshift phase) while they cycle, then written; latency = clock from just after that write to the end of the cycle whose events included it; {} samples per backend and repetition; cycles = busy cycles until delivered", gooch::WAKE_N, gooch::QUIET.as_millis(), gooch::INTERVAL.as_millis(), plan.samples)),
    ]);
    let rows = gooch::rows(&gooch::run(&plan)?);
    set.end(cfg, "gooch", &rows, "")?;
    Ok(rows)
}

/// Runs `hintq bench wake-one`: writes the lab's E10 rows, prints them as they come and their
/// summary, returns them. `cfg.cpu` is the members' CPU (default: the last
/// allowed one); the driver runs on another allowed CPU when there is one.
///
/// # Errors
/// Setting up, a failing call, or a readiness not delivered.
pub fn run_wake(cfg: &Config, rounds: Option<usize>) -> io::Result<Vec<Row>> {
    let allowed = hintq_sys::affinity()?;
    let member_cpu = cfg.cpu.or(allowed.last().copied()).unwrap_or(0);
    let driver_cpu = allowed.iter().copied().find(|&c| c != member_cpu).unwrap_or(member_cpu);
    let mut set = setup(&Config { cpu: Some(driver_cpu), ..cfg.clone() })?;
    let mut targets: Vec<wake::Target> = Vec::new();
    let mut notes = Vec::new();
    for b in cfg.backends.clone().unwrap_or_else(|| Backend::ALL.to_vec()) {
        match b.probe() {
            Ok(()) => targets.push(wake::Target::Group(b)),
            Err(why) => notes.push(format!("skipped group-{b}: {why}")),
        }
    }
    targets.extend([wake::Target::EpollShared, wake::Target::EpollExclusive]);
    let plan = wake::Plan {
        reps: cfg.reps.unwrap_or(if cfg.quick { 1 } else { 3 }).max(1),
        rounds: rounds.unwrap_or(if cfg.quick { 100 } else { 200 }).max(1),
        targets,
        member_cpu,
    };
    let names: Vec<String> = plan.targets.iter().map(|t| t.name()).collect();
    set.meta.extend([
        ("quick".into(), cfg.quick.to_string()),
        ("repetitions".into(), plan.reps.to_string()),
        ("readinesses per point".into(), plan.rounds.to_string()),
        ("targets".into(), names.join(" ")),
        ("member threads".into(), format!("{:?}, all pinned to CPU {member_cpu}; the driver (writer) pinned to CPU {driver_cpu}", wake::MEMBERS)),
        ("method".into(), "a round: every member thread inside its wait and asleep (state S in /proc/self/task/<tid>/stat), the driver writes 1 byte on an AF_UNIX stream pair, and waits until a member has read it (the member reads until EAGAIN); wakeups = voluntary context switches (getrusage RUSAGE_THREAD) of the member threads, returns = returns from the wait (Stats::waits for a group member, epoll_wait returns for the raw ones), each minus one per thread for the stop that ends its last wait; empty = wake-ups that found nothing to read".into()),
        ("epoll-shared".into(), "N threads in epoll_wait on one epoll set holding the descriptor, EPOLLIN, level-triggered".into()),
        ("epoll-exclusive".into(), "N threads, each in epoll_wait on its own epoll set holding the descriptor with EPOLLIN | EPOLLEXCLUSIVE".into()),
        ("group".into(), "hintq::Group on the backend, the descriptor declared with Delivery::One; each member thread get_next_event(array of 8, no timeout) on its own member queue".into()),
    ]);
    notes.iter().for_each(|n| println!("{n}"));
    println!("{}", row::COLUMNS);
    let rows = wake::run(&plan)?;
    set.meta.extend(notes.iter().map(|n| ("note".to_string(), n.clone())));
    set.end(cfg, "wake-one", &rows, "")?;
    Ok(rows)
}

/// Creates the file for the raw rows; its error names it.
pub(crate) fn create_csv(csv: &Path) -> io::Result<BufWriter<File>> {
    let f = File::create(csv).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", csv.display())))?;
    Ok(BufWriter::new(f))
}

/// The closing lines: noise, the machine check again, where the rows went.
fn closing(rows: &[Row], null: f64, meta: &[(String, String)], csv: &Path, secs: f64) {
    let noisy = rows.iter().filter(|r| !r.note.is_empty()).count();
    println!(
        "\n{noisy} of {} values were measured with their thread on a CPU less than {:.0}% of the run{}",
        rows.len(),
        row::QUIET * 100.0,
        if noisy > 0 {
            " (noted in their rows): the machine was busy, treat them as upper bounds"
        } else {
            ""
        }
    );
    println!(
        "null system call {null:.0} ns (PERF.md floor 75-88 ns); load average before {} / after {}; the machine \
         is shared: compare ratios within this run, not absolute figures across runs",
        meta_get(meta, "loadavg before"),
        meta_get(meta, "loadavg after")
    );
    println!("{} rows written to {} in {secs:.1} s", rows.len(), csv.display());
}

fn meta_get<'a>(meta: &'a [(String, String)], key: &str) -> &'a str {
    meta.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v)
}

/// The load averages of `/proc/loadavg` (1, 5 and 15 minutes).
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or("unknown".into(), |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

/// The CPU model from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':').map(|(_, v)| v.trim().to_string()));
    model.unwrap_or_else(|| "unknown".into())
}

/// `git rev-parse HEAD` of the source tree this was built from, marked when the tree has
/// uncommitted changes to tracked files.
/// The commit the sources were built from (and whether tracked files differ from it).
pub fn commit() -> String {
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
pub fn utc(t: SystemTime) -> String {
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
