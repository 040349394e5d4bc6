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
}

impl Server {
    /// The servers of a point in the order they start: the upstream first.
    fn chain(&self) -> Vec<&Server> {
        let mut out = self.upstream.as_deref().map_or_else(Vec::new, Server::chain);
        out.push(self);
        out
    }
}

/// What a finished point left: its directory (tool outputs, stdout, stderr) and its stdout.
pub struct Ran {
    /// The point's own directory under `raw/E<n>/`.
    pub dir: PathBuf,
    /// The command's standard output.
    pub stdout: String,
    /// The (outermost) server's CPU seconds while the command ran, when there was a server.
    pub server_cpu: Option<f64>,
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
    done: HashMap<String, (PathBuf, String, Option<f64>, Quiet)>,
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
        if let Some((dir, stdout, server_cpu, quiet)) = self.done.get(&k) {
            let ran = Ran { dir: dir.clone(), stdout: stdout.clone(), server_cpu: *server_cpu };
            return Ok(((p.parse)(&ran)?, *quiet, true));
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
        let (stdout, server_cpu) = run_point(p, &dir)?;
        let during = during.foreign_cores();
        let after = machine::busy_share(self.window);
        let quiet = Quiet { before, during, after };
        let ran = Ran { dir: dir.clone(), stdout: stdout.clone(), server_cpu };
        let rows = (p.parse)(&ran)?;
        self.done.insert(k, (dir, stdout, server_cpu, quiet));
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
fn run_point(p: &Point, dir: &Path) -> Result<(String, Option<f64>), String> {
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
    // The measured server's CPU from when it listens: its start-up is not part of the load.
    let cpu0 = servers.last().and_then(|c| process_cpu(c.id()));
    let result = p.cmd.spawn(dir, "cmd").map_err(|e| format!("{}: {e}", p.cmd.program.display()));
    let result = result.and_then(|mut child| wait_bounded(&mut child, p.timeout));
    let server_cpu = servers.last().and_then(|c| Some(process_cpu(c.id())? - cpu0?));
    servers.iter_mut().rev().for_each(stop);
    let status = result?;
    let stdout = std::fs::read_to_string(dir.join("cmd.stdout")).unwrap_or_default();
    if !status.success() {
        let err = std::fs::read_to_string(dir.join("cmd.stderr")).unwrap_or_default();
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_string();
        return Err(format!("{status}: {last}"));
    }
    Ok((stdout, server_cpu))
}

fn start_server(s: &Server, dir: &Path, name: &str) -> Result<Child, String> {
    let mut child = s.cmd.spawn(dir, name).map_err(|e| format!("{}: {e}", s.cmd.program.display()))?;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(st)) = child.try_wait() {
            return Err(format!("server exited before it was ready: {st}"));
        }
        if TcpStream::connect_timeout(&s.ready, Duration::from_millis(100)).is_ok() {
            return Ok(child);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop(&mut child);
    Err(format!("server not listening on {} after 10 s", s.ready))
}

/// SIGTERM, then SIGKILL after ten seconds (`perf record` writes its data once the server it
/// wraps has finished its graceful shutdown).
fn stop(child: &mut Child) {
    // SAFETY: kill(2) on the pid of a child we have not reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    if wait_bounded(child, Duration::from_secs(10)).is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn wait_bounded(child: &mut Child, timeout: Duration) -> Result<std::process::ExitStatus, String> {
    let t0 = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(st)) => return Ok(st),
            Ok(None) if t0.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {:.0} s", timeout.as_secs_f64()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// User plus system CPU seconds of a running process, from `/proc/PID/stat`.
pub fn process_cpu(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    // fields after the command: state(0) ... utime(11) stime(12)
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(ticks / hz)
}

#[cfg(test)]
mod tests {
    #[test]
    fn shell_quotes_arguments_a_shell_would_split() {
        let c = super::Cmd::new("/usr/sbin/nginx", &["-g", "master_process off;", "-c", "/d/n.conf"], 1);
        assert_eq!(c.shell(), "taskset -c 1 /usr/sbin/nginx -g 'master_process off;' -c /d/n.conf");
    }
}
