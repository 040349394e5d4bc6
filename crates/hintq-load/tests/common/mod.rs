//! A fake HTTP server that misbehaves on purpose, on plain std threads (one per connection),
//! loopback only. It counts the connections it has accepted and that are still open, so
//! tests can check from the server side what the load generator really holds.

#![allow(dead_code)]

use hintq_load::{Config, Report, Target};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How the server answers.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// `200`, Content-Length body, keep-alive.
    Ok,
    /// Responses written one byte per write, alternating Content-Length and chunked.
    ByteByByte,
    /// Head and part of the body, then RST (`SO_LINGER` 0).
    ResetMidBody,
    /// Head and part of the body, then FIN.
    TruncateBody,
    /// A bad status line.
    BadStatus,
    /// Two responses in one write for each request.
    Pipeline,
    /// Reads the request and closes without answering.
    CloseBeforeResponse,
    /// Answers, then closes the connection once it has been idle this long.
    CloseIdle(Duration),
    /// Answers with `Connection: close` and closes.
    ConnectionClose,
    /// Stalls this long before the first response of the server's life, then answers at once.
    StallOnce(Duration),
    /// Never answers; holds the connection until the client closes it.
    Hold,
    /// Closes every connection this long after accepting it, without reading.
    CloseAfter(Duration),
    /// Answers every request after this long.
    Slow(Duration),
}

pub struct Server {
    pub url: String,
    pub port: u16,
    /// Connections accepted and not yet closed.
    pub open: Arc<AtomicUsize>,
    /// Connections accepted in all.
    pub accepted: Arc<AtomicUsize>,
    /// Bytes received on connections that never completed a request head.
    pub partial_heads: Arc<AtomicUsize>,
}

const BODY: &[u8] = b"hello, world";

fn response(close: bool) -> Vec<u8> {
    let conn = if close { "Connection: close\r\n" } else { "" };
    let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{conn}\r\n", BODY.len()).into_bytes();
    r.extend_from_slice(BODY);
    r
}

fn chunked() -> Vec<u8> {
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n".to_vec()
}

impl Server {
    pub fn start(mode: Mode) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        // A deep accept queue: one thread accepts for many connecting at once.
        // SAFETY: listen(2) again on a listening socket only changes its backlog.
        assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 4096) }, 0);
        let open = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::new(AtomicUsize::new(0));
        let partial_heads = Arc::new(AtomicUsize::new(0));
        let stalled = Arc::new(AtomicBool::new(false));
        let (o, a, p) = (open.clone(), accepted.clone(), partial_heads.clone());
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(s) = s else { continue };
                a.fetch_add(1, Ordering::SeqCst);
                o.fetch_add(1, Ordering::SeqCst);
                let (o, p, stalled) = (o.clone(), p.clone(), stalled.clone());
                std::thread::spawn(move || {
                    serve(s, mode, &p, &stalled);
                    o.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Server { url: format!("http://127.0.0.1:{port}/"), port, open, accepted, partial_heads }
    }

    pub fn open_now(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }
}

/// Reads one request head; `None` at EOF or error (after counting a partial head).
fn read_head(s: &mut TcpStream, partial: &AtomicUsize) -> Option<()> {
    let mut head = Vec::new();
    let mut b = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(0) | Err(_) => {
                if head.starts_with(b"GET / HTTP/1.1\r\nHost: ") {
                    partial.fetch_add(1, Ordering::SeqCst);
                }
                return None;
            }
            Ok(n) => head.extend_from_slice(&b[..n]),
        }
    }
    Some(())
}

fn serve(mut s: TcpStream, mode: Mode, partial: &AtomicUsize, stalled: &AtomicBool) {
    s.set_nodelay(true).unwrap();
    let mut served = 0u64;
    loop {
        if let (Mode::CloseIdle(d), 1..) = (mode, served) {
            s.set_read_timeout(Some(d)).unwrap();
        }
        if let Mode::CloseAfter(d) = mode {
            std::thread::sleep(d);
            return;
        }
        if read_head(&mut s, partial).is_none() {
            return;
        }
        served += 1;
        let r = match mode {
            Mode::Ok | Mode::CloseIdle(_) => s.write_all(&response(false)),
            Mode::Slow(d) => {
                std::thread::sleep(d);
                s.write_all(&response(false))
            }
            Mode::ConnectionClose => {
                let _ = s.write_all(&response(true));
                return;
            }
            Mode::ByteByByte => {
                let r = if served.is_multiple_of(2) { chunked() } else { response(false) };
                for b in r {
                    if s.write_all(&[b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_micros(100));
                }
                Ok(())
            }
            Mode::ResetMidBody | Mode::TruncateBody => {
                let r = response(false);
                let _ = s.write_all(&r[..r.len() - 4]);
                std::thread::sleep(Duration::from_millis(5));
                if let Mode::ResetMidBody = mode {
                    hintq_testkit::reset(s);
                }
                return;
            }
            Mode::BadStatus => s.write_all(b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n"),
            Mode::Pipeline => s.write_all(&[response(false), response(false)].concat()),
            Mode::CloseBeforeResponse => return,
            Mode::StallOnce(d) => {
                if !stalled.swap(true, Ordering::SeqCst) {
                    std::thread::sleep(d);
                }
                s.write_all(&response(false))
            }
            Mode::Hold => {
                let mut b = [0u8; 64];
                while matches!(s.read(&mut b), Ok(1..)) {}
                return;
            }
            Mode::CloseAfter(_) => unreachable!(),
        };
        if r.is_err() {
            return;
        }
    }
}

/// A config for `urls` with test-sized bounds.
pub fn config(urls: &[&str]) -> Config {
    Config {
        targets: urls.iter().map(|u| u.parse::<Target>().unwrap()).collect(),
        connections: 2,
        duration: Duration::from_secs(5),
        timeout: Duration::from_secs(2),
        ..Config::default()
    }
}

/// Runs and checks the accounting identity every run must keep.
pub fn run(cfg: &Config) -> Report {
    let r = hintq_load::run(cfg, None).expect("run");
    let h = &r.hot;
    assert_eq!(
        h.started,
        h.successes + h.errors.request_errors() + h.unfinished,
        "every started request ends exactly once:\n{}",
        r.summary()
    );
    r
}
