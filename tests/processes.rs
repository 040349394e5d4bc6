//! `hintq serve --processes N` and `hintq proxy --processes N`: a supervisor and N worker
//! processes, each with its own `SO_REUSEPORT` listener on one address. Checked end to end on
//! the binary (here, not in `crates/hintq-serve/tests`, because only this package's tests
//! can run the `hintq` binary), at a small scale, on both servers:
//!
//! * connections spread over the workers: which worker holds a connection is read from
//!   `/proc` (the worker's descriptors matched to the established sockets of the port);
//! * SIGTERM to the supervisor drains every worker: responses in flight, on connections held
//!   by several workers, arrive whole, every process exits, and the exit status is 0;
//! * a worker killed with SIGKILL is reported with its pid and signal, the others serve every
//!   new connection, and the supervisor's exit status then says that not all ended cleanly;
//! * each worker's descriptors are back to their baseline once the clients are gone;
//! * a supervisor killed with SIGKILL leaves no worker serving (`PR_SET_PDEATHSIG`).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The body of `/big.bin`: more than the socket buffers on the way hold, so a client that
/// does not read keeps its response in flight.
const BIG: usize = 16 << 20;

/// A served directory with `a.txt` ("hello\n") and `big.bin`.
struct Root(PathBuf);

impl Root {
    fn new(case: &str) -> Root {
        let dir = std::env::temp_dir().join(format!("hintq-processes-{}-{case}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "hello\n").unwrap();
        std::fs::write(dir.join("big.bin"), vec![b'b'; BIG]).unwrap();
        Root(dir)
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `hintq serve` or `hintq proxy`, its standard error collected line by line.
struct Hintq {
    child: Child,
    addr: SocketAddr,
    /// The worker pids the supervisor announced (empty for a single process).
    pids: Vec<i32>,
    lines: Arc<Mutex<Vec<String>>>,
}

/// Each test starts up to six processes: one test at a time on this small machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hintq {
    fn start(args: &[&str]) -> Hintq {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hintq"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let out = BufReader::new(child.stderr.take().unwrap());
        let l = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                eprintln!("  | {line}");
                l.lock().unwrap().push(line);
            }
        });
        let mut h = Hintq { child, addr: "0.0.0.0:0".parse().unwrap(), pids: Vec::new(), lines };
        let announce = h.wait_line(|l| l.contains(" on http://") || l.contains("listening on "));
        let addr = announce.split(" on http://").nth(1).or_else(|| announce.split("listening on ").nth(1));
        h.addr = addr.unwrap().split([' ', ',']).next().unwrap().parse().unwrap();
        if args.contains(&"--processes") {
            let line = h.wait_line(|l| l.contains("worker processes "));
            let list = line.split("worker processes ").nth(1).unwrap().split(';').next().unwrap();
            h.pids = list.split(' ').map(|p| p.parse().unwrap()).collect();
        }
        h
    }

    /// Waits (up to 10 s) for a line of standard error that `want` accepts.
    fn wait_line(&mut self, want: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(l) = self.lines.lock().unwrap().iter().find(|l| want(l)) {
                return l.clone();
            }
            if let Ok(Some(st)) = self.child.try_wait() {
                panic!(
                    "hintq ended ({st}) before the line expected; it said {:?}",
                    self.lines.lock().unwrap()
                );
            }
            assert!(Instant::now() < end, "line not seen in 10 s; seen {:?}", self.lines.lock().unwrap());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, sig: libc::c_int) {
        signal(self.child.id() as i32, sig);
    }

    /// SIGTERM, then the exit status.
    fn stop(self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait()
    }

    /// The exit status (within 20 s).
    fn wait(mut self) -> ExitStatus {
        wait_bounded(&mut self.child, Duration::from_secs(20))
    }
}

impl Drop for Hintq {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: plain syscall on a process this test started (or one of its workers).
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(Instant::now() < end, "hintq still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is still a live process (absent or a zombie: not).
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit(')').next().unwrap().split_whitespace().next().unwrap();
    state != "Z" && state != "X"
}

/// The socket inodes of established TCP connections whose local port is `port`.
fn established(port: u16) -> HashSet<u64> {
    let mut set = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for row in text.lines().skip(1) {
            let f: Vec<&str> = row.split_whitespace().collect();
            let local_port = f[1].rsplit(':').next().map(|p| u16::from_str_radix(p, 16).unwrap());
            if local_port == Some(port) && f[3] == "01" {
                set.insert(f[9].parse().unwrap());
            }
        }
    }
    set
}

