//! Helpers shared by the core's integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::Duration;

pub const MS: fn(u64) -> Duration = Duration::from_millis;

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
        .env_remove("HINTQ_URING_DISABLE")
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
