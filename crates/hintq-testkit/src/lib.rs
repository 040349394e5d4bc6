//! What the workspace's tests share: how a case that this machine cannot run is skipped, and
//! an address that refuses connections ([`Refusing`]).
//!
//! A skip prints one line, `SKIP <case>: <why>`, on standard error; `.ci/run` runs the tests
//! with `--nocapture` and counts those lines at the end, so a skip is never invisible (a
//! message the harness captures is no skip report at all).
//!
//! Under `HINTQ_REQUIRE_TOOLS` (which `.ci/run` sets after installing what the tests need)
//! nothing may be skipped: an outside program (curl, httperf, python3 with h11, valgrind) and
//! a kernel feature this kind of machine has (io_uring, RT signals) are both required, and a
//! case that would skip fails instead, with the reason. Every skip of the workspace goes
//! through [`skip`].

use std::fmt::Display;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The variable that turns skips into failures.
pub const REQUIRE: &str = "HINTQ_REQUIRE_TOOLS";

/// Whether skips are failures in this run ([`REQUIRE`] is set).
pub fn required() -> bool {
    std::env::var_os(REQUIRE).is_some()
}

/// `case` cannot run on this machine because of `why`: prints `SKIP <case>: <why>`.
///
/// # Panics
/// Under [`REQUIRE`], with the case and the reason: there a skip would let the test pass
/// without checking anything.
#[track_caller]
pub fn skip(case: &str, why: impl Display) {
    match verdict(case, &why, required()) {
        Ok(line) => eprintln!("{line}"),
        Err(failure) => panic!("{failure}"),
    }
}

/// What skipping `case` comes to: the line to print, or, when skips are `required` to fail,
/// the failure's message.
fn verdict(case: &str, why: &dyn Display, required: bool) -> Result<String, String> {
    if required {
        Err(format!("{case} cannot run here: {why} (and {REQUIRE} is set, so it must)"))
    } else {
        Ok(format!("SKIP {case}: {why}"))
    }
}

/// Whether `case` can run, given the result of probing what it needs (for example
/// `Backend::probe()`); on `Err`, skips it with the reason through [`skip`].
///
/// # Panics
/// On `Err` under [`REQUIRE`].
#[track_caller]
pub fn runs<E: Display>(case: &str, probe: Result<(), E>) -> bool {
    match probe {
        Ok(()) => true,
        Err(why) => {
            skip(case, why);
            false
        }
    }
}

/// A loopback address where every TCP connect is refused (`ECONNREFUSED`) for as long as this
/// lives: a socket bound to the port and never listening, so that no other test (tests run in
/// parallel) can take the port meanwhile, as it could one that was bound, closed and reused.
#[derive(Debug)]
pub struct Refusing {
    /// Where to connect.
    pub addr: SocketAddr,
    _socket: OwnedFd,
}

impl Refusing {
    /// Binds a TCP socket to a free port of 127.0.0.1 without listening on it.
    ///
    /// # Panics
    /// When the socket cannot be made or bound (a broken test machine).
    pub fn new() -> Refusing {
        // SAFETY: plain socket calls on a descriptor owned here; getsockname writes at most
        // `len` bytes into `sa`.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let socket = OwnedFd::from_raw_fd(fd);
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as libc::sa_family_t;
            sa.sin_addr.s_addr = u32::from(Ipv4Addr::LOCALHOST).to_be();
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let p = (&raw mut sa).cast::<libc::sockaddr>();
            assert_eq!(
                libc::bind(socket.as_raw_fd(), p, len),
                0,
                "bind: {}",
                std::io::Error::last_os_error()
            );
            assert_eq!(libc::getsockname(socket.as_raw_fd(), p, &mut len), 0);
            let port = u16::from_be(sa.sin_port);
            Refusing { addr: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)), _socket: socket }
        }
    }
}

impl Default for Refusing {
    fn default() -> Refusing {
        Refusing::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_the_counted_line_or_under_require_a_failure_with_the_reason() {
        assert_eq!(verdict("e13", &"io_uring refused", false).unwrap(), "SKIP e13: io_uring refused");
        let failure = verdict("e13", &"io_uring refused", true).unwrap_err();
        assert!(failure.starts_with("e13 cannot run here: io_uring refused"), "{failure}");
        assert!(runs::<String>("e13", Ok(())));
    }

    #[test]
    fn a_refusing_address_refuses_and_keeps_its_port() {
        let r = Refusing::new();
        for _ in 0..3 {
            let e = std::net::TcpStream::connect(r.addr).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
        }
        assert!(std::net::TcpListener::bind(r.addr).is_err(), "nobody else can take {}", r.addr);
    }
}
