//! Outside programs the tests drive (curl, httperf, python3 with h11), and a client that
//! vanishes with a reset.
#![allow(dead_code)]

use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::time::Duration;

/// A program a test needs is missing: the test is skipped, saying why, unless
/// `HINTQ_REQUIRE_TOOLS` is set, as `.ci/run` sets it after installing them; there a skip
/// would let the test pass without checking anything, so it fails instead.
pub fn missing(what: &str) {
    hintq_testkit::skip("outside program", what);
}

/// Resets the connection (`SO_LINGER` 0, then close): the peer sees `ECONNRESET`.
pub fn reset(s: TcpStream) {
    use std::os::fd::AsRawFd;
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: `l` is a live linger struct of the size given.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    drop(s);
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
