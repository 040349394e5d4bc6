//! Every pattern on every backend the kernel has: each connection handled exactly once (its
//! requests all answered, its accept and close each seen once), never two threads in one
//! connection's handler at once, deadlines, adaptive growth, and shutdown under load
//! without descriptor leaks.

use hintq::{Backend, State};
use hintq_patterns::{open_fds, start, Adaptive, Config, Cx, Handler, Next, Pattern, Why};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Tests run one at a time: they count the process's descriptors.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const BACKENDS: [Backend; 5] =
    [Backend::Epoll, Backend::EpollEt, Backend::EpollOneshot, Backend::Select, Backend::Uring];

/// Echoes 8-byte requests; checks that no two threads are in one connection at once.
#[derive(Default)]
struct Echo {
    accepted: AtomicU64,
    closed: AtomicU64,
    replies: AtomicU64,
    overlaps: AtomicU64,
    idle: Option<Duration>,
    /// The first accept sleeps this long, so that connections pile up in the backlog.
    stall: Option<Duration>,
    by_id: Mutex<HashMap<u64, u32>>,
    next_id: AtomicU64,
}

struct Conn {
    id: u64,
    busy: Arc<AtomicBool>,
    last: Instant,
}

impl Handler for Echo {
    type Local = ();
    type Conn = Conn;
    fn accept(&self, _fd: RawFd) -> Option<Conn> {
        self.accepted.fetch_add(1, SeqCst);
        let id = self.next_id.fetch_add(1, SeqCst);
        if let Some(d) = self.stall.filter(|_| id == 0) {
            std::thread::sleep(d);
        }
        self.by_id.lock().unwrap().insert(id, 0);
        Some(Conn { id, busy: Arc::new(AtomicBool::new(false)), last: Instant::now() })
    }
    fn event(&self, _cx: &mut Cx<'_, ()>, conn: &mut Conn, fd: RawFd, _state: State) -> Next {
        if conn.busy.swap(true, SeqCst) {
            self.overlaps.fetch_add(1, SeqCst);
        }
        conn.last = Instant::now();
        let mut buf = [0u8; 64];
        let next = loop {
            // SAFETY: reads into a live local buffer.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n == 0 {
                break Next::Close;
            }
            if n < 0 {
                let e = std::io::Error::last_os_error();
                break if e.kind() == std::io::ErrorKind::WouldBlock { Next::Read } else { Next::Close };
            }
            // SAFETY: writes the bytes just read; replies are small, the buffer never fills.
            unsafe { libc::write(fd, buf.as_ptr().cast(), n as usize) };
            self.replies.fetch_add(n as u64 / 8, SeqCst);
            if (n as usize) < buf.len() {
                break Next::Read;
            }
        };
        conn.busy.store(false, SeqCst);
        next
    }
    fn close(&self, conn: Conn, _fd: RawFd, _why: Why) {
        self.closed.fetch_add(1, SeqCst);
        *self.by_id.lock().unwrap().get_mut(&conn.id).unwrap() += 1;
    }
    fn deadline(&self, conn: &Conn) -> Option<Instant> {
        self.idle.map(|d| conn.last + d)
    }
}

fn cases() -> Vec<(Pattern, Backend, usize)> {
    let mut v = Vec::new();
    for b in BACKENDS {
        if !hintq_testkit::runs(&format!("patterns on {b}"), b.probe()) {
            continue;
        }
        for p in Pattern::ALL {
            v.push((p, b, if p == Pattern::Reactor { 1 } else { 3 }));
        }
    }
    v
}

fn config(p: Pattern, b: Backend, n: usize) -> Config {
    let mut cfg = Config::new(p, n, b, "127.0.0.1:0".parse().unwrap());
    cfg.tick = Duration::from_millis(20);
    cfg.max_fds = 4096;
    cfg
}

