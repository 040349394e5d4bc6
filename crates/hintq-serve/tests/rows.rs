//! RELIABILITY.md rows S1–S19 against `hintq serve`, each sending the raw bytes and checking
//! the answer, the connection state (closed or kept) and that the next client is served.
//!
//! Every row runs on every backend with the reactor; a representative subset (framing,
//! timeouts, paths, pipelining, half-close, expect, vanishing clients, empty connections)
//! runs on every other pattern × backend. Unsupported combinations are skipped with a
//! printed reason (Leader/Followers and Half-Sync need a backend with hand-off mode).
//!
//! The subset on the multi-threaded patterns found a hintq-patterns race (about 1 in 60 of
//! its tests failed): a thread closing a connection closed the descriptor before releasing its
//! in-flight flag, so a connection accepted on the reused number by another thread had its
//! first event dropped as "in flight" and was never answered. These tests are its regression
//! tests.

mod support;
mod tools;

use hintq::Backend;
use hintq_patterns::Pattern;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{refused, Client, Srv};

const GET_A: &[u8] = b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";

fn s01_cl_and_te(srv: &Srv) {
    refused(
        srv,
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    );
    refused(
        srv,
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
        400,
    );
}

fn s02_bad_content_length(srv: &Srv) {
    for cl in [
        "Content-Length: 5\r\nContent-Length: 6",
        "Content-Length: +5",
        "Content-Length: -1",
        "Content-Length: 0x5",
        "Content-Length: ",
        "Content-Length: 123456789012345678901234567890",
        "Content-Length: 5, 6",
    ] {
        refused(srv, format!("POST / HTTP/1.1\r\nHost: t\r\n{cl}\r\n\r\nhello").as_bytes(), 400);
    }
    // "42, 42" collapses to 42: the body is consumed and the connection kept.
    let mut c = srv.client();
    c.send(
        format!(
            "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4, 4\r\n\r\nabcd{}",
            std::str::from_utf8(GET_A).unwrap()
        )
        .as_bytes(),
    );
    assert_eq!(c.response(false).status, 405);
    assert_eq!(c.response(false).body, b"alpha\n");
    c.assert_kept("/a.txt", b"alpha\n");
}

