//! `hintq bench floor` answers every request, pipelined or split across writes, in order, on
//! both mechanisms: a floor that dropped or merged responses would measure less work than a
//! server does and make every server look further above it than it is.

use hintq_bench::floor::{response, serve, Mechanism};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn responses_to(addr: std::net::SocketAddr, writes: &[&[u8]], want: usize, wait: Duration) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    for w in writes {
        s.write_all(w).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let (mut got, deadline) = (Vec::new(), Instant::now() + wait);
    let mut buf = [0u8; 4096];
    while got.windows(12).filter(|w| *w == b"HTTP/1.1 200").count() < want && Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
    }
    got
}

#[test]
fn every_request_gets_one_response_in_order() {
    for m in [Mechanism::Epoll, Mechanism::Uring] {
        if m == Mechanism::Uring
            && !hintq_testkit::runs(
                "floor on uring",
                io_uring::IoUring::new(2).map(drop).map_err(|e| e.to_string()),
            )
        {
            continue;
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let one = response(b"hello", "text/plain");
        let r = one.clone();
        // Runs until the test process ends.
        std::thread::spawn(move || serve(l, m, r));
        let req = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        // Three pipelined in one write, then one split inside its end.
        let three = req.repeat(3);
        let got = responses_to(addr, &[&three, &req[..26], &req[26..]], 4, Duration::from_secs(5));
        assert_eq!(got, one.repeat(4), "{m:?}: {}", String::from_utf8_lossy(&got));
        // A head not yet ended gets nothing.
        let got = responses_to(addr, &[b"GET / HTTP/1.1\r\nHost: a\r\n"], 1, Duration::from_millis(300));
        assert!(got.is_empty(), "{m:?}: {}", String::from_utf8_lossy(&got));
    }
}

/// `hintq bench floor --relay` passes every byte both ways, in order, on both mechanisms: in
/// front of the floor server, pipelined and split requests get the floor's responses, on
/// connection after connection (a client that closes takes its upstream connection with it);
/// in front of an echoing upstream, 64 KB come back as they were sent.
#[test]
fn the_relay_passes_every_request_and_response_in_order() {
    use hintq_bench::relay::relay;
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    let up_addr = up.local_addr().unwrap();
    let one = response(b"hello", "text/plain");
    let r = one.clone();
    // Runs until the test process ends.
    std::thread::spawn(move || serve(up, Mechanism::Epoll, r));
    for m in [Mechanism::Epoll, Mechanism::Uring] {
        if m == Mechanism::Uring
            && !hintq_testkit::runs(
                "relay on uring",
                io_uring::IoUring::new(2).map(drop).map_err(|e| e.to_string()),
            )
        {
            continue;
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || relay(l, m, up_addr));
        let req = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        for _ in 0..3 {
            let three = req.repeat(3);
            let got = responses_to(addr, &[&three, &req[..26], &req[26..]], 4, Duration::from_secs(5));
            assert_eq!(got, one.repeat(4), "{m:?}: {}", String::from_utf8_lossy(&got));
        }
        // Through an echoing upstream: 64 KB go through whole and in order, in many receives.
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let echo_addr = echo.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in echo.incoming().flatten() {
                let mut w = s.try_clone().unwrap();
                std::thread::spawn(move || std::io::copy(&mut &s, &mut w));
            }
        });
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || relay(l, m, echo_addr));
        let data: Vec<u8> = (0..65_536u32).map(|i| (i % 251) as u8).collect();
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut r = s.try_clone().unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = vec![0u8; 65_536];
            r.read_exact(&mut got).map(|()| got)
        });
        (&s).write_all(&data).unwrap();
        let got = reader.join().unwrap().expect("64 KB back");
        assert!(got == data, "{m:?}: bytes changed or reordered");
    }
}
