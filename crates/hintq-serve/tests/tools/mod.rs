//! Outside programs the tests drive (curl, httperf, python3 with h11), the raw client of
//! every server test ([`Client`]); a client that vanishes with a reset is `hintq_testkit::reset`.
#![allow(dead_code)]

use hintq_http::{parse_response, BodyDecoder, Framing, Limits, Side};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::Duration;

/// A program a test needs is missing: the test is skipped, saying why, unless
/// `HINTQ_REQUIRE_TOOLS` is set, as `.ci/run` sets it after installing them; there a skip
/// would let the test pass without checking anything, so it fails instead.
pub fn missing(what: &str) {
    hintq_testkit::skip("outside program", what);
}

/// Whether the server closed `s` (EOF or reset) with nothing more sent; false if it stays
/// open for `wait`. Bytes arriving instead are a failure. The read timeout is 5 s after.
pub fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut tmp = [0u8; 4096];
    let r = loop {
        match s.read(&mut tmp) {
            Ok(0) => break true,
            Ok(n) => {
                panic!("unexpected bytes after the last response: {:?}", String::from_utf8_lossy(&tmp[..n]))
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break true,
        }
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    r
}

pub fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A response as the client read it.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
    pub framing: Framing,
    /// The body ended by its framing (false: the connection closed first, P3).
    pub complete: bool,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        header_of(&self.head, name)
    }
}

/// A raw client over one connection.
pub struct Client {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Client { s, buf: Vec::new() }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// Reads what has arrived (waiting for at least one byte); 0 at the end of the stream.
    /// The bytes stay for [`Client::response`].
    pub fn read_some(&mut self) -> usize {
        self.fill()
    }

    /// One read (5 s at most: the read timeout).
    fn fill(&mut self) -> usize {
        let mut tmp = [0u8; 65536];
        loop {
            match self.s.read(&mut tmp) {
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    return n;
                }
                // The rtsig backend's signals may land on a test thread, many in a row: a
                // retry by recursion (64 KiB a frame) once overflowed the test's stack.
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return 0,
                Err(e) => panic!("read: {e} (have {:?})", String::from_utf8_lossy(&self.buf)),
            }
        }
    }

    /// The next response (a 1xx included); `head_req` for a response to HEAD.
    pub fn response(&mut self, head_req: bool) -> Resp {
        let limits = Limits::default();
        let (head, framing, len) = loop {
            match parse_response(&self.buf, &limits, head_req) {
                Ok(Some(h)) => {
                    break (
                        String::from_utf8_lossy(&self.buf[..h.head_len]).into_owned(),
                        h.framing,
                        h.head_len,
                    )
                }
                Ok(None) => {}
                Err(e) => panic!(
                    "the server sent an invalid response ({e}): {:?}",
                    String::from_utf8_lossy(&self.buf)
                ),
            }
            assert!(
                self.fill() > 0,
                "closed before a complete head: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        };
        self.buf.drain(..len);
        let status: u16 = head[9..12].parse().unwrap();
        let mut dec = BodyDecoder::new(framing, Side::Response, &limits);
        let mut body = Vec::new();
        let complete = loop {
            let used = dec.decode_to_vec(&self.buf, &mut body).expect("valid framing from the server");
            self.buf.drain(..used);
            if dec.is_done() {
                break true;
            }
            if self.fill() == 0 {
                break dec.finish().is_ok();
            }
        };
        Resp { status, head, body, framing, complete }
    }

    /// Whether the server closed (EOF or reset) with nothing more sent; false if the
    /// connection stays open for `wait`.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        assert!(self.buf.is_empty(), "unread bytes {:?}", String::from_utf8_lossy(&self.buf));
        closed_within(&mut self.s, wait)
    }

    /// Asserts the connection is closed (within 3 s).
    pub fn assert_closed(&mut self) {
        assert!(self.closed_within(Duration::from_secs(3)), "the server should have closed the connection");
    }

    /// The connection is kept: it carries one more request, a GET of `path` answered with
    /// 200 and `body`.
    pub fn assert_kept(&mut self, path: &str, body: &[u8]) {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        let r = self.response(false);
        assert_eq!((r.status, r.body.as_slice()), (200, body), "connection kept: {}", r.head);
    }

    /// Everything until the server closes.
    pub fn read_to_end(&mut self) -> Vec<u8> {
        while self.fill() > 0 {}
        std::mem::take(&mut self.buf)
    }

    pub fn shutdown_write(&mut self) {
        self.s.shutdown(Shutdown::Write).unwrap();
    }
}
