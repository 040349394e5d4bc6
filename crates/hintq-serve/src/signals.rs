//! Signals and standard error: SIGINT/SIGTERM (and a supervisor's SIGCHLD) taken
//! synchronously with `sigwait` ([`ShutdownSignals`]), SIGPIPE ignored ([`ignore_sigpipe`]),
//! and [`say`], a whole line to standard error.

use std::io::{self, Write};
use std::time::Duration;

/// Ignores SIGPIPE, so that writing to a vanished peer (`sendfile` has no `MSG_NOSIGNAL`)
/// gives `EPIPE` instead of killing the process (row S18). Rust binaries start this way
/// already; a library cannot rely on it.
pub fn ignore_sigpipe() {
    // SAFETY: installing SIG_IGN has no handler code to be unsafe about.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// SIGINT and SIGTERM, blocked in the calling thread (and so in every thread it spawns
/// afterwards) and taken with [`wait`](Self::wait): no handler runs at an arbitrary point.
/// Create it before starting any other thread (the server's threads inherit the mask).
#[derive(Debug)]
pub struct ShutdownSignals {
    set: libc::sigset_t,
}

impl ShutdownSignals {
    /// Blocks SIGINT and SIGTERM in this thread.
    ///
    /// # Errors
    /// `pthread_sigmask` failing.
    pub fn block() -> io::Result<ShutdownSignals> {
        ShutdownSignals::blocking(&[libc::SIGINT, libc::SIGTERM])
    }

    /// Blocks SIGINT, SIGTERM and SIGCHLD in this thread, for a supervisor of worker
    /// processes (`processes::Supervisor`): [`wait`](Self::wait) also returns when
    /// a child ends.
    ///
    /// # Errors
    /// `pthread_sigmask` failing.
    pub fn with_children() -> io::Result<ShutdownSignals> {
        ShutdownSignals::blocking(&[libc::SIGINT, libc::SIGTERM, libc::SIGCHLD])
    }

    fn blocking(signals: &[libc::c_int]) -> io::Result<ShutdownSignals> {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a live sigset_t.
        unsafe { libc::sigemptyset(&mut set) };
        for &sig in signals {
            // SAFETY: as above.
            unsafe { libc::sigaddset(&mut set, sig) };
        }
        // SAFETY: `set` is initialised; the old mask is not wanted.
        let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        // A shell starts background jobs with SIGINT ignored, and an ignored signal is
        // discarded rather than left pending for `sigwait` (an ignored SIGCHLD even makes
        // children reap themselves): restore the default action (harmless while blocked).
        // Threads that exist already must block them too.
        for &sig in signals {
            // SAFETY: installing SIG_DFL runs no code of ours.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
        Ok(ShutdownSignals { set })
    }

    /// Waits for one of the blocked signals (SIGINT or SIGTERM, and SIGCHLD if asked for)
    /// and returns its number.
    pub fn wait(&self) -> i32 {
        let mut sig = 0;
        // SAFETY: `set` is initialised and `sig` a live c_int.
        while unsafe { libc::sigwait(&self.set, &mut sig) } != 0 {}
        sig
    }

    /// [`ShutdownSignals::wait`] for at most `limit`: `None` when none came.
    pub fn wait_for(&self, limit: Duration) -> Option<i32> {
        let ts =
            libc::timespec { tv_sec: limit.as_secs() as libc::time_t, tv_nsec: limit.subsec_nanos() as _ };
        // SAFETY: `set` is initialised, `ts` a live timespec; no siginfo wanted.
        let sig = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) };
        (sig > 0).then_some(sig)
    }
}

/// Writes `line` and a newline to standard error in one `write(2)`, so that the lines of
/// worker processes sharing it do not interleave (`eprintln!` writes piece by piece).
pub fn say(line: &str) {
    let _ = io::stderr().write_all(format!("{line}\n").as_bytes());
}
