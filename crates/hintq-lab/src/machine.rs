//! The machine: is it quiet, which cores, what it is (for SETUP.md).

use std::process::Command;
use std::time::{Duration, Instant};

/// Busy and total jiffies of all CPUs, from the first line of `/proc/stat`.
fn cpu_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> =
        stat.lines().next()?.split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    // user nice system idle iowait irq softirq steal ...
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).unwrap_or(&0);
    Some((total - idle, total))
}

/// Clock ticks per second (`/proc`'s CPU times are in them).
pub(crate) fn clock_tick() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// CPU seconds used by this process and by its waited-for children so far.
fn own_cpu() -> f64 {
    let (user, system) = hintq_sys::cpu_time(hintq_sys::Usage::ProcessAndChildren);
    (user + system).as_secs_f64()
}

/// The share of all CPUs busy over `window` while the lab itself waits: 0.0 is idle.
pub fn busy_share(window: Duration) -> f64 {
    let a = cpu_jiffies();
    std::thread::sleep(window);
    match (a, cpu_jiffies()) {
        (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => (b1 - b0) as f64 / (t1 - t0) as f64,
        _ => 0.0,
    }
}

/// A snapshot taken when a point starts, to see how much CPU others used while it ran.
pub struct During {
    jiffies: Option<(u64, u64)>,
    own: f64,
    wall: Instant,
}

impl During {
    /// Starts watching.
    pub fn start() -> During {
        During { jiffies: cpu_jiffies(), own: own_cpu(), wall: Instant::now() }
    }

    /// CPU used by processes other than the lab and its children since [`During::start`], in
    /// cores (1.0 = one whole core). Children must have been waited for.
    pub fn foreign_cores(&self) -> f64 {
        let wall = self.wall.elapsed().as_secs_f64();
        match (self.jiffies, cpu_jiffies()) {
            (Some((b0, _)), Some((b1, _))) if wall > 0.0 => {
                let busy = (b1 - b0) as f64 / clock_tick();
                ((busy - (own_cpu() - self.own)) / wall).max(0.0)
            }
            _ => 0.0,
        }
    }
}

/// The quiet check of one point.
#[derive(Clone, Copy, Debug)]
pub struct Quiet {
    /// Share of all CPUs busy in the window before the point.
    pub before: f64,
    /// Cores used by other processes while the point ran.
    pub during: f64,
    /// Share of all CPUs busy in the window after it.
    pub after: f64,
}

/// Above this share of all CPUs busy before or after a point (while the lab only waits), the
/// machine was not quiet.
pub const BUSY_LIMIT: f64 = 0.15;
/// Above this many cores used by others during a point, the point was disturbed.
pub const FOREIGN_LIMIT: f64 = 0.15;

impl Quiet {
    /// Why the point counts as disturbed, if it does.
    pub fn disturbed(&self) -> Option<String> {
        let bad = self.before > BUSY_LIMIT || self.after > BUSY_LIMIT || self.during > FOREIGN_LIMIT;
        bad.then(|| format!("disturbed: {self}"))
    }
}

impl std::fmt::Display for Quiet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "busy before {:.0}%, others during {:.2} cores, busy after {:.0}%",
            self.before * 100.0,
            self.during,
            self.after * 100.0
        )
    }
}

/// The CPUs this process may run on (CPU 0 if the kernel cannot say).
pub fn allowed_cpus() -> Vec<usize> {
    hintq_sys::affinity().ok().filter(|c| !c.is_empty()).unwrap_or_else(|| vec![0])
}

/// Pins the calling thread (and what it later spawns) to `cpu`.
pub use hintq_sys::pin as pin_self;

/// The cores of a run: single-process benchmarks and servers on `bench`, load generators
/// and the lab itself on `load`.
#[derive(Clone, Debug)]
pub struct Cores {
    /// The CPUs this process was allowed when the run started.
    pub allowed: Vec<usize>,
    /// The measured process.
    pub bench: usize,
    /// The load generator and the lab.
    pub load: usize,
}

impl Cores {
    /// The last allowed CPU for the measured process, the first for the rest.
    pub fn pick() -> Cores {
        let cpus = allowed_cpus();
        Cores { bench: *cpus.last().unwrap_or(&0), load: cpus[0], allowed: cpus }
    }
}

/// The first line a command prints (stdout, else stderr), or why it could not run.
pub fn command_line(program: &str, args: &[&str]) -> String {
    match Command::new(program).args(args).output() {
        Ok(o) => {
            let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
            String::from_utf8_lossy(&text).lines().next().unwrap_or("").trim().to_string()
        }
        Err(e) => format!("not available ({program}: {e})"),
    }
}

pub use hintq_bench::{commit, cpu_model, loadavg};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_check_names_what_disturbed_it() {
        let q = Quiet { before: 0.02, during: 0.9, after: 0.01 };
        assert!(q.disturbed().unwrap().contains("others during 0.90 cores"));
        assert!(Quiet { before: 0.0, during: 0.0, after: 0.0 }.disturbed().is_none());
    }

    #[test]
    fn busy_share_is_a_share() {
        let s = busy_share(Duration::from_millis(30));
        assert!((0.0..=1.0).contains(&s), "{s}");
    }
}
