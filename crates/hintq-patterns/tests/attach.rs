//! Connections that own more than one descriptor: a handler attaches one end of a
//! socketpair to its connection (as the proxy attaches its upstream socket), gets that end's
//! events on the same connection state, parks it with the thread when done (its events then
//! reach `local_event` with the thread's own local state), and the runtime closes what is
//! attached when the connection closes. Plus `Server::drain`, and the thread-pool patterns
//! refusing to attach.

use hintq::{Backend, Interest, State};
use hintq_patterns::{open_fds, start, Config, Cx, Handler, Next, Pattern};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// Tests run one at a time: they count the process's descriptors.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Each line a client sends goes out through one end of a fresh socketpair, comes back on
/// the other end (attached to the connection), and is answered `via <line>`.
#[derive(Default)]
struct Pipe {
    /// `local_event` calls: a parked end saw its peer close.
    parked_events: AtomicU64,
    /// Callbacks whose local state belonged to another thread.
    foreign_local: AtomicU64,
    /// Two threads in one connection's callbacks at once.
    overlaps: AtomicU64,
}

struct Local {
    owner: ThreadId,
}

impl Default for Local {
    fn default() -> Self {
        Local { owner: std::thread::current().id() }
    }
}

#[derive(Default)]
struct Conn {
    /// The end the handler writes to; dropped to make the attached end see a close.
    peer: Option<OwnedFd>,
    attached: Option<RawFd>,
    busy: Arc<AtomicBool>,
}

fn read(fd: RawFd) -> Option<Vec<u8>> {
    let mut buf = [0u8; 256];
    // SAFETY: reads into a live local buffer.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    (n >= 0).then(|| buf[..n as usize].to_vec())
}

fn write(fd: RawFd, b: &[u8]) {
    // SAFETY: writes from a live slice; the lines are small, the buffers never fill.
    unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
}

fn socketpair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    let ty = libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::socketpair(libc::AF_UNIX, ty, 0, fds.as_mut_ptr()) }, 0);
    // SAFETY: both were just created and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

impl Handler for Pipe {
    type Conn = Conn;
    type Local = Local;

    fn accept(&self, _fd: RawFd) -> Option<Conn> {
        Some(Conn::default())
    }

    fn event(&self, cx: &mut Cx<'_, Local>, c: &mut Conn, fd: RawFd, _state: State) -> Next {
        if c.busy.swap(true, SeqCst) {
            self.overlaps.fetch_add(1, SeqCst);
        }
        if cx.local().owner != std::thread::current().id() {
            self.foreign_local.fetch_add(1, SeqCst);
        }
        let next = self.step(cx, c, fd);
        c.busy.store(false, SeqCst);
        next
    }

    fn local_event(&self, cx: &mut Cx<'_, Local>, fd: RawFd, _state: State) {
        if cx.local().owner != std::thread::current().id() {
            self.foreign_local.fetch_add(1, SeqCst);
        }
        self.parked_events.fetch_add(1, SeqCst);
        assert!(cx.fds().close(fd), "a parked descriptor is closed through Fds");
    }
}

impl Pipe {
    fn step(&self, cx: &mut Cx<'_, Local>, c: &mut Conn, fd: RawFd) -> Next {
        let fds = cx.fds();
        if Some(fd) == fds.conn_fd() {
            if fds.draining() {
                return Next::Close;
            }
            let line = match read(fd) {
                Some(l) if l.is_empty() => return Next::Close,
                Some(l) => l,
                None => return Next::Read,
            };
            let (a, b) = socketpair();
            match fds.attach(a, Interest::READ) {
                Ok(a) => c.attached = Some(a),
                Err(e) => {
                    write(fd, format!("ERR {:?}\n", e.kind()).as_bytes());
                    return Next::Read;
                }
            }
            if line.starts_with(b"hold") {
                // Keep it attached and quiet; watch the client for its close.
                c.peer = Some(b);
                return Next::Read;
            }
            write(b.as_raw_fd(), &line);
            c.peer = Some(b);
            // The client is not watched until the attached end answers.
            return Next::Wait;
        }
        assert_eq!(Some(fd), c.attached, "an event for a descriptor the connection does not own");
        let Some(conn_fd) = fds.conn_fd() else { return Next::Close };
        let line = read(fd).unwrap_or_default();
        let mut reply = b"via ".to_vec();
        reply.extend_from_slice(&line);
        write(conn_fd, &reply);
        // Done with it: park it with the thread, then close its peer, so that the parked end
        // reports the close to `local_event`.
        assert!(fds.park(fd));
        c.attached = None;
        c.peer = None;
        Next::Read
    }
}

