//! io_uring backend: being written (see issue 2). Until then the probe refuses it and the
//! queue falls back to epoll.

use super::{Poller, Ready};
use crate::Interest;
use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;
use std::time::Duration;

pub(crate) fn probe() -> &'static Result<(), String> {
    static P: OnceLock<Result<(), String>> = OnceLock::new();
    P.get_or_init(|| Err("the uring backend is not built yet".into()))
}

pub(crate) struct Uring;

impl Uring {
    pub(crate) fn new() -> io::Result<Uring> {
        Err(io::Error::from_raw_os_error(libc::ENOSYS))
    }
}

impl Poller for Uring {
    fn set(&mut self, _: RawFd, _: u64, _: Interest, _: bool) -> io::Result<()> {
        unreachable!()
    }
    fn delete(&mut self, _: RawFd, _: u64) -> io::Result<()> {
        unreachable!()
    }
    fn wait(&mut self, _: &mut Vec<Ready>, _: usize, _: Option<Duration>) -> io::Result<()> {
        unreachable!()
    }
}
