//! A small HTTP/1.1 server for the tests that run `hintq load`: one thread per connection,
//! counting what it receives.

#![allow(dead_code)] // each test file uses its own part

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

#[derive(Default)]
pub struct Counts {
    pub connections: AtomicUsize,
    pub requests: AtomicUsize,
    /// Connections accepted and not yet closed by the client.
    pub open: AtomicUsize,
}

/// Answers every request with 200 and 5 bytes.
pub fn server() -> (SocketAddr, Arc<Counts>) {
    server_with(|_| 200)
}

/// Answers request `n` (counted from 1 over all connections) with `status(n)` and 5 bytes,
/// keeping the connection open.
pub fn server_with(status: fn(usize) -> u16) -> (SocketAddr, Arc<Counts>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    // A deep accept queue (std's is 128): beyond it the kernel drops the handshake's last
    // ACK, and the client holds a connection the server never accepted.
    // SAFETY: listen(2) again on a listening socket only changes its backlog.
    assert_eq!(unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&l), 4096) }, 0);
    let addr = l.local_addr().unwrap();
    let counts = Arc::new(Counts::default());
    let c = Arc::clone(&counts);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { continue };
            c.connections.fetch_add(1, SeqCst);
            c.open.fetch_add(1, SeqCst);
            let c = Arc::clone(&c);
            std::thread::spawn(move || {
                answer(s, &c, status);
                c.open.fetch_sub(1, SeqCst);
            });
        }
    });
    (addr, counts)
}

fn answer(mut s: TcpStream, c: &Counts, status: fn(usize) -> u16) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            let n = c.requests.fetch_add(1, SeqCst) + 1;
            let head = format!("HTTP/1.1 {} X\r\nContent-Length: 5\r\n\r\nhello", status(n));
            if s.write_all(head.as_bytes()).is_err() {
                return;
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}