fn s03_bad_transfer_encoding(srv: &Srv) {
    for (te, status) in [("identity", 501), ("gzip", 501), ("chunked, identity", 501), (",chunked", 400)] {
        refused(
            srv,
            format!("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: {te}\r\n\r\n0\r\n\r\n").as_bytes(),
            status,
        );
    }
    refused(srv, b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
    refused(srv, b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
}

fn s04_bad_chunk_size(srv: &Srv) {
    for line in
        ["0x1\r\na", "+1\r\na", "-1\r\na", "1_0\r\na", "\r\na", "10000000000000001\r\na", "1\na", "1\rXa"]
    {
        let req =
            format!("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n{line}\r\n0\r\n\r\n");
        refused(srv, req.as_bytes(), 400);
    }
}

fn s05_chunk_overrun(srv: &Srv) {
    refused(
        srv,
        b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n",
        400,
    );
}

fn s06_chunk_overhead(srv: &Srv) {
    let mut req = b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for _ in 0..40_000 {
        req.extend_from_slice(b"1\r\na\r\n");
    }
    refused(srv, &req, 400);
    let ext = format!(
        "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1;x={}\r\na\r\n0\r\n\r\n",
        "y".repeat(20_000)
    );
    refused(srv, ext.as_bytes(), 400);
}

fn s07_bad_field_names(srv: &Srv) {
    for h in ["Host: t\r\nX: a\r\n b", "Host : t", "Host: t\r\n: x", "Host: t\r\nX(y): 1", " X: 1\r\nHost: t"]
    {
        refused(srv, format!("GET / HTTP/1.1\r\n{h}\r\n\r\n").as_bytes(), 400);
    }
}

fn s08_bad_bytes(srv: &Srv) {
    refused(srv, b"GET / HTTP/1.1\r\nHost: t\r\nX: a\0b\r\n\r\n", 400);
    refused(srv, b"GET / HTTP/1.1\r\nHost: t\r\nX: a\rb\r\n\r\n", 400);
    refused(srv, b"GET / HTTP/1.1\r\nHost: t\r\nX: a\nb\r\n\r\n", 400);
    refused(srv, b"GET /\r HTTP/1.1\r\nHost: t\r\n\r\n", 400);
    // A space in the target was a 505, `HTTP/1.1` taken for the version of `th HTTP/1.1`.
    refused(srv, b"GET /pa th HTTP/1.1\r\nHost: t\r\n\r\n", 400);
    // Bytes that cannot be a method were a 501, taken for an over-long method.
    refused(srv, TLS_HELLO, 400);
    refused(srv, &garbage(256), 400);
}

/// The start of a TLS ClientHello, as a client speaking TLS to the plain-text port sends.
const TLS_HELLO: &[u8] =
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x9c\x1e\x8b\x5d\x07\x41\xb3\x60\x7c\xf1\
\x9a\x3f\x52\x44\x10\xe3\x7b\x2c\x91\x88\x05\xd6\x6e\x4f\x27\xb8";

/// Fixed pseudo-random bytes (xorshift), the shape of an outside suite's "random bytes" case.
fn garbage(len: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn s09_host(srv: &Srv) {
    refused(srv, b"GET / HTTP/1.1\r\n\r\n", 400);
    refused(srv, b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    // An empty host was served 200.
    refused(srv, b"GET /a.txt HTTP/1.1\r\nHost:\r\n\r\n", 400);
    refused(srv, b"GET /a.txt HTTP/1.1\r\nHost: :8080\r\n\r\n", 400);
    refused(srv, b"GET /a.txt HTTP/1.0\r\nHost: \r\n\r\n", 400);
    // HTTP/1.0 without Host is fine.
    let mut c = srv.client();
    c.send(b"GET /a.txt HTTP/1.0\r\n\r\n");
    assert_eq!(c.response(false).status, 200);
    c.assert_closed();
}

fn s10_limits(srv: &Srv) {
    refused(srv, format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(9000)).as_bytes(), 414);
    refused(srv, format!("GET / HTTP/1.1\r\nHost: t\r\nX: {}\r\n\r\n", "a".repeat(9000)).as_bytes(), 431);
    let many: String = (0..101).map(|i| format!("X{i}: 1\r\n")).collect();
    refused(srv, format!("GET / HTTP/1.1\r\nHost: t\r\n{many}\r\n").as_bytes(), 431);
    refused(srv, format!("{} / HTTP/1.1\r\nHost: t\r\n\r\n", "A".repeat(40)).as_bytes(), 501);
    // Past the method limit but with a non-token byte: a bad request line, not a long method.
    refused(
        srv,
        format!("{}\x01{} / HTTP/1.1\r\nHost: t\r\n\r\n", "A".repeat(20), "A".repeat(20)).as_bytes(),
        400,
    );
    refused(
        srv,
        format!("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n", 2 << 20).as_bytes(),
        413,
    );
    // A request line of 8000 octets is supported (RFC 9112 §3¶5): 404, not 414.
    let mut c = srv.client();
    c.send(format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "a".repeat(7990)).as_bytes());
    assert_eq!(c.response(false).status, 404);
    c.assert_kept("/a.txt", b"alpha\n");
}

fn s11_slowloris(srv: &Srv) {
    let mut slow = srv.client();
    let t0 = Instant::now();
    slow.send(b"GET / HTTP/1.1\r\n");
    let trickle = b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut answered = None;
    for b in trickle.iter() {
        std::thread::sleep(Duration::from_millis(50));
        if slow.s.write_all(&[*b]).is_err() {
            answered = Some(t0.elapsed()); // reset after the server closed
            break;
        }
        // Others are served meanwhile.
        if t0.elapsed() < Duration::from_millis(300) {
            srv.still_serves();
        }
        let mut peek = [0u8; 1];
        slow.s.set_nonblocking(true).unwrap();
        let r = slow.s.peek(&mut peek);
        slow.s.set_nonblocking(false).unwrap();
        if !matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock) {
            answered = Some(t0.elapsed());
            break;
        }
    }
    let at = answered.expect("the slow head must be cut off");
    assert!(at >= support::HEADER, "not before the header deadline: {at:?}");
    assert!(
        at < support::HEADER + Duration::from_secs(2),
        "at the header deadline, whatever the trickle: {at:?}"
    );
    let rest = slow.read_to_end();
    if !rest.is_empty() {
        assert!(rest.starts_with(b"HTTP/1.1 408 "), "{:?}", String::from_utf8_lossy(&rest));
    }
    srv.still_serves();
}

fn s12_idle(srv: &Srv) {
    let mut idle: Vec<Client> = (0..200).map(|_| srv.client()).collect();
    for c in idle.iter_mut().take(50) {
        c.send(GET_A);
        assert_eq!(c.response(false).status, 200);
    }
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(400) {
        srv.still_serves();
    }
    for c in &mut idle {
        assert!(c.closed_within(Duration::from_secs(3)), "idle connection closed at the idle timeout");
    }
    assert!(t0.elapsed() < Duration::from_secs(4));
    srv.wait_idle(Duration::from_secs(2));
    srv.still_serves();
}

fn s13_paths(srv: &Srv) {
    let mut c = srv.client();
    let cases: [(&str, u16); 12] = [
        ("/../secret.txt", 400),
        ("/%2e%2e/secret.txt", 400),
        ("/sub/..%2fsecret.txt", 400),
        ("/sub%2f..%2f..%2fsecret.txt", 400),
        ("/a.txt%00.html", 400),
        ("/sub\\..\\..\\secret.txt", 400),
        ("/out", 403),
        ("/sub/up", 403),
        ("/sub/../../secret.txt", 400),
        ("/noindex/", 403),
        ("/nothing", 404),
        ("/in", 200),
    ];
    for (target, status) in cases {
        c.send(format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        let r = c.response(false);
        assert_eq!(r.status, status, "{target}: {}", r.head);
        assert!(!String::from_utf8_lossy(&r.body).contains("SECRET"), "{target} leaked the outside file");
    }
    c.assert_kept("/a.txt", b"alpha\n");
    // Absolute-form and a dot-segment that stays inside.
    c.send(b"GET http://t/sub/../a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"alpha\n");
}

fn s14_pipelining(srv: &Srv) {
    let mut c = srv.client();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /sub/ HTTP/1.1\r\nHost: t\r\n\r\nHEAD /1k.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /index.html HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"alpha\n");
    assert_eq!(c.response(false).body, b"<p>sub</p>\n");
    let h = c.response(true);
    assert_eq!((h.status, h.header("content-length")), (200, Some("1024")));
    assert!(c.response(false).body == support::big_bytes(), "big body intact between pipelined responses");
    assert_eq!(c.response(false).body, b"<h1>hello</h1>\n");
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello worldGET /x HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(false);
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    assert_eq!(c.response(false).status, 404, "the pipelined GET after the body");
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nGET /\r\n0\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).status, 405);
    assert_eq!(c.response(false).body, b"alpha\n");
    c.assert_kept("/a.txt", b"alpha\n");
}