fn config(p: Pattern, b: Backend) -> Config {
    let mut cfg =
        Config::new(p, if p == Pattern::Reactor { 1 } else { 2 }, b, "127.0.0.1:0".parse().unwrap());
    cfg.tick = Duration::from_millis(20);
    cfg.max_fds = 4096;
    cfg
}

fn eventually(what: &str, f: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn ask(r: &mut BufReader<TcpStream>, line: &str) -> String {
    r.get_mut().write_all(line.as_bytes()).unwrap();
    let mut got = String::new();
    r.read_line(&mut got).unwrap();
    got
}

fn client(addr: std::net::SocketAddr) -> BufReader<TcpStream> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    BufReader::new(s)
}

const OWN_QUEUE: [Pattern; 3] = [Pattern::Reactor, Pattern::Sharded, Pattern::ShardedShared];

#[test]
fn attached_descriptors_reach_their_connection_and_parked_ones_their_thread() {
    let _one = serial();
    for b in Backend::ALL {
        if !hintq_testkit::runs(&format!("attached descriptors on {b}"), b.probe()) {
            continue;
        }
        for p in OWN_QUEUE {
            let before = open_fds();
            let h = Arc::new(Pipe::default());
            let srv = start(config(p, b), Arc::clone(&h)).unwrap();
            let addr = srv.local_addr();
            let clients: Vec<_> = (0..4)
                .map(|i| {
                    std::thread::spawn(move || {
                        let mut c = client(addr);
                        for round in 0..3 {
                            let line = format!("hello {i}.{round}\n");
                            assert_eq!(ask(&mut c, &line), format!("via {line}"));
                        }
                    })
                })
                .collect();
            for t in clients {
                t.join().unwrap_or_else(|_| panic!("{b}/{p}: a client failed"));
            }
            eventually(&format!("{b}/{p}: 12 parked ends report their peer's close"), || {
                h.parked_events.load(SeqCst) == 12
            });
            assert_eq!(h.overlaps.load(SeqCst), 0, "{b}/{p}");
            assert_eq!(h.foreign_local.load(SeqCst), 0, "{b}/{p}: local state is the thread's own");
            srv.shutdown();
            assert_eq!(open_fds(), before, "{b}/{p}: every descriptor closed");
        }
    }
}

#[test]
fn closing_a_connection_closes_what_is_attached_to_it() {
    let _one = serial();
    for p in OWN_QUEUE {
        let srv = start(config(p, Backend::Epoll), Arc::new(Pipe::default())).unwrap();
        let serving = open_fds();
        let mut c = client(srv.local_addr());
        c.get_mut().write_all(b"hold\n").unwrap();
        // The connection, the attached end and its peer.
        eventually(&format!("{p}: attached"), || open_fds() == serving + 4);
        drop(c);
        eventually(&format!("{p}: the attached end closed with its connection"), || open_fds() == serving);
        srv.shutdown();
    }
}

#[test]
fn thread_pool_patterns_refuse_to_attach() {
    let _one = serial();
    for p in [Pattern::LeaderFollowers, Pattern::HalfSync] {
        let srv = start(config(p, Backend::Epoll), Arc::new(Pipe::default())).unwrap();
        let mut c = client(srv.local_addr());
        assert_eq!(ask(&mut c, "hello\n"), "ERR Unsupported\n", "{p}");
        srv.shutdown();
    }
}

#[test]
fn drain_closes_the_listener_and_shows_every_connection_the_drain() {
    let _one = serial();
    for p in Pattern::ALL {
        let srv = start(config(p, Backend::Epoll), Arc::new(Pipe::default())).unwrap();
        let addr = srv.local_addr();
        let mut idle = client(addr);
        if OWN_QUEUE.contains(&p) {
            assert_eq!(ask(&mut idle, "x\n"), "via x\n", "{p}");
        }
        // Accepted (a connection still in the backlog is reset when the listener closes).
        eventually(&format!("{p}: accepted"), || srv.stats().iter().map(|c| c.accepted).sum::<u64>() == 1);
        srv.drain();
        let mut rest = String::new();
        assert_eq!(idle.read_line(&mut rest).unwrap(), 0, "{p}: an idle connection is closed by the drain");
        eventually(&format!("{p}: new connections refused"), || TcpStream::connect(addr).is_err());
        srv.shutdown();
    }
}
