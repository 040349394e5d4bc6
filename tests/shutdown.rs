//! Stopping `hintq serve` and `hintq proxy` with signals, on every backend × every pattern each
//! server offers, and with `--processes`:
//!
//! * SIGTERM with idle keep-alive clients stops the server at once. Regression: on io_uring
//!   with the ring's sends (reactor, sharded, sharded-shared) it took the send timeout, 30 s,
//!   as the idle connections looked busy sending.
//! * A second SIGTERM ends a drain that a client which stopped reading holds: at once, not
//!   after `--drain-timeout` (nor, before it existed, after the send timeout).

mod servers;

use hintq::Backend;
use hintq_patterns::Pattern;
use servers::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Every backend this kernel runs × `patterns`, without the combinations the server refuses
/// to start (the thread pools on backends that cannot re-activate from another thread:
/// checked by the servers' own tests).
fn combos(patterns: &[Pattern]) -> Vec<(Backend, Pattern)> {
    let refused = |b, p: Pattern| {
        p.hands_off() && matches!(b, Backend::Poll | Backend::SelectClassic | Backend::Rtsig | Backend::Gooch)
    };
    Backend::ALL
        .into_iter()
        .filter(|b| hintq_testkit::runs(&format!("shutdown on {b}"), b.probe()))
        .flat_map(|b| patterns.iter().map(move |&p| (b, p)))
        .filter(|&(b, p)| !refused(b, p))
        .collect()
}

/// Runs `f` for each of `cases`, four at a time (each starts its own server process).
fn each<T: Sync>(cases: &[T], f: impl Fn(&T) + Sync) {
    for chunk in cases.chunks(4) {
        std::thread::scope(|s| {
            for c in chunk {
                s.spawn(|| f(c));
            }
        });
    }
}

/// `hintq serve` or `hintq proxy` (in front of [`upstream`]) on `b`/`p` with two threads,
/// timeouts too long to matter, plus `extra`.
fn start(server: &str, root: &Root, up: &str, (b, p): (Backend, Pattern), extra: &[&str]) -> Hintq {
    let (b, p) = (b.to_string(), p.to_string());
    let mut args =
        vec![server, "--listen", "127.0.0.1:0", "--backend", &b, "--pattern", &p, "--threads", "2"];
    match server {
        "serve" => args.extend(["--root", root.0.to_str().unwrap()]),
        _ => args.extend(["--upstream", up]),
    }
    args.extend(["--idle-timeout", "60s", "--send-timeout", "60s", "--header-timeout", "60s"]);
    args.extend_from_slice(extra);
    Hintq::start(&args)
}

/// The exit status, and how long it took from `since`.
fn exit_within(mut h: Hintq, limit: Duration, since: Instant, what: &str) -> std::process::ExitStatus {
    let end = since + limit;
    loop {
        if let Some(st) = h.child.try_wait().unwrap() {
            return st;
        }
        assert!(Instant::now() < end, "{what}: still running {limit:?} after the signal");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Three keep-alive clients, each answered once, then idle; SIGTERM; the server exits within
/// 5 s, cleanly (nothing was closed by force), and each client sees its connection closed.
fn stops_with_idle_clients(server: &str, root: &Root, combo: (Backend, Pattern), extra: &[&str]) {
    let up = upstream().to_string();
    let h = start(server, root, &up, combo, extra);
    let mut clients: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut c = connect(h.addr);
            assert_eq!(get(&mut c, "/a.txt").0, 200);
            c
        })
        .collect();
    let what = format!("{server} {}/{} {extra:?}", combo.0, combo.1);
    let t0 = Instant::now();
    h.signal(libc::SIGTERM);
    let status = exit_within(h, Duration::from_secs(5), t0, &what);
    assert!(status.success(), "{what}: exit status {status} after a drain with only idle clients");
    for c in &mut clients {
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(matches!(std::io::Read::read(c, &mut [0u8; 64]), Ok(0) | Err(_)), "{what}: client left open");
    }
}

#[test]
fn serve_stops_at_once_with_idle_keep_alive_clients() {
    let _one = serial();
    let root = Root::new("idle-stop-serve");
    each(&combos(&Pattern::ALL), |&c| stops_with_idle_clients("serve", &root, c, &[]));
}

#[test]
fn proxy_stops_at_once_with_idle_keep_alive_clients() {
    let _one = serial();
    let root = Root::new("idle-stop-proxy");
    each(&combos(&hintq_serve::proxy::PATTERNS), |&c| stops_with_idle_clients("proxy", &root, c, &[]));
}

