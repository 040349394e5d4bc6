//! What the workspace's tests share: how a case that this machine cannot run is skipped, and
//! an address that refuses connections ([`Refusing`]).
//!
//! A skip prints one line, `SKIP <case>: <why>`, on standard error, which the test harness
//! captures for a test that passes. So that a skip is never invisible, it is also appended to
//! the file named by [`LOG`] when that is set: `./test.sh` at the repository's root sets it,
//! runs the tests and ends its output with every case not run, why, and what to install.
//!
//! Under `HINTQ_REQUIRE_TOOLS` (which `.ci/run` sets after installing what the tests need)
//! nothing may be skipped: an outside program (curl, httperf, python3 with h11, valgrind) and
//! a kernel feature this kind of machine has (io_uring, RT signals) are both required, and a
//! case that would skip fails instead, with the reason. Every skip of the workspace goes
//! through [`skip`].
//!
//! Beside skips, the peer every server test needs now and then: one that vanishes with a
//! reset ([`reset`]).

use std::fmt::Display;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The variable that turns skips into failures.
pub const REQUIRE: &str = "HINTQ_REQUIRE_TOOLS";

/// The variable naming a file every skip is appended to, one line each: the case (prefixed
/// with the test that skipped it), the reason and the remedy, separated by tabs (see
/// `record`).
pub const LOG: &str = "HINTQ_SKIP_LOG";

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
    let case = match std::thread::current().name() {
        // The harness names each test's thread after the test; a helper thread has no name.
        Some(test) if test != "main" && test != case => format!("{}{test}: {case}", binary()),
        _ => format!("{}{case}", binary()),
    };
    let why = why.to_string();
    if let Some(path) = std::env::var_os(LOG) {
        append(std::path::Path::new(&path), &record(&case, &why));
    }
    match verdict(&case, &why, required()) {
        Ok(line) => eprintln!("{line}"),
        Err(failure) => panic!("{failure}"),
    }
}

/// `<test binary>::`, the name cargo gave this test program without its hash
/// (`clients-0123abcd` is `clients::`), or nothing if that cannot be read.
fn binary() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe.as_deref().and_then(|e| e.file_stem()).and_then(|s| s.to_str()).unwrap_or("");
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            format!("{name}::")
        }
        _ => String::new(),
    }
}

/// Appends one line to the skip log, in one `write` (so that lines of test threads and test
/// programs writing at once never interleave). A log that cannot be written is said on
/// standard error and does not fail the test.
fn append(path: &std::path::Path, line: &str) {
    use std::io::Write;
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("hintq-testkit: cannot append to the skip log {}: {e}", path.display());
    }
}

/// The skip log's line for `case`: `<case>\t<why>\t<remedy>\n`, tabs and line ends in the
/// texts made spaces; the remedy is empty when [`remedy`] knows none.
fn record(case: &str, why: &str) -> String {
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    format!("{}\t{}\t{}\n", clean(case), clean(why), remedy(why).unwrap_or(""))
}

/// What would let a case skipped for `why` run: the command installing the program it names
/// (Debian's packages, pip for h11), or what the kernel must allow. The reasons are the
/// workspace's own texts, so a program's name in them is what the case needed.
pub fn remedy(why: &str) -> Option<&'static str> {
    const REMEDIES: [(&str, &str); 9] = [
        ("h11", "python3 -m pip install h11"),
        ("httperf", "apt-get install httperf"),
        ("valgrind", "apt-get install valgrind"),
        ("curl", "apt-get install curl"),
        ("python3", "apt-get install python3"),
        ("pkg-config", "apt-get install pkg-config"),
        ("C compiler", "apt-get install gcc"),
        ("io_uring", "a kernel that lets this process use io_uring: Linux 6.1 or later, sysctl kernel.io_uring_disabled=0, no container seccomp profile refusing io_uring_setup"),
        ("RLIMIT_NOFILE", "a higher hard limit on open files (ulimit -Hn; LimitNOFILE= for a systemd service; nofile in /etc/security/limits.conf)"),
    ];
    REMEDIES.iter().find(|(word, _)| why.contains(word)).map(|&(_, fix)| fix)
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

/// Resets the connection (`SO_LINGER` 0, then close): the peer sees `ECONNRESET`, not an
/// orderly end of stream.
///
/// # Panics
/// If `SO_LINGER` cannot be set (the close would then be an orderly one, and the test would
/// check something else than it says).
pub fn reset(s: TcpStream) {
    let l = libc::linger { l_onoff: 1, l_linger: 0 };
    hintq_sys::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_LINGER, l).expect("SO_LINGER 0");
    drop(s);
}

/// A descriptor number as a `BorrowedFd`, for tests that declare by number as a C caller
/// does through the C ABI: a number reused after a close, one that is not open (the queue
/// must answer `EBADF`), an end of a raw `pipe(2)` pair.
pub fn by_number(fd: std::os::fd::RawFd) -> std::os::fd::BorrowedFd<'static> {
    assert_ne!(fd, -1, "-1 is no descriptor");
    // SAFETY: the queue only hands the number to the kernel (which answers `EBADF` for one
    // that is not open) and never closes it; the test keeps what it names open meanwhile.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
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
    fn a_record_is_one_line_of_case_reason_and_remedy() {
        assert_eq!(
            record("clients::httperf_loads", "httperf is not available (httperf --version)"),
            "clients::httperf_loads\thttperf is not available (httperf --version)\tapt-get install httperf\n"
        );
        assert_eq!(record("a\tb", "line\nbreak"), "a b\tline break\t\n");
    }

    #[test]
    fn remedies_name_what_to_install() {
        // h11 is looked for before python3: its reason names both.
        assert_eq!(remedy("python3 with h11 is not available"), Some("python3 -m pip install h11"));
        assert_eq!(remedy("python3 is not installed"), Some("apt-get install python3"));
        assert_eq!(
            remedy("neither valgrind nor AddressSanitizer (cc -fsanitize=address) is available"),
            Some("apt-get install valgrind")
        );
        assert_eq!(remedy("no C compiler (cc --version failed)"), Some("apt-get install gcc"));
        assert!(remedy("io_uring_setup: Operation not permitted").unwrap().contains("io_uring_disabled"));
        assert_eq!(remedy("something else"), None);
    }

    #[test]
    fn a_skip_names_its_test_and_lands_in_the_log() {
        let dir = std::env::temp_dir().join(format!("hintq-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("skips.tsv");
        append(&log, &record("first", "curl is not installed"));
        append(&log, &record("second", "nothing known"));
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(text, "first\tcurl is not installed\tapt-get install curl\nsecond\tnothing known\t\n");
        // This test's own thread carries its name, which `skip` puts before the case.
        let me = std::thread::current().name().map(str::to_string);
        assert_eq!(me.as_deref(), Some("tests::a_skip_names_its_test_and_lands_in_the_log"));
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
