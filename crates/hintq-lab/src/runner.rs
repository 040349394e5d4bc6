//! Running one point: separate processes, pinned, bounded in time, with the quiet check.

use crate::data::{Row, Status};
use crate::machine::{self, During, Quiet};
use crate::progress::Progress;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process to start.
#[derive(Clone, Debug)]
pub struct Cmd {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The CPU it is pinned to.
    pub cpu: usize,
}

impl Cmd {
    /// `program args...` pinned to `cpu`.
    pub fn new(program: impl Into<PathBuf>, args: &[&str], cpu: usize) -> Cmd {
        Cmd { program: program.into(), args: args.iter().map(|a| a.to_string()).collect(), cpu }
    }

    /// The command as a person would type it, pinning included (arguments with spaces or
    /// shell characters single-quoted).
    pub fn shell(&self) -> String {
        let mut s = format!("taskset -c {} {}", self.cpu, self.program.display());
        for a in &self.args {
            s.push(' ');
            if a.contains(|c: char| c.is_whitespace() || ";&|'\"$".contains(c)) {
                s.push_str(&format!("'{}'", a.replace('\'', "'\\''")));
            } else {
                s.push_str(a);
            }
        }
        s
    }

    fn spawn(&self, dir: &Path, name: &str) -> io::Result<Child> {
        let cpu = self.cpu;
        let mut c = Command::new(&self.program);
        c.args(&self.args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(File::create(dir.join(format!("{name}.stdout")))?)
            .stderr(File::create(dir.join(format!("{name}.stderr")))?);
        // SAFETY: `pin` allocates nothing and makes one system call: safe between fork and exec.
        unsafe {
            c.pre_exec(move || hintq_sys::pin(cpu));
        }
        c.spawn()
    }
}

/// A server started before the point's command and stopped after it.
#[derive(Clone, Debug)]
pub struct Server {
    /// How to start it.
    pub cmd: Cmd,
    /// It is ready when this address accepts a connection.
    pub ready: SocketAddr,
    /// A server this one relays to (a proxy's upstream): started before it, ready before it
    /// starts, stopped after it. Its CPU is not counted in [`Ran::server_cpu`].
    pub upstream: Option<Box<Server>>,
    /// The processes it has once started (itself and its descendants: a supervisor and its
    /// workers, nginx's master and workers); the runner waits for them all after it listens,
    /// so that what is read at the start of the point (CPU, memory) covers every one.
    pub processes: usize,
    /// Sample the server's descriptors and memory this often while the point runs
    /// ([`Ran::samples`]).
    pub sample: Option<Duration>,
}

impl Server {
    /// A server of one process, not sampled, relaying to nothing.
    pub fn new(cmd: Cmd, ready: SocketAddr) -> Server {
        Server { cmd, ready, upstream: None, processes: 1, sample: None }
    }

    /// The servers of a point in the order they start: the upstream first.
    fn chain(&self) -> Vec<&Server> {
        let mut out = self.upstream.as_deref().map_or_else(Vec::new, Server::chain);
        out.push(self);
        out
    }
}

/// What a finished point left: its directory (tool outputs, stdout, stderr) and its stdout.
#[derive(Clone, Debug)]
pub struct Ran {
    /// The point's own directory under `raw/E<n>/`.
    pub dir: PathBuf,
    /// The command's standard output.
    pub stdout: String,
    /// The (outermost) server's CPU seconds while the command ran, when there was a server:
    /// its own and its descendants' (workers), summed.
    pub server_cpu: Option<f64>,
    /// The server's descriptors and memory before the command and while it ran, when
    /// [`Server::sample`] asked for them.
    pub samples: Option<Samples>,
    /// `CLOCK_MONOTONIC` seconds when the command was started and when it ended (the clock of
    /// `perf record -k mono`, so a profile can be cut to the command's phases).
    pub window: (f64, f64),
}

/// `CLOCK_MONOTONIC` now, in seconds.
pub fn monotonic() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// What the sampler saw of a server: once before the command started (nothing connected but
/// the runner's readiness probe, closed) and every [`Server::sample`] while it ran.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// Before the command.
    pub baseline: Sample,
    /// While the command ran, in order.
    pub during: Vec<Sample>,
}

