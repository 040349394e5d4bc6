//! RELIABILITY.md rows P1–P9 (and the client-side rows that apply to a proxy), each sent as
//! raw bytes to `hintq proxy` in front of a fake upstream that misbehaves as the row says,
//! on every supported backend and every pattern the proxy offers. Each test checks the
//! answer, the state of the connection, and that the proxy still serves the next client.

mod proxy_util;
mod tools;

use hintq::Backend;
use hintq_http::Framing;
use hintq_serve::proxy::Pattern;
use proxy_util::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn each(case: &str, f: impl Fn(Backend, Pattern)) {
    for (b, p) in combos() {
        eprintln!("{case} on {b}/{p}");
        f(b, p);
    }
}

/// Answers `bytes` and keeps the connection.
fn answer(s: &mut TcpStream, bytes: &[u8]) -> After {
    s.write_all(bytes).unwrap();
    After::Keep
}

/// Whether the peer (the proxy) closes `s` within `wait`.
fn peer_closes(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut b = [0u8; 64];
    matches!(s.read(&mut b), Ok(0) | Err(_)) && !matches!(s.read(&mut b), Ok(n) if n > 0)
}

#[test]
fn p1_upstream_refuses() {
    let refusing = hintq_testkit::Refusing::new(); // bound, never listening, for the whole test
    let closed = refusing.addr;
    each("P1 refused", |b, p| {
        let px = start_proxy(closed, b, p);
        for _ in 0..2 {
            let r = refused(&px, b"GET / HTTP/1.1\r\nHost: t\r\n\r\n", 502);
            assert!(r.complete);
        }
        assert_eq!(px.stats().bad_gateway, 2);
    });
}

#[test]
fn p1_upstream_resets_or_closes_before_headers() {
    each("P1 reset", |b, p| {
        let fake = Fake::start(|g, _| if g.target == "/reset" { After::Reset } else { After::Close });
        let px = start_proxy(fake.addr, b, p);
        refused(&px, b"GET /reset HTTP/1.1\r\nHost: t\r\n\r\n", 502);
        refused(&px, b"GET /fin HTTP/1.1\r\nHost: t\r\n\r\n", 502);
        still_serves(&px);
    });
}

#[test]
fn p1_upstream_silent_past_timeout_is_504() {
    each("P1 silent", |b, p| {
        let fake = Fake::start(|_, _| {
            std::thread::sleep(UPSTREAM_TIMEOUT * 3);
            After::Close
        });
        let px = start_proxy(fake.addr, b, p);
        let t0 = Instant::now();
        refused(&px, b"GET /silent HTTP/1.1\r\nHost: t\r\n\r\n", 504);
        let waited = t0.elapsed();
        assert!(
            waited >= UPSTREAM_TIMEOUT - Duration::from_millis(50) && waited < Duration::from_secs(3),
            "{waited:?}"
        );
        assert_eq!(px.stats().gateway_timeout, 1);
        still_serves(&px);
    });
}