fn s15_valid_then_invalid(srv: &Srv) {
    let mut c = srv.client();
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"alpha\n");
    let r = c.response(false);
    assert_eq!((r.status, r.header("connection")), (400, Some("close")));
    c.assert_closed();
    srv.still_serves();
}

fn s16_half_close(srv: &Srv) {
    let mut c = srv.client();
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    c.shutdown_write();
    assert!(c.response(false).body == support::big_bytes());
    c.assert_closed();
    srv.still_serves();
}

fn s17_expect(srv: &Srv) {
    let mut c = srv.client();
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    assert_eq!(c.response(false).status, 100, "100 before the body is sent");
    c.send(b"hello");
    assert_eq!(c.response(false).status, 405);
    c.assert_kept("/a.txt", b"alpha\n");
    // The body arrives with the head: no interim 100 (RFC 9110 §10.1.1), the answer at once.
    let mut c = srv.client();
    c.send(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello");
    assert_eq!(c.response(false).status, 405, "no 100 once the body has arrived");
    c.assert_kept("/a.txt", b"alpha\n");
    let mut c = srv.client();
    c.send(b"POST /a.txt HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: keep-alive\r\n\r\nhello");
    let r = c.response(false);
    assert_eq!((r.status, r.header("connection")), (405, Some("keep-alive")), "no 100 in HTTP/1.0");
    refused(srv, b"GET / HTTP/1.1\r\nHost: t\r\nExpect: foo\r\n\r\n", 417);
}

fn s18_client_vanishes(srv: &Srv) {
    for _ in 0..5 {
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut tmp = [0u8; 1000];
        s.read_exact(&mut tmp).unwrap();
        // Close with RST while the server is mid-sendfile.
        hintq_testkit::reset(s);
    }
    for _ in 0..5 {
        // Vanishing politely (FIN) mid-response too.
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.write_all(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
        drop(s);
    }
    srv.still_serves();
    srv.wait_idle(Duration::from_secs(4));
}

fn s19_empty_connections(srv: &Srv) {
    let mut c = srv.client();
    c.shutdown_write();
    assert!(c.read_to_end().is_empty(), "silent close of an empty connection");
    let mut c = srv.client();
    c.send(b"\r\n\r\n\r\n");
    c.shutdown_write();
    assert!(c.read_to_end().is_empty(), "silent close after CRLF only");
    let mut c = srv.client();
    c.send(b"\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"alpha\n", "leading CRLF ignored");
    c.assert_kept("/a.txt", b"alpha\n");
    // An idle connection that never sent a byte is closed silently, not with 408.
    let mut c = srv.client();
    c.send(b"\r\n");
    assert!(c.closed_within(Duration::from_secs(4)));
}

/// Sends `method target` with `extra` header lines on `c`; returns the response.
fn ask(c: &mut Client, method: &str, target: &str, extra: &str) -> tools::Resp {
    c.send(format!("{method} {target} HTTP/1.1\r\nHost: t\r\n{extra}\r\n").as_bytes());
    c.response(method == "HEAD")
}

/// Sets a file's modification time a year in the past, so that its `Last-Modified` is a
/// strong validator (RFC 9110 §8.8.2.2) whatever second the test runs in.
fn age(srv: &Srv, name: &str) {
    let f = std::fs::File::options().write(true).open(srv.root.path().join(name)).unwrap();
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(365 * 86_400)).unwrap();
}

/// ETag on 200, If-None-Match (list, `*`, weak comparison) before If-Modified-Since, 304
/// with ETag/Last-Modified/Date and no body, a changed file gets a new tag (RFC 9110 §8.8.3,
/// §13.1.2, §13.2.2, §15.4.5).
fn v1_validators(srv: &Srv) {
    let mut c = srv.client();
    let r = ask(&mut c, "GET", "/a.txt", "");
    assert_eq!(r.header("accept-ranges"), Some("bytes"));
    let tag = r.header("etag").expect("ETag on 200").to_string();
    let lm = r.header("last-modified").unwrap().to_string();
    let inner = tag.strip_prefix('"').and_then(|t| t.strip_suffix('"')).expect("a strong, quoted tag");
    let parts: Vec<&str> = inner.split('-').collect();
    assert_eq!(parts.len(), 3, "inode-size-mtime: {tag}");
    assert!(parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_hexdigit())), "{tag}");
    assert_eq!(parts[1], "6", "size in hex: {tag}");
    // The same tag for the same file, on a fresh connection too.
    assert_eq!(ask(&mut srv.client(), "HEAD", "/a.txt", "").header("etag"), Some(tag.as_str()));

    for inm in
        [tag.clone(), format!("W/{tag}"), "*".into(), format!("\"x\", W/\"y\" ,{tag}"), format!(" ,{tag},")]
    {
        // Pipelined with a plain GET: a 304 has no body, so the next response starts right after it.
        c.send(
            format!("GET /a.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: {inm}\r\n\r\n{}", as_str(GET_A))
                .as_bytes(),
        );
        let r = c.response(false);
        assert_eq!(r.status, 304, "If-None-Match: {inm}: {}", r.head);
        assert_eq!(r.header("etag"), Some(tag.as_str()));
        assert_eq!(r.header("last-modified"), Some(lm.as_str()));
        assert!(r.header("date").is_some());
        assert_eq!(r.header("content-length"), None, "{}", r.head);
        assert_eq!(c.response(false).body, b"alpha\n", "the request after a 304");
    }
    let r = ask(&mut c, "HEAD", "/a.txt", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!(r.status, 304);
    // If-None-Match takes precedence: not matching → 200 even though If-Modified-Since would be 304.
    let r = ask(&mut c, "GET", "/a.txt", &format!("If-None-Match: \"other\"\r\nIf-Modified-Since: {lm}\r\n"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"alpha\n"[..]));
    // An unparsable If-None-Match matches nothing, and still overrides If-Modified-Since.
    let r = ask(&mut c, "GET", "/a.txt", &format!("If-None-Match: {inner}\r\nIf-Modified-Since: {lm}\r\n"));
    assert_eq!(r.status, 200, "unquoted tag");
    // Without If-None-Match, If-Modified-Since still works and the 304 carries the tag.
    let r = ask(&mut c, "GET", "/a.txt", &format!("If-Modified-Since: {lm}\r\n"));
    assert_eq!((r.status, r.header("etag")), (304, Some(tag.as_str())));
    // Another file has another tag.
    let other = ask(&mut c, "GET", "/1k.bin", "");
    assert_ne!(other.header("etag"), Some(tag.as_str()));
    // A changed file gets a new tag, and the old one no longer matches, once the open-file
    // cache's validity period has passed.
    std::fs::write(srv.root.path().join("a.txt"), "alpha!\n").unwrap();
    std::thread::sleep(support::FILE_VALID + Duration::from_millis(50));
    let r = ask(&mut c, "GET", "/a.txt", &format!("If-None-Match: {tag}\r\n"));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"alpha!\n"[..]));
    assert_ne!(r.header("etag"), Some(tag.as_str()));
    std::fs::write(srv.root.path().join("a.txt"), "alpha\n").unwrap();
    std::thread::sleep(support::FILE_VALID + Duration::from_millis(50));
    c.assert_kept("/a.txt", b"alpha\n");
}

