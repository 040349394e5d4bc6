//! Test support for the proxy: a scripted fake upstream (a thread per connection that reads
//! each request and then answers, or misbehaves, as the test says), the proxy in process on
//! every backend × pattern; responses are read with the tests' one raw client,
//! [`crate::tools::Client`], which tells a complete body from a cut-short one.
#![allow(dead_code)]

use hintq::Backend;
use hintq_http::{parse_request, BodyDecoder, Framing, Limits, Side};
use hintq_serve::proxy::{self, Pattern, Proxy};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The proxy's upstream timeout in these tests (P1's 504).
pub const UPSTREAM_TIMEOUT: Duration = Duration::from_millis(600);

/// Every supported backend × every pattern the proxy offers.
pub fn combos() -> Vec<(Backend, Pattern)> {
    let mut v = Vec::new();
    for b in Backend::ALL {
        if !hintq_testkit::runs(&format!("proxy on {b}"), b.probe()) {
            continue;
        }
        for p in proxy::PATTERNS {
            v.push((b, p));
        }
    }
    v
}

/// A request as the fake upstream received it.
#[derive(Clone, Debug)]
pub struct Got {
    pub method: String,
    pub target: String,
    pub head: String,
    pub framing: Framing,
    pub body: Vec<u8>,
    /// Which upstream connection (0, 1, ...) and which request on it.
    pub conn: usize,
    pub nth: usize,
}

impl Got {
    pub fn header(&self, name: &str) -> Option<&str> {
        header_of(&self.head, name)
    }
}

/// What a script does after answering: keep the connection for the next request, or close it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    Keep,
    Close,
    /// Close with a reset (`SO_LINGER` 0).
    Reset,
}

type Script = dyn Fn(&Got, &mut TcpStream) -> After + Send + Sync;

/// A fake upstream on 127.0.0.1. `/ok` is always answered `200 ok` with keep-alive; every
/// other request goes to the script, its body read first (after a `100 Continue` when asked
/// for) except for targets starting with `/no100`.
pub struct Fake {
    pub addr: SocketAddr,
    pub got: Arc<Mutex<Vec<Got>>>,
    pub conns: Arc<AtomicUsize>,
    /// The connections (numbered as [`Got::conn`]) this side has closed, after the proxy
    /// closed them or the script said so.
    pub closed: Arc<Mutex<Vec<usize>>>,
    stop: Arc<AtomicBool>,
}

