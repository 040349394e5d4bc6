//! # hintq-load: hot and cold HTTP/1.1 load, as the papers used it, with honest latency
//!
//! The servers of Banga, Mogul & Druschel were driven by S-Clients (a few *hot* connections,
//! each with one request in flight, sending the next as soon as the answer arrives) and by a
//! *load-adding client* holding thousands of idle *cold* connections; Provos & Lever used
//! httperf at fixed request rates. This crate does all three, on the hintq event API itself
//! (non-blocking sockets, one [`hintq::Queue`] per worker thread), and parses responses with
//! `hintq-http`.
//!
//! ## Modes
//!
//! - **Closed loop** (default): `connections` persistent connections, one request in flight
//!   each; latency is measured from the send time, which hides server stalls (coordinated
//!   omission: while the server stalls, no requests are sent, so none is seen to wait).
//! - **Open loop** (`rate`): requests are due on a fixed schedule, `k / rate` seconds after
//!   the start, whatever the server does. A due request waits in a backlog until a
//!   connection is free, and its latency is measured from its *intended* send time (wrk2's
//!   correction). A request not answered within `timeout` of that time is a timeout error;
//!   requests still pending when the run ends are reported as `unfinished`.
//! - **Cold** (`cold`): connections that connect and send nothing (`idle`) or a request
//!   head without its end (`partial`), held all run and re-opened at once when the server
//!   closes them; with `heavy-tail` lifetimes each is closed and replaced after a lifetime
//!   drawn from a lognormal with Banga Fig. 1's median (0.20 s) and mean (2.07 s), see
//!   [`lifetime`]. Cold figures are reported apart from the hot ones and their errors.
//!   Cold connections are opened first (waiting at most `timeout`), then the hot phase
//!   starts and its clock runs.
//!
//! ## What is counted as what
//!
//! Every started request ends exactly once: a success (a complete response with a status
//! below 400), a request error, or `unfinished` when the run ends. Errors are never counted
//! as successes; each kind has its own count ([`stats::Errors`]): connect failures, connect
//! timeouts, `EADDRNOTAVAIL`, resets, close before any response byte, truncated responses,
//! parse errors (bad status line, bad framing), status >= 400, timeouts, and unsolicited
//! bytes (data with no request in flight: an extra response).
//!
//! Reconnect policy: a connection the server closes (idle, or after a response that ends
//! the connection) or that failed a request is re-opened at once; a connect that failed is
//! retried after [`worker::RETRY_AFTER`]. Idle closes are not errors.
//!
//! ## Scale
//!
//! The soft `RLIMIT_NOFILE` is raised to the hard one. When the connections do not fit in
//! one process, the run is spread over worker processes (started through a [`Spawner`], as
//! the `hintq` binary does); connections to one destination beyond the ephemeral port range
//! are spread over 127.0.0.x source addresses bound with `IP_BIND_ADDRESS_NO_PORT`, planned
//! for the live connections and for the ports left in TIME_WAIT by those the generator closes
//! ([`plan::TIME_WAIT`]). A run that cannot fit fails before connecting, saying which limit is
//! in the way ([`plan`]). Cold connections run on one thread per process of their own, apart
//! from the hot ones ([`worker`]), and are counted second by second
//! ([`Report::cold_per_second`]).
//!
//! ## Self-check
//!
//! Each run reports how late the generator itself was (send lag, receive lag, their sum per
//! request, and how busy its threads were) beside the latency, and marks the run when that
//! delay could explain the tail ([`report::SelfCheck`]).
//!
//! ## Bounds
//!
//! Loopback targets only (127.0.0.0/8, ::1, `localhost`), a wall-clock `duration` (default
//! 10 s, at most 24 h) and optionally a number of `requests`.

#![warn(missing_docs)]

pub mod config;
pub mod lifetime;
pub mod plan;
pub mod report;
pub mod stats;
mod sys;
pub mod worker;

pub use config::{parse_duration, parse_error_rate, ColdLifetime, ColdMode, Config, Target};
pub use plan::Plan;
pub use report::Report;

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use worker::{Progress, Role, Worker, WorkerResult};

/// How to start a worker process: a program whose `args` make it call [`worker_main`].
#[derive(Clone, Debug)]
pub struct Spawner {
    /// The program (the `hintq` binary passes itself).
    pub exe: PathBuf,
    /// Arguments selecting the worker entry point.
    pub args: Vec<String>,
}

