//! The socket calls only the proxy makes (its listeners come from
//! [`hintq_patterns::listen`], the calls both servers make are in [`crate::sys`]), over
//! the shared helpers of `hintq-sys`.

use std::io;
use std::os::fd::RawFd;

pub(crate) use hintq_sys::{take_error, tcp_connect as connect};

/// Whether an idle connection is still usable: nothing to read and no end of file or
/// error pending (`recv(MSG_PEEK)` says `EAGAIN`). Catches an upstream that closed (or sent
/// stray bytes) since the connection went idle.
pub(crate) fn idle_alive(fd: RawFd) -> bool {
    let mut b = 0u8;
    // SAFETY: `b` is valid for a write of one byte.
    let r = unsafe { libc::recv(fd, (&mut b as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
    r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock
}
