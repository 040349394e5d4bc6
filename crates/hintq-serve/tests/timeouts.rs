//! Timeouts and the drain hold on every backend × pattern, both servers. Regressions: on
//! io_uring with the ring's sends (reactor, sharded, sharded-shared) `hintq serve` closed an
//! idle keep-alive connection at the later of its idle and send timeouts (a successful ring
//! send is silent, and the connection looked busy sending until the send timeout asked the
//! ring), and a drain waited the send timeout for idle connections in the same way.
//!
//! Every combination runs in its own thread, each with its own server: the waits overlap.

mod proxy_util;
mod support;
mod tools;

use hintq::Backend;
use hintq_patterns::Pattern;
use hintq_serve::proxy::{self, Proxy};
use proxy_util::{After, Fake};
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Srv;

/// Long enough that a test meeting it instead of the timeout it checks fails.
const LONG: Duration = Duration::from_secs(30);

/// Runs `f` on every backend × every pattern of `patterns`, one thread each.
fn each(patterns: &[Pattern], f: impl Fn(Backend, Pattern) + Sync) {
    std::thread::scope(|s| {
        let f = &f;
        let runs: Vec<_> = Backend::ALL
            .into_iter()
            .flat_map(|b| patterns.iter().map(move |&p| (b, p)))
            .map(|(b, p)| (format!("{b}/{p}"), s.spawn(move || f(b, p))))
            .collect();
        let failed: Vec<String> =
            runs.into_iter().filter_map(|(c, h)| h.join().is_err().then_some(c)).collect();
        assert!(failed.is_empty(), "failed on {failed:?}");
    });
}

fn serve(b: Backend, p: Pattern, case: &str, idle: Duration, send: Duration) -> Option<Srv> {
    Srv::start_with(b, p, case, |c| {
        c.idle_timeout = idle;
        c.send_timeout = send;
        c.header_timeout = LONG;
    })
}

/// The fake upstream: `/ok` answered at once; `/big` with `len` bytes.
fn upstream(len: usize) -> Fake {
    let body = Arc::new(vec![b'u'; len]);
    Fake::start(move |g, s| {
        if g.target == "/big" {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
            if s.write_all(head.as_bytes()).and_then(|()| s.write_all(&body)).is_err() {
                return After::Close;
            }
        } else {
            let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        }
        After::Keep
    })
}

fn start_proxy(
    fake: &Fake,
    b: Backend,
    p: Pattern,
    case: &str,
    idle: Duration,
    send: Duration,
) -> Option<Proxy> {
    if !hintq_testkit::runs(&format!("{case} on {b}/{p}"), b.probe()) {
        return None;
    }
    Some(proxy_util::start_proxy_with(fake.addr, b, p, |c| {
        (c.idle_timeout, c.send_timeout, c.header_timeout, c.upstream_timeout) = (idle, send, LONG, LONG);
    }))
}

