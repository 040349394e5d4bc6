//! Byte-exact relay of large bodies through `hintq proxy`, both directions, Content-Length
//! and chunked, checked with checksums; framing kept (CL stays CL, chunked stays chunked);
//! and the memory bound: however large the body and however slow the reader, the proxy holds
//! at most four fixed buffers per connection, none grown.

mod proxy_util;
mod tools;

use hintq_http::Framing;
use hintq_serve::proxy::BUF_SIZE;
use proxy_util::*;
use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// 20 MB.
const BIG: usize = 20 << 20;

/// The fake origin: `/down/cl` and `/down/chunked` send [`BIG`] pattern bytes; `/up`
/// answers with what it received: `<framing> <length> <checksum>`.
fn origin() -> Fake {
    let data = Arc::new(pattern_bytes(BIG, 42));
    Fake::start(move |g, s| {
        match g.target.as_str() {
            "/down/cl" => {
                s.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {BIG}\r\n\r\n").as_bytes()).unwrap();
                s.write_all(&data).unwrap();
            }
            "/down/chunked" => {
                s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
                write_chunked(s, &data);
            }
            "/up" => {
                let framing = match g.framing {
                    Framing::Chunked => "chunked",
                    Framing::Length(_) => "length",
                    _ => "none",
                };
                let text = format!("{framing} {} {}", g.body.len(), checksum(&g.body));
                s.write_all(
                    format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{text}", text.len()).as_bytes(),
                )
                .unwrap();
            }
            _ => unreachable!(),
        }
        After::Keep
    })
}

/// Chunks of sizes 1, 2, ... 70,000 (and round again): many shapes of size line and split.
fn write_chunked(s: &mut TcpStream, data: &[u8]) {
    let (mut pos, mut size) = (0, 1usize);
    let mut out = Vec::new();
    while pos < data.len() {
        let n = size.min(data.len() - pos);
        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        out.extend_from_slice(&data[pos..pos + n]);
        out.extend_from_slice(b"\r\n");
        pos += n;
        size = if size > 70_000 { 1 } else { size * 3 + 1 };
        if out.len() > 1 << 20 {
            s.write_all(&out).unwrap();
            out.clear();
        }
    }
    out.extend_from_slice(b"0\r\nX-Trailer: end\r\n\r\n");
    s.write_all(&out).unwrap();
}

#[test]
fn large_bodies_relay_byte_exact_both_ways_with_bounded_buffers() {
    let data = pattern_bytes(BIG, 42);
    let sum = checksum(&data);
    for (b, p) in combos() {
        eprintln!("relay on {b}/{p}");
        let fake = origin();
        let px = start_proxy_with(fake.addr, b, p, |c| c.upstream_timeout = Duration::from_secs(10));
        let mut c = Client::connect(px.local_addr());
        c.s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();

        // Downstream, Content-Length and chunked; the second after a pause in which the
        // client reads nothing (back-pressure: the proxy must not buffer the body).
        c.send(b"GET /down/cl HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = c.response(false);
        assert_eq!((r.status, r.framing, r.complete), (200, Framing::Length(BIG as u64), true));
        assert_eq!((r.body.len(), checksum(&r.body)), (BIG, sum), "CL body changed on the way");
        c.send(b"GET /down/chunked HTTP/1.1\r\nHost: t\r\n\r\n");
        std::thread::sleep(Duration::from_millis(300));
        let r = c.response(false);
        assert_eq!((r.status, r.framing, r.complete), (200, Framing::Chunked, true));
        assert_eq!((r.body.len(), checksum(&r.body)), (BIG, sum), "chunked body changed on the way");

        // Upstream, Content-Length and chunked.
        c.send(format!("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: {BIG}\r\n\r\n").as_bytes());
        c.send(&data);
        let r = c.response(false);
        assert_eq!(String::from_utf8_lossy(&r.body), format!("length {BIG} {sum}"));
        c.send(b"POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        write_chunked(&mut c.s, &data);
        let r = c.response(false);
        assert_eq!(String::from_utf8_lossy(&r.body), format!("chunked {BIG} {sum}"));

        let st = px.stats();
        // The Content-Length body went by splice (above 64 KiB by default, on every backend),
        // but for what came with its head; the chunked one by copy.
        let spliced = 1;
        assert_eq!(st.spliced_responses, spliced, "the CL body by splice");
        assert!(
            (BIG as u64 * spliced / 2..=BIG as u64 * spliced).contains(&st.spliced_bytes),
            "{} bytes spliced",
            st.spliced_bytes
        );
        assert!(st.peak_pipes <= 1, "{} pipes at once for one connection", st.peak_pipes);
        assert!(st.peak_buffered <= BUF_SIZE, "a relay buffer grew to {} bytes", st.peak_buffered);
        assert!(st.peak_buffers <= 4, "one connection held {} buffers at once", st.peak_buffers);
        eprintln!(
            "  {} relay buffers of {BUF_SIZE} bytes at most, {} bytes in one at most",
            st.peak_buffers, st.peak_buffered
        );
    }
}
