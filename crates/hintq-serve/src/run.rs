//! How both servers run from the command line ([`run`]): as one process, or as a
//! supervisor of worker processes and each of those workers ([`crate::processes`]).

use crate::args::ServerArgs;
use crate::processes::Supervisor;
use crate::signals::{say, ShutdownSignals};
use crate::stats::stats_json;
use hintq_patterns::Counters;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// A server started by [`run`]: what it needs to announce itself and to drain.
pub trait Running {
    /// The listening address.
    fn local_addr(&self) -> SocketAddr;
    /// Graceful shutdown for up to `grace`, cut short when `stop` says so (see
    /// [`Lifecycle::drain_counted`](crate::lifecycle::Lifecycle::drain_counted)); returns the connections closed by force and the
    /// runtime's final counters per thread.
    fn drain(self, grace: Duration, stop: &mut dyn FnMut(Duration) -> bool) -> (usize, Vec<Counters>);
}

/// How `hintq serve` and `hintq proxy` run (`name` is `serve` or `proxy`): as one process,
/// start the server (`start`), announce `describe(address)` on standard error, serve until
/// SIGINT or SIGTERM, then drain: no new connection, responses in flight finish (with
/// `Connection: close`), idle keep-alive connections close at once, and what is still open
/// after `--drain-timeout`, or when a second SIGINT or SIGTERM comes, is closed by force.
/// With `--processes N`, supervise N worker processes instead ([`Supervisor`]), each of
/// which runs this same function as a worker: it starts, tells the supervisor it is ready,
/// and drains on SIGTERM. Returns whether everything ended cleanly: nothing closed by force
/// (with workers: every one exited with status 0).
///
/// # Errors
/// Blocking the signals, starting the server, or starting the workers.
pub fn run<R: Running>(
    name: &'static str,
    args: &ServerArgs,
    describe: impl Fn(SocketAddr) -> String,
    start: impl FnOnce() -> io::Result<R>,
) -> io::Result<bool> {
    if args.processes > 1 && args.worker.is_none() {
        let signals = ShutdownSignals::with_children()?;
        let sup = Supervisor::start(name, args.processes, args.listen)?;
        say(&format!("hintq {name}: {}", describe(sup.local_addr())));
        let pids: Vec<String> = sup.pids().iter().map(u32::to_string).collect();
        say(&format!(
            "hintq {name}: worker processes {}; the kernel spreads connections over them (SO_REUSEPORT)",
            pids.join(" ")
        ));
        return Ok(sup.run(&signals));
    }
    let signals = ShutdownSignals::block()?;
    if let Some(w) = &args.worker {
        w.check_parent()?;
    }
    let server = start()?;
    let who = match &args.worker {
        Some(w) => {
            w.ready()?;
            format!("hintq {name} (worker process {})", std::process::id())
        }
        None => {
            say(&format!("hintq {name}: {}", describe(server.local_addr())));
            format!("hintq {name}")
        }
    };
    let sig = signals.wait();
    let grace = args.drain_timeout;
    say(&format!(
        "{who}: signal {sig}: finishing responses in flight (at most {grace:?}; signal again to stop now)"
    ));
    let mut again = None;
    let (forced, counters) = server.drain(grace, &mut |d| {
        again = signals.wait_for(d);
        again.is_some()
    });
    match again {
        Some(sig) => say(&format!("{who}: signal {sig} again: closed {forced} connections still busy")),
        None if forced > 0 => {
            say(&format!("{who}: closed {forced} connections still busy after the drain timeout ({grace:?})"))
        }
        None => {}
    }
    if let Some(file) = &args.stats {
        // A worker process writes its own file beside the others' (or to standard output).
        let path = match &args.worker {
            Some(_) if file != "-" => format!("{file}.{}", std::process::id()),
            _ => file.clone(),
        };
        let json = stats_json(args.array_max, &counters);
        let written = match path.as_str() {
            "-" => io::Write::write_all(&mut io::stdout().lock(), json.as_bytes()),
            _ => std::fs::write(&path, json),
        };
        written.map_err(|e| io::Error::new(e.kind(), format!("--stats {path}: {e}")))?;
    }
    Ok(forced == 0)
}