/// One look at a server's process tree and the machine's kernel memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Seconds since the command started (0 for the baseline).
    pub t: f64,
    /// Processes in the server's tree.
    pub processes: usize,
    /// Open descriptors, summed over them.
    pub descriptors: usize,
    /// Resident memory (`VmRSS`), summed over them, bytes.
    pub rss: u64,
    /// The machine's slab memory (`Slab` of `/proc/meminfo`), bytes.
    pub slab: u64,
    /// The machine's TCP socket buffer memory (`mem` of the `TCP:` line of
    /// `/proc/net/sockstat`, pages), bytes.
    pub tcp_mem: u64,
}

impl Sample {
    /// Looks at the process tree of `pid` under the `/proc` at `proc`.
    pub fn take(proc: &Path, pid: u32, t: f64) -> Sample {
        let tree = tree(proc, pid);
        let count =
            |p: &u32| std::fs::read_dir(proc.join(p.to_string()).join("fd")).map_or(0, Iterator::count);
        let rss = |p: &u32| {
            let status = std::fs::read_to_string(proc.join(p.to_string()).join("status")).unwrap_or_default();
            kb(&status, "VmRSS:")
        };
        let meminfo = std::fs::read_to_string(proc.join("meminfo")).unwrap_or_default();
        let sockstat = std::fs::read_to_string(proc.join("net/sockstat")).unwrap_or_default();
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
        Sample {
            t,
            processes: tree.len(),
            descriptors: tree.iter().map(count).sum(),
            rss: tree.iter().map(rss).sum(),
            slab: kb(&meminfo, "Slab:"),
            tcp_mem: tcp_mem_pages(&sockstat) * page,
        }
    }
}

/// The `KEY  N kB` line of a `/proc` file, in bytes (0 if absent).
fn kb(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |k| k * 1024)
}

/// The `mem` field of the `TCP:` line of `/proc/net/sockstat`, pages.
fn tcp_mem_pages(sockstat: &str) -> u64 {
    let Some(line) = sockstat.lines().find(|l| l.starts_with("TCP:")) else { return 0 };
    let f: Vec<&str> = line.split_whitespace().collect();
    f.windows(2).find(|w| w[0] == "mem").and_then(|w| w[1].parse().ok()).unwrap_or(0)
}

/// Turns what a point left into rows (status and note are filled in by the runner).
pub type Parse = Box<dyn Fn(&Ran) -> Result<Vec<Row>, String>>;

/// One point of an experiment.
pub struct Point {
    /// `E9`.
    pub experiment: &'static str,
    /// The series (a line of the plot) and swept value, for a failed row.
    pub series: String,
    /// The swept value.
    pub x: f64,
    /// A name unique within the experiment, used for its directory.
    pub name: String,
    /// Started first, stopped last.
    pub server: Option<Server>,
    /// The measured (or load-generating) command.
    pub cmd: Cmd,
    /// Killed after this long.
    pub timeout: Duration,
    /// Expected duration, for the estimate of the time left.
    pub estimate: Duration,
    /// Reads the rows.
    pub parse: Parse,
}

/// `points` in launch order: the k-th point of each (series, x) before the (k+1)-th of any,
/// keeping the experiment's order otherwise, so that launch k of every point runs before
/// launch k+1 and the machine's drift weighs on every series alike (an experiment that made
/// a point's launches one after the other gets them spread over the run).
pub fn interleave(points: Vec<Point>) -> Vec<Point> {
    let mut seen: Vec<(String, f64, usize)> = Vec::new();
    let mut keyed: Vec<(usize, Point)> = points
        .into_iter()
        .map(|p| {
            let k = match seen.iter_mut().find(|(s, x, _)| *s == p.series && *x == p.x) {
                Some(e) => {
                    e.2 += 1;
                    e.2
                }
                None => {
                    seen.push((p.series.clone(), p.x, 0));
                    0
                }
            };
            (k, p)
        })
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, p)| p).collect()
}