impl Fake {
    pub fn start(script: impl Fn(&Got, &mut TcpStream) -> After + Send + Sync + 'static) -> Fake {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let got = Arc::new(Mutex::new(Vec::new()));
        let conns = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script: Arc<Script> = Arc::new(script);
        let (g, c, cl, st) = (Arc::clone(&got), Arc::clone(&conns), Arc::clone(&closed), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !st.load(SeqCst) {
                match l.accept() {
                    Ok((s, _)) => {
                        let n = c.fetch_add(1, SeqCst);
                        let (g, cl, script) = (Arc::clone(&g), Arc::clone(&cl), Arc::clone(&script));
                        std::thread::spawn(move || {
                            serve_conn(s, n, &g, &*script);
                            cl.lock().unwrap().push(n);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Fake { addr, got, conns, closed, stop }
    }

    /// Requests received so far with this target.
    pub fn requests_to(&self, target: &str) -> Vec<Got> {
        self.got.lock().unwrap().iter().filter(|g| g.target == target).cloned().collect()
    }

    pub fn connections(&self) -> usize {
        self.conns.load(SeqCst)
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
    }
}

fn serve_conn(mut s: TcpStream, conn: usize, got: &Mutex<Vec<Got>>, script: &Script) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = Vec::new();
    for nth in 0.. {
        let Some(req) = read_request(&mut s, &mut buf, conn, nth) else { return };
        got.lock().unwrap().push(req.clone());
        let after = if req.target == "/ok" {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            After::Keep
        } else {
            script(&req, &mut s)
        };
        match after {
            After::Keep => {}
            After::Close => return,
            After::Reset => return hintq_testkit::reset(s),
        }
    }
}

/// Reads one request (head and body) the way an origin server would, answering
/// `100 Continue` first when asked; `None` at end of stream.
fn read_request(s: &mut TcpStream, buf: &mut Vec<u8>, conn: usize, nth: usize) -> Option<Got> {
    let limits = Limits { max_body: None, ..Limits::default() };
    let (head, framing, continue_, head_len, method, target) = loop {
        if let Some(h) = parse_request(buf, &limits).expect("the proxy forwards valid requests only") {
            let text = String::from_utf8_lossy(&buf[..h.head_len]).into_owned();
            break (
                text,
                h.framing,
                h.expect_continue,
                h.head_len,
                h.method.to_string(),
                h.target.to_string(),
            );
        }
        if fill(s, buf) == 0 {
            return None;
        }
    };
    buf.drain(..head_len);
    if target.starts_with("/no100") {
        // This origin answers without reading the body (nor sending 100 Continue).
        return Some(Got { method, target, head, framing, body: Vec::new(), conn, nth });
    }
    if continue_ {
        s.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").ok()?;
    }
    let mut dec = BodyDecoder::new(framing, Side::Request, &limits);
    let mut body = Vec::new();
    while !dec.is_done() {
        let used = dec.decode_to_vec(buf, &mut body).expect("valid body");
        buf.drain(..used);
        if !dec.is_done() && fill(s, buf) == 0 {
            return None;
        }
    }
    Some(Got { method, target, head, framing, body, conn, nth })
}

fn fill(s: &mut TcpStream, buf: &mut Vec<u8>) -> usize {
    let mut tmp = [0u8; 65536];
    match s.read(&mut tmp) {
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            n
        }
        Err(e) if e.kind() == ErrorKind::Interrupted => fill(s, buf),
        Err(_) => 0,
    }
}

/// The proxy in front of `upstream` with short timeouts.
pub fn start_proxy(upstream: SocketAddr, backend: Backend, pattern: Pattern) -> Proxy {
    start_proxy_with(upstream, backend, pattern, |_| {})
}

pub fn start_proxy_with(
    upstream: SocketAddr,
    backend: Backend,
    pattern: Pattern,
    tweak: impl FnOnce(&mut proxy::Config),
) -> Proxy {
    let mut cfg = proxy::Config::new("127.0.0.1:0".parse().unwrap(), upstream, backend);
    cfg.pattern = pattern;
    cfg.threads = 2;
    cfg.upstream_timeout = UPSTREAM_TIMEOUT;
    cfg.idle_timeout = Duration::from_secs(5);
    cfg.header_timeout = Duration::from_secs(2);
    cfg.send_timeout = Duration::from_secs(5);
    tweak(&mut cfg);
    proxy::start(cfg).unwrap_or_else(|e| panic!("proxy on {backend}/{pattern}: {e}"))
}

pub use crate::tools::{header_of, Client, Resp};

/// The proxy still serves a new client (after whatever a row did).
pub fn still_serves(p: &Proxy) {
    let mut c = Client::connect(p.local_addr());
    c.assert_kept("/ok", b"ok");
}

/// Sends `req` on a new connection and expects `status` with `Connection: close`, then the close.
pub fn refused(p: &Proxy, req: &[u8], status: u16) -> Resp {
    let mut c = Client::connect(p.local_addr());
    c.send(req);
    let r = c.response(false);
    assert_eq!(r.status, status, "for {:?}: {}", String::from_utf8_lossy(req), r.head);
    assert_eq!(r.header("connection"), Some("close"), "{}", r.head);
    c.assert_closed();
    r
}

/// Waits up to `limit` for `f` to hold.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Deterministic pseudo-random bytes (xorshift), for relay checksums.
pub fn pattern_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// FNV-1a: a checksum to compare relayed bodies with.
pub fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Waits up to `limit` for the process's open descriptors to fall to `want`; returns the
/// count last seen.
pub fn wait_fds(want: usize, limit: Duration) -> usize {
    let end = Instant::now() + limit;
    loop {
        let n = hintq_patterns::open_fds();
        if n <= want || Instant::now() > end {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