/// How many of `inodes` each process in `pids` holds a descriptor for.
fn held_by(pids: &[i32], inodes: &HashSet<u64>) -> HashMap<i32, usize> {
    pids.iter()
        .map(|&pid| {
            let n = std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|d| {
                    d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                        .filter_map(|t| t.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok())
                        .filter(|i| inodes.contains(i))
                        .count()
                })
                .unwrap_or(0);
            (pid, n)
        })
        .collect()
}

fn fd_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Reads one response on `s`: its status and body (by Content-Length).
fn response(s: &mut TcpStream) -> (u16, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed before a response head: {:?}", String::from_utf8_lossy(&buf));
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let status = head[9..12].parse().unwrap();
    let len: usize =
        head.lines().find_map(|l| l.strip_prefix("content-length:")).map_or(0, |v| v.trim().parse().unwrap());
    let mut body = buf.split_off(head_end);
    while body.len() < len {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "closed after {} of {len} body bytes", body.len());
        body.extend_from_slice(&chunk[..n]);
    }
    (status, body)
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

fn get(s: &mut TcpStream, path: &str) -> (u16, Vec<u8>) {
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
    response(s)
}

/// `hintq serve` on `root` with `--processes 4` (one thread each, short timeouts), plus `extra`.
fn serve(root: &Root, extra: &[&str]) -> Hintq {
    let root = root.0.to_str().unwrap();
    let mut args = vec!["serve", "--root", root, "--listen", "127.0.0.1:0", "--header-timeout", "5s"];
    args.extend_from_slice(extra);
    Hintq::start(&args)
}

/// How long the upstream takes over `/slow`.
const SLOW: Duration = Duration::from_secs(1);

/// An upstream for the proxy: a thread per connection, keep-alive, answering every request
/// with 200 and "hello\n", after [`SLOW`] for `/slow`.
fn upstream() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        if buf.starts_with(b"GET /slow ") {
                            std::thread::sleep(SLOW);
                        }
                        buf.drain(..end + 4);
                        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n").is_err() {
                            return;
                        }
                    }
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    addr
}

/// `hintq proxy` with `--processes 4` in front of [`upstream`], plus `extra`.
fn proxy(extra: &[&str]) -> Hintq {
    let up = upstream().to_string();
    let mut args = vec!["proxy", "--listen", "127.0.0.1:0", "--upstream", &up, "--processes", "4"];
    args.extend_from_slice(extra);
    Hintq::start(&args)
}

/// Opens 64 keep-alive connections, each served once, and checks from `/proc` that all 64
/// are held by the workers and that more than one worker holds some.
fn spread(h: &Hintq) -> Vec<TcpStream> {
    assert_eq!(h.pids.len(), 4, "four worker processes announced");
    let clients: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut c = connect(h.addr);
            assert_eq!(get(&mut c, "/a.txt"), (200, b"hello\n".to_vec()));
            c
        })
        .collect();
    let held = held_by(&h.pids, &established(h.addr.port()));
    assert_eq!(held.values().sum::<usize>(), 64, "every connection is held by a worker: {held:?}");
    let serving = held.values().filter(|&&n| n > 0).count();
    assert!(serving > 1, "connections spread over the workers: {held:?}");
    clients
}

#[test]
fn serve_connections_spread_over_worker_processes() {
    let _one = serial();
    let root = Root::new("spread");
    let h = serve(&root, &["--processes", "4"]);
    drop(spread(&h));
    assert!(h.stop().success());
}

#[test]
fn proxy_connections_spread_over_worker_processes() {
    let _one = serial();
    let h = proxy(&["--pattern", "sharded", "--threads", "2"]);
    drop(spread(&h));
    assert!(h.stop().success());
}

/// Sixteen clients ask for `path` (a response still in flight when the drain begins:
/// `/big.bin` from the server, more than the socket buffers hold while the client does not
/// read; `/slow` through the proxy, waiting for the upstream); SIGTERM to the supervisor;
/// every response arrives whole (`len` body bytes), then the connection closes; every worker
/// exits, and so does the supervisor, with status 0.
fn drains_every_worker(h: Hintq, path: &str, len: usize) {
    let pids = h.pids.clone();
    let mut clients: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut c = connect(h.addr);
            c.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let held = held_by(&pids, &established(h.addr.port()));
    assert!(held.values().filter(|&&n| n > 0).count() > 1, "requests in flight in several workers: {held:?}");
    h.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    for c in &mut clients {
        let (status, body) = response(c);
        assert_eq!((status, body.len()), (200, len), "the response in flight finished");
        assert_eq!(c.read(&mut [0u8; 16]).unwrap(), 0, "closed after the response");
    }
    let status = h.wait();
    assert!(status.success(), "supervisor exit status after a clean drain: {status}");
    for pid in pids {
        assert!(!alive(pid), "worker {pid} still running after the supervisor exited");
    }
}

