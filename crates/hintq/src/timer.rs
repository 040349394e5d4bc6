//! Timers whose next deadline feeds the timeout of [`crate::Queue::get_next_event`].
//!
//! Two kinds, for two uses:
//!
//! * [`Timers`]: any number of one-shot timers carrying values, exact to the instant. A
//!   binary heap of deadlines with lazy cancellation: `insert` and `cancel` are O(log n) and
//!   O(1), and a cancelled entry is discarded when it reaches the top (the heap never holds
//!   more than twice the live timers: it is rebuilt when cancelled entries dominate). About
//!   50 bytes a timer.
//! * [`Wheel`]: one deadline per key below a fixed capacity (a descriptor number: one per
//!   connection), to a tick's resolution: a hashed timing wheel (Varghese & Lauck) whose
//!   links live in three arrays indexed by key, so that setting, moving and removing a
//!   deadline is O(1) with no allocation, and a tick looks at one bucket. 12 bytes per key,
//!   allocated zeroed: only keys in use cost resident memory. The servers' runtime keeps its
//!   connections' idle, header and send deadlines in one per event source.

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

/// A [`Wheel`] that held this many deadlines at once gives back its tables' untouched pages
/// as they empty ([`Wheel::trim`]).
const TRIM_PEAK: usize = 1024;

/// Buckets of a [`Wheel`]: deadlines up to this many ticks ahead cost nothing to pass over.
const BUCKETS: usize = 4096;

/// One deadline per key (`0..capacity`) to the resolution of a tick; see the module docs.
///
/// A deadline is rounded up to the next tick, so a key is never expired early, and at most
/// one tick late if [`Wheel::pop_expired`] is called every tick.
#[derive(Debug)]
pub struct Wheel {
    epoch: Instant,
    tick: Duration,
    /// Per key: its deadline in ticks since `epoch`, plus one (0: none).
    at: Vec<u32>,
    /// Per key: the next and previous key of its bucket, plus one (0: none).
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Per bucket: its first key, plus one (0: empty).
    heads: Box<[u32]>,
    /// The first tick not looked at yet.
    cursor: u32,
    len: usize,
    /// The most keys with a deadline at once since the tables' pages were last given back.
    peak: usize,
    /// [`LOW`] or more keys had a deadline since the wheel was last trimmed empty.
    busy: bool,
    /// One past the highest key given a deadline since the last trim: the pages past it
    /// were given back then, or never touched.
    high: usize,
}

/// A wheel that held this many deadlines or more is trimmed when it empties ([`Wheel::trim`]);
/// below it, a wheel whose few keys come and go is never scanned.
const LOW: usize = 64;

impl Wheel {
    /// A wheel for keys `0..capacity` whose deadlines are kept to `tick` (at least 1 ms).
    pub fn new(capacity: usize, tick: Duration) -> Wheel {
        let capacity = capacity.min(u32::MAX as usize - 1);
        Wheel {
            epoch: Instant::now(),
            tick: tick.max(Duration::from_millis(1)),
            at: vec![0; capacity],
            next: vec![0; capacity],
            prev: vec![0; capacity],
            heads: vec![0; BUCKETS].into_boxed_slice(),
            cursor: 0,
            len: 0,
            peak: 0,
            busy: false,
            high: 0,
        }
    }

    /// Keys with a deadline.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key has a deadline.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `t` in ticks since the epoch, rounded up (`ceil`) or down.
    fn ticks(&self, t: Instant, ceil: bool) -> u32 {
        let d = t.saturating_duration_since(self.epoch);
        let tick = self.tick.as_nanos();
        let n = if ceil { d.as_nanos().div_ceil(tick) } else { d.as_nanos() / tick };
        n.min(u32::MAX as u128 - 1) as u32
    }

    /// The deadline of `key` (rounded up to its tick), if it has one.
    pub fn deadline(&self, key: usize) -> Option<Instant> {
        match self.at.get(key).copied() {
            None | Some(0) => None,
            Some(t) => Some(self.epoch + self.tick * (t - 1)),
        }
    }