/// What a worker process is told on its standard input.
#[derive(Serialize, Deserialize)]
struct Shard {
    config: Config,
    plan: Plan,
    process: usize,
}

/// Runs the load described by `cfg` and returns its report.
///
/// # Errors
/// A message when the settings are wrong, when the run cannot fit in this machine's limits,
/// or when a worker failed.
pub fn run(cfg: &Config, spawner: Option<&Spawner>) -> Result<Report, String> {
    cfg.validate()?;
    match &cfg.backend {
        Some(name) => name.parse::<hintq::Backend>().map(drop).map_err(|e| format!("--backend: {e}"))?,
        None => hintq::Backend::from_env().map(drop).map_err(|e| format!("HINTQ_BACKEND: {e}"))?,
    }
    // The soft descriptor limit is raised to the hard one before any decision.
    let nofile = hintq_sys::raise_nofile().map_err(|e| format!("raising RLIMIT_NOFILE: {e}"))?;
    let ports = cfg.port_range.unwrap_or_else(sys::local_port_range);
    let plan = plan::plan(cfg, nofile, ports, sys::max_time_wait(), spawner.is_some())?;
    let cpu0 = sys::cpu_seconds();
    let wall = Instant::now();
    let mut children = Vec::new();
    for p in 1..plan.processes {
        let sp = spawner.expect("plan allows processes only with a spawner");
        children.push(spawn(sp, &Shard { config: cfg.clone(), plan: plan.clone(), process: p })?);
    }
    let local: Vec<Arc<Progress>> = (0..plan.threads + plan.cold_threads).map(|_| Arc::default()).collect();
    let mut all_progress = local.clone();
    all_progress.extend(children.iter().map(|c| Arc::clone(&c.progress)));
    let stop = AtomicBool::new(false);
    let mut results = std::thread::scope(|s| {
        if cfg.progress && std::io::stderr().is_terminal() {
            s.spawn(|| draw_progress(cfg, &all_progress, &stop));
        }
        let r = run_shard(cfg, &plan, 0, &local);
        stop.store(true, Ordering::Relaxed);
        r
    })?;
    for c in children {
        results.extend(c.join()?);
    }
    let cpu1 = sys::cpu_seconds();
    let cpu = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
    Ok(Report::new(cfg, &plan, &results, wall.elapsed().as_secs_f64(), cpu))
}

/// Runs process `p`'s threads: hot workers `p * threads ..` and cold worker `p`, if any.
fn run_shard(
    cfg: &Config,
    plan: &Plan,
    p: usize,
    progress: &[Arc<Progress>],
) -> Result<Vec<WorkerResult>, String> {
    let start = Barrier::new(plan.threads + plan.cold_threads);
    let hot_running = AtomicUsize::new(plan.threads);
    let roles = (0..plan.threads)
        .map(|t| (Role::Hot, p * plan.threads + t))
        .chain((0..plan.cold_threads).map(|t| (Role::Cold, p * plan.cold_threads + t)));
    std::thread::scope(|s| {
        let handles: Vec<_> = roles
            .zip(progress)
            .map(|(role, progress)| {
                let (start, hot_running) = (&start, &hot_running);
                s.spawn(move || {
                    let r = match Worker::new(cfg, plan, role, progress, hot_running) {
                        Ok(w) => w.run(start),
                        Err(e) => {
                            start.wait();
                            Err(e)
                        }
                    };
                    if role.0 == Role::Hot {
                        hot_running.fetch_sub(1, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| "a worker thread panicked".to_string())?
                    .map_err(|e| format!("worker: {e}"))
            })
            .collect()
    })
}

fn draw_progress(cfg: &Config, progress: &[Arc<Progress>], stop: &AtomicBool) {
    let total = cfg.duration.as_millis() as u64;
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {elapsed}/{len_s} {msg}")
            .expect("valid template")
            .with_key("len_s", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}s", total / 1000);
            }),
    );
    let start = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        let sum = |f: fn(&Progress) -> u64| progress.iter().map(|p| f(p)).sum::<u64>();
        let ok = sum(|p| p.successes.load(Ordering::Relaxed));
        let err = sum(|p| p.errors.load(Ordering::Relaxed));
        let cold = sum(|p| p.cold_held.load(Ordering::Relaxed));
        let secs = start.elapsed().as_secs_f64().max(1e-3);
        bar.set_position((start.elapsed().as_millis() as u64).min(total));
        bar.set_message(format!("{ok} ok ({:.0}/s), {err} errors, {cold} cold held", ok as f64 / secs));
    }
    bar.finish_and_clear();
}

