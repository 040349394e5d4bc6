//! Timers whose next deadline feeds the timeout of [`crate::Queue::get_next_event`].
//!
//! A binary heap of deadlines with lazy cancellation: `insert` and `cancel` are O(log n) and
//! O(1), and a cancelled entry is discarded when it reaches the top. The servers use one per
//! thread for idle, header and send timeouts, re-arming a connection's timer on activity by
//! cancelling and inserting (cheap, and the heap never holds more than twice the live timers
//! because it is rebuilt when cancelled entries dominate).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

/// Names one armed timer, for [`Timers::cancel`]. Never reused within a [`Timers`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(u64);

/// A set of one-shot timers carrying values of type `T`.
#[derive(Debug)]
pub struct Timers<T> {
    heap: BinaryHeap<Reverse<(Instant, TimerId)>>,
    live: HashMap<TimerId, T>,
    next: u64,
}

impl<T> Default for Timers<T> {
    fn default() -> Self {
        Timers { heap: BinaryHeap::new(), live: HashMap::new(), next: 0 }
    }
}

impl<T> Timers<T> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Arms a timer that expires at `deadline`.
    pub fn insert(&mut self, deadline: Instant, value: T) -> TimerId {
        let id = TimerId(self.next);
        self.next += 1;
        self.heap.push(Reverse((deadline, id)));
        self.live.insert(id, value);
        id
    }

    /// Disarms a timer; returns its value if it had not expired or been cancelled yet.
    pub fn cancel(&mut self, id: TimerId) -> Option<T> {
        let v = self.live.remove(&id);
        if self.heap.len() > 2 * self.live.len() + 64 {
            let live = &self.live;
            self.heap.retain(|Reverse((_, id))| live.contains_key(id));
        }
        v
    }

    /// True while `id` is armed: neither expired ([`Timers::pop_expired`]) nor cancelled.
    pub fn contains(&self, id: TimerId) -> bool {
        self.live.contains_key(&id)
    }

    /// Number of armed timers.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// True when no timer is armed.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// The earliest deadline of an armed timer.
    pub fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(Reverse((at, id))) = self.heap.peek().copied() {
            if self.live.contains_key(&id) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    /// The timeout to pass to `get_next_event`: the time until the next deadline, or
    /// `cap` if that is sooner (`None` = no cap). Zero if a timer is already due.
    pub fn timeout(&mut self, now: Instant, cap: Option<Duration>) -> Option<Duration> {
        let t = self.next_deadline().map(|d| d.saturating_duration_since(now));
        match (t, cap) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Removes and returns one timer whose deadline is at or before `now`, earliest first.
    pub fn pop_expired(&mut self, now: Instant) -> Option<(TimerId, T)> {
        while let Some(Reverse((at, id))) = self.heap.peek().copied() {
            if at > now {
                return None;
            }
            self.heap.pop();
            if let Some(v) = self.live.remove(&id) {
                return Some((id, v));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expire_in_deadline_order_and_skip_cancelled() {
        let mut t = Timers::new();
        let now = Instant::now();
        let a = t.insert(now + Duration::from_millis(30), "a");
        t.insert(now + Duration::from_millis(10), "b");
        t.insert(now + Duration::from_millis(20), "c");
        assert!(t.contains(a));
        assert_eq!(t.cancel(a), Some("a"));
        assert_eq!(t.cancel(a), None);
        assert!(!t.contains(a));
        assert_eq!(t.timeout(now, None), Some(Duration::from_millis(10)));
        assert_eq!(t.timeout(now, Some(Duration::from_millis(5))), Some(Duration::from_millis(5)));
        let later = now + Duration::from_millis(100);
        let got: Vec<_> = std::iter::from_fn(|| t.pop_expired(later)).map(|(_, v)| v).collect();
        assert_eq!(got, ["b", "c"]);
        assert!(t.is_empty());
        assert_eq!(t.timeout(now, None), None);
    }

    #[test]
    fn heap_stays_bounded_under_rearm_churn() {
        let mut t = Timers::new();
        let now = Instant::now();
        let mut id = t.insert(now, 0u32);
        for i in 0..10_000 {
            t.cancel(id);
            id = t.insert(now + Duration::from_secs(1), i);
        }
        assert_eq!(t.len(), 1);
        assert!(t.heap.len() <= 2 * t.len() + 65, "heap grew to {}", t.heap.len());
    }
}
