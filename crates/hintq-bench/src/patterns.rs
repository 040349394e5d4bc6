//! `hintq bench patterns`: Strebelow & Prehofer's micro-benchmark on this machine.
//!
//! 512 persistent TCP connections over loopback, one request (64 bytes) in flight on each;
//! the handler reads the request, busy-waits `--work-us` (default 0), sends a 64-byte
//! reply. Swept: pattern x backend (`select`, `epoll`, `epoll-et`, `epoll-oneshot`,
//! `uring`) x threads. The server's threads are pinned to one CPU and the load generator
//! (one thread in this process, driving every connection through a hintq `Queue` on
//! `epoll`) to the other, as PERF.md asks; its CPU share is reported with every row, so a
//! saturated load side shows.
//!
//! Reported per row (measured over the window after a warm-up, from the raw counters):
//! throughput (replies per second, counted by the client); time to get one event (time in
//! `get_next_event` over the events it returned, blocking included, as the paper's Figs. 9
//! and 12); queue-insert time (Half-Sync's push, Fig. 9); re-activation time
//! ([`hintq::Rearm`]) and the handler's receive and send times per event, the three parts of
//! the processing time of the paper's Figs. 10 and 13; "again" (reports that found their
//! descriptor in flight); connections per thread.
//!
//! The client's sockets are moved to descriptor numbers above 2048 so the server's own stay
//! below `select`'s 1024. The rows written are the lab's E6 rows ([`Run::rows`]).

use crate::row::{self, Row};
use crate::sys;
use hintq::{Backend, Event, Interest, Queue, State};
use hintq_patterns::{start, Config, Counters, Cx, Handler, Next, Pattern, Role};
use std::cell::RefCell;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections, as in the paper.
pub const CONNS: usize = 512;
/// Request and reply size in bytes.
pub const MSG: usize = 64;
/// The backends of the sweep.
pub const BACKENDS: [Backend; 5] =
    [Backend::Select, Backend::Epoll, Backend::EpollEt, Backend::EpollOneshot, Backend::Uring];

/// What `hintq bench patterns` was asked for.
#[derive(Clone, Debug, Default)]
pub struct BenchConfig {
    /// Threads 1, 2, 4, one repetition, short windows: under a minute.
    pub quick: bool,
    /// CSV for the raw rows (default: `hintq-patterns-<unix time>.csv`).
    pub out: Option<PathBuf>,
    /// Busy-wait per request, microseconds.
    pub work_us: u64,
    /// Patterns (default all).
    pub patterns: Option<Vec<Pattern>>,
    /// Backends (default [`BACKENDS`]).
    pub backends: Option<Vec<Backend>>,
    /// Thread counts (default 1..=4; quick 1, 2, 4).
    pub threads: Option<Vec<usize>>,
    /// Repetitions (default 3; quick 1).
    pub reps: Option<u32>,
    /// CPU for the server's threads (default the first allowed).
    pub server_cpu: Option<usize>,
    /// CPU for the load generator (default the last allowed).
    pub client_cpu: Option<usize>,
    /// The command line, recorded in the CSV.
    pub command: String,
}

/// One measured run, before it becomes the lab's rows.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Pattern.
    pub pattern: String,
    /// Backend.
    pub backend: String,
    /// Threads (Half-Sync: workers, plus the asynchronous thread).
    pub threads: usize,
    /// Repetition.
    pub rep: u32,
    /// Measurement window, ns.
    pub window_ns: u64,
    /// Replies received by the client in the window.
    pub replies: u64,
    /// Server counters over the window, all threads.
    pub server: Counters,
    /// The handler's time in `read` and in `write` over the window, all threads.
    pub io: IoTimes,
    /// Server CPU ns over the window (process CPU minus the client thread's).
    pub server_cpu_ns: u64,
    /// Client thread CPU ns over the window.
    pub client_cpu_ns: u64,
    /// Connections accepted per thread, `a/b/c`.
    pub spread: String,
}