fn as_str(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

/// Single ranges (RFC 9110 §14): 206 with Content-Range and exactly those bytes (sendfile
/// from the offset), 416 with `bytes */len`, everything else ignored (200, full body).
fn r1_ranges(srv: &Srv) {
    let big = support::big_bytes();
    let len = big.len();
    let mut c = srv.client();
    for (spec, first, last) in [
        ("bytes=10-99", 10, 99),
        ("bytes=0-0", 0, 0),
        ("bytes=-100", len - 100, len - 1),
        ("bytes=4194300-", len - 4, len - 1),
        ("bytes=0-", 0, len - 1),
        ("bytes=4194000-99999999999999999999999", 4_194_000, len - 1),
        ("bytes=-99999999999999999999999", 0, len - 1),
        ("BYTES=1000000-1999999", 1_000_000, 1_999_999),
        ("bytes= , 7-8 ,", 7, 8),
    ] {
        let r = ask(&mut c, "GET", "/big.bin", &format!("Range: {spec}\r\n"));
        assert_eq!(r.status, 206, "{spec}: {}", r.head);
        assert_eq!(r.header("content-range"), Some(format!("bytes {first}-{last}/{len}").as_str()), "{spec}");
        assert_eq!(r.header("content-length"), Some((last - first + 1).to_string().as_str()));
        assert!(r.header("etag").is_some() && r.header("last-modified").is_some());
        assert!(r.body == big[first..=last], "{spec}: bytes {first}-{last}");
    }
    // Pipelined: a range, a normal request, a range of a small file, in one write.
    c.send(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=3000000-3999999\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=1-3\r\n\r\nGET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(false);
    assert!(r.status == 206 && r.body == big[3_000_000..4_000_000], "{}", r.head);
    assert_eq!(c.response(false).body, b"alpha\n");
    let r = c.response(false);
    assert_eq!((r.status, r.body.as_slice()), (206, &b"lph"[..]));
    assert_eq!(c.response(false).body, vec![b'x'; 1024]);
    // HEAD ignores Range (RFC 9110 §14.2: defined for GET only): the whole file's head.
    let r = ask(&mut c, "HEAD", "/big.bin", "Range: bytes=10-99\r\n");
    assert_eq!((r.status, r.header("content-length")), (200, Some(len.to_string().as_str())));
    assert_eq!(r.header("content-range"), None);
    let r = ask(&mut c, "HEAD", "/big.bin", "Range: bytes=99999999-\r\n");
    assert_eq!(r.status, 200, "an unsatisfiable Range on HEAD is ignored too: {}", r.head);
    // Unsatisfiable: 416, the current length, a short body, connection kept.
    for spec in ["bytes=4194304-", "bytes=4194304-4194400", "bytes=99999999999999999999999-", "bytes=-0"] {
        let r = ask(&mut c, "GET", "/big.bin", &format!("Range: {spec}\r\n"));
        assert_eq!(r.status, 416, "{spec}: {}", r.head);
        assert_eq!(r.header("content-range"), Some(format!("bytes */{len}").as_str()));
        assert_eq!(r.body, b"416 Range Not Satisfiable\n");
    }
    let r = ask(&mut c, "GET", "/empty.txt", "Range: bytes=0-\r\n");
    assert_eq!((r.status, r.header("content-range")), (416, Some("bytes */0")));
    let r = ask(&mut c, "GET", "/empty.txt", "Range: bytes=-5\r\n");
    assert_eq!((r.status, r.body.len()), (200, 0));
    // Ignored: invalid syntax, other units, several ranges, Range on two lines.
    let many = format!("bytes={}", "0-0,".repeat(1500));
    for extra in [
        "Range: bytes=5-1\r\n".to_string(),
        "Range: bytes=abc\r\n".into(),
        "Range: bytes=1-2-3\r\n".into(),
        "Range: items=0-1\r\n".into(),
        "Range: bytes=0-1,3-4\r\n".into(),
        "Range: bytes=0-1\r\nRange: bytes=0-1\r\n".into(),
        format!("Range: {many}\r\n"),
    ] {
        let r = ask(&mut c, "GET", "/a.txt", &extra);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"alpha\n"[..]), "{extra:.60}");
        assert_eq!(r.header("content-range"), None);
    }
    let r = ask(&mut c, "GET", "/big.bin", "Range: bytes=0-1,5-6\r\n");
    assert!(r.status == 200 && r.body == big, "multi-range: the full file");
    // A matching If-None-Match wins over Range.
    let tag = ask(&mut c, "HEAD", "/big.bin", "").header("etag").unwrap().to_string();
    let r = ask(&mut c, "GET", "/big.bin", &format!("Range: bytes=0-9\r\nIf-None-Match: {tag}\r\n"));
    assert_eq!(r.status, 304);
    c.assert_kept("/a.txt", b"alpha\n");
}

