//! Gooch's active/inactive poll sets (Gooch 1998, "a more advanced solution"): descriptors
//! that are mostly quiet live in an *inactive* set that is scanned only occasionally, busy
//! ones in a small *active* set scanned on every call. Gooch used two threads; hintq's
//! core has no threads of its own, so one thread alternates between the sets.
//!
//! The policy (see [`GoochPolicy`] for the numbers):
//!
//! * Every call polls the active set, blocking at most until the next *epoch*.
//! * At each epoch (every `interval`, 10 ms by default) the call polls the union of both
//!   sets instead, blocking for the caller's whole timeout. So when the process is idle it
//!   blocks on everything at once and a quiet descriptor that wakes is seen at once; when
//!   it is busy (calls come back to the wait often), the inactive set costs one scan per
//!   interval instead of one per call.
//! * Each descriptor has an activity counter: +1 per report (saturating at 15). At every
//!   epoch the counters of *active* descriptors are halved, and an active descriptor whose
//!   counter reaches zero (silent for about two epochs) moves to the inactive set, unless
//!   the epoch's own poll just reported it. An inactive descriptor is only looked at once
//!   per epoch, so its counter is not halved: it counts the epochs in which it was ready
//!   since its demotion, and at `promote_at` (1 by default: the first report) it moves to
//!   the active set. New registrations start active, since a new connection usually speaks
//!   first. The first epoch is one interval after the first wait, so a long burst of
//!   registrations before it does not demote everything at once.
//!
//! Latency cost for a quiet descriptor that wakes up while the process is busy: up to one
//! `interval` (10 ms by default); while idle: none. The internal descriptors of a queue (its
//! waker, a group member's set) are pinned in the active set. A queue that watches nothing
//! else has no epoch work and blocks for the caller's whole timeout, so that an idle
//! [`crate::Group`] member does not wake at each epoch for nothing.
//!
//! Kernel quirks: as for `poll` (closed descriptors report `POLLNVAL` on every call: reported
//! once as `ERR` and dropped; timeouts rounded up to the millisecond).

use super::poller::{Arm, Poller, Ready};
use super::pollset::PollSet;
use crate::{sys, Interest};
use std::collections::HashSet;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// The migration policy of the `gooch` backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoochPolicy {
    /// How often the inactive set is scanned while the process is busy (the epoch).
    pub interval: Duration,
    /// Epochs with a report, since its demotion, at which an inactive descriptor is
    /// promoted (at least 1).
    pub promote_at: u8,
}

impl Default for GoochPolicy {
    fn default() -> Self {
        GoochPolicy { interval: Duration::from_millis(10), promote_at: 1 }
    }
}

pub(crate) struct Gooch {
    /// Both sets in one array: the active set is its front part, the inactive set its back
    /// part ([`PollSet`]), so the active set is polled as a prefix and the union as the
    /// whole, with no second array to merge them into.
    set: PollSet,
    /// Per descriptor number: its activity counter (one byte a number, where a hash map
    /// took about 16 per descriptor).
    activity: Vec<u8>,
    pinned: HashSet<RawFd>,
    policy: GoochPolicy,
    /// `None` until the first wait.
    next_epoch: Option<Instant>,
    touched: Vec<RawFd>,
    migrations: u64,
}

impl Gooch {
    pub(crate) fn new(policy: GoochPolicy) -> Gooch {
        Gooch {
            set: PollSet::default(),
            activity: Vec::new(),
            pinned: HashSet::new(),
            policy,
            next_epoch: None,
            touched: Vec::new(),
            migrations: 0,
        }
    }

    /// `fd`'s activity counter (descriptors are non-negative: the queue refuses the others).
    fn activity(&mut self, fd: RawFd) -> &mut u8 {
        let i = fd as usize;
        if self.activity.len() <= i {
            if self.activity.capacity() == 0 {
                self.activity.reserve(sys::fd_table_reserve().max(i + 1));
            }
            self.activity.resize(i + 1, 0);
        }
        &mut self.activity[i]
    }

    /// Counts a report and promotes an inactive descriptor that became busy.
    fn bump(&mut self, fd: RawFd) {
        let a = self.activity(fd);
        *a = (*a + 1).min(15);
        if *a >= self.policy.promote_at.max(1) && self.set.move_front(fd) {
            self.migrations += 1;
        }
    }

    /// Halves the active counters and demotes active descriptors that went quiet, sparing
    /// those in `reported` (this epoch's poll saw them ready).
    fn epoch(&mut self, reported: &[RawFd]) {
        for fd in self.set.front_fds() {
            let a = self.activity(fd);
            *a /= 2;
            if *a == 0 && !self.pinned.contains(&fd) && !reported.contains(&fd) && self.set.move_back(fd) {
                self.migrations += 1;
            }
        }
        self.next_epoch = Some(Instant::now() + self.policy.interval);
    }
}

impl Poller for Gooch {
    fn trim(&mut self) {
        self.set.trim();
        // A number no longer watched has counter 0 (`delete`), as a fresh entry would.
        let used = self.activity.iter().rposition(|&a| a != 0).map_or(0, |i| i + 1);
        hintq_sys::truncate_release(&mut self.activity, used);
    }

    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, _arm: Arm) -> io::Result<()> {
        let inactive = self.set.in_back(fd);
        self.set.set(fd, token, interest);
        if !inactive {
            let a = self.activity(fd);
            *a = (*a).max(1);
        }
        if crate::token::is_internal(token) {
            self.pinned.insert(fd);
        }
        Ok(())
    }

    fn delete(&mut self, fd: RawFd, _token: u64) -> io::Result<()> {
        self.set.remove(fd);
        if let Some(a) = self.activity.get_mut(fd as usize) {
            *a = 0;
        }
        self.pinned.remove(&fd);
        Ok(())
    }

    fn wait(&mut self, out: &mut Vec<Ready>, _max: usize, timeout: Option<Duration>) -> io::Result<()> {
        let now = Instant::now();
        let next_epoch = *self.next_epoch.get_or_insert(now + self.policy.interval);
        let union = now >= next_epoch;
        let mut touched = std::mem::take(&mut self.touched);
        if union {
            let ready = self.set.poll(sys::timeout_ms(timeout))?;
            self.set.collect(ready, out, |fd| touched.push(fd));
            // Decay and demote before counting this poll's reports, or a descriptor only
            // looked at once per epoch could never build up activity.
            self.epoch(&touched);
        } else {
            // Only internal descriptors, pinned and nothing inactive: no epoch work is due,
            // so no reason to wake for one (an idle group member would, for nothing).
            let inactive = self.set.len() - self.set.front_len();
            let t = if inactive == 0 && self.set.front_len() == self.pinned.len() {
                timeout
            } else {
                let slice = next_epoch - now;
                Some(timeout.map_or(slice, |t| t.min(slice)))
            };
            let ready = self.set.poll_front(sys::timeout_ms(t))?;
            self.set.collect(ready, out, |fd| touched.push(fd));
        }
        for fd in touched.drain(..) {
            self.bump(fd);
        }
        self.touched = touched;
        Ok(())
    }

    fn counters(&self) -> super::poller::Counters {
        super::poller::Counters { migrations: self.migrations, ..Default::default() }
    }
}
