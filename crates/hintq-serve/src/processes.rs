//! `--processes N`: one server spread over N worker processes, to hold more connections than
//! one process's descriptor limit allows (`RLIMIT_NOFILE`, 20,000 on the lab's machine).
//!
//! The process the user started becomes the supervisor and serves nothing itself:
//!
//! * It claims `--listen` ([`hintq_patterns::claim`]): starting fails, naming the address,
//!   when another server listens there (its `SO_REUSEPORT` group would take in the workers)
//!   or another hintq server holds it; the claim is held until the supervisor exits.
//! * It binds (without listening) a socket with `SO_REUSEPORT` on `--listen`: this learns the
//!   port when it is 0 and keeps it reserved for the workers, while taking no connection
//!   (the kernel only routes connections to listening sockets).
//! * It starts each worker by executing its own program again with the same arguments plus
//!   the hidden `--worker PID,FD,ADDR` ([`WorkerOf`]): the supervisor's pid, the descriptor
//!   of a socket on which the worker says it is ready, and the concrete address. A worker runs
//!   the server exactly as a single process does (its pattern, backend and threads, its own
//!   descriptor limit and `EMFILE` back-off), except that its listeners have `SO_REUSEPORT`,
//!   so that the kernel spreads incoming connections over the workers by hashing. Workers
//!   start one after another, each after the previous one said it is ready, so that a wrong
//!   setting is reported once, by the first, and stops the start.
//! * Only then it announces the address, as a single process does.
//! * SIGINT or SIGTERM: it sends SIGTERM to every worker, each of which drains as a single
//!   process does, and exits when all have ended; the exit status is 0 only if every worker
//!   exited with status 0. A second SIGINT or SIGTERM kills the workers still draining.
//! * A worker that dies is reported on standard error with its pid and how it ended, and the
//!   others keep serving (its listener is gone with it, so the kernel hashes new connections
//!   over the others). It is not replaced, unlike nginx's master: the connections it held
//!   are lost either way, and a worker that dies is a bug to see, not to hide (inside a lab
//!   run, a silent replacement would hide it in the figures). The final exit status says so.
//! * Workers never outlive the supervisor: each asks for SIGTERM when its parent dies
//!   (`PR_SET_PDEATHSIG`, set before `exec`) and checks after `exec` that its parent is
//!   still the supervisor (which might have died before the request took effect).

use crate::signals::{say, ShutdownSignals};
use std::ffi::OsString;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::str::FromStr;
use std::time::Duration;

/// The most worker processes `--processes` takes.
pub const MAX_PROCESSES: usize = 256;

/// How long a worker may take to start before the supervisor gives up.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// What the hidden `--worker` flag tells a worker process: who supervises it, where to say
/// it is ready, where to listen. Written `PID,FD,ADDR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerOf {
    /// The supervisor's pid: the worker's parent.
    pub supervisor: libc::pid_t,
    /// A socket (inherited) on which the worker writes `ready` once it listens.
    pub ready_fd: RawFd,
    /// The concrete address every worker listens on, with `SO_REUSEPORT`.
    pub listen: SocketAddr,
}

impl FromStr for WorkerOf {
    type Err = String;

    fn from_str(s: &str) -> Result<WorkerOf, String> {
        let bad = || format!("bad worker spec {s:?}: expected PID,FD,ADDR");
        let mut parts = s.splitn(3, ',');
        let mut next = || parts.next().ok_or_else(bad);
        let supervisor = next()?.parse().map_err(|_| bad())?;
        let ready_fd = next()?.parse().map_err(|_| bad())?;
        let listen = next()?.parse().map_err(|_| bad())?;
        Ok(WorkerOf { supervisor, ready_fd, listen })
    }
}

impl fmt::Display for WorkerOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{}", self.supervisor, self.ready_fd, self.listen)
    }
}

