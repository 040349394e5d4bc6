//! Helpers shared by the core's integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;

pub const MS: fn(u64) -> Duration = Duration::from_millis;

/// Closes `s` with a reset (`SO_LINGER` 0): the peer's next receive or send fails with
/// `ECONNRESET`.
pub fn reset(s: std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let lin = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: (test) a live linger struct and its size.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&lin as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_LINGER: {}", std::io::Error::last_os_error());
}

/// A connected TCP pair: (server side, non-blocking; its number; client).
pub fn tcp() -> (std::os::fd::OwnedFd, std::os::fd::RawFd, std::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    s.set_nonblocking(true).unwrap();
    let s = std::os::fd::OwnedFd::from(s);
    let fd = s.as_raw_fd();
    (s, fd, c)
}

/// A connected, non-blocking pair of Unix stream sockets.
pub fn pair() -> (UnixStream, UnixStream) {
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    (a, b)
}

#[allow(unused_imports)] // each test binary uses its own subset
pub use hintq_sys::drain;

/// Runs `body` in a fresh process: re-executes this test binary for test `name` alone
/// with `HINTQ_TEST_CHILD` (and `env`) set, for cases that change process-wide state
/// (resource limits, seccomp filters). In the parent, checks the child passed and returns
/// its standard error; in the child, runs `body` and returns `None`.
pub fn in_child(name: &str, env: &[(&str, &str)], body: impl FnOnce()) -> Option<String> {
    if std::env::var_os("HINTQ_TEST_CHILD").is_some() {
        body();
        return None;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env("HINTQ_TEST_CHILD", "1")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child run of {name} failed:\n{stdout}\n{stderr}"
    );
    Some(stderr)
}

#[allow(unused_imports)] // each test binary uses its own subset
pub use hintq_sys::{gettid as thread_id, is_sleeping};
