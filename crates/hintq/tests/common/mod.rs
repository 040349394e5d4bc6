//! Helpers shared by the core's integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::os::fd::RawFd;
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

/// Reads `fd` until it would block (or hits EOF); returns the bytes read.
pub fn drain(fd: RawFd) -> usize {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        // SAFETY (test): reads into a live buffer.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return total;
        }
        total += n as usize;
    }
}

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

/// Voluntary context switches of the calling thread so far (`getrusage(RUSAGE_THREAD)`):
/// each is a sleep, so the growth over a run counts the thread's wake-ups.
pub fn voluntary_switches() -> u64 {
    // SAFETY (test): getrusage writes one rusage into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY (test): as above; RUSAGE_THREAD is valid on Linux.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_nvcsw as u64
}

/// The calling thread's id.
pub fn thread_id() -> libc::pid_t {
    // SAFETY (test): gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::pid_t }
}

/// True if thread `tid` of this process is asleep (state `S` in `/proc/self/task/<tid>/stat`).
pub fn is_sleeping(tid: libc::pid_t) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap_or_default();
    // The state follows the command name, which is in parentheses and may hold spaces.
    stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('S'))
}
