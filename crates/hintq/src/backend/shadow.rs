//! The improved `select`'s persistent INTERESTED sets ([`Shadow`]), shared between its
//! queue and a hand-off re-arm ([`super::poller::Handoff::Select`]) on any thread.

use crate::sys::{FdWord, FD_BITS};
use crate::Interest;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, PoisonError};

/// The read, write and except sets, of run-time size.
pub(super) type Sets = [Vec<FdWord>; 3];

/// The interest bit of each set, in order.
pub(super) const KINDS: [Interest; 3] = [Interest::READ, Interest::WRITE, Interest::EXCEPT];

pub(super) fn bit(fd: usize) -> (usize, FdWord) {
    (fd / FD_BITS, 1 << (fd % FD_BITS))
}

/// Grows each set to at least `words` words (new ones empty).
pub(super) fn grow(sets: &mut Sets, words: usize) {
    for s in sets.iter_mut().filter(|s| s.len() < words) {
        s.resize(words, 0);
    }
}

/// The improved mode's INTERESTED sets, shared with a [`crate::Rearm`] in hand-off mode.
pub(crate) struct Shadow {
    pub(super) sets: Mutex<Sets>,
    /// A `select` call is (about to be) blocked on a copy of the sets (quirk e).
    pub(crate) waiting: AtomicBool,
}

impl Shadow {
    fn lock(&self) -> std::sync::MutexGuard<'_, Sets> {
        // The sets are plain words, never left half-written: a panic elsewhere is no reason
        // to stop watching.
        self.sets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets or clears `fd`'s bit in the read, write and except sets per `interest`.
    pub(crate) fn put(&self, fd: usize, interest: Interest) {
        let (word, mask) = bit(fd);
        let mut sets = self.lock();
        grow(&mut sets, word + 1);
        for (set, kind) in sets.iter_mut().zip(KINDS) {
            if interest.contains(kind) {
                set[word] |= mask;
            } else {
                set[word] &= !mask;
            }
        }
    }

    /// Copies the first `words` words of each set into `call`.
    pub(super) fn copy_into(&self, call: &mut Sets, words: usize) {
        let sets = self.lock();
        for (dst, src) in call.iter_mut().zip(sets.iter()) {
            let n = words.min(src.len());
            dst[..n].copy_from_slice(&src[..n]);
            dst[n..words].fill(0);
        }
    }
}
