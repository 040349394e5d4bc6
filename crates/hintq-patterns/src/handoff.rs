//! The structures threads hand work over with, each small enough for loom to check
//! exhaustively (`tests/loom.rs`):
//!
//! * [`Leadership`]: the Leader/Followers hand-off. Exactly one thread at a time is the
//!   leader and holds the event source; dropping the [`Leader`] promotes one follower.
//! * [`WorkQueue`]: the Half-Sync/Half-Async queue, a `VecDeque` behind a mutex with a
//!   condition variable (the paper's "central queue protected by a mutex").
//! * [`InFlight`]: the per-descriptor flag that keeps two threads from handling the same
//!   descriptor at once when an edge-triggered backend reports it again meanwhile.
//! * [`Gate`]: how many threads of a pool are active (adaptive thread count).

use crate::sync::{lock, wait, AtomicU32, AtomicUsize, Condvar, Mutex, UnsafeCell};
use std::collections::VecDeque;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, SeqCst};

/// One value (the event source) held by one leader at a time; the others wait as followers.
#[derive(Debug)]
pub struct Leadership<T> {
    state: Mutex<Lead>,
    cv: Condvar,
    value: UnsafeCell<T>,
}

#[derive(Debug, Default)]
struct Lead {
    leader: bool,
    stopped: bool,
    followers: usize,
}

// SAFETY: `value` is only reached through a `Leader`, and `Lead::leader` (under the mutex)
// lets at most one exist at a time; so `T: Send` suffices, as for a `Mutex<T>`.
unsafe impl<T: Send> Sync for Leadership<T> {}
// SAFETY: moving it moves the `T` (Send) and the mutex that guards it.
unsafe impl<T: Send> Send for Leadership<T> {}

/// Proof of leadership: access to the value. Dropping it hands leadership to one follower.
pub struct Leader<'a, T> {
    of: &'a Leadership<T>,
}

impl<T> Leadership<T> {
    /// A leadership over `value`, with no leader yet.
    pub fn new(value: T) -> Self {
        Leadership { state: Mutex::new(Lead::default()), cv: Condvar::new(), value: UnsafeCell::new(value) }
    }

    /// Waits as a follower until this thread becomes the leader; `None` once stopped.
    pub fn lead(&self) -> Option<Leader<'_, T>> {
        let mut s = lock(&self.state);
        loop {
            if s.stopped {
                return None;
            }
            if !s.leader {
                s.leader = true;
                return Some(Leader { of: self });
            }
            s.followers += 1;
            s = wait(&self.cv, s);
            s.followers -= 1;
        }
    }

    /// Ends the pattern: every follower's `lead` returns `None`, and so does the leader's
    /// next one.
    pub fn stop(&self) {
        lock(&self.state).stopped = true;
        self.cv.notify_all();
    }

    /// True once [`Leadership::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        lock(&self.state).stopped
    }
}

impl<T> Leader<'_, T> {
    /// Runs `f` on the value.
    pub fn with<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        // SAFETY: this `Leader` is the only one alive (see the `Sync` impl), and `&mut self`
        // keeps its own uses apart.
        self.of.value.with_mut(|p| f(unsafe { &mut *p }))
    }
}

impl<T> Drop for Leader<'_, T> {
    fn drop(&mut self) {
        let mut s = lock(&self.of.state);
        s.leader = false;
        let promote = s.followers > 0;
        drop(s);
        if promote {
            // The hand-off: one follower becomes the next leader (a futex wake; across
            // cores this is the 30-40 us of PERF.md).
            self.of.cv.notify_one();
        }
    }
}

/// The Half-Sync/Half-Async queue: FIFO, unbounded, blocking pop, closable.
///
/// Mutex + condition variable rather than a lock-free channel: it is the structure the paper
/// measures, loom can check it, and at one request in flight per connection the queue never
/// holds more than the number of connections. A pusher signals only when a popper sleeps,
/// so a busy pool pays no futex call per item.
#[derive(Debug)]
pub struct WorkQueue<T> {
    state: Mutex<Work<T>>,
    cv: Condvar,
}

#[derive(Debug)]
struct Work<T> {
    items: VecDeque<T>,
    closed: bool,
    sleeping: usize,
}

impl<T> Default for WorkQueue<T> {
    fn default() -> Self {
        WorkQueue {
            state: Mutex::new(Work { items: VecDeque::new(), closed: false, sleeping: 0 }),
            cv: Condvar::new(),
        }
    }
}

