//! What `hintq bench rtsig` and `hintq bench gooch` measure in one run of one target at one
//! point of one repetition (or, for the wake-up latency of `gooch`, one sample), before it
//! becomes the lab's rows ([`crate::row`]): nothing here sees a clock.

use crate::row::{self, Row};

/// One measured run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rec {
    /// `overflow`, `scan` (rtsig); `perfd`, `split`, `wake` (gooch).
    pub experiment: String,
    /// A backend name, `rtsig-hybrid` (rtsig with the hybrid switch on) or `poll(2)` (raw).
    pub target: String,
    /// `default` or `lowered` (`RLIMIT_SIGPENDING` of the child it ran in); empty elsewhere.
    pub sigpending: String,
    /// Repetition, from 0.
    pub rep: u32,
    /// Descriptors registered (or polled) in all.
    pub registered: usize,
    /// Descriptors made ready: the burst (rtsig) or the active set (gooch).
    pub active: usize,
    /// Operations timed: bursts, cycles, calls, or 1 for a latency sample.
    pub ops: u64,
    /// Events delivered by the timed calls.
    pub events: u64,
    /// Time measured, in nanoseconds.
    pub total_ns: u64,
    /// Wall time of the whole run, untimed parts included.
    pub wall_ns: u64,
    /// This thread's CPU time over the same span.
    pub cpu_ns: u64,
    /// Involuntary context switches over the same span.
    pub preempted: u64,
    /// `Stats::recoveries` of the queue over its life (fresh queue per run).
    pub recoveries: u64,
    /// `Stats::migrations`, likewise.
    pub migrations: u64,
}

impl Rec {
    /// Nanoseconds per operation.
    pub fn ns_per_op(&self) -> f64 {
        self.total_ns as f64 / self.ops.max(1) as f64
    }

    /// The lab's row of `metric` of this run: experiment `exp`, the given series and swept
    /// value, this run's repetition, and a note when its thread was kept off the CPU.
    pub fn row(&self, exp: &str, series: &str, x: usize, metric: &str, value: f64) -> Row {
        Row {
            rep: self.rep,
            note: row::quiet_note(self.wall_ns, self.cpu_ns, self.preempted),
            ..Row::ok(exp, series, x as f64, metric, value)
        }
    }
}