struct ChildWorker {
    child: Child,
    progress: Arc<Progress>,
    reader: std::thread::JoinHandle<Result<Vec<WorkerResult>, String>>,
}

impl ChildWorker {
    fn join(mut self) -> Result<Vec<WorkerResult>, String> {
        let r = self.reader.join().map_err(|_| "worker reader panicked".to_string())?;
        let status = self.child.wait().map_err(|e| format!("waiting for a worker process: {e}"))?;
        match r {
            Ok(v) if status.success() => Ok(v),
            Ok(_) => Err(format!("a worker process failed: {status}")),
            Err(e) => Err(e),
        }
    }
}

fn spawn(sp: &Spawner, shard: &Shard) -> Result<ChildWorker, String> {
    let mut child = Command::new(&sp.exe)
        .args(&sp.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting worker process {}: {e}", sp.exe.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    serde_json::to_writer(&mut stdin, shard).map_err(|e| format!("to a worker process: {e}"))?;
    drop(stdin);
    let out = BufReader::new(child.stdout.take().expect("piped"));
    let progress = Arc::new(Progress::default());
    let p = Arc::clone(&progress);
    let reader = std::thread::spawn(move || {
        for line in out.lines() {
            let line = line.map_err(|e| format!("from a worker process: {e}"))?;
            match line.split_once(' ') {
                Some(("P", rest)) => {
                    let v: Vec<u64> = rest.split(' ').filter_map(|x| x.parse().ok()).collect();
                    if let [ok, err, cold] = v[..] {
                        p.successes.store(ok, Ordering::Relaxed);
                        p.errors.store(err, Ordering::Relaxed);
                        p.cold_held.store(cold, Ordering::Relaxed);
                    }
                }
                Some(("R", json)) => {
                    return serde_json::from_str(json).map_err(|e| format!("worker result: {e}"))
                }
                Some(("E", msg)) => return Err(format!("worker process: {msg}")),
                _ => {}
            }
        }
        Err("a worker process ended without a result".to_string())
    });
    Ok(ChildWorker { child, progress, reader })
}

/// The entry point of a worker process: reads its shard from standard input, runs it,
/// writes progress lines (`P ok errors cold`) and then its result (`R json`) or an error
/// (`E message`) to standard output. Returns whether it succeeded.
pub fn worker_main() -> bool {
    let shard: Shard = match serde_json::from_reader(std::io::stdin().lock()) {
        Ok(s) => s,
        Err(e) => {
            println!("E bad shard: {e}");
            return false;
        }
    };
    if let Err(e) = hintq_sys::raise_nofile() {
        println!("E raising RLIMIT_NOFILE: {e}");
        return false;
    }
    let threads = shard.plan.threads + shard.plan.cold_threads;
    let progress: Vec<Arc<Progress>> = (0..threads).map(|_| Arc::default()).collect();
    let stop = AtomicBool::new(false);
    let result = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let sum = |f: fn(&Progress) -> u64| progress.iter().map(|p| f(p)).sum::<u64>();
                let mut out = std::io::stdout().lock();
                let _ = writeln!(
                    out,
                    "P {} {} {}",
                    sum(|p| p.successes.load(Ordering::Relaxed)),
                    sum(|p| p.errors.load(Ordering::Relaxed)),
                    sum(|p| p.cold_held.load(Ordering::Relaxed))
                );
                let _ = out.flush();
            }
        });
        let r = run_shard(&shard.config, &shard.plan, shard.process, &progress);
        stop.store(true, Ordering::Relaxed);
        r
    });
    let mut out = std::io::stdout().lock();
    let ok = match result {
        Ok(v) => writeln!(out, "R {}", serde_json::to_string(&v).expect("serializable")).is_ok(),
        Err(e) => {
            let _ = writeln!(out, "E {e}");
            false
        }
    };
    let _ = out.flush();
    ok
}
