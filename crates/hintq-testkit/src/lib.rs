//! What the workspace's tests share: how a case that this machine cannot run is skipped.
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
//!
//! Beside skips, the peer every server test needs now and then: one that vanishes with a
//! reset ([`reset`]).

use std::fmt::Display;
use std::net::TcpStream;
use std::os::fd::AsRawFd;

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
}