/// Runs points and remembers, per command line, what a point produced, so two experiments
/// reading the same tool's output (E3 and E4 from `hintq bench micro`) run it once.
pub struct Runner {
    /// How long the quiet windows before and after each point last.
    pub window: Duration,
    /// `raw/` under the output directory.
    pub raw: PathBuf,
    /// Every command run, in order.
    pub commands: Vec<String>,
    /// Time left for repeating disturbed points; once spent, a disturbed point is kept and
    /// marked without a repeat, so a busy machine cannot stretch the run without bound.
    pub repeat_budget: Duration,
    done: HashMap<String, (Ran, Quiet)>,
}

impl Runner {
    /// A runner writing under `raw`, with `repeat_budget` of time for repeats.
    pub fn new(raw: PathBuf, window: Duration, repeat_budget: Duration) -> Runner {
        Runner { window, raw, commands: Vec::new(), repeat_budget, done: HashMap::new() }
    }

    /// Runs `p` (once more if it was disturbed) and returns its rows, every attempt's rows
    /// included: a repeated attempt's rows are marked [`Status::Repeated`].
    pub fn run(&mut self, p: &Point, progress: &Progress) -> Vec<Row> {
        let mut all: Vec<Row> = Vec::new();
        for attempt in 0..2 {
            progress.point(p.experiment, &p.name, attempt);
            let (rows, quiet, cached) = match self.attempt(p, attempt) {
                Ok(ok) => ok,
                Err(why) => {
                    progress.println(&format!("{} {}: failed: {why}", p.experiment, p.name));
                    // A repeat that failed leaves the first, disturbed try as the measurement.
                    for r in all.iter_mut().filter(|r| r.status == Status::Repeated) {
                        r.status = Status::Disturbed;
                        r.note = format!("{}; its repeat failed", r.note);
                    }
                    all.push(failed(p, &why));
                    return all;
                }
            };
            let mut disturbed = quiet.disturbed();
            let budget = self.repeat_budget >= p.estimate;
            let (status, retry) = match (&disturbed, attempt) {
                (None, _) => (Status::Ok, false),
                // Another experiment's reading of the same run: its retry was made there.
                (Some(_), 0) if !cached && budget => (Status::Repeated, true),
                (Some(_), _) => (Status::Disturbed, false),
            };
            if let (Some(d), 0, false, false) = (&mut disturbed, attempt, cached, budget) {
                d.push_str("; not repeated: the run's time for repeats was used up");
            }
            let note = disturbed.unwrap_or_else(|| format!("quiet: {quiet}"));
            // A note the point's own parser wrote (a peer's configuration) comes first.
            all.extend(rows.into_iter().map(|r| {
                let note = if r.note.is_empty() { note.clone() } else { format!("{}; {note}", r.note) };
                Row { status, note, ..r }
            }));
            if !retry {
                break;
            }
            self.done.remove(&key(p));
            self.repeat_budget = self.repeat_budget.saturating_sub(p.estimate);
            std::thread::sleep(self.window * 2);
        }
        all
    }

    /// One try of `p`: its rows, its quiet check, and whether it was a run made before.
    fn attempt(&mut self, p: &Point, attempt: u32) -> Result<(Vec<Row>, Quiet, bool), String> {
        let k = key(p);
        if let Some((ran, quiet)) = self.done.get(&k) {
            return Ok(((p.parse)(ran)?, *quiet, true));
        }
        let suffix = if attempt > 0 { "-again" } else { "" };
        let dir = self.raw.join(p.experiment).join(format!("{}{suffix}", p.name));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for s in p.server.iter().flat_map(Server::chain) {
            self.commands.push(format!("{} &", s.cmd.shell()));
        }
        self.commands.push(p.cmd.shell());
        let before = machine::busy_share(self.window);
        let during = During::start();
        let ran = run_point(p, &dir)?;
        let during = during.foreign_cores();
        let after = machine::busy_share(self.window);
        let quiet = Quiet { before, during, after };
        let rows = (p.parse)(&ran)?;
        self.done.insert(k, (ran, quiet));
        Ok((rows, quiet, false))
    }
}