    /// Sets (or moves) the deadline of `key`. A deadline already past expires at the next
    /// tick's [`Wheel::pop_expired`]. False if `key` is not below the capacity.
    pub fn insert(&mut self, key: usize, deadline: Instant) -> bool {
        if key >= self.at.len() {
            return false;
        }
        self.unlink(key);
        let t = self.ticks(deadline, true).max(self.cursor);
        let b = t as usize % BUCKETS;
        let head = self.heads[b];
        self.at[key] = t + 1;
        self.next[key] = head;
        self.prev[key] = 0;
        if head != 0 {
            self.prev[head as usize - 1] = key as u32 + 1;
        }
        self.heads[b] = key as u32 + 1;
        self.len += 1;
        self.peak = self.peak.max(self.len);
        self.busy |= self.len >= LOW;
        self.high = self.high.max(key + 1);
        true
    }

    /// Removes the deadline of `key`; false if it had none.
    pub fn remove(&mut self, key: usize) -> bool {
        if !self.unlink(key) {
            return false;
        }
        let halved = self.peak >= TRIM_PEAK && self.len * 2 <= self.peak;
        if halved || (self.len == 0 && self.busy) {
            self.trim();
        }
        true
    }

    /// [`Wheel::remove`] without the trim: for a deadline that moves.
    fn unlink(&mut self, key: usize) -> bool {
        let Some(&at) = self.at.get(key).filter(|&&a| a != 0) else { return false };
        let (next, prev) = (self.next[key], self.prev[key]);
        if prev != 0 {
            self.next[prev as usize - 1] = next;
        } else {
            self.heads[(at - 1) as usize % BUCKETS] = next;
        }
        if next != 0 {
            self.prev[next as usize - 1] = prev;
        }
        (self.at[key], self.next[key], self.prev[key]) = (0, 0, 0);
        self.len -= 1;
        true
    }

    /// Gives back the pages of the per-key tables that hold only keys without a deadline
    /// (all zeros): a server's keys are its descriptor numbers, and after a peak of
    /// connections the pages their numbers touched stay resident otherwise. Called by
    /// [`Wheel::remove`] each time the keys with a deadline halve from a peak of
    /// [`TRIM_PEAK`] or more, and when the wheel empties after holding [`LOW`] or more: one
    /// pass over the tables per halving of a large load, none while a few keys come and go.
    fn trim(&mut self) {
        let high = self.high.min(self.at.len());
        for t in [&mut self.at, &mut self.next, &mut self.prev] {
            // SAFETY: the tables are `Vec`s, blocks of the global allocator: anonymous memory.
            unsafe { hintq_sys::release_zero_pages(&mut t[..high]) };
        }
        self.peak = self.len;
        self.busy &= self.len > 0;
        if self.len == 0 {
            self.high = 0;
        }
    }

