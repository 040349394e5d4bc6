//! What the tests of the `hintq` binary share: a served directory, the binary started with
//! its standard error collected line by line, signals, `/proc` looks, and a raw client.
#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The body of `/big.bin`: more than the socket buffers on the way hold, so a client that
/// does not read keeps its response in flight.
pub const BIG: usize = 16 << 20;

/// A served directory with `a.txt` ("hello\n") and `big.bin`.
pub struct Root(pub PathBuf);

impl Root {
    pub fn new(case: &str) -> Root {
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
pub struct Hintq {
    pub child: Child,
    pub addr: SocketAddr,
    /// The worker pids the supervisor announced (empty for a single process).
    pub pids: Vec<i32>,
    pub lines: Arc<Mutex<Vec<String>>>,
}

/// Each test starts up to six processes: one test at a time on this small machine.
pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hintq {
    pub fn start(args: &[&str]) -> Hintq {
        let mut child = spawn(args);
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
    pub fn wait_line(&mut self, want: impl Fn(&str) -> bool) -> String {
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

    pub fn signal(&self, sig: libc::c_int) {
        signal(self.child.id() as i32, sig);
    }

    /// The process has not exited.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM, then the exit status.
    pub fn stop(self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait()
    }

    /// The exit status (within 20 s).
    pub fn wait(mut self) -> ExitStatus {
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

/// `hintq ARGS`, its standard error piped, the other two null.
pub fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_hintq"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

pub fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: plain syscall on a process this test started (or one of its workers).
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill({pid}, {sig})");
}

pub fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
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
pub fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rsplit(')').next().unwrap().split_whitespace().next().unwrap();
    state != "Z" && state != "X"
}

/// The socket inodes of established TCP connections whose local port is `port`.
pub fn established(port: u16) -> HashSet<u64> {
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
pub fn held_by(pids: &[i32], inodes: &HashSet<u64>) -> HashMap<i32, usize> {
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

pub fn fd_count(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Reads one response on `s`: its status and body (by Content-Length).
pub fn response(s: &mut TcpStream) -> (u16, Vec<u8>) {
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

pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

pub fn get(s: &mut TcpStream, path: &str) -> (u16, Vec<u8>) {
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
    response(s)
}

/// `hintq serve` on `root` at a free port of 127.0.0.1 (header timeout 5 s), plus `extra`.
pub fn serve(root: &Root, extra: &[&str]) -> Hintq {
    let root = root.0.to_str().unwrap();
    let mut args = vec!["serve", "--root", root, "--listen", "127.0.0.1:0", "--header-timeout", "5s"];
    args.extend_from_slice(extra);
    Hintq::start(&args)
}

/// How long the upstream takes over `/slow`.
pub const SLOW: Duration = Duration::from_secs(1);

/// A server on a free port of 127.0.0.1 that runs `f` on each connection, a thread each.
pub fn each_connection(f: impl Fn(TcpStream) + Send + Sync + Copy + 'static) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().map_while(Result::ok) {
            std::thread::spawn(move || f(s));
        }
    });
    addr
}

/// Reads from `s` until `buf` holds a request head; false if the peer closed first.
pub fn read_head(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    true
}

/// An upstream for the proxy: a thread per connection, keep-alive, answering every request
/// with 200 and "hello\n", after [`SLOW`] for `/slow`.
pub fn upstream() -> SocketAddr {
    each_connection(|mut s| {
        let mut buf = Vec::new();
        while read_head(&mut s, &mut buf) {
            let end = buf.windows(4).position(|w| w == b"\r\n\r\n").expect("read_head") + 4;
            if buf.starts_with(b"GET /slow ") {
                std::thread::sleep(SLOW);
            }
            buf.drain(..end);
            if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n").is_err() {
                return;
            }
        }
    })
}