impl<T> WorkQueue<T> {
    /// Appends `item`; gives it back if the queue is closed.
    pub fn push(&self, item: T) -> Result<(), T> {
        let mut s = lock(&self.state);
        if s.closed {
            return Err(item);
        }
        s.items.push_back(item);
        let wake = s.sleeping > 0;
        drop(s);
        if wake {
            self.cv.notify_one();
        }
        Ok(())
    }

    /// Takes the oldest item, waiting while there is none; `None` once closed (items left
    /// in a closed queue are not handed out: [`WorkQueue::drain`] takes them).
    pub fn pop(&self) -> Option<T> {
        let mut s = lock(&self.state);
        loop {
            if s.closed {
                return None;
            }
            if let Some(item) = s.items.pop_front() {
                return Some(item);
            }
            s.sleeping += 1;
            s = wait(&self.cv, s);
            s.sleeping -= 1;
        }
    }

    /// Closes the queue and wakes every waiting popper.
    pub fn close(&self) {
        lock(&self.state).closed = true;
        self.cv.notify_all();
    }

    /// Takes every item still queued.
    pub fn drain(&self) -> Vec<T> {
        lock(&self.state).items.drain(..).collect()
    }

    /// Items queued now.
    pub fn len(&self) -> usize {
        lock(&self.state).items.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

const BUSY: u32 = 1;
const AGAIN: u32 = 2;

/// A descriptor's in-flight flag. [`InFlight::enter`] makes the caller the only handler;
/// a second `enter` meanwhile fails but leaves a note, and the handler's
/// [`InFlight::leave`] then tells it to handle once more, so no report is lost.
#[derive(Debug, Default)]
pub struct InFlight(AtomicU32);

impl InFlight {
    /// A flag with nobody in flight.
    pub fn new() -> Self {
        InFlight(AtomicU32::new(0))
    }

    /// True: the caller now handles the descriptor. False: another thread does, and will
    /// handle it again after the current round.
    pub fn enter(&self) -> bool {
        let mut cur = self.0.load(Acquire);
        loop {
            let next = if cur & BUSY == 0 { BUSY } else { cur | AGAIN };
            match self.0.compare_exchange(cur, next, AcqRel, Acquire) {
                Ok(_) => return cur & BUSY == 0,
                Err(now) => cur = now,
            }
        }
    }

    /// Like [`InFlight::enter`] but leaves no note when the descriptor is in flight.
    pub fn try_enter(&self) -> bool {
        self.0.compare_exchange(0, BUSY, AcqRel, Acquire).is_ok()
    }

    /// True: released. False: a report came in meanwhile; the caller still holds the flag
    /// and must handle again, then call `leave` again.
    pub fn leave(&self) -> bool {
        match self.0.compare_exchange(BUSY, 0, AcqRel, Acquire) {
            Ok(_) => true,
            Err(_) => {
                self.0.store(BUSY, SeqCst);
                false
            }
        }
    }

    /// Releases without looking at notes (the descriptor was closed).
    pub fn abandon(&self) {
        self.0.store(0, SeqCst);
    }
}

/// How many threads of a pool may work: thread `i` passes while `i < active`.
#[derive(Debug)]
pub struct Gate {
    active: AtomicUsize,
    state: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    /// A gate letting `active` threads through.
    pub fn new(active: usize) -> Self {
        Gate { active: AtomicUsize::new(active), state: Mutex::new(false), cv: Condvar::new() }
    }

    /// Waits while thread `i` is parked; false once stopped while parked (an active thread
    /// passes without a lock: it watches its pattern's own stop flag).
    pub fn pass(&self, i: usize) -> bool {
        if i < self.active.load(Relaxed) {
            return true;
        }
        let mut stopped = lock(&self.state);
        while !*stopped && i >= self.active.load(Relaxed) {
            stopped = wait(&self.cv, stopped);
        }
        !*stopped
    }

    /// Threads let through now.
    pub fn active(&self) -> usize {
        self.active.load(Relaxed)
    }

    /// Changes how many threads work; parked ones above the old count are woken.
    pub fn set_active(&self, n: usize) {
        let g = lock(&self.state);
        self.active.store(n, Relaxed);
        drop(g);
        self.cv.notify_all();
    }

    /// Opens the gate for good: every `pass` returns false.
    pub fn stop(&self) {
        *lock(&self.state) = true;
        self.cv.notify_all();
    }
}
