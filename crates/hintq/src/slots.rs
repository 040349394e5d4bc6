//! The slot table's element: per descriptor number, the registration's generation and
//! liveness in one key, its interest, and the FIFO's and one-shot backends' per-registration
//! flags. The table (a `Vec` indexed by descriptor number) and its trimming are the queue's.

use crate::{Interest, State};
use std::os::fd::RawFd;

/// In a slot's key: the registration is live (its interest is not empty). Generations stay
/// below 2^30 ([`crate::token::next_gen`]), so a report's generation with this bit added
/// equals the key of the live registration it belongs to, and of nothing else: registration,
/// generation and liveness in one compare.
pub(crate) const LIVE: u32 = 1 << 31;

#[derive(Clone, Copy, Default)]
pub(crate) struct Slot {
    /// The generation, with [`LIVE`] while the registration is.
    pub(crate) key: u32,
    pub(crate) interest: Interest,
    /// The FIFO holds an element for this registration.
    pub(crate) pending: bool,
    /// Reported by a one-shot backend and not re-armed yet.
    pub(crate) disarmed: bool,
    /// States of reports coalesced into the pending element.
    pub(crate) extra: State,
    /// The lean path's batch ((`Queue::batch`)) that last delivered this registration: a
    /// later report in the same batch is looked for among the events already handed out, to
    /// be coalesced into its event. A hint only (the batch number wraps): the search decides.
    pub(crate) seen: u16,
}

const _: () = assert!(std::mem::size_of::<Slot>() == 16);

impl Slot {
    pub(crate) fn gen(&self) -> u32 {
        self.key & !LIVE
    }

    pub(crate) fn live(&self) -> bool {
        self.key & LIVE != 0
    }

    /// The live registration of generation `gen`.
    pub(crate) fn is(&self, gen: u32) -> bool {
        self.key == gen | LIVE
    }
}

/// The generation of `fd`'s live registration in the slot table `slots` (indexed by
/// descriptor number), or `None`.
#[inline]
pub(crate) fn generation(slots: &[Slot], fd: RawFd) -> Option<u32> {
    slots.get(usize::try_from(fd).ok()?).filter(|s| s.live()).map(Slot::gen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_compare_tells_live_current_registrations_from_stale_and_revoked() {
        let mut s = Slot { key: 7, ..Slot::default() };
        assert!(!s.live(), "a slot made with a generation is not live until declared");
        assert!(!s.is(7), "a revoked registration's events are stale");
        s.key = 7 | LIVE;
        assert!(s.live() && s.is(7) && s.gen() == 7);
        assert!(!s.is(6) && !s.is(8), "another generation of the number is stale");
        assert_eq!(generation(&[Slot::default(), s], 1), Some(7));
        assert_eq!(generation(&[Slot::default(), s], 0), None, "never declared");
        assert_eq!(generation(&[Slot::default(), s], 2), None, "past the table");
        assert_eq!(generation(&[Slot::default(), s], -1), None, "not a descriptor");
    }
}
