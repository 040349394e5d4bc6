//! [`Lifecycle`]: the open-connection count and the draining flag of a graceful shutdown,
//! and the heap given back after a large peak of connections.

use hintq_patterns::{Counters, Server};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::time::{Duration, Instant};

/// Returns the heap's free pages to the system (glibc's `malloc_trim`; elsewhere nothing).
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: no arguments but a pad size; glibc locks its arenas itself.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Open connections and the draining flag: a graceful shutdown stops taking connections,
/// lets every response in flight finish (no keep-alive after it), closes idle connections,
/// and waits for the count to reach zero.
#[derive(Debug, Default)]
pub struct Lifecycle {
    open: AtomicUsize,
    draining: AtomicBool,
    /// The most connections open at once since the heap was last trimmed.
    peak: AtomicUsize,
}

/// A server that held at least this many connections at once gives the heap's free memory
/// back to the system when the last of them closes ([`Lifecycle::closed`]).
pub const TRIM_AFTER: usize = 1024;

impl Lifecycle {
    /// Counts a connection in (call from `Handler::accept`).
    pub fn opened(&self) {
        let open = self.open.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(open, SeqCst);
    }

    /// Counts a connection out (call from `Handler::close`). When the last connection of a
    /// server that held [`TRIM_AFTER`] or more at once closes, the allocator gives back what
    /// they used and freed: without it the threads' heaps keep those pages (about 0.7 MB per
    /// thread after 16,000 connections), so memory did not return to its baseline after a
    /// load. One `malloc_trim` per such peak, never on a busy server's path. Returns whether
    /// it trimmed.
    pub fn closed(&self) -> bool {
        let trim = self.open.fetch_sub(1, SeqCst) == 1
            && self.peak.load(SeqCst) >= TRIM_AFTER
            && self.peak.swap(0, SeqCst) >= TRIM_AFTER;
        if trim {
            trim_heap();
        }
        trim
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(SeqCst)
    }

    /// Whether a graceful shutdown is under way.
    pub fn draining(&self) -> bool {
        self.draining.load(SeqCst)
    }

    /// A graceful shutdown of `server`, whose handler counts its connections here: the
    /// draining flag goes up first (so that every connection the runtime's drain then looks
    /// at sees it), then [`Server::drain`] stops accepting and looks at each connection;
    /// waits until none is open or `grace` has passed, shuts the server down, and returns
    /// the connections that were still open and got closed by force.
    pub fn drain(&self, server: Server, grace: Duration) -> usize {
        self.drain_counted(server, grace, &mut Lifecycle::sleep).0
    }

    /// [`Lifecycle::drain`], with the runtime's final counters per thread, cut short when
    /// `stop` says so: it is called with how long to wait at most (10 ms at a time), and
    /// returns true to close every connection now (a second SIGINT or SIGTERM, say).
    pub fn drain_counted(
        &self,
        server: Server,
        grace: Duration,
        stop: &mut dyn FnMut(Duration) -> bool,
    ) -> (usize, Vec<Counters>) {
        self.draining.store(true, SeqCst);
        server.drain();
        let end = Instant::now() + grace;
        while self.open() > 0 {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || stop(left.min(Duration::from_millis(10))) {
                break;
            }
        }
        let left = self.open();
        (left, server.shutdown())
    }

    /// [`Lifecycle::drain_counted`]'s `stop` that only waits.
    pub fn sleep(d: Duration) -> bool {
        std::thread::sleep(d);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The heap is trimmed once when the last connection of a peak of `TRIM_AFTER` or more
    /// closes: not below that peak, not at every return to zero.
    #[test]
    fn the_heap_is_trimmed_once_per_large_peak() {
        let life = Lifecycle::default();
        let cycle = |n: usize| {
            (0..n).for_each(|_| life.opened());
            (0..n).map(|_| life.closed()).collect::<Vec<bool>>()
        };
        assert!(cycle(TRIM_AFTER - 1).iter().all(|&t| !t), "below the peak");
        let trims = cycle(TRIM_AFTER);
        assert_eq!(trims.iter().filter(|&&t| t).count(), 1);
        assert!(trims[TRIM_AFTER - 1], "trimmed when the last one closed");
        assert!(cycle(10).iter().all(|&t| !t), "a small load after it trims nothing");
        assert_eq!(life.open(), 0);
    }
}