#[test]
fn p2_invalid_upstream_framing_is_502_and_upstream_closed() {
    const BAD: [&[u8]; 6] = [
        b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, identity\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello",
    ];
    each("P2", |b, p| {
        let closed = Arc::new(Mutex::new(Vec::new()));
        let c = Arc::clone(&closed);
        let fake = Fake::start(move |g, s| {
            let i: usize = g.target.trim_start_matches("/p2/").parse().unwrap();
            s.write_all(BAD[i]).unwrap();
            c.lock().unwrap().push((i, peer_closes(s, Duration::from_secs(3))));
            After::Close
        });
        let px = start_proxy(fake.addr, b, p);
        for i in 0..BAD.len() {
            let r = refused(&px, format!("GET /p2/{i} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(), 502);
            assert!(!r.body.windows(5).any(|w| w == b"hello"), "the bad response is discarded");
        }
        assert!(eventually(Duration::from_secs(4), || closed.lock().unwrap().len() == BAD.len()));
        for (i, was_closed) in closed.lock().unwrap().iter() {
            assert!(was_closed, "upstream connection of bad response {i} not closed by the proxy");
        }
        still_serves(&px);
    });
}

#[test]
fn p3_truncated_upstream_body_stays_truncated() {
    each("P3", |b, p| {
        let fake = Fake::start(|g, s| {
            let bytes: &[u8] = match g.target.as_str() {
                "/p3/cl" => b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789012345678901234567890123456789012345678",
                "/p3/chunked" => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
                _ => unreachable!(),
            };
            s.write_all(bytes).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            After::Close
        });
        let px = start_proxy(fake.addr, b, p);
        let mut c = Client::connect(px.local_addr());
        c.send(b"GET /p3/cl HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = c.response(false);
        assert_eq!((r.status, r.framing), (200, Framing::Length(100)), "{}", r.head);
        assert!(!r.complete, "a body cut short upstream must reach the client cut short");
        assert_eq!(r.body.len(), 49);

        let mut c = Client::connect(px.local_addr());
        c.send(b"GET /p3/chunked HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = c.response(false);
        assert_eq!((r.status, r.framing), (200, Framing::Chunked), "{}", r.head);
        assert!(!r.complete, "no last chunk may be sent for a cut-short chunked body");
        assert_eq!(r.body, b"hello");
        assert_eq!(px.stats().truncated, 2);
        still_serves(&px);
    });
}

#[test]
fn p4_bytes_after_the_body_dropped_and_upstream_not_reused() {
    each("P4", |b, p| {
        let fake = Fake::start(|g, s| {
            let bytes: &[u8] = match g.target.as_str() {
                "/p4/cl" => b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA BYTES",
                "/p4/head" => b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                "/p4/204" => b"HTTP/1.1 204 No Content\r\n\r\nhello",
                "/p4/304" => b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nhello",
                _ => unreachable!(),
            };
            answer(s, bytes)
        });
        let px = start_proxy(fake.addr, b, p);
        for (method, target, status, body) in [
            ("GET", "/p4/cl", 200, &b"hello"[..]),
            ("HEAD", "/p4/head", 200, b""),
            ("GET", "/p4/204", 204, b""),
            ("GET", "/p4/304", 304, b""),
        ] {
            let mut c = Client::connect(px.local_addr());
            c.send(format!("{method} {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            let r = c.response(method == "HEAD");
            assert_eq!(
                (r.status, r.body.as_slice(), r.complete),
                (status, body, true),
                "{target}: {}",
                r.head
            );
            if method == "HEAD" {
                assert_eq!(r.header("content-length"), Some("5"), "HEAD keeps the length it describes");
            }
            // The next request on this client connection is answered correctly, and over
            // another upstream connection than the one that sent stray bytes.
            c.assert_kept("/ok", b"ok");
            let bad = fake.requests_to(target)[0].conn;
            let ok = fake.requests_to("/ok");
            assert_ne!(
                ok.last().unwrap().conn,
                bad,
                "{target}: the upstream connection with stray bytes was reused"
            );
        }
        still_serves(&px);
    });
}

#[test]
fn p5_ambiguous_request_framing_rejected_not_forwarded() {
    let cases: [(&[u8], u16); 13] = [
        // A malformed request line or Host (the HTTP conformance suite's cases) is refused too.
        (b"GET /p5 HTTP/1.1\r\nHost:\r\n\r\n", 400),
        (b"GET /p5 x HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"G@T /p5 HTTP/1.1\r\nHost: t\r\n\r\n", 400),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nContent-Length: +5\r\n\r\nhello", 400),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nContent-Length: 0x5\r\n\r\nhello", 400),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: identity\r\n\r\nhello", 501),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, identity\r\n\r\nhello", 501),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST /p5 HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        (b"POST /p5 HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: ,chunked\r\n\r\n0\r\n\r\n", 400),
    ];
    each("P5", |b, p| {
        let fake = Fake::start(|_, s| answer(s, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
        let px = start_proxy(fake.addr, b, p);
        for (req, status) in cases {
            refused(&px, req, status);
        }
        // A bad chunk size (S4) is found in the body: refused too, never relayed.
        refused(
            &px,
            b"POST /p5c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
            400,
        );
        std::thread::sleep(Duration::from_millis(100));
        assert!(fake.requests_to("/p5").is_empty(), "an ambiguous request reached the upstream");
        assert!(
            fake.requests_to("/p5c").is_empty(),
            "a request with a bad chunk reached the upstream complete"
        );
        still_serves(&px);
    });
}

#[test]
fn p6_hop_by_hop_fields_stripped_and_via_added() {
    each("P6", |b, p| {
        let fake = Fake::start(|_, s| {
            answer(
                s,
                b"HTTP/1.1 200 OK\r\nConnection: X-Bar\r\nX-Bar: 1\r\nKeep-Alive: timeout=5\r\nProxy-Connection: x\r\n\
                  Upgrade: h2c\r\nTrailer: X-T\r\nX-Kept: yes\r\nContent-Length: 2\r\n\r\nhi",
            )
        });
        let px = start_proxy(fake.addr, b, p);
        let mut c = Client::connect(px.local_addr());
        c.send(
            b"GET /p6 HTTP/1.1\r\nHost: t\r\nConnection: keep-alive, X-Foo\r\nX-Foo: 1\r\nKeep-Alive: timeout=5\r\n\
              Proxy-Connection: keep-alive\r\nTE: trailers\r\nUpgrade: websocket\r\nX-Keep: yes\r\n\r\n",
        );
        let r = c.response(false);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hi"[..]));
        for gone in ["connection", "x-bar", "keep-alive", "proxy-connection", "upgrade", "trailer"] {
            assert_eq!(r.header(gone), None, "{gone} forwarded downstream: {}", r.head);
        }
        assert_eq!((r.header("x-kept"), r.header("via")), (Some("yes"), Some("1.1 hintq")), "{}", r.head);
        let got = &fake.requests_to("/p6")[0];
        for gone in ["connection", "x-foo", "keep-alive", "proxy-connection", "te", "upgrade"] {
            assert_eq!(got.header(gone), None, "{gone} forwarded upstream: {}", got.head);
        }
        assert_eq!(
            (got.header("x-keep"), got.header("via")),
            (Some("yes"), Some("1.1 hintq")),
            "{}",
            got.head
        );
        c.assert_kept("/ok", b"ok");
        still_serves(&px);
    });
}

#[test]
fn p7_cr_lf_nul_in_field_values_never_forwarded() {
    each("P7", |b, p| {
        let fake = Fake::start(|g, s| {
            let bytes: &[u8] = match g.target.as_str() {
                "/p7/cr" => b"HTTP/1.1 200 OK\r\nX-Bad: a\rInjected: 1\r\nContent-Length: 2\r\n\r\nhi",
                "/p7/nul" => b"HTTP/1.1 200 OK\r\nX-Bad: a\0b\r\nContent-Length: 2\r\n\r\nhi",
                "/p7/lf" => b"HTTP/1.1 200 OK\r\nX-Bad: a\nInjected: 1\r\nContent-Length: 2\r\n\r\nhi",
                _ => b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            };
            s.write_all(bytes).unwrap();
            After::Close
        });
        let px = start_proxy(fake.addr, b, p);
        for req in [
            &b"GET /p7 HTTP/1.1\r\nHost: t\r\nX-A: a\rInjected: 1\r\n\r\n"[..],
            b"GET /p7 HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n",
            b"GET /p7 HTTP/1.1\r\nHost: t\r\nX-A: a\nInjected: 1\r\n\r\n",
        ] {
            refused(&px, req, 400);
        }
        assert!(fake.requests_to("/p7").is_empty(), "a request with CR/LF/NUL in a value was forwarded");
        for target in ["/p7/cr", "/p7/nul", "/p7/lf"] {
            let r = refused(&px, format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(), 502);
            assert_eq!(r.header("injected"), None);
        }
        still_serves(&px);
    });
}

#[test]
fn p8_expect_100_continue_passes_through_without_deadlock() {
    each("P8", |b, p| {
        let fake = Fake::start(|g, s| {
            if g.target == "/no100" {
                s.write_all(b"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\n").unwrap();
                return After::Close;
            }
            let mut out =
                format!("HTTP/1.1 201 Created\r\nContent-Length: {}\r\n\r\n", g.body.len()).into_bytes();
            out.extend_from_slice(&g.body);
            answer(s, &out)
        });
        let px = start_proxy(fake.addr, b, p);
        let mut c = Client::connect(px.local_addr());
        c.s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        // The head alone: the body follows only after the 100.
        c.send(b"POST /p8 HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
        let r = c.response(false);
        assert_eq!(r.status, 100, "the upstream's 100 Continue must reach the client: {}", r.head);
        c.send(b"hello");
        let r = c.response(false);
        assert_eq!((r.status, r.body.as_slice()), (201, &b"hello"[..]), "{}", r.head);
        let got = &fake.requests_to("/p8")[0];
        assert_eq!(got.header("expect"), Some("100-continue"));
        c.assert_kept("/ok", b"ok");
        // An upstream that answers at once, without 100 and without reading the body: the
        // answer reaches the waiting client, and both connections close (the body was never
        // sent, so neither can carry another request).
        let mut c = Client::connect(px.local_addr());
        c.send(b"POST /no100 HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
        let r = c.response(false);
        assert_eq!((r.status, r.header("connection")), (417, Some("close")), "{}", r.head);
        c.assert_closed();
        // HTTP/1.0 ignores Expect (S17): not forwarded, no 100 back.
        let mut c = Client::connect(px.local_addr());
        c.send(b"POST /p8 HTTP/1.0\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi");
        let r = c.response(false);
        assert_eq!((r.status, r.body.as_slice()), (201, &b"hi"[..]), "{}", r.head);
        still_serves(&px);
    });
}

#[test]
fn p9_post_never_retried() {
    each("P9 POST", |b, p| {
        let fake = Fake::start(|_, _| After::Close);
        let px = start_proxy(fake.addr, b, p);
        // On a new upstream connection, and on a reused one (same client connection, so the
        // same thread and its pool).
        refused(&px, b"POST /p9 HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx", 502);
        let mut c = Client::connect(px.local_addr());
        c.assert_kept("/ok", b"ok");
        c.send(b"POST /p9 HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx");
        assert_eq!(c.response(false).status, 502);
        c.assert_closed();
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(fake.requests_to("/p9").len(), 2, "each POST reaches the upstream exactly once");
        assert_eq!(px.stats().retries, 0);
        still_serves(&px);
    });
}

#[test]
fn p9_idempotent_get_retried_once_on_stale_pooled_connection() {
    each("P9 GET", |b, p| {
        let seen = Arc::new(AtomicUsize::new(0));
        let s2 = Arc::clone(&seen);
        let fake = Fake::start(move |g, s| match g.target.as_str() {
            "/once" if s2.fetch_add(1, SeqCst) == 0 => After::Close,
            "/once" => answer(s, b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nretried"),
            _ => After::Close,
        });
        let px = start_proxy(fake.addr, b, p);
        let mut c = Client::connect(px.local_addr());
        c.assert_kept("/ok", b"ok"); // leaves an idle upstream connection in this thread's pool
        c.send(b"GET /once HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = c.response(false);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"retried"[..]), "{}", r.head);
        let got = fake.requests_to("/once");
        assert_eq!(got.len(), 2);
        assert_ne!(got[0].conn, got[1].conn, "the retry goes over a new connection");
        assert_eq!(px.stats().retries, 1);
        // A retry that fails too is the end: 502, no third attempt.
        c.assert_kept("/ok", b"ok");
        c.send(b"GET /always HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(false).status, 502);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(fake.requests_to("/always").len(), 2);
        still_serves(&px);
    });
}

#[test]
fn p9_idle_upstream_closed_while_pooled_is_not_used() {
    each("P9 idle", |b, p| {
        let fake = Fake::start(|_, s| {
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi").unwrap();
            std::thread::sleep(Duration::from_millis(50));
            After::Close // the upstream closes the connection after it went idle
        });
        let px = start_proxy(fake.addr, b, p);
        let mut c = Client::connect(px.local_addr());
        c.send(b"GET /closes HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(false).body, b"hi");
        assert!(eventually(Duration::from_secs(2), || px.stats().stale_idle == 1), "{:?}", px.stats());
        c.assert_kept("/ok", b"ok");
        let st = px.stats();
        assert_eq!((st.retries, st.upstream_connects, st.upstream_reused), (0, 2, 0), "{st:?}");
        still_serves(&px);
    });
}

#[test]
fn s11_slowloris_gets_408_and_s12_idle_is_closed() {
    each("S11/S12", |b, p| {
        let fake = Fake::start(|_, _| After::Close);
        let px = start_proxy_with(fake.addr, b, p, |c| {
            c.header_timeout = Duration::from_millis(400);
            c.idle_timeout = Duration::from_millis(400);
        });
        let mut slow = Client::connect(px.local_addr());
        slow.send(b"GET /ok HTTP/1.1\r\n");
        let mut idle = Client::connect(px.local_addr());
        let r = slow.response(false);
        assert_eq!(r.status, 408);
        slow.assert_closed();
        idle.assert_closed();
        still_serves(&px);
    });
}

#[test]
fn s14_pipelined_requests_answered_in_order_and_s16_half_close() {
    each("S14/S16", |b, p| {
        let fake = Fake::start(|g, s| {
            let body = format!("{}:{}", g.target, String::from_utf8_lossy(&g.body));
            answer(s, format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes())
        });
        let px = start_proxy(fake.addr, b, p);
        let mut c = Client::connect(px.local_addr());
        c.send(
            b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nPOST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nxyz\
              POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nuv\r\n0\r\n\r\nGET /d HTTP/1.1\r\nHost: t\r\n\r\n",
        );
        c.shutdown_write();
        for want in ["/a:", "/b:xyz", "/c:uv", "/d:"] {
            let r = c.response(false);
            assert_eq!((r.status, String::from_utf8_lossy(&r.body).as_ref()), (200, want));
        }
        c.assert_closed();
        still_serves(&px);
    });
}

#[test]
fn s19_empty_connection_closed_silently_and_s18_client_vanishing_is_survived() {
    each("S18/S19", |b, p| {
        let big = Arc::new(pattern_bytes(4 << 20, 7));
        let bg = Arc::clone(&big);
        let fake = Fake::start(move |_, s| {
            let _ =
                s.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", bg.len()).as_bytes());
            let _ = s.write_all(&bg);
            After::Keep
        });
        let px = start_proxy(fake.addr, b, p);
        let mut c = Client::connect(px.local_addr());
        c.shutdown_write();
        c.assert_closed();
        let mut c = Client::connect(px.local_addr());
        c.send(b"\r\n\r\n");
        c.shutdown_write();
        c.assert_closed();
        // A client that asks for 4 MB and vanishes after the first bytes.
        let mut c = Client::connect(px.local_addr());
        c.send(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
        let mut first = [0u8; 100];
        c.s.read_exact(&mut first).unwrap();
        hintq_testkit::reset(c.s);
        std::thread::sleep(Duration::from_millis(100));
        still_serves(&px);
    });
}

#[test]
fn access_log_has_one_line_per_response() {
    let (b, p) = combos()[0];
    let path = std::env::temp_dir().join(format!("hintq-proxy-access-{}.log", std::process::id()));
    let fake = Fake::start(|_, _| After::Close);
    let log = Arc::new(hintq_serve::access_log::AccessLog::open(path.to_str().unwrap()).unwrap());
    let px = start_proxy_with(fake.addr, b, p, |c| c.access_log = Some(log));
    let mut c = Client::connect(px.local_addr());
    c.assert_kept("/ok", b"ok");
    c.send(b"GET /gone HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).status, 502);
    drop(px);
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("127.0.0.1 - - [") && lines[0].ends_with("\"GET /ok HTTP/1.1\" 200 2"),
        "{text}"
    );
    // The body of the 502 was sent: its bytes are logged.
    let sent = hintq_http::error_body(502).len();
    assert!(lines[1].ends_with(&format!("\"GET /gone HTTP/1.1\" 502 {sent}")), "{text}");
}

/// A burst of connections opened at once, before any sends a request, each served: the
/// shared listener of `sharded-shared` accepts one connection per readiness and must be
/// reported again for the rest, also on the edge-triggered backends; the own listeners take
/// theirs in batches and must be declared again after a full one.
#[test]
fn a_burst_of_pending_connections_is_all_served() {
    const BURST: usize = 100;
    each("burst", |b, p| {
        let fake = Fake::start(|_, _| After::Close);
        let px = start_proxy(fake.addr, b, p);
        let mut clients: Vec<Client> = (0..BURST).map(|_| Client::connect(px.local_addr())).collect();
        for (i, c) in clients.iter_mut().enumerate() {
            c.send(b"GET /ok HTTP/1.1\r\nHost: t\r\n\r\n");
            let r = c.response(false);
            assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]), "{b}/{p}: client {i} of the burst");
        }
        assert_eq!(px.stats().accepted, BURST as u64, "{b}/{p}: each accepted once");
    });
}