fn key(p: &Point) -> String {
    let servers: Vec<String> = p.server.iter().flat_map(Server::chain).map(|s| s.cmd.shell()).collect();
    format!("{} {servers:?}", p.cmd.shell())
}

fn failed(p: &Point, why: &str) -> Row {
    Row {
        experiment: p.experiment.into(),
        series: p.series.clone(),
        x: p.x,
        rep: 0,
        metric: String::new(),
        value: None,
        status: Status::Failed,
        note: format!("failed: {why}"),
    }
}

/// Starts the servers (if any: the upstream first), runs the command to its end or its
/// timeout, stops the servers (the upstream last).
fn run_point(p: &Point, dir: &Path) -> Result<Ran, String> {
    let chain: Vec<&Server> = p.server.iter().flat_map(Server::chain).collect();
    let mut servers: Vec<Child> = Vec::new();
    for (i, s) in chain.iter().enumerate() {
        // The measured server's output in `server.*`, upstreams' in `upstream<depth>.*`.
        let name = if i + 1 == chain.len() { "server".to_string() } else { format!("upstream{i}") };
        match start_server(s, dir, &name) {
            Ok(child) => servers.push(child),
            Err(why) => {
                servers.iter_mut().rev().for_each(stop);
                return Err(why);
            }
        }
    }
    // The measured server's CPU (its workers' included) from when it listens: its start-up
    // is not part of the load.
    let proc = Path::new(PROC);
    let measured = servers.last().map(Child::id);
    let cpu0 = measured.and_then(|pid| tree_cpu(proc, pid));
    // Each look reads `/proc` (descriptors counted by listing each process's `fd`) on the
    // load core, where the lab runs.
    let sampled = measured.zip(chain.last().and_then(|s| s.sample));
    let baseline = sampled.map(|(pid, _)| Sample::take(proc, pid, 0.0));
    let started = monotonic();
    let result = p.cmd.spawn(dir, "cmd").map_err(|e| format!("{}: {e}", p.cmd.program.display()));
    let sampler = sampled.map(|(pid, every)| Sampler::start(pid, every));
    let result = result.and_then(|mut child| wait_bounded(&mut child, p.timeout));
    let ended = monotonic();
    let during = sampler.map(Sampler::stop);
    let server_cpu = measured.and_then(|pid| Some(tree_cpu(proc, pid)? - cpu0?));
    servers.iter_mut().rev().for_each(stop);
    let status = result?;
    let stdout = std::fs::read_to_string(dir.join("cmd.stdout")).unwrap_or_default();
    if !status.success() {
        let err = std::fs::read_to_string(dir.join("cmd.stderr")).unwrap_or_default();
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_string();
        return Err(format!("{status}: {last}"));
    }
    let samples = baseline.map(|baseline| Samples { baseline, during: during.unwrap_or_default() });
    Ok(Ran { dir: dir.to_path_buf(), stdout, server_cpu, samples, window: (started, ended) })
}

/// Where the kernel's process information is.
const PROC: &str = "/proc";

/// A thread looking at a server every so often until stopped.
struct Sampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Sample>>,
}

impl Sampler {
    fn start(pid: u32, every: Duration) -> Sampler {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let (t0, mut out) = (Instant::now(), Vec::new());
            while !flag.load(Ordering::Relaxed) {
                let next = Instant::now() + every;
                out.push(Sample::take(Path::new(PROC), pid, t0.elapsed().as_secs_f64()));
                while !flag.load(Ordering::Relaxed) && Instant::now() < next {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            out
        });
        Sampler { stop, thread }
    }