impl WorkerOf {
    /// Checks, first thing in a worker, that the supervisor that started it is still its
    /// parent: the death signal asked for before `exec` only covers a parent dying after
    /// the request.
    ///
    /// # Errors
    /// The supervisor is gone.
    pub fn check_parent(&self) -> io::Result<()> {
        // SAFETY: getppid cannot fail.
        let parent = unsafe { libc::getppid() };
        if parent != self.supervisor {
            return Err(io::Error::other(format!(
                "the supervisor (pid {}) is gone; not starting an orphan worker",
                self.supervisor
            )));
        }
        Ok(())
    }

    /// Tells the supervisor that this worker listens (and closes the descriptor).
    ///
    /// # Errors
    /// Writing to the supervisor's socket.
    pub fn ready(&self) -> io::Result<()> {
        // SAFETY: the supervisor passed this descriptor for this worker alone; it is used
        // here once and closed.
        let mut s = UnixStream::from(unsafe { OwnedFd::from_raw_fd(self.ready_fd) });
        s.write_all(b"ready\n")
    }
}

/// A running group of worker processes (see the module docs).
#[derive(Debug)]
pub struct Supervisor {
    name: &'static str,
    addr: SocketAddr,
    workers: Vec<Worker>,
    /// SIGTERM was sent to every worker: a clean exit is expected, not reported.
    draining: bool,
    /// The bound, non-listening socket that keeps the port for the workers.
    _reserved: OwnedFd,
    /// The claim on the address, for the workers (which do not claim it).
    _claim: hintq_patterns::Claim,
}

#[derive(Debug)]
struct Worker {
    child: Child,
    ended: Option<ExitStatus>,
}

impl Supervisor {
    /// Reserves `listen` and starts `n` workers of `hintq <name>`: this program again, with
    /// the arguments it was started with plus `--worker`. The program must route those to
    /// `serve::run` or `proxy::run` (the `hintq` binary does). SIGCHLD must
    /// be blocked in the calling thread ([`ShutdownSignals::with_children`]),
    /// which must live as long as the workers (their death signal is tied to it).
    ///
    /// # Errors
    /// Claiming or binding the address, starting a worker, or a worker failing to start (those
    /// already started are stopped first).
    pub fn start(name: &'static str, n: usize, listen: SocketAddr) -> io::Result<Supervisor> {
        let (reserved, addr, claim) = hintq_patterns::claimed(listen, || reserve(listen))?;
        let exe = std::env::current_exe()?;
        let args: Vec<OsString> = std::env::args_os().skip(1).collect();
        let mut sup = Supervisor {
            name,
            addr,
            workers: Vec::with_capacity(n),
            draining: false,
            _reserved: reserved,
            _claim: claim,
        };
        for _ in 0..n {
            if let Err(e) = sup.start_one(&exe, &args) {
                sup.draining = true;
                sup.signal_all(libc::SIGTERM);
                while sup.reap(true) {}
                return Err(e);
            }
        }
        Ok(sup)
    }