impl Run {
    /// Replies per second.
    pub fn throughput(&self) -> f64 {
        self.replies as f64 * 1e9 / self.window_ns.max(1) as f64
    }
    fn per(ns: u64, n: u64) -> Option<f64> {
        (n > 0).then(|| ns as f64 / n as f64)
    }
    /// ns in `get_next_event` per event it returned.
    pub fn wait_per_event(&self) -> Option<f64> {
        Self::per(self.server.wait_ns, self.server.events)
    }
    /// ns per work-queue insert.
    pub fn insert_ns(&self) -> Option<f64> {
        Self::per(self.server.insert_ns, self.server.inserts)
    }
    /// ns per re-activation.
    pub fn rearm_ns(&self) -> Option<f64> {
        Self::per(self.server.rearm_ns, self.server.rearms)
    }
    /// ns in the handler's `read` per handled event.
    pub fn recv_ns(&self) -> Option<f64> {
        Self::per(self.io.recv_ns, self.io.events)
    }
    /// ns in the handler's `write` per reply sent.
    pub fn send_ns(&self) -> Option<f64> {
        Self::per(self.io.send_ns, self.io.sends)
    }
    /// The client's share of its CPU.
    pub fn client_cpu(&self) -> f64 {
        self.client_cpu_ns as f64 / self.window_ns.max(1) as f64
    }
    /// Server CPU µs per reply.
    pub fn server_us_per_reply(&self) -> Option<f64> {
        Self::per(self.server_cpu_ns, self.replies).map(|v| v / 1000.0)
    }

    /// The lab's E6 rows of this run: series `pattern/backend`, against threads, the load
    /// generator's CPU share beside the server's figures; a time that does not apply (no re-activation on an edge-triggered backend) has no row.
    pub fn rows(&self) -> Vec<Row> {
        let series = format!("{}/{}", self.pattern, self.backend);
        [
            ("throughput_rps", Some(self.throughput())),
            ("wait_ns_per_event", self.wait_per_event()),
            ("insert_ns_per_op", self.insert_ns()),
            ("recv_ns_per_event", self.recv_ns()),
            ("rearm_ns_per_op", self.rearm_ns()),
            ("send_ns_per_op", self.send_ns()),
            ("server_us_per_reply", self.server_us_per_reply()),
            ("client_cpu_share", Some(self.client_cpu())),
        ]
        .into_iter()
        .filter_map(|(m, v)| {
            Some(Row { rep: self.rep, ..Row::ok("E6", &series, self.threads as f64, m, v?) })
        })
        .collect()
    }
}

/// The handler's receive and send times, summed over its threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoTimes {
    /// Handler calls timed.
    pub events: u64,
    /// ns inside their `read`.
    pub recv_ns: u64,
    /// Replies written.
    pub sends: u64,
    /// ns inside those `write`s.
    pub send_ns: u64,
}

impl IoTimes {
    fn since(self, before: IoTimes) -> IoTimes {
        IoTimes {
            events: self.events - before.events,
            recv_ns: self.recv_ns - before.recv_ns,
            sends: self.sends - before.sends,
            send_ns: self.send_ns - before.send_ns,
        }
    }
}

/// One thread's receive and send times: written by that thread only, read by the bench
/// thread at the window's edges. Aligned so two threads' slots never share a cache line.
#[derive(Default)]
#[repr(align(128))]
struct Slot {
    events: AtomicU64,
    recv_ns: AtomicU64,
    sends: AtomicU64,
    send_ns: AtomicU64,
}

impl Slot {
    fn add(&self, counter: &AtomicU64, v: u64) {
        counter.store(counter.load(Relaxed) + v, Relaxed);
    }
}

thread_local! {
    /// This thread's slot and the handler it is registered with (by address), made on the
    /// thread's first event for that handler.
    static SLOT: RefCell<Option<(usize, Arc<Slot>)>> = const { RefCell::new(None) };
}

/// The benchmark's handler: read the request, busy-wait, reply; the read and the write are
/// timed, per thread.
struct Reply {
    work: Duration,
    slots: Mutex<Vec<Arc<Slot>>>,
}

impl Reply {
    fn slot(&self) -> Arc<Slot> {
        let me = self as *const Reply as usize;
        SLOT.with(|s| {
            let mut s = s.borrow_mut();
            match &*s {
                Some((owner, slot)) if *owner == me => slot.clone(),
                _ => {
                    let slot = Arc::new(Slot::default());
                    self.slots.lock().unwrap_or_else(|e| e.into_inner()).push(slot.clone());
                    *s = Some((me, slot.clone()));
                    slot
                }
            }
        })
    }