/// If-Range (RFC 9110 §13.1.5): the range only when the strong ETag or the exact
/// Last-Modified matches; otherwise the full 200.
fn r2_if_range(srv: &Srv) {
    age(srv, "1k.bin");
    let mut c = srv.client();
    let h = ask(&mut c, "HEAD", "/1k.bin", "");
    let (tag, lm) = (h.header("etag").unwrap().to_string(), h.header("last-modified").unwrap().to_string());
    let partial = |c: &mut Client, if_range: &str| {
        let r = ask(c, "GET", "/1k.bin", &format!("Range: bytes=1000-\r\nIf-Range: {if_range}\r\n"));
        match r.status {
            206 => {
                assert_eq!((r.body.len(), r.header("content-range")), (24, Some("bytes 1000-1023/1024")));
                true
            }
            200 => {
                assert_eq!(r.body, vec![b'x'; 1024]);
                false
            }
            s => panic!("If-Range: {if_range}: {s}"),
        }
    };
    assert!(partial(&mut c, &tag), "matching ETag");
    assert!(partial(&mut c, &lm), "matching date");
    assert!(!partial(&mut c, &format!("W/{tag}")), "a weak tag never matches");
    assert!(!partial(&mut c, "\"other\""));
    assert!(!partial(&mut c, "Sat, 01 Jan 2000 00:00:00 GMT"));
    assert!(!partial(&mut c, "garbage"));
    c.assert_kept("/a.txt", b"alpha\n");
}