    /// Starts one worker and waits until it says it listens.
    fn start_one(&mut self, exe: &std::path::Path, args: &[OsString]) -> io::Result<()> {
        let (mine, theirs) = UnixStream::pair()?;
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() };
        let spec = WorkerOf { supervisor: me, ready_fd: theirs.as_raw_fd(), listen: self.addr };
        let fd = spec.ready_fd;
        let mut cmd = Command::new(exe);
        cmd.args(args).arg("--worker").arg(spec.to_string()).stdin(Stdio::null());
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl, prctl, getppid),
        // no allocation.
        unsafe {
            cmd.pre_exec(move || {
                // The ready socket is inherited by this child only.
                hintq_sys::cvt(libc::fcntl(fd, libc::F_SETFD, 0))?;
                hintq_sys::cvt(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong))?;
                if libc::getppid() != me {
                    return Err(io::Error::other("the supervisor died"));
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        drop(theirs);
        let pid = child.id();
        self.workers.push(Worker { child, ended: None });
        if wait_ready(mine)? {
            return Ok(());
        }
        // The worker said why on standard error; say how it ended.
        let w = self.workers.last_mut().expect("pushed above");
        let _ = w.child.kill();
        let status = w.child.wait()?;
        w.ended = Some(status);
        Err(io::Error::other(format!("worker process {pid} did not start ({status})")))
    }

    /// The address the workers listen on (the port chosen when `--listen` had port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The workers' process ids, in start order.
    pub fn pids(&self) -> Vec<u32> {
        self.workers.iter().map(|w| w.child.id()).collect()
    }

    /// Serves until SIGINT or SIGTERM (taken through `signals`, which must include SIGCHLD),
    /// reporting workers that die meanwhile; then drains them all. Returns whether every
    /// worker exited with status 0.
    pub fn run(mut self, signals: &ShutdownSignals) -> bool {
        let name = self.name;
        while self.live() > 0 {
            let sig = signals.wait();
            if sig == libc::SIGCHLD {
                self.reap(false);
                if !self.draining && self.live() == 0 {
                    say(&format!("hintq {name}: no worker process left"));
                }
            } else if !self.draining {
                self.draining = true;
                say(&format!("hintq {name}: signal {sig}: draining {} worker processes", self.live()));
                self.signal_all(libc::SIGTERM);
            } else {
                say(&format!("hintq {name}: signal {sig} again: killing the workers still draining"));
                self.signal_all(libc::SIGKILL);
            }
        }
        self.workers.iter().all(|w| w.ended.is_some_and(|s| s.success()))
    }

    fn live(&self) -> usize {
        self.workers.iter().filter(|w| w.ended.is_none()).count()
    }

    /// Sends `sig` to every worker not yet reaped (so its pid cannot have been reused).
    fn signal_all(&self, sig: libc::c_int) {
        for w in self.workers.iter().filter(|w| w.ended.is_none()) {
            // SAFETY: plain syscall on our own unreaped child.
            unsafe { libc::kill(w.child.id() as libc::pid_t, sig) };
        }
    }

    /// Reaps the workers that ended (waiting for each when `block`), reporting each that ended
    /// before the drain or did not exit cleanly; returns whether any is left.
    fn reap(&mut self, block: bool) -> bool {
        let total = self.workers.len();
        for i in 0..total {
            let w = &mut self.workers[i];
            if w.ended.is_some() {
                continue;
            }
            let status = if block { w.child.wait().ok() } else { w.child.try_wait().ok().flatten() };
            let Some(status) = status else { continue };
            w.ended = Some(status);
            let pid = w.child.id();
            if !self.draining || !status.success() {
                let left = self.live();
                say(&format!(
                    "hintq {}: worker process {pid} ended: {status}; {left} of {total} still running",
                    self.name
                ));
            }
        }
        self.live() > 0
    }
}

/// A bound, non-listening `SO_REUSEPORT` socket on `addr`: it holds the port (and learns it,
/// for port 0) while taking no connection.
fn reserve(addr: SocketAddr) -> io::Result<OwnedFd> {
    let sock = hintq_sys::tcp_socket(addr)?;
    let fd = sock.as_raw_fd();
    hintq_sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1 as libc::c_int)?;
    hintq_sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1 as libc::c_int)?;
    hintq_sys::bind(fd, addr).map_err(|e| io::Error::new(e.kind(), format!("{addr}: {e}")))?;
    Ok(sock)
}

/// Waits for a worker's `ready`; `false` when it closed the socket without (it failed).
fn wait_ready(mut s: UnixStream) -> io::Result<bool> {
    s.set_read_timeout(Some(START_TIMEOUT))?;
    let mut said = String::new();
    match s.read_to_string(&mut said) {
        Ok(_) => Ok(said == "ready\n"),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("a worker process did not start in {START_TIMEOUT:?}"),
        )),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_specs_round_trip() {
        for s in ["12,3,127.0.0.1:8080", "7,10,[::1]:443"] {
            let w: WorkerOf = s.parse().unwrap();
            assert_eq!(w.to_string(), s);
        }
        let w: WorkerOf = "12,3,127.0.0.1:80".parse().unwrap();
        assert_eq!((w.supervisor, w.ready_fd, w.listen.port()), (12, 3, 80));
        for bad in ["", "12", "12,3", "x,3,127.0.0.1:1", "12,3,nowhere"] {
            assert!(bad.parse::<WorkerOf>().is_err(), "{bad:?} accepted");
        }
    }
}