    /// The sums over every thread so far.
    fn io(&self) -> IoTimes {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.iter().fold(IoTimes::default(), |t, s| IoTimes {
            events: t.events + s.events.load(Relaxed),
            recv_ns: t.recv_ns + s.recv_ns.load(Relaxed),
            sends: t.sends + s.sends.load(Relaxed),
            send_ns: t.send_ns + s.send_ns.load(Relaxed),
        })
    }
}

impl Handler for Reply {
    type Local = ();
    type Conn = ();
    fn accept(&self, _fd: RawFd) -> Option<()> {
        Some(())
    }
    fn event(&self, _cx: &mut Cx<'_, ()>, _c: &mut (), fd: RawFd, _s: State) -> Next {
        let slot = self.slot();
        let mut buf = [0u8; 4 * MSG];
        let t0 = Instant::now();
        // SAFETY: reads into a live local buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        slot.add(&slot.recv_ns, t0.elapsed().as_nanos() as u64);
        slot.add(&slot.events, 1);
        if n == 0 {
            return Next::Close;
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::WouldBlock { Next::Read } else { Next::Close };
        }
        if !self.work.is_zero() {
            let t = Instant::now();
            while t.elapsed() < self.work {
                std::hint::spin_loop();
            }
        }
        // One request in flight: a read shorter than the buffer drained the socket (the
        // edge-triggered rule), and the reply always fits the socket buffer.
        let t1 = Instant::now();
        // SAFETY: writes MSG bytes from a live local buffer.
        unsafe { libc::write(fd, buf.as_ptr().cast(), MSG) };
        slot.add(&slot.send_ns, t1.elapsed().as_nanos() as u64);
        slot.add(&slot.sends, 1);
        Next::Read
    }
}

fn process_cpu_ns() -> u64 {
    let (user, system) = hintq_sys::cpu_time(hintq_sys::Usage::Process);
    (user + system).as_nanos() as u64
}

/// Moves a descriptor to a number at or above 2048 (keeps the low ones for the server).
fn high(fd: OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: plain fcntl on a live descriptor.
    let n = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 2048) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `n` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}

/// The load side: `CONNS` connections driven by one thread over a hintq queue.
struct Client {
    q: Queue,
    conns: Vec<OwnedFd>,
}

impl Client {
    fn connect(addr: SocketAddr) -> io::Result<Client> {
        let mut q = Queue::new(Backend::Epoll)?;
        let mut conns = Vec::with_capacity(CONNS);
        for _ in 0..CONNS {
            let s = TcpStream::connect(addr)?;
            s.set_nodelay(true)?;
            s.set_nonblocking(true)?;
            let fd = high(OwnedFd::from(s))?;
            q.declare(fd.as_fd(), Interest::READ)?;
            conns.push(fd);
        }
        Ok(Client { q, conns })
    }

    /// Sends one request on every connection, then answers each reply with the next
    /// request until `until`; returns replies counted after `from`.
    fn run(&mut self, from: Instant, until: Instant) -> io::Result<(u64, u64, u64)> {
        let req = [7u8; MSG];
        for c in &self.conns {
            // SAFETY: writes MSG bytes from a live buffer.
            unsafe { libc::write(c.as_raw_fd(), req.as_ptr().cast(), MSG) };
        }
        let mut evs = [Event::default(); 256];
        let mut buf = [0u8; 4 * MSG];
        let (mut replies, mut cpu0, mut wall0) = (0u64, None, None);
        loop {
            let now = Instant::now();
            if now >= until {
                break;
            }
            if cpu0.is_none() && now >= from {
                cpu0 = Some(sys::thread_cpu_ns());
                wall0 = Some(now);
                replies = 0;
            }
            let n = self.q.get_next_event(&mut evs, Some(Duration::from_millis(10)))?;
            for ev in &evs[..n] {
                let fd = ev.fd();
                // SAFETY: reads into a live local buffer.
                let got = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                if got > 0 {
                    replies += (got as usize / MSG) as u64;
                    // SAFETY: as above.
                    unsafe { libc::write(fd, req.as_ptr().cast(), MSG) };
                } else if got == 0 {
                    return Err(io::Error::other("server closed a connection"));
                }
            }
        }
        // A thread starved past the whole window (a busy machine) measured nothing: say so
        // rather than divide the replies of the warm-up by no time.
        let (Some(wall0), Some(cpu0)) = (wall0, cpu0) else {
            return Err(io::Error::other("the load generator never ran inside the measurement window"));
        };
        Ok((replies, wall0.elapsed().as_nanos() as u64, sys::thread_cpu_ns() - cpu0))
    }