/// Directories (no listings): without the slash 301 to the same path plus `/` (query kept,
/// percent-encoded, always a local path), with it `index.html` or 403.
fn d1_directories(srv: &Srv) {
    let mut c = srv.client();
    for (target, location) in [
        ("/sub", "/sub/"),
        ("/sub?x=1&y=%20", "/sub/?x=1&y=%20"),
        ("/noindex", "/noindex/"),
        ("/a%20dir", "/a%20dir/"),
        ("//evil.com", "/evil.com/"),
        ("///evil.com?//x", "/evil.com/?//x"),
        ("/.//evil.com", "/evil.com/"),
        ("/sub/..//evil.com", "/evil.com/"),
        ("http://t//evil.com", "/evil.com/"),
        ("/idxdir/index.html", "/idxdir/index.html/"),
    ] {
        // Pipelined with a plain GET: the 301's body is framed right.
        c.send(format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n{}", as_str(GET_A)).as_bytes());
        let r = c.response(false);
        assert_eq!((r.status, r.header("location")), (301, Some(location)), "{target}: {}", r.head);
        assert_eq!(r.body, b"301 Moved Permanently\n");
        assert_eq!(c.response(false).body, b"alpha\n");
    }
    let r = ask(&mut c, "HEAD", "/sub", "");
    assert_eq!((r.status, r.header("location")), (301, Some("/sub/")));
    for (target, status, body) in [
        ("/sub/", 200, &b"<p>sub</p>\n"[..]),
        ("/a%20dir/", 200, b"spaced\n"),
        ("//evil.com/", 200, b"local\n"),
        ("/", 200, b"<h1>hello</h1>\n"),
        ("/sub/.", 200, b"<p>sub</p>\n"),
        ("/noindex/", 403, b"403 Forbidden\n"),
        ("/idxdir/", 403, b"403 Forbidden\n"),
        ("/a.txt/", 404, b"404 Not Found\n"),
        ("/%2Fevil.com", 400, b"400 Bad Request\n"),
    ] {
        let r = ask(&mut c, "GET", target, "");
        assert_eq!((r.status, r.body.as_slice()), (status, body), "{target}");
        assert_eq!(r.header("location"), None);
    }
    c.assert_kept("/a.txt", b"alpha\n");
}

/// Basic GET/HEAD semantics the rows rely on.
fn basics(srv: &Srv) {
    let mut c = srv.client();
    c.send(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(false);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"<h1>hello</h1>\n"[..]));
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(r.header("date").is_some());
    let lm = r.header("last-modified").unwrap().to_string();
    c.send(format!("GET /index.html HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: {lm}\r\n\r\n").as_bytes());
    assert_eq!(c.response(false).status, 304);
    c.send(
        b"GET /index.html HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n\r\n",
    );
    assert_eq!(c.response(false).status, 200);
    c.send(b"HEAD /sub/style.css HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(true);
    assert_eq!(
        (r.status, r.header("content-type"), r.header("content-length")),
        (200, Some("text/css; charset=utf-8"), Some("4"))
    );
    c.send(b"GET /a%20b.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).body, b"space\n");
    c.send(b"DELETE /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    let r = c.response(false);
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    c.send(b"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(c.response(false).status, 501);
    c.send(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    let r = c.response(false);
    assert_eq!(r.header("connection"), Some("close"));
    c.assert_closed();
    refused(srv, b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
}

macro_rules! cases {
    ($m:meta; $backend:expr, $pattern:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            #[$m]
            fn $case() {
                if let Some(srv) = crate::support::Srv::start($backend, $pattern, stringify!($case)) {
                    super::super::$case(&srv);
                    srv.still_serves();
                }
            }
        )*
    };
}

macro_rules! backends {
    ($m:meta; $pattern:expr; $($case:ident),* $(,)?) => {
        mod uring { cases!($m; hintq::Backend::Uring, $pattern; $($case),*); }
        mod epoll { cases!($m; hintq::Backend::Epoll, $pattern; $($case),*); }
        mod epoll_et { cases!($m; hintq::Backend::EpollEt, $pattern; $($case),*); }
        mod epoll_oneshot { cases!($m; hintq::Backend::EpollOneshot, $pattern; $($case),*); }
        mod poll { cases!($m; hintq::Backend::Poll, $pattern; $($case),*); }
        mod select { cases!($m; hintq::Backend::Select, $pattern; $($case),*); }
        mod select_classic { cases!($m; hintq::Backend::SelectClassic, $pattern; $($case),*); }
        mod rtsig { cases!($m; hintq::Backend::Rtsig, $pattern; $($case),*); }
        mod gooch { cases!($m; hintq::Backend::Gooch, $pattern; $($case),*); }
    };
}

mod reactor {
    backends!(allow(unused); hintq_patterns::Pattern::Reactor;
        basics, s01_cl_and_te, s02_bad_content_length, s03_bad_transfer_encoding, s04_bad_chunk_size,
        s05_chunk_overrun, s06_chunk_overhead, s07_bad_field_names, s08_bad_bytes, s09_host, s10_limits,
        s11_slowloris, s12_idle, s13_paths, s14_pipelining, s15_valid_then_invalid, s16_half_close,
        s17_expect, s18_client_vanishes, s19_empty_connections, v1_validators, r1_ranges, r2_if_range,
        d1_directories);
}

macro_rules! subset {
    ($($name:ident => $pattern:expr),* $(,)?) => {
        $(
            mod $name {
                backends!(allow(unused); $pattern;
                    basics, s01_cl_and_te, s04_bad_chunk_size, s11_slowloris, s13_paths, s14_pipelining,
                    s15_valid_then_invalid, s16_half_close, s17_expect, s18_client_vanishes,
                    s19_empty_connections, v1_validators, r1_ranges, d1_directories);
            }
        )*
    };
}

subset! {
    leader_followers => hintq_patterns::Pattern::LeaderFollowers,
    half_sync => hintq_patterns::Pattern::HalfSync,
    sharded => hintq_patterns::Pattern::Sharded,
    sharded_shared => hintq_patterns::Pattern::ShardedShared,
}

#[test]
fn every_backend_is_listed() {
    assert_eq!(Backend::ALL.len(), 9, "a new backend needs a line in `backends!`");
    assert_eq!(Pattern::ALL.len(), 5, "a new pattern needs a line in `subset!`");
}