    fn stop(self) -> Vec<Sample> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

fn start_server(s: &Server, dir: &Path, name: &str) -> Result<Child, String> {
    let mut child = s.cmd.spawn(dir, name).map_err(|e| format!("{}: {e}", s.cmd.program.display()))?;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(st)) = child.try_wait() {
            return Err(format!("server exited before it was ready: {st}"));
        }
        // Listening, and every process there (a worker or nginx's master may listen before
        // the others have started).
        if TcpStream::connect_timeout(&s.ready, Duration::from_millis(100)).is_ok()
            && tree(Path::new(PROC), child.id()).len() >= s.processes
        {
            return Ok(child);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let found = tree(Path::new(PROC), child.id()).len();
    stop(&mut child);
    Err(format!(
        "server not listening on {} with its {} processes after 10 s ({found} there)",
        s.ready, s.processes
    ))
}

/// How long a server has to finish after each SIGTERM: as long as hintq's default
/// `--drain-timeout`.
const GRACE: Duration = Duration::from_secs(10);

fn stop(child: &mut Child) {
    stop_within(child, GRACE);
}

/// SIGTERM; a second SIGTERM after `grace` if it still runs, which hintq's servers take as
/// "close everything now" and then write their `--stats` file (a SIGKILL at the end of their
/// drain, which lasts as long, lost it: E11's stats point failed on a loaded machine); SIGKILL
/// after `grace` more. `perf record` writes its data once the server it wraps has ended.
fn stop_within(child: &mut Child, grace: Duration) {
    for _ in 0..2 {
        // SAFETY: kill(2) on the pid of a child we have not reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        if !matches!(ended_within(child, grace), Ok(None)) {
            return;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits for `child` to end, killing it after `timeout`.
fn wait_bounded(child: &mut Child, timeout: Duration) -> Result<std::process::ExitStatus, String> {
    if let Some(st) = ended_within(child, timeout)? {
        return Ok(st);
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(format!("timed out after {:.0} s", timeout.as_secs_f64()))
}

/// Its exit status if `child` ends within `timeout`.
fn ended_within(child: &mut Child, timeout: Duration) -> Result<Option<std::process::ExitStatus>, String> {
    let t0 = Instant::now();
    loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            None if t0.elapsed() < timeout => std::thread::sleep(Duration::from_millis(10)),
            st => return Ok(st),
        }
    }
}

/// The fields of `/proc/PID/stat` after the command (`state` first), under the `/proc` at
/// `proc`.
fn stat_fields(proc: &Path, pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    Some(after.split_whitespace().map(String::from).collect())
}

/// User plus system CPU seconds of a running process, from `/proc/PID/stat`.
fn stat_cpu(proc: &Path, pid: u32) -> Option<f64> {
    let f = stat_fields(proc, pid)?;
    // fields after the command: state(0) ppid(1) ... utime(11) stime(12)
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / machine::clock_tick())
}

/// `pid` and its descendants (children, their children...), from the parent pid of every
/// process under the `/proc` at `proc`; empty if `pid` is not there.
pub fn tree(proc: &Path, pid: u32) -> Vec<u32> {
    if stat_fields(proc, pid).is_none() {
        return Vec::new();
    }
    let parents: Vec<(u32, u32)> = std::fs::read_dir(proc)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|p| Some((p, stat_fields(proc, p)?.get(1)?.parse().ok()?)))
        .collect();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        let children: Vec<u32> =
            parents.iter().filter(|&&(p, pp)| pp == parent && !out.contains(&p)).map(|&(p, _)| p).collect();
        out.extend(children);
        i += 1;
    }
    out
}