    /// Reads what is left so the server sees no half-answered requests, then closes all.
    fn close(mut self) {
        for c in self.conns.drain(..) {
            let _ = self.q.close(c);
        }
    }
}

fn diff(a: &[Counters], b: &[Counters]) -> Counters {
    let mut d = Counters::default();
    for (x, y) in a.iter().zip(b) {
        d.handled += y.handled - x.handled;
        d.again += y.again - x.again;
        d.waits += y.waits - x.waits;
        d.wait_ns += y.wait_ns - x.wait_ns;
        d.events += y.events - x.events;
        d.inserts += y.inserts - x.inserts;
        d.insert_ns += y.insert_ns - x.insert_ns;
        d.rearms += y.rearms - x.rearms;
        d.rearm_ns += y.rearm_ns - x.rearm_ns;
        d.busy_ns += y.busy_ns - x.busy_ns;
        d.wait_errors += y.wait_errors - x.wait_errors;
        d.interest_errors += y.interest_errors - x.interest_errors;
    }
    d
}

struct Point {
    pattern: Pattern,
    backend: Backend,
    threads: usize,
}

/// One run of one point.
fn measure(p: &Point, rep: u32, bc: &BenchConfig, cpus: (usize, usize)) -> io::Result<Run> {
    let (warm, window) = if bc.quick {
        (Duration::from_millis(100), Duration::from_millis(200))
    } else {
        (Duration::from_millis(300), Duration::from_secs(1))
    };
    let mut cfg = Config::new(p.pattern, p.threads, p.backend, "127.0.0.1:0".parse().expect("literal"));
    cfg.measure = true;
    cfg.max_fds = 2048;
    let server_cpu = cpus.0;
    cfg.on_thread_start = Some(Arc::new(move |_: Role, _| drop(hintq_sys::pin(server_cpu))));
    let reply = Arc::new(Reply { work: Duration::from_micros(bc.work_us), slots: Mutex::default() });
    let server = start(cfg, reply.clone())?;
    let addr = server.local_addr();
    let client_cpu = cpus.1;
    let client = std::thread::spawn(move || -> io::Result<_> {
        hintq_sys::pin(client_cpu)?;
        let mut c = Client::connect(addr)?;
        let from = Instant::now() + warm;
        let r = c.run(from, from + window);
        c.close();
        r
    });
    // Server counters over the client's window: sampled at its edges from this thread.
    std::thread::sleep(warm);
    let (s0, io0, cpu0) = (server.stats(), reply.io(), process_cpu_ns());
    std::thread::sleep(window);
    let (s1, io1, cpu1) = (server.stats(), reply.io(), process_cpu_ns());
    let (replies, wall, client_cpu_ns) = client.join().map_err(|_| io::Error::other("client panicked"))??;
    let stats = server.shutdown();
    let spread: Vec<String> = stats.iter().map(|s| s.accepted.to_string()).collect();
    Ok(Run {
        pattern: p.pattern.name().into(),
        backend: p.backend.name().into(),
        threads: p.threads,
        rep,
        window_ns: wall,
        replies,
        server: diff(&s0, &s1),
        io: io1.since(io0),
        server_cpu_ns: (cpu1 - cpu0).saturating_sub(client_cpu_ns),
        client_cpu_ns,
        spread: spread.join("/"),
    })
}

