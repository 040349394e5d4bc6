//! What `hintq proxy` says about the answers it makes itself. Regressions: a 502 or 504 was
//! given with nothing printed; the access log left out the requests the proxy refused itself
//! (400, 501) and logged a 502 with 0 bytes although its body had been sent.
//!
//! * On standard error, each 502 or 504 names the upstream and the cause: refused, reset,
//!   closed early, invalid response, timeout; at most one line a second per cause, with the
//!   count of those left unsaid.
//! * The access log has one line per response sent, the proxy's own included, with the body
//!   bytes sent.

mod servers;

use servers::*;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// An upstream that does `act` with each connection once a request head has arrived.
fn misbehaving(act: fn(TcpStream)) -> SocketAddr {
    each_connection(move |mut s| {
        if read_head(&mut s, &mut Vec::new()) {
            act(s);
        }
    })
}

/// An address nobody listens on.
fn dead() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

fn proxy(upstream: SocketAddr, extra: &[&str]) -> Hintq {
    let up = upstream.to_string();
    let mut args = vec!["proxy", "--listen", "127.0.0.1:0", "--upstream", &up, "--upstream-timeout", "1s"];
    args.extend_from_slice(extra);
    Hintq::start(&args)
}

/// Sends `req` on a new connection; the status and body of the answer.
fn ask(addr: SocketAddr, req: &[u8]) -> (u16, Vec<u8>) {
    let mut s = connect(addr);
    s.write_all(req).unwrap();
    response(&mut s)
}

const GET: &[u8] = b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n";

#[test]
fn a_502_or_504_says_which_upstream_and_why() {
    let _one = serial();
    let cases: [(SocketAddr, u16, &str); 4] = [
        (dead(), 502, "connection refused"),
        (misbehaving(hintq_testkit::reset), 502, "connection reset"),
        (misbehaving(|mut s| drop(s.write_all(b"HELLO THERE\r\n\r\n"))), 502, "invalid response"),
        (
            misbehaving(|s| {
                std::thread::sleep(Duration::from_secs(5));
                drop(s)
            }),
            504,
            "no response within the upstream timeout",
        ),
    ];
    for (up, status, cause) in cases {
        let mut h = proxy(up, &[]);
        assert_eq!(ask(h.addr, GET).0, status, "{cause}");
        let want = format!("{status} ");
        let line = h.wait_line(|l| l.contains(&want) && l.contains(cause));
        assert!(line.contains(&format!("upstream {up}")), "the upstream is named: {line}");
        assert!(h.stop().success());
    }
}

/// Many 502s in a burst make one line a second, and the count of the others is told.
#[test]
fn the_reasons_are_rate_limited_with_a_count_of_those_unsaid() {
    let _one = serial();
    let mut h = proxy(dead(), &[]);
    let t0 = Instant::now();
    for _ in 0..40 {
        assert_eq!(ask(h.addr, GET).0, 502);
    }
    let burst = t0.elapsed();
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(ask(h.addr, GET).0, 502);
    h.wait_line(|l| l.contains("more since the last such line"));
    let lines: Vec<String> =
        h.lines.lock().unwrap().iter().filter(|l| l.contains("connection refused")).cloned().collect();
    // One line per second of the burst at most (and the one after it).
    let most = burst.as_secs() as usize + 2;
    assert!(lines.len() <= most, "{} lines for a burst of {burst:?}: {lines:?}", lines.len());
    let unsaid: usize =
        lines.iter().filter_map(|l| l.split("(and ").nth(1)?.split(' ').next()?.parse::<usize>().ok()).sum();
    assert_eq!(lines.len() + unsaid, 41, "every 502 is said or counted: {lines:?}");
    assert!(h.stop().success());
}

/// The proxy's own answers are in the access log with the body bytes sent: a 400 for a bad
/// request, a 501 for CONNECT, a 502 and a 504 for the upstream's failures.
#[test]
fn the_access_log_has_every_response_the_proxy_sends() {
    let _one = serial();
    let dir = Root::new("proxy-log");
    let log = dir.0.join("access.log");
    let silent = misbehaving(|s| {
        std::thread::sleep(Duration::from_secs(5));
        drop(s)
    });
    for (up, req, status) in [
        (dead(), &b"GET /bad HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"[..], 400),
        (dead(), b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 501),
        (dead(), GET, 502),
        (silent, GET, 504),
    ] {
        let _ = std::fs::remove_file(&log);
        let h = proxy(up, &["--access-log", log.to_str().unwrap()]);
        let (got, body) = ask(h.addr, req);
        assert_eq!(got, status);
        assert!(!body.is_empty());
        assert!(h.stop().success());
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let want = format!("\" {status} {}", body.len());
        assert!(text.lines().any(|l| l.ends_with(&want)), "no line ending {want:?} in {text:?}");
        if status == 501 {
            assert!(text.contains("\"CONNECT example.com:443 HTTP/1.1\""), "{text}");
        }
    }
}
