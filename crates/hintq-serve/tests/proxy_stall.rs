//! No relay stall: many large bodies through one proxy thread, from `hintq serve`, to
//! clients that read in bursts with pauses, so that every socket on the way fills and
//! drains again and again. On an edge-triggered backend a side that waits for an event
//! which cannot come stalls its client for good; here a client that gets no byte for
//! [`STALL`] fails the test.
//!
//! The stall this guards against: `hintq serve` on io_uring took a short `sendfile` for a
//! full socket and waited for a writability event that never came (see `Out::flush`).
//! About one run in three through the proxy stalled a client (e.g. at 5,079,287 of
//! 16,777,463 bytes); each backend here runs the exchange through the proxy and directly.

mod proxy_util;
mod tools;

use hintq::Backend;
use hintq_patterns::Config as PatternConfig;
use hintq_serve::proxy::Pattern;
use hintq_serve::serve::{self, ServeConfig};
use proxy_util::*;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The file every client fetches.
const SIZE: usize = 16 << 20;
/// Clients at once.
const CLIENTS: usize = 16;
/// No byte for this long: stalled (a healthy run takes about 2 s for all clients).
const STALL: Duration = Duration::from_secs(3);

#[test]
fn bursty_readers_of_large_bodies_never_stall() {
    let dir = std::env::temp_dir().join(format!("hintq-proxy-stall-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("big.bin"), pattern_bytes(SIZE, 5)).unwrap();
    let mut stalls = Vec::new();
    for b in [Backend::Epoll, Backend::EpollEt, Backend::Uring] {
        if !hintq_testkit::runs(&format!("stall test on {b}"), b.probe()) {
            continue;
        }
        let server = serve::start(
            ServeConfig::new(&dir),
            PatternConfig::new(hintq_patterns::Pattern::Reactor, 1, b, "127.0.0.1:0".parse().unwrap()),
        )
        .expect("hintq serve");
        let px = start_proxy_with(server.local_addr(), b, Pattern::Reactor, |c| {
            c.upstream_timeout = Duration::from_secs(30);
            c.send_timeout = Duration::from_secs(30);
            c.idle_timeout = Duration::from_secs(30);
        });
        for (via, addr) in [("proxy", px.local_addr()), ("serve", server.local_addr())] {
            let t0 = Instant::now();
            let errs = fetch_all(addr);
            eprintln!(
                "{b} via {via}: {CLIENTS} x {SIZE} bytes in {:?}, {} stalled",
                t0.elapsed(),
                errs.len()
            );
            stalls.extend(errs.into_iter().map(|e| format!("{b} via {via}: {e}")));
        }
        drop(px);
        server.shutdown();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(stalls.is_empty(), "stalled clients:\n{}", stalls.join("\n"));
}

/// [`CLIENTS`] clients fetch `/big.bin` from `addr` at once, each reading in bursts with
/// pauses; the errors of those that did not get the whole body.
fn fetch_all(addr: SocketAddr) -> Vec<String> {
    std::thread::scope(|sc| {
        let clients: Vec<_> = (0..CLIENTS).map(|i| sc.spawn(move || fetch(addr, i))).collect();
        clients.into_iter().filter_map(|c| c.join().unwrap().err()).collect()
    })
}

/// One client: the request, then the response read in bursts of up to 512 KiB with pauses
/// of up to 19 ms (a deterministic pattern per client).
fn fetch(addr: SocketAddr, i: usize) -> Result<(), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("client {i}: connect: {e}"))?;
    s.set_read_timeout(Some(STALL)).unwrap();
    s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut tmp = vec![0u8; 64 << 10];
    let mut body = 0usize;
    let mut total: Option<usize> = None;
    let mut x = i as u64 * 7919 + 1;
    loop {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let burst = (x % (512 << 10)) as usize + 1;
        let mut taken = 0;
        while taken < burst {
            let n = match s.read(&mut tmp) {
                Ok(0) => return Err(format!("client {i}: closed after {body} body bytes")),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(format!(
                        "client {i}: no byte for {STALL:?} after {body} of {SIZE} body bytes: {e}"
                    ))
                }
            };
            taken += n;
            match total {
                Some(_) => body += n,
                None => {
                    head.extend_from_slice(&tmp[..n]);
                    if let Some(p) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                        let text = String::from_utf8_lossy(&head[..p]).into_owned();
                        assert!(text.starts_with("HTTP/1.1 200"), "client {i}: {text}");
                        let len = header_of(&text, "content-length").and_then(|v| v.parse().ok());
                        assert_eq!(len, Some(SIZE), "client {i}: {text}");
                        total = len;
                        body = head.len() - (p + 4);
                    }
                }
            }
            if total.is_some_and(|t| body >= t) {
                assert_eq!(body, SIZE, "client {i}: bytes after the body");
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(x % 20));
    }
}