#[test]
fn worker_processes_stop_at_once_with_idle_keep_alive_clients() {
    let _one = serial();
    let root = Root::new("idle-stop-processes");
    let cases = [("serve", Pattern::Reactor), ("serve", Pattern::Sharded), ("proxy", Pattern::Sharded)];
    each(&cases, |&(server, p)| {
        for b in [Backend::Uring, Backend::Epoll] {
            if hintq_testkit::runs(&format!("processes on {b}"), b.probe()) {
                stops_with_idle_clients(server, &root, (b, p), &["--processes", "2"]);
            }
        }
    });
}

/// A client asks for more than the socket buffers hold and stops reading: SIGTERM leaves the
/// server draining (the default drain timeout, 10 s); a second SIGTERM makes it exit within
/// 5 s, with a status that says connections were closed by force. With `--drain-timeout`
/// (`drain`), the first signal alone ends the drain by then.
fn blocked_drain_ends(server: &str, root: &Root, combo: (Backend, Pattern), drain: Option<&str>) {
    let extra: &[&str] = match drain {
        Some(d) => &["--drain-timeout", d],
        None => &[],
    };
    // Through the proxy: the same file, relayed from a `hintq serve` on the same combination.
    let origin = start("serve", root, "", combo, extra);
    let (mut h, origin) = match server {
        "serve" => (origin, None),
        _ => (start("proxy", root, &origin.addr.to_string(), combo, extra), Some(origin)),
    };
    let what = format!("{server} {}/{} {extra:?}", combo.0, combo.1);
    let mut c = connect(h.addr);
    c.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    h.signal(libc::SIGTERM);
    if drain.is_none() {
        std::thread::sleep(Duration::from_millis(700));
        assert!(h.running(), "{what}: exited at the first signal with a response in flight");
        h.signal(libc::SIGTERM);
    }
    let status = exit_within(h, Duration::from_secs(5), t0, &what);
    assert!(!status.success(), "{what}: a drain cut short exits with a failure status, not {status}");
    drop((c, origin));
}

#[test]
fn serve_second_signal_ends_a_blocked_drain() {
    let _one = serial();
    let root = Root::new("second-serve");
    each(&combos(&Pattern::ALL), |&c| blocked_drain_ends("serve", &root, c, None));
}

#[test]
fn proxy_second_signal_ends_a_blocked_drain() {
    let _one = serial();
    let root = Root::new("second-proxy");
    each(&combos(&hintq_serve::proxy::PATTERNS), |&c| blocked_drain_ends("proxy", &root, c, None));
}

#[test]
fn the_drain_timeout_ends_a_blocked_drain() {
    let _one = serial();
    let root = Root::new("drain-timeout");
    let cases =
        [("serve", Pattern::Reactor), ("serve", Pattern::LeaderFollowers), ("proxy", Pattern::Sharded)];
    each(&cases, |&(server, p)| {
        for b in [Backend::Uring, Backend::Epoll] {
            if hintq_testkit::runs(&format!("drain timeout on {b}"), b.probe()) {
                blocked_drain_ends(server, &root, (b, p), Some("1s"));
            }
        }
    });
}

/// A second signal to a `--processes` supervisor ends its workers' blocked drains.
#[test]
fn worker_processes_second_signal_ends_a_blocked_drain() {
    let _one = serial();
    let root = Root::new("second-processes");
    for b in [Backend::Uring, Backend::Epoll] {
        if hintq_testkit::runs(&format!("processes on {b}"), b.probe()) {
            let mut h = start("serve", &root, "", (b, Pattern::Reactor), &["--processes", "2"]);
            let mut c = connect(h.addr);
            c.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            std::thread::sleep(Duration::from_millis(300));
            h.signal(libc::SIGTERM);
            std::thread::sleep(Duration::from_millis(700));
            assert!(h.running(), "{b}: the supervisor exited at the first signal with a response in flight");
            let (t0, pids) = (Instant::now(), h.pids.clone());
            h.signal(libc::SIGTERM);
            let status = exit_within(h, Duration::from_secs(5), t0, "serve --processes 2");
            assert!(!status.success(), "{b}: exit status {status}");
            assert!(pids.iter().all(|&p| !alive(p)), "{b}: a worker outlived the supervisor");
            drop(c);
        }
    }
}