/// `conns` clients, each sending `rounds` requests one at a time and checking the echo.
fn load(addr: std::net::SocketAddr, conns: usize, rounds: usize) {
    let threads: Vec<_> = (0..conns)
        .map(|c| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                for r in 0..rounds {
                    let msg = ((c * 1_000_000 + r) as u64).to_le_bytes();
                    s.write_all(&msg).unwrap();
                    let mut back = [0u8; 8];
                    s.read_exact(&mut back).unwrap();
                    assert_eq!(back, msg);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
}

fn wait_until(what: &str, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn every_connection_handled_exactly_once_and_never_concurrently() {
    let _serial = serial();
    for (p, b, n) in cases() {
        println!("{p} on {b}, {n} threads");
        let fds_before = open_fds();
        let h = Arc::new(Echo::default());
        let server = start(config(p, b, n), Arc::clone(&h)).unwrap();
        load(server.local_addr(), 24, 40);
        wait_until("closes", || h.closed.load(SeqCst) == 24);
        let stats = server.shutdown();
        let label = format!("{p} on {b}");
        assert_eq!(h.accepted.load(SeqCst), 24, "{label}: accepts");
        assert_eq!(h.replies.load(SeqCst), 24 * 40, "{label}: replies");
        assert_eq!(h.overlaps.load(SeqCst), 0, "{label}: two threads in one handler");
        assert!(h.by_id.lock().unwrap().values().all(|&c| c == 1), "{label}: a close not seen exactly once");
        assert_eq!(stats.iter().map(|s| s.accepted).sum::<u64>(), 24, "{label}");
        assert_eq!(open_fds(), fds_before, "{label}: descriptors leaked");
    }
}

#[test]
fn shutdown_under_load_closes_everything() {
    let _serial = serial();
    for (p, b, n) in cases() {
        println!("{p} on {b}, {n} threads");
        let fds_before = open_fds();
        let h = Arc::new(Echo::default());
        let server = start(config(p, b, n), Arc::clone(&h)).unwrap();
        let addr = server.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..8)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let Ok(mut s) = TcpStream::connect(addr) else { return };
                    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                    let mut buf = [0u8; 8];
                    while !stop.load(SeqCst) {
                        if s.write_all(&[1; 8]).is_err() || s.read_exact(&mut buf).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        wait_until("load", || h.replies.load(SeqCst) > 200);
        server.shutdown();
        let label = format!("{p} on {b}");
        assert_eq!(
            h.accepted.load(SeqCst),
            h.closed.load(SeqCst),
            "{label}: every accepted connection closed once"
        );
        assert_eq!(h.overlaps.load(SeqCst), 0, "{label}");
        stop.store(true, SeqCst);
        clients.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(open_fds(), fds_before, "{label}: descriptors leaked");
    }
}

/// More connections pending at once than one accept batch takes (64): the rest are accepted
/// without waiting for another arrival, on edge-triggered backends too.
#[test]
fn a_backlog_larger_than_one_batch_is_accepted_whole() {
    let _serial = serial();
    for (p, b, n) in cases() {
        let h = Arc::new(Echo { stall: Some(Duration::from_millis(300)), ..Echo::default() });
        let server = start(config(p, b, n), Arc::clone(&h)).unwrap();
        let clients: Vec<_> = (0..200).map(|_| TcpStream::connect(server.local_addr()).unwrap()).collect();
        let t = Instant::now();
        while h.accepted.load(SeqCst) < 200 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(h.accepted.load(SeqCst), 200, "{p} on {b}: pending connections left in the backlog");
        drop(clients);
        server.shutdown();
    }
}

#[test]
fn idle_connections_time_out() {
    let _serial = serial();
    for (p, b, n) in cases() {
        let h = Arc::new(Echo { idle: Some(Duration::from_millis(50)), ..Echo::default() });
        let server = start(config(p, b, n), Arc::clone(&h)).unwrap();
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 1];
        let got = loop {
            match s.read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => break r.unwrap(),
            }
        };
        assert_eq!(got, 0, "{p} on {b}: idle connection not closed");
        assert_eq!(h.closed.load(SeqCst), 1, "{p} on {b}");
        server.shutdown();
    }
}

/// A connection kept busy outlives many idle periods (its deadline moves later with every
/// request, and the timer set for an earlier one must look again, not close), is closed
/// once it stops, and a later connection on the same descriptor number does not inherit
/// the earlier one's timer.
#[test]
fn deadlines_follow_activity_and_do_not_outlive_their_connection() {
    let _serial = serial();
    for (p, b, n) in cases() {
        let idle = Duration::from_millis(100);
        let h = Arc::new(Echo { idle: Some(idle), ..Echo::default() });
        let server = start(config(p, b, n), Arc::clone(&h)).unwrap();
        for round in 0..2 {
            let mut s = TcpStream::connect(server.local_addr()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let began = Instant::now();
            let mut buf = [0u8; 8];
            let mut last_sent = began;
            // Busy for four idle periods: a request every third of one.
            while began.elapsed() < idle * 4 {
                last_sent = Instant::now();
                s.write_all(b"12345678").unwrap();
                s.read_exact(&mut buf)
                    .unwrap_or_else(|e| panic!("{p} on {b} round {round}: closed while busy: {e}"));
                std::thread::sleep(idle / 3);
            }
            let got = loop {
                match s.read(&mut buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => break r.unwrap(),
                }
            };
            assert_eq!(got, 0, "{p} on {b} round {round}: idle connection not closed");
            // The server saw the last request after it was sent, so its deadline is at least
            // an idle period after that (measured from the send, not from the end of the
            // sleep, which a busy machine may stretch).
            let quiet = last_sent.elapsed();
            assert!(quiet >= idle, "{p} on {b} round {round}: closed {quiet:?} after the last request");
        }
        assert_eq!(h.closed.load(SeqCst), 2, "{p} on {b}");
        server.shutdown();
    }
}

#[test]
fn sharded_spreads_connections_and_reports_it() {
    let _serial = serial();
    for p in [Pattern::Sharded, Pattern::ShardedShared] {
        let h = Arc::new(Echo::default());
        let server = start(config(p, Backend::Epoll, 4), Arc::clone(&h)).unwrap();
        load(server.local_addr(), 64, 2);
        let per: Vec<u64> = server.stats().iter().map(|s| s.accepted).collect();
        println!("{p}: connections per thread {per:?}");
        assert_eq!(per.iter().sum::<u64>(), 64, "{p}");
        server.shutdown();
    }
}

/// `Config::reuseport` (what a worker of `--processes` runs with): every pattern's listener
/// admits a second `SO_REUSEPORT` listener on its port, as another worker process binds one;
/// without it, only the sharded pattern's does. Two servers of one pattern on one port both
/// serve.
#[test]
fn reuseport_lets_another_listener_share_the_port_on_every_pattern() {
    let _serial = serial();
    for p in Pattern::ALL {
        let mut cfg = config(p, Backend::Epoll, 2);
        let plain = start(cfg.clone(), Arc::new(Echo::default())).unwrap();
        let shared = hintq_patterns::listen(plain.local_addr(), true);
        assert_eq!(shared.is_ok(), p == Pattern::Sharded, "{p} without reuseport");
        drop((shared, plain.shutdown()));
        cfg.reuseport = true;
        let (h1, h2) = (Arc::new(Echo::default()), Arc::new(Echo::default()));
        let first = start(cfg.clone(), Arc::clone(&h1)).unwrap();
        cfg.listen = first.local_addr();
        let second = start(cfg, Arc::clone(&h2)).unwrap();
        load(first.local_addr(), 64, 1);
        let (a, b) = (h1.accepted.load(SeqCst), h2.accepted.load(SeqCst));
        assert_eq!(a + b, 64, "{p}");
        assert!(a > 0 && b > 0, "{p}: both servers on the port serve ({a} and {b})");
        first.shutdown();
        second.shutdown();
    }
}

/// Slow handler: the adaptive policy must grow the pool from its minimum.
struct Slow;
impl Handler for Slow {
    type Local = ();
    type Conn = ();
    fn accept(&self, _fd: RawFd) -> Option<()> {
        Some(())
    }
    fn event(&self, cx: &mut Cx<'_, ()>, _c: &mut (), fd: RawFd, s: State) -> Next {
        let t = Instant::now();
        while t.elapsed() < Duration::from_micros(300) {}
        Echo::default().event(cx, &mut Conn { id: 0, busy: Arc::default(), last: t }, fd, s)
    }
}

#[test]
fn adaptive_pool_grows_under_load_and_shrinks_when_idle() {
    let _serial = serial();
    for p in [Pattern::LeaderFollowers, Pattern::HalfSync] {
        let mut cfg = config(p, Backend::Epoll, 3);
        cfg.adaptive = Some(Adaptive { interval: Duration::from_millis(20), ..Adaptive::default() });
        let server = start(cfg, Arc::new(Slow)).unwrap();
        assert_eq!(server.active_threads(), 1);
        let addr = server.local_addr();
        let mut max = 1;
        let t = std::thread::spawn(move || load(addr, 16, 200));
        while !t.is_finished() {
            max = max.max(server.active_threads());
            std::thread::sleep(Duration::from_millis(5));
        }
        t.join().unwrap();
        assert!(max > 1, "{p}: never grew");
        wait_until("shrink", || server.active_threads() == 1);
        server.shutdown();
    }
}

#[test]
fn measuring_counts_and_times_declares_and_revokes() {
    let _g = serial();
    for b in [Backend::Epoll, Backend::Uring] {
        if !hintq_testkit::runs(&format!("declare timing on {b}"), b.probe()) {
            continue;
        }
        let mut cfg = config(Pattern::Reactor, b, 1);
        cfg.measure = true;
        let echo = Arc::new(Echo::default());
        let server = start(cfg, Arc::clone(&echo)).unwrap();
        load(server.local_addr(), 8, 10);
        wait_until("every close", || echo.closed.load(SeqCst) == 8);
        let c = server.shutdown()[0];
        // Each accepted connection is a new registration, each client's close a revoke.
        assert!(c.declares_new >= 8 && c.declares >= c.declares_new, "{b}: {c:?}");
        assert!(c.revokes >= 8, "{b}: {c:?}");
        assert!(c.declare_ns > 0 && c.declare_new_ns > 0 && c.revoke_ns > 0, "{b}: untimed: {c:?}");
        assert!(c.declare_new_ns <= c.declare_ns, "{b}: {c:?}");
    }
}

#[test]
fn array_max_bounds_the_events_of_one_call_and_probing_splits_the_waits() {
    let _g = serial();
    // The first accept stalls while the other clients connect and send: after it, their
    // requests are all ready at once, more than two of them.
    for (array_max, bounded) in [(2, true), (Config::ARRAY_MAX, false)] {
        let mut cfg = config(Pattern::Reactor, Backend::Epoll, 1);
        (cfg.array_max, cfg.measure, cfg.probe_waits) = (array_max, true, true);
        let echo = Arc::new(Echo { stall: Some(Duration::from_millis(300)), ..Echo::default() });
        let server = start(cfg, Arc::clone(&echo)).unwrap();
        load(server.local_addr(), 16, 3);
        let c = server.shutdown()[0];
        if bounded {
            assert!((1..=2).contains(&c.most_events), "array_max 2: {c:?}");
        } else {
            assert!(c.most_events > 2, "the setup must batch more than two events: {c:?}");
        }
        assert_eq!(c.ready_waits + c.blocked_waits, c.waits, "{c:?}");
        assert!(c.ready_waits > 0 && c.ready_events >= c.ready_waits && c.ready_events <= c.events, "{c:?}");
        assert!(c.ready_events <= array_max as u64 * c.ready_waits, "{c:?}");
        assert!(c.ready_ns > 0 && (c.blocked_waits == 0 || c.blocked_ns > 0), "{c:?}");
    }
}

/// Echoes what it gets, through the ring where it can (receives taken from the ring, replies
/// sent by it) and records whether the ring did either.
#[derive(Default)]
struct RingEcho {
    ring_sent: AtomicU64,
    ring_received: AtomicU64,
    replies: AtomicU64,
}

impl Handler for RingEcho {
    type Local = ();
    type Conn = ();
    fn accept(&self, _fd: RawFd) -> Option<()> {
        Some(())
    }
    fn receives(&self) -> bool {
        true
    }
    fn event(&self, cx: &mut Cx<'_, ()>, _conn: &mut (), fd: RawFd, state: State) -> Next {
        let fds = cx.fds();
        if state.contains(State::SENT) {
            return Next::Read;
        }
        let mut buf = Vec::new();
        let n = match fds.ring_io().and_then(|mut r| r.take_received(fd, &mut buf, 64)) {
            Some(Ok(n)) => {
                self.ring_received.fetch_add(1, SeqCst);
                n
            }
            Some(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => return Next::Read,
            Some(Err(_)) => return Next::Close,
            None => {
                buf.resize(64, 0);
                // SAFETY: reads into a live buffer of its length.
                let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                if n < 0 {
                    let e = std::io::Error::last_os_error();
                    return if e.kind() == std::io::ErrorKind::WouldBlock { Next::Read } else { Next::Close };
                }
                buf.truncate(n as usize);
                n as usize
            }
        };
        if n == 0 {
            return Next::Close;
        }
        self.replies.fetch_add(1, SeqCst);
        if let Some(mut ring) = fds.ring_io().filter(hintq::RingIo::can_send) {
            self.ring_sent.fetch_add(1, SeqCst);
            if ring.send(fd, buf).is_err() {
                return Next::Close;
            }
        } else {
            // SAFETY: writes the bytes just read; replies are small, the buffer never fills.
            unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        }
        Next::Read
    }
}

#[test]
fn uring_sends_and_receives_can_be_turned_off_and_the_server_still_answers() {
    let _g = serial();
    if !hintq_testkit::runs("ring sends and receives", Backend::Uring.probe()) {
        return;
    }
    for (sends, receives) in [(true, true), (false, true), (true, false), (false, false)] {
        let mut cfg = config(Pattern::Reactor, Backend::Uring, 1);
        cfg.uring_sends = sends;
        cfg.uring_receives = receives;
        cfg.uring_defer = sends;
        assert_eq!(cfg.ring_sends(), sends && Backend::Uring.sends(), "ring_sends follows uring_sends");
        let h = Arc::new(RingEcho::default());
        let server = start(cfg, Arc::clone(&h)).unwrap();
        load(server.local_addr(), 4, 10);
        let what = format!("sends {sends}, receives {receives}");
        assert_eq!(h.replies.load(SeqCst), 40, "{what}: every request answered once");
        if !sends || !Backend::Uring.sends() {
            assert_eq!(h.ring_sent.load(SeqCst), 0, "{what}: no reply sent by the ring");
        } else {
            assert_eq!(h.ring_sent.load(SeqCst), 40, "{what}: every reply sent by the ring");
        }
        if !receives {
            assert_eq!(h.ring_received.load(SeqCst), 0, "{what}: nothing received by the ring");
        }
        server.shutdown();
    }
}
