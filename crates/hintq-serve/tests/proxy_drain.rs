//! Graceful drain of `hintq proxy` ([`Proxy::drain`], what SIGINT/SIGTERM do), on every
//! supported backend × every pattern the proxy offers: a slow client with a large response
//! in flight gets all of it, a request waiting on the upstream is answered with
//! `Connection: close`, an idle keep-alive client and the idle pooled upstream connection
//! are closed at once, new connections are refused, nothing is closed by force, and the
//! process's descriptors are back to their baseline afterwards.

mod proxy_util;
mod tools;

use hintq::Backend;
use hintq_patterns::open_fds;
use hintq_serve::proxy::{Pattern, Proxy};
use proxy_util::*;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tests here count the process's descriptors: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// More than the kernel's socket buffers on the way hold (the client does not read), so the
/// response is still being relayed when the drain begins.
const BIG: usize = 16 << 20;

/// How long the fake upstream takes over `/slow`.
const SLOW: Duration = Duration::from_secs(1);

fn refuses_connections(addr: SocketAddr) -> bool {
    eventually(Duration::from_secs(5), || TcpStream::connect(addr).is_err())
}

fn start(upstream: SocketAddr, b: Backend, p: Pattern) -> Proxy {
    start_proxy_with(upstream, b, p, |c| {
        c.upstream_timeout = Duration::from_secs(10);
        c.send_timeout = Duration::from_secs(10);
        c.idle_timeout = Duration::from_secs(10);
        c.header_timeout = Duration::from_secs(10);
    })
}

#[test]
fn drain_finishes_responses_in_flight_and_closes_the_rest() {
    let _one = serial();
    let big = Arc::new(pattern_bytes(BIG, 7));
    let body = Arc::clone(&big);
    let fake = Fake::start(move |g, s| {
        match g.target.as_str() {
            "/big" => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len());
                if s.write_all(head.as_bytes()).and_then(|()| s.write_all(&body)).is_err() {
                    return After::Close;
                }
            }
            "/slow" => {
                std::thread::sleep(SLOW);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow");
            }
            _ => {
                let _ = s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            }
        }
        After::Keep
    });
    let baseline = open_fds();
    for (b, p) in combos() {
        let combo = format!("{b}/{p}");
        eprintln!("drain on {combo}");
        let seen = fake.got.lock().unwrap().len();
        let px = start(fake.addr, b, p);
        let addr = px.local_addr();
        // A slow reader with a large response in flight: it has its first bytes, then stops.
        let mut busy = Client::connect(addr);
        busy.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(busy.read_some() > 0, "{combo}: the large response started");
        // A request the upstream is still working on: its response head is not sent yet.
        let mut slow = Client::connect(addr);
        slow.send(b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n");
        assert!(eventually(Duration::from_secs(5), || fake
            .got
            .lock()
            .unwrap()
            .iter()
            .skip(seen)
            .any(|g| g.target == "/slow")));
        // An idle keep-alive client, whose upstream connection went into the idle pool.
        let mut idle = Client::connect(addr);
        idle.send(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = idle.response(false);
        assert_eq!((r.status, r.header("connection")), (200, None), "{combo}: {}", r.head);
        let ok_conn = fake.got.lock().unwrap().iter().skip(seen).find(|g| g.target == "/ok").unwrap().conn;

        let t0 = Instant::now();
        let drain = std::thread::spawn(move || px.drain(Duration::from_secs(20)));
        idle.assert_closed();
        assert!(refuses_connections(addr), "{combo}: new connections refused once the drain began");
        assert!(
            eventually(Duration::from_secs(5), || fake.closed.lock().unwrap().contains(&ok_conn)),
            "{combo}: the idle pooled upstream connection is closed by the drain"
        );
        assert!(!drain.is_finished(), "{combo}: the drain waits for the responses in flight");

        let r = slow.response(false);
        assert_eq!((r.status, r.body.as_slice(), r.complete), (200, &b"slow"[..], true), "{combo}");
        assert_eq!(r.header("connection"), Some("close"), "{combo}: no keep-alive while draining");
        slow.assert_closed();
        let r = busy.response(false);
        assert_eq!(r.status, 200, "{combo}");
        assert!(r.complete && r.body.len() == BIG, "{combo}: got {} of {BIG} bytes", r.body.len());
        assert!(r.body == *big, "{combo}: the body in flight arrived byte-exact");
        busy.assert_closed();
        drop((busy, slow, idle));

        let forced = drain.join().unwrap();
        assert_eq!(forced, 0, "{combo}: nothing left to close by force");
        assert!(t0.elapsed() < Duration::from_secs(15), "{combo}: drain took {:?}", t0.elapsed());
        assert!(TcpStream::connect(addr).is_err(), "{combo}: listener closed after the drain");
        // The fake's threads close their side when they see the proxy's close.
        let now = wait_fds(baseline, Duration::from_secs(5));
        assert_eq!(now, baseline, "{combo}: descriptors back to the baseline after the drain");
    }
}

/// A drain with nothing open returns at once, and one with a client that never finishes its
/// request closes it by force at the deadline and says so.
#[test]
fn drain_counts_what_it_closed_by_force() {
    let _one = serial();
    let fake = Fake::start(|_, _| After::Close);
    for (b, p) in combos() {
        let combo = format!("{b}/{p}");
        let px = start(fake.addr, b, p);
        let t0 = Instant::now();
        assert_eq!(px.drain(Duration::from_secs(10)), 0, "{combo}");
        assert!(t0.elapsed() < Duration::from_secs(3), "{combo}: empty drain took {:?}", t0.elapsed());

        let px = start(fake.addr, b, p);
        let mut c = Client::connect(px.local_addr());
        c.send(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(false).status, 200, "{combo}");
        // Half a request head: the connection is not idle, and the header timeout (10 s)
        // is longer than the grace period.
        c.send(b"GET /ok HTTP/1.1\r\n");
        std::thread::sleep(Duration::from_millis(100));
        let t0 = Instant::now();
        assert_eq!(px.drain(Duration::from_secs(1)), 1, "{combo}: the unfinished one closed by force");
        assert!(t0.elapsed() < Duration::from_secs(5), "{combo}");
        assert!(c.closed_within(Duration::from_secs(3)), "{combo}: closed");
    }
}