#[test]
fn serve_sigterm_drains_every_worker() {
    let _one = serial();
    let root = Root::new("drain");
    drains_every_worker(serve(&root, &["--processes", "4"]), "/big.bin", BIG);
}

#[test]
fn proxy_sigterm_drains_every_worker() {
    let _one = serial();
    drains_every_worker(proxy(&[]), "/slow", 6);
}

/// SIGKILL to one worker: the supervisor reports it with its pid and signal, the others
/// serve every new connection, and the supervisor's exit status says not all ended cleanly.
fn survives_a_killed_worker(mut h: Hintq) {
    let victim = h.pids[0];
    signal(victim, libc::SIGKILL);
    let report = format!("worker process {victim} ended: signal: 9 (SIGKILL)");
    let line = h.wait_line(|l| l.contains(&report));
    assert!(line.contains("3 of 4 still running"), "{line}");
    for i in 0..32 {
        let mut c = connect(h.addr);
        assert_eq!(get(&mut c, "/a.txt"), (200, b"hello\n".to_vec()), "connection {i} after the kill");
    }
    let status = h.stop();
    assert!(!status.success(), "a killed worker makes the exit status a failure: {status}");
}

#[test]
fn serve_worker_killed_is_reported_and_the_others_serve() {
    let _one = serial();
    let root = Root::new("kill");
    survives_a_killed_worker(serve(&root, &["--processes", "4"]));
}

#[test]
fn proxy_worker_killed_is_reported_and_the_others_serve() {
    let _one = serial();
    survives_a_killed_worker(proxy(&[]));
}

/// Each worker's descriptor count rises while 64 clients are connected (so these are the
/// processes that serve) and is back to its baseline within 5 s of the clients leaving.
fn descriptors_back_to_baseline(h: Hintq) {
    let before: Vec<usize> = h.pids.iter().map(|&p| fd_count(p)).collect();
    let clients = spread(&h);
    let during: Vec<usize> = h.pids.iter().map(|&p| fd_count(p)).collect();
    let rise: usize = during.iter().zip(&before).map(|(d, b)| d.saturating_sub(*b)).sum();
    assert!(rise >= 64, "descriptors rose by {rise} for 64 connections: {before:?} -> {during:?}");
    drop(clients);
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let now: Vec<usize> = h.pids.iter().map(|&p| fd_count(p)).collect();
        if now == before {
            break;
        }
        assert!(Instant::now() < end, "descriptors per worker {before:?} before, {now:?} 5 s after");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(h.stop().success());
}

#[test]
fn serve_worker_descriptors_back_to_baseline() {
    let _one = serial();
    let root = Root::new("fds");
    descriptors_back_to_baseline(serve(
        &root,
        &["--processes", "4", "--pattern", "sharded", "--threads", "2"],
    ));
}

#[test]
fn proxy_worker_descriptors_back_to_baseline() {
    let _one = serial();
    // No idle upstream connections kept: the pool would hold descriptors on purpose.
    descriptors_back_to_baseline(proxy(&["--max-idle-upstream", "0"]));
}

/// A supervisor killed with SIGKILL (no chance to stop anything) leaves no worker behind:
/// each got SIGTERM from the kernel (`PR_SET_PDEATHSIG`), drained and exited.
#[test]
fn workers_do_not_outlive_a_killed_supervisor() {
    let _one = serial();
    let root = Root::new("orphans");
    let mut h = serve(&root, &["--processes", "3"]);
    h.signal(libc::SIGKILL);
    let _ = h.child.wait();
    let end = Instant::now() + Duration::from_secs(5);
    while h.pids.iter().any(|&p| alive(p)) {
        assert!(Instant::now() < end, "workers still running 5 s after the supervisor died");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(TcpStream::connect(h.addr).is_err_and(|e| e.kind() == ErrorKind::ConnectionRefused));
}

#[test]
fn help_says_how_many_processes_and_how_connections_spread() {
    let _one = serial();
    for cmd in ["serve", "proxy"] {
        let out = Command::new(env!("CARGO_BIN_EXE_hintq")).args([cmd, "--help"]).output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        for word in ["--processes", "SO_REUSEPORT", "RLIMIT_NOFILE"] {
            assert!(help.contains(word), "{word} missing from hintq {cmd} --help");
        }
        assert!(!help.contains("--worker"), "the internal flag is hidden");
    }
}