    /// Removes and returns one key whose deadline is at or before `now`, earliest tick first.
    pub fn pop_expired(&mut self, now: Instant) -> Option<usize> {
        let now = self.ticks(now, false);
        while self.cursor <= now && self.len > 0 {
            // Keys of this bucket due at the cursor's tick; the others are a lap or more ahead.
            let mut k = self.heads[self.cursor as usize % BUCKETS];
            while k != 0 {
                let key = k as usize - 1;
                if self.at[key] - 1 <= self.cursor {
                    self.remove(key);
                    return Some(key);
                }
                k = self.next[key];
            }
            self.cursor += 1;
        }
        if self.len == 0 {
            self.cursor = self.cursor.max(now.saturating_add(1));
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
    fn wheel_expires_in_tick_order_never_early_and_moves_keys() {
        let tick = Duration::from_millis(10);
        let mut w = Wheel::new(100, tick);
        let t0 = w.epoch;
        assert!(w.insert(1, t0 + Duration::from_millis(35)));
        assert!(w.insert(2, t0 + Duration::from_millis(15)));
        assert!(w.insert(3, t0 + Duration::from_millis(95)));
        assert!(!w.insert(100, t0), "a key past the capacity");
        // Moved later, then removed.
        assert!(w.insert(3, t0 + Duration::from_millis(200)));
        assert_eq!(w.len(), 3);
        assert!(w.deadline(1).unwrap() >= t0 + Duration::from_millis(35));
        assert_eq!(w.pop_expired(t0 + Duration::from_millis(34)), Some(2));
        assert_eq!(w.pop_expired(t0 + Duration::from_millis(34)), None, "key 1 is due at 40 ms, not before");
        assert_eq!(w.pop_expired(t0 + Duration::from_millis(40)), Some(1));
        assert!(w.remove(3));
        assert!(!w.remove(3));
        assert_eq!(w.pop_expired(t0 + Duration::from_secs(10)), None);
        assert!(w.is_empty());
        // A deadline already past expires at the next tick; one laps ahead waits its lap.
        let now = t0 + Duration::from_secs(10);
        w.insert(5, t0);
        w.insert(6, now + tick * (BUCKETS as u32 + 3));
        assert_eq!(w.pop_expired(now + tick), Some(5));
        assert_eq!(w.pop_expired(now + tick * BUCKETS as u32), None, "a lap ahead is not due");
        assert_eq!(w.pop_expired(now + tick * (BUCKETS as u32 + 3)), Some(6));
    }

    #[test]
    fn wheel_keeps_every_key_of_a_crowded_bucket() {
        let tick = Duration::from_millis(1);
        let mut w = Wheel::new(10_000, tick);
        let t0 = w.epoch;
        // Every key in one bucket, a lap apart in pairs, removed and moved at random places.
        for k in 0..10_000 {
            w.insert(k, t0 + tick * ((k % 2) as u32 * BUCKETS as u32 + 7));
        }
        for k in (0..10_000).step_by(3) {
            w.remove(k);
        }
        let mut first: Vec<usize> = std::iter::from_fn(|| w.pop_expired(t0 + tick * 8)).collect();
        first.sort_unstable();
        let want: Vec<usize> = (0..10_000).filter(|k| k % 3 != 0 && k % 2 == 0).collect();
        assert_eq!(first, want);
        let rest = std::iter::from_fn(|| w.pop_expired(t0 + tick * (BUCKETS as u32 + 8))).count();
        assert_eq!(rest, (0..10_000).filter(|k| k % 3 != 0 && k % 2 == 1).count());
        assert!(w.is_empty());
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

    /// A wheel that held many deadlines keeps no pages of its tables once they are all gone,
    /// and works as before afterwards.
    #[test]
    fn an_emptied_wheel_gives_its_pages_back() {
        let cap = 64 * 1024;
        let mut w = Wheel::new(cap, Duration::from_millis(1));
        let now = Instant::now();
        let resident = |w: &Wheel| {
            [&w.at, &w.next, &w.prev]
                .iter()
                .map(|t| hintq_sys::resident_pages(t.as_ptr().cast(), t.len() * 4).unwrap())
                .sum::<usize>()
        };
        for k in (0..cap).step_by(7) {
            w.insert(k, now + Duration::from_millis(k as u64 % 5000));
        }
        let full = resident(&w);
        assert!(full >= 3 * 60, "{full} pages touched by the deadlines");
        for k in (0..cap).step_by(7) {
            assert!(w.remove(k));
        }
        let left = resident(&w);
        assert!(left <= 6, "{left} of {full} pages still resident with no deadline");
        w.insert(cap - 1, now);
        w.insert(3, now + Duration::from_millis(1));
        let later = now + Duration::from_millis(10);
        let got: Vec<_> = std::iter::from_fn(|| w.pop_expired(later)).collect();
        assert_eq!(got, [cap - 1, 3]);
    }
}
