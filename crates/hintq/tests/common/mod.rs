//! Helpers shared by the core's integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;

pub const MS: fn(u64) -> Duration = Duration::from_millis;

#[allow(unused_imports)] // each test binary uses its own subset
pub use hintq_testkit::reset;

/// How long the ring tests wait for an event before calling it lost.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// A queue on the io_uring backend; `None` (after saying why, through the testkit's skip)
/// when io_uring is not available here.
pub fn ring_queue(case: &str) -> Option<hintq::Queue> {
    let probe = hintq::Backend::Uring.probe().map_err(|why| format!("io_uring unavailable: {why}"));
    hintq_testkit::runs(case, probe).then(|| hintq::Queue::new(hintq::Backend::Uring).unwrap())
}

/// The first event for `fd` whose state contains `want` (`State::empty()`: any event for
/// `fd`), waiting at most `limit`; `None` if none came. Events for other descriptors are
/// taken and dropped.
pub fn wait_event(
    q: &mut hintq::Queue,
    fd: std::os::fd::RawFd,
    want: hintq::State,
    limit: Duration,
) -> Option<hintq::Event> {
    let deadline = std::time::Instant::now() + limit;
    let mut evs = [hintq::Event::default(); 16];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return None;
        }
        let n = q.get_next_event(&mut evs, Some(left.min(MS(50)))).unwrap();
        if let Some(e) = evs[..n].iter().find(|e| e.fd() == fd && e.state().contains(want)) {
            return Some(*e);
        }
    }
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