/// User plus system CPU seconds of `pid` and its descendants, summed (a multi-process server:
/// a supervisor and its workers, nginx's master and workers). A descendant that ended is no
/// longer counted, nor is its parent charged for it until it has waited for it.
pub fn tree_cpu(proc: &Path, pid: u32) -> Option<f64> {
    let tree = tree(proc, pid);
    let own = stat_cpu(proc, *tree.first()?)?;
    Some(own + tree[1..].iter().filter_map(|&p| stat_cpu(proc, p)).sum::<f64>())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(series: &str, x: f64, name: &str) -> Point {
        Point {
            experiment: "E1",
            series: series.into(),
            x,
            name: name.into(),
            server: None,
            cmd: Cmd::new("/bin/true", &[], 0),
            timeout: Duration::from_secs(5),
            estimate: Duration::from_secs(1),
            parse: Box::new(|_| Ok(Vec::new())),
        }
    }

    #[test]
    fn a_crashing_point_gives_a_failed_row_with_its_error() {
        let raw = tempfile::tempdir().unwrap();
        let mut runner = Runner::new(raw.path().to_path_buf(), Duration::ZERO, Duration::ZERO);
        let p = Point {
            series: "libevent-poll".into(),
            x: 100.0,
            cmd: Cmd::new("sh", &["-c", "echo peer crashed >&2; exit 3"], 0),
            ..point("libevent-poll", 100.0, "libevent-poll-100")
        };
        let rows = runner.run(&p, &Progress::new(Duration::from_secs(1)));
        let failed: Vec<&Row> = rows.iter().filter(|r| r.status == Status::Failed).collect();
        assert_eq!(failed.len(), 1, "{rows:?}");
        assert_eq!((failed[0].series.as_str(), failed[0].x), ("libevent-poll", 100.0));
        assert!(failed[0].note.starts_with("failed: "), "{}", failed[0].note);
        assert!(failed[0].note.contains("exit status: 3"), "{}", failed[0].note);
        assert!(failed[0].note.contains("peer crashed"), "{}", failed[0].note);
    }

    #[test]
    fn launch_k_of_every_point_runs_before_launch_k_plus_1_of_any() {
        // As E1 made them: series, cold, then launch innermost.
        let mut points = Vec::new();
        for s in ["epoll", "poll"] {
            for x in [0.0, 2000.0] {
                for rep in 0..3 {
                    points.push(point(s, x, &format!("{s}-{x}-rep{rep}")));
                }
            }
        }
        let names: Vec<String> = interleave(points).into_iter().map(|p| p.name).collect();
        assert_eq!(
            names[..5],
            ["epoll-0-rep0", "epoll-2000-rep0", "poll-0-rep0", "poll-2000-rep0", "epoll-0-rep1"]
        );
        assert_eq!(names[11], "poll-2000-rep2");
    }

    /// A `/proc` of processes (pid, parent, utime and stime in ticks) with status, fd,
    /// meminfo and sockstat files.
    fn fake_proc(procs: &[(u32, u32, u64, u64)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for &(pid, ppid, utime, stime) in procs {
            let d = dir.path().join(pid.to_string());
            std::fs::create_dir_all(d.join("fd")).unwrap();
            // A command with a space and a parenthesis, as `(nginx: worker) process` may be.
            let stat = format!("{pid} (a b) c) S {ppid} 1 1 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20 0 1 0");
            std::fs::write(d.join("stat"), stat).unwrap();
            std::fs::write(d.join("status"), "Name:\tx\nVmRSS:\t   100 kB\n").unwrap();
            for fd in 0..pid % 10 {
                std::fs::write(d.join("fd").join(fd.to_string()), "").unwrap();
            }
        }
        std::fs::write(dir.path().join("meminfo"), "MemTotal: 8 kB\nSlab:  2000 kB\n").unwrap();
        std::fs::create_dir_all(dir.path().join("net")).unwrap();
        std::fs::write(
            dir.path().join("net/sockstat"),
            "sockets: used 5\nTCP: inuse 3 orphan 0 tw 0 alloc 4 mem 7\nUDP: inuse 0 mem 1\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn a_server_s_cpu_and_memory_are_its_own_and_its_descendants_summed() {
        // 10 supervises workers 11 and 12; 12 has a child 13; 20 (a sibling) and 1 are not
        // in the tree.
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let proc = fake_proc(&[
            (1, 0, 1000, 1000),
            (10, 1, 1, 2),
            (11, 10, 30, 10),
            (12, 10, 50, 50),
            (13, 12, 7, 0),
            (20, 1, 500, 500),
        ]);
        let mut t = tree(proc.path(), 10);
        t.sort();
        assert_eq!(t, [10, 11, 12, 13]);
        let cpu = tree_cpu(proc.path(), 10).unwrap();
        assert!((cpu - 150.0 / hz).abs() < 1e-9, "{cpu}");
        assert!((stat_cpu(proc.path(), 10).unwrap() - 3.0 / hz).abs() < 1e-9, "one pid alone: 3 ticks");
        assert_eq!(tree_cpu(proc.path(), 99), None);
        let s = Sample::take(proc.path(), 10, 1.5);
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        assert_eq!(
            s,
            Sample {
                t: 1.5,
                processes: 4,
                descriptors: 1 + 2 + 3, // pids 11, 12, 13 have pid % 10 descriptors each, 10 none
                rss: 4 * 100 * 1024,
                slab: 2000 * 1024,
                tcp_mem: 7 * page
            }
        );
    }

    #[test]
    fn a_real_child_burning_cpu_is_counted_under_its_parent() {
        // sh (the parent, idle) runs a busy loop in a child shell; the parent alone shows
        // almost nothing, the tree the child's CPU.
        let mut sh = Command::new("sh")
            .args(["-c", "( i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done ) & wait"])
            .spawn()
            .unwrap();
        let proc = Path::new(PROC);
        let t0 = Instant::now();
        while tree_cpu(proc, sh.id()).unwrap_or(0.0) < 0.2 && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let (own, all, pids) = (stat_cpu(proc, sh.id()), tree_cpu(proc, sh.id()), tree(proc, sh.id()));
        for &p in pids.iter().rev() {
            // SAFETY: kill(2) on this test's child and its child (the busy loop).
            unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) };
        }
        let _ = sh.wait();
        let n = pids.len();
        let (own, all) = (own.unwrap(), all.unwrap());
        assert!(n >= 2, "the busy child is in the tree ({n})");
        assert!(all >= 0.2 && own < 0.1, "tree {all} s, parent alone {own} s");
    }

    #[test]
    fn a_server_still_draining_gets_a_second_sigterm_and_writes_its_stats_before_any_sigkill() {
        // As hintq's proxy: the first SIGTERM starts a drain that outlasts the grace, the
        // second ends it, and the stats file is written on the way out.
        let dir = tempfile::tempdir().unwrap();
        let script = "trap 'if [ -n \"$t\" ]; then echo done > stats.json; exit 0; fi; t=1' TERM; \
            while :; do sleep 0.05; done";
        let mut child = Cmd::new("sh", &["-c", script], 0).spawn(dir.path(), "server").unwrap();
        // The shell has set its trap once it runs its loop.
        let t0 = Instant::now();
        while tree(Path::new(PROC), child.id()).len() < 2 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        stop_within(&mut child, Duration::from_secs(1));
        let stats = std::fs::read_to_string(dir.path().join("stats.json"));
        assert_eq!(stats.ok().as_deref(), Some("done\n"), "killed before its second SIGTERM");
    }

    #[test]
    fn shell_quotes_arguments_a_shell_would_split() {
        let c = super::Cmd::new("/usr/sbin/nginx", &["-g", "master_process off;", "-c", "/d/n.conf"], 1);
        assert_eq!(c.shell(), "taskset -c 1 /usr/sbin/nginx -g 'master_process off;' -c /d/n.conf");
    }
}