/// Runs the sweep, writes the lab's E6 rows as they are measured, prints their summary;
/// returns them.
///
/// # Errors
/// Pinning, descriptors, a server that cannot start, a client that fails.
pub fn run(bc: &BenchConfig) -> io::Result<Vec<Row>> {
    let started = Instant::now();
    hintq_sys::raise_nofile()?;
    let allowed = hintq_sys::affinity()?;
    let cpus = (
        bc.server_cpu.or(allowed.first().copied()).unwrap_or(0),
        bc.client_cpu.or(allowed.last().copied()).unwrap_or(0),
    );
    let patterns = bc.patterns.clone().unwrap_or_else(|| Pattern::ALL.to_vec());
    let threads =
        bc.threads.clone().unwrap_or_else(|| if bc.quick { vec![1, 2, 4] } else { vec![1, 2, 3, 4] });
    let reps = bc.reps.unwrap_or(if bc.quick { 1 } else { 3 });
    let mut notes = Vec::new();
    let mut backends = Vec::new();
    for b in bc.backends.clone().unwrap_or_else(|| BACKENDS.to_vec()) {
        match b.probe() {
            Ok(()) => backends.push(b),
            Err(why) => notes.push(format!("skipped {b}: {why}")),
        }
    }
    let mut points = Vec::new();
    for &pattern in &patterns {
        for &backend in &backends {
            let ts: &[usize] = if pattern == Pattern::Reactor { &[1] } else { &threads };
            points.extend(ts.iter().map(|&threads| Point { pattern, backend, threads }));
        }
    }
    println!(
        "{} points x {reps} repetitions, {CONNS} connections, {MSG}-byte messages, work {} us; server on CPU {}, \
         load generator on CPU {}",
        points.len(),
        bc.work_us,
        cpus.0,
        cpus.1
    );
    notes.iter().for_each(|n| println!("{n}"));
    let csv = bc.out.clone().unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        PathBuf::from(format!("hintq-patterns-{t}.csv"))
    });
    let meta: Vec<(String, String)> = vec![
        ("command".into(), bc.command.clone()),
        ("kernel".into(), sys::kernel_release()),
        ("cpus allowed".into(), format!("{allowed:?}")),
        ("pinning".into(), format!("server threads on CPU {}, load generator thread on CPU {}", cpus.0, cpus.1)),
        ("method".into(), format!("{CONNS} persistent loopback TCP connections, one {MSG}-byte request in flight each, handler reads, busy-waits {} us, replies {MSG} bytes; load generator = one thread, hintq Queue on epoll; warm-up then window ({}); server counters sampled at the window edges; wait_ns includes blocking", bc.work_us, if bc.quick { "100 ms + 200 ms" } else { "300 ms + 1 s" })),
        ("threads".into(), "half-sync: workers, beside the asynchronous thread; reactor: 1".into()),
        ("loadavg before".into(), crate::loadavg()),
    ];
    // Rows are written as they are measured, so an interrupted run keeps what it measured.
    let mut w = crate::create_csv(&csv)?;
    for (k, v) in &meta {
        writeln!(w, "# {k}: {}", v.replace('\n', " "))?;
    }
    writeln!(w, "{}", row::COLUMNS)?;
    w.flush()?;
    let mut rows = Vec::new();
    for rep in 0..reps {
        for p in &points {
            let row = measure(p, rep, bc, cpus)?;
            println!(
                "  {:<16} {:<13} {} threads rep {rep}: {:>8.0} replies/s, client CPU {:>3.0}%",
                row.pattern,
                row.backend,
                row.threads,
                row.throughput(),
                row.client_cpu() * 100.0
            );
            for r in row.rows() {
                writeln!(w, "{}", row::line(&r))?;
                rows.push(r);
            }
            w.flush()?;
        }
    }
    writeln!(w, "# loadavg after: {}", crate::loadavg())?;
    writeln!(w, "# duration: {:.1} s", started.elapsed().as_secs_f64())?;
    w.flush()?;
    print!("{}", row::summary(&rows));
    notes.iter().for_each(|n| println!("{n}"));
    println!("{} rows written to {} in {:.1} s", rows.len(), csv.display(), started.elapsed().as_secs_f64());
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run gives one row per figure of the paper's it has, series `pattern/backend` against
    /// threads; no re-activation on an edge-triggered backend, so no row for it.
    #[test]
    fn a_run_becomes_the_lab_s_rows_without_the_times_that_do_not_apply() {
        let mut r = Run {
            pattern: "leader-followers".into(),
            backend: "epoll-et".into(),
            threads: 2,
            rep: 1,
            window_ns: 1_000_000_000,
            replies: 120_000,
            server_cpu_ns: 600_000_000,
            client_cpu_ns: 500_000_000,
            ..Run::default()
        };
        (r.server.waits, r.server.wait_ns, r.server.events) = (10, 80_000, 100);
        let rows = r.rows();
        let got: Vec<(&str, f64)> = rows.iter().map(|r| (r.metric.as_str(), r.value.unwrap())).collect();
        assert_eq!(
            got,
            [
                ("throughput_rps", 120_000.0),
                ("wait_ns_per_event", 800.0),
                ("server_us_per_reply", 5.0),
                ("client_cpu_share", 0.5)
            ]
        );
        assert!(rows.iter().all(|r| r.experiment == "E6"
            && r.series == "leader-followers/epoll-et"
            && r.x == 2.0
            && r.rep == 1));
    }
}
