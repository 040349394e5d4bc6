//! Wall time, thread CPU time and preemptions over one measured run.

use crate::sys;
use std::time::{Duration, Instant};

/// Started at the beginning of a run, stopped at its end.
pub struct Meter {
    wall: Instant,
    cpu: u64,
    preempted: u64,
}

impl Meter {
    /// Starts measuring.
    pub fn start() -> Meter {
        Meter { preempted: sys::preemptions(), cpu: sys::thread_cpu_ns(), wall: Instant::now() }
    }

    /// Wall time since the start.
    pub fn elapsed(&self) -> Duration {
        self.wall.elapsed()
    }

    /// `(wall ns, thread CPU ns, involuntary context switches)` since the start.
    pub fn stop(&self) -> (u64, u64, u64) {
        let wall = self.wall.elapsed().as_nanos() as u64;
        (wall, sys::thread_cpu_ns() - self.cpu, sys::preemptions() - self.preempted)
    }
}