/// Waits up to `limit` for `f`; how long it took, or `None`.
fn within(limit: Duration, mut f: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn serve_closes_idle_connections_at_the_idle_timeout_whatever_the_send_timeout() {
    each(&Pattern::ALL, |b, p| {
        let Some(srv) = serve(b, p, "idle timeout", Duration::from_secs(1), LONG) else { return };
        for path in ["/a.txt", "/1k.bin", "/big.bin"] {
            let mut c = srv.client();
            c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            assert_eq!(c.response(false).status, 200);
            assert!(
                c.closed_within(Duration::from_secs(6)),
                "{}: an idle connection after {path} is still open 6 s past its 1 s idle timeout",
                srv.combo()
            );
        }
    });
}

#[test]
fn proxy_closes_idle_connections_at_the_idle_timeout_whatever_the_send_timeout() {
    let fake = upstream(100_000);
    each(&proxy::PATTERNS, |b, p| {
        let Some(px) = start_proxy(&fake, b, p, "proxy idle timeout", Duration::from_secs(1), LONG) else {
            return;
        };
        let mut c = proxy_util::Client::connect(px.local_addr());
        c.send(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(false).status, 200);
        assert!(
            c.closed_within(Duration::from_secs(6)),
            "{b}/{p}: idle connection open 6 s past its idle timeout"
        );
    });
}

/// A client that stops reading a large response is closed at the send timeout: not at the
/// (shorter) idle timeout, and not later. The kernel's buffers on the way are made small
/// (`SO_SNDBUF` on the server's listeners, `SO_RCVBUF` on the client): on loopback, with
/// their defaults, a socket's send buffer grows to 4 MiB and with the receiver's took
/// 4.29 MB from a sender nobody read from, the whole 4 MiB response and the next one; then
/// nothing waits on the peer, the connection is idle, and the idle timeout rightly closes
/// it (a failure seen once in CI, io_uring/sharded-shared, closed before 2 s).
#[test]
fn serve_closes_a_peer_that_stops_reading_at_the_send_timeout() {
    each(&Pattern::ALL, |b, p| {
        let Some(srv) = serve(b, p, "send timeout", Duration::from_millis(500), Duration::from_secs(4))
        else {
            return;
        };
        assert!(shrink_send_buffers(srv.addr) > 0, "{}: no listener found", srv.combo());
        let mut c = small_receiver(srv.addr);
        let t0 = Instant::now();
        c.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        std::thread::sleep(Duration::from_secs(2));
        if t0.elapsed() < Duration::from_millis(3500) {
            assert_eq!(srv.open_connections(), 1, "{}: closed before its send timeout", srv.combo());
        }
        let closed = within(Duration::from_secs(10), || srv.open_connections() == 0);
        assert!(closed.is_some(), "{}: a peer that stopped reading still held 12 s after", srv.combo());
    });
}

#[test]
fn proxy_closes_a_peer_that_stops_reading_at_the_send_timeout() {
    let fake = upstream(16 << 20);
    each(&proxy::PATTERNS, |b, p| {
        let Some(px) = start_proxy(
            &fake,
            b,
            p,
            "proxy send timeout",
            Duration::from_millis(500),
            Duration::from_secs(4),
        ) else {
            return;
        };
        let mut c = proxy_util::Client::connect(px.local_addr());
        let t0 = Instant::now();
        c.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
        std::thread::sleep(Duration::from_secs(2));
        if t0.elapsed() < Duration::from_millis(3500) {
            assert_eq!(px.open_connections(), 1, "{b}/{p}: closed before its send timeout");
        }
        let closed = within(Duration::from_secs(10), || px.open_connections() == 0);
        assert!(closed.is_some(), "{b}/{p}: a peer that stopped reading still held 12 s after");
    });
}

/// A client that stops reading while the end of a response is still leaving the proxy is
/// closed at the send timeout, not kept for the (longer) idle timeout. Regression: the end
/// of the exchange set the idle timeout whatever was still to send. The kernel's buffers on
/// the way are made small (`SO_SNDBUF` on the proxy's listener, which its accepted sockets
/// inherit; `SO_RCVBUF` on the client's socket), so that of a 20 kB response the kernel
/// takes a few kB and the rest is still the proxy's when the exchange with the upstream ends.
#[test]
fn proxy_closes_a_peer_that_stops_reading_the_end_of_a_response_at_the_send_timeout() {
    let fake = upstream(20_000);
    each(&proxy::PATTERNS, |b, p| {
        let send = Duration::from_secs(1);
        let Some(px) = start_proxy(&fake, b, p, "proxy send timeout after the exchange", LONG, send) else {
            return;
        };
        assert!(shrink_send_buffers(px.local_addr()) > 0, "{b}/{p}: no listener found");
        let mut s = small_receiver(px.local_addr());
        s.write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        let open = within(Duration::from_secs(5), || px.open_connections() == 1);
        assert!(open.is_some(), "{b}/{p}: the connection was not taken");
        let closed = within(Duration::from_secs(10), || px.open_connections() == 0);
        assert!(
            closed.is_some(),
            "{b}/{p}: a peer that stopped reading the end of a response still held 10 s after (send timeout 1 s)"
        );
    });
}

/// Sets the smallest `SO_SNDBUF` on the listening sockets of this process bound to `addr`
/// (the server runs in the test's process); how many there were.
fn shrink_send_buffers(addr: std::net::SocketAddr) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|f| f.parse::<i32>().ok()) else { continue };
        // SAFETY: sockaddr_storage is plain data; all-zero is valid.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: `ss` has room for `len` bytes; a descriptor that is not a socket fails.
        if unsafe { libc::getsockname(fd, (&mut ss as *mut libc::sockaddr_storage).cast(), &mut len) } != 0 {
            continue;
        }
        if hintq_sys::socket_addr(&ss) != Some(addr) {
            continue;
        }
        let mut listening: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `listening` and `len` are valid for writes of the sizes given.
        let r = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_ACCEPTCONN,
                (&mut listening as *mut i32).cast(),
                &mut len,
            )
        };
        if r == 0 && listening == 1 {
            hintq_sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, 1 as libc::c_int).unwrap();
            n += 1;
        }
    }
    n
}

/// A connection to `addr` from a socket with the smallest `SO_RCVBUF`.
fn small_receiver(addr: std::net::SocketAddr) -> std::net::TcpStream {
    use std::os::fd::{AsRawFd, OwnedFd};
    let sock: OwnedFd = hintq_sys::tcp_socket(addr).unwrap();
    hintq_sys::setsockopt(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, 1 as libc::c_int).unwrap();
    let s = std::net::TcpStream::from(sock);
    // tcp_socket's socket is non-blocking: connect, then wait for it to be writable.
    let _ = hintq_sys::start_connect(s.as_raw_fd(), addr).unwrap();
    let mut pfd = [libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLOUT, revents: 0 }];
    hintq_sys::poll(&mut pfd, 5000).unwrap();
    hintq_sys::take_error(s.as_raw_fd()).unwrap();
    s.set_nonblocking(false).unwrap();
    s
}

/// A drain closes idle keep-alive connections at once (both long timeouts notwithstanding):
/// it ends well within its grace, with nothing closed by force.
#[test]
fn serve_drain_closes_idle_keep_alive_connections_at_once() {
    each(&Pattern::ALL, |b, p| {
        let Some(mut srv) = serve(b, p, "drain idle", LONG, LONG) else { return };
        let mut clients: Vec<_> = ["/a.txt", "/1k.bin", "/big.bin"]
            .iter()
            .map(|path| {
                let mut c = srv.client();
                c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
                assert_eq!(c.response(false).status, 200);
                c
            })
            .collect();
        let t0 = Instant::now();
        let forced = srv.serving.take().unwrap().drain(Duration::from_secs(8));
        let took = t0.elapsed();
        assert_eq!(forced, 0, "{b}/{p}: idle connections still open after the 8 s grace");
        assert!(took < Duration::from_secs(5), "{b}/{p}: the drain took {took:?}");
        for c in &mut clients {
            c.assert_closed();
        }
    });
}

#[test]
fn proxy_drain_closes_idle_keep_alive_connections_at_once() {
    let fake = upstream(100_000);
    each(&proxy::PATTERNS, |b, p| {
        let Some(px) = start_proxy(&fake, b, p, "proxy drain idle", LONG, LONG) else { return };
        let mut clients: Vec<_> = ["/ok", "/big"]
            .iter()
            .map(|path| {
                let mut c = proxy_util::Client::connect(px.local_addr());
                c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
                assert_eq!(c.response(false).status, 200);
                c
            })
            .collect();
        let t0 = Instant::now();
        let forced = px.drain(Duration::from_secs(8));
        let took = t0.elapsed();
        assert_eq!(forced, 0, "{b}/{p}: idle connections still open after the 8 s grace");
        assert!(took < Duration::from_secs(5), "{b}/{p}: the drain took {took:?}");
        for c in &mut clients {
            c.assert_closed();
        }
    });
}
