//! The slot table ([`Table`]): per descriptor number, the registration's generation and
//! liveness in one key, its interest, and the FIFO's and one-shot backends' per-registration
//! flags; and the table's trimming, which gives back the pages of slots no longer used once
//! a peak of registrations ends.

use crate::token::advance_floor;
use crate::{Interest, State};
use std::ops::{Deref, DerefMut};
use std::os::fd::RawFd;

/// Tables indexed by descriptor number this long or longer are trimmed when registrations
/// fall ([`Table::shorten`]).
pub(crate) const TRIM_PEAK: usize = 1024;

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

/// The slot table: a `Vec` of [`Slot`] indexed by descriptor number (read and written
/// through `Deref`), and what its trimming needs.
#[derive(Default)]
pub(crate) struct Table {
    slots: Vec<Slot>,
    /// Above every generation of the slots a trim dropped: the first generation of a slot
    /// made again, so that no token of a dropped one names it.
    gen_floor: u32,
    /// Trims made (for tests).
    pub(crate) trims: u64,
    /// The most slots since pages were last given back ([`Table::trim`]).
    dirty: usize,
    /// [`TRIM_PEAK`] registrations or more were live at once since the last trim (or were
    /// left at it): the slots are dropped back only while such a peak ends ([`Table::shorten`]),
    /// so that a few connections coming and going at high numbers (a shard whose neighbours
    /// hold the low ones) do not refill and drop thousands of slots each.
    peaked: bool,
}

impl Deref for Table {
    type Target = Vec<Slot>;
    #[inline(always)]
    fn deref(&self) -> &Vec<Slot> {
        &self.slots
    }
}

impl DerefMut for Table {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Vec<Slot> {
        &mut self.slots
    }
}

impl Table {
    /// Makes slot `i` exist: new slots take the generation floor. The first growth reserves
    /// room up to the descriptor limit, so that later ones copy nothing.
    pub(crate) fn grow(&mut self, i: usize) {
        if i < self.slots.len() {
            return;
        }
        if self.slots.capacity() == 0 {
            self.slots.reserve(crate::sys::fd_table_reserve().max(i + 1));
        }
        self.slots.resize(i + 1, Slot { key: self.gen_floor, ..Slot::default() });
        self.dirty = self.dirty.max(i + 1);
    }

    /// Slot `i`, made to exist ([`Table::grow`]): for a number past the slots.
    #[cold]
    #[inline(never)]
    pub(crate) fn grown(&mut self, i: usize) -> &mut Slot {
        self.grow(i);
        &mut self.slots[i]
    }

    /// A registration was made; `registered` are live now (one more than before). True when a
    /// peak of [`TRIM_PEAK`] begins: slots left empty on top before it should go now
    /// ([`Table::shorten`]). Registrations rise by one at a time, so a peak begins when they
    /// reach [`TRIM_PEAK`]: one compare per registration.
    #[inline(always)]
    pub(crate) fn registered(&mut self, registered: usize) -> bool {
        registered == TRIM_PEAK && self.peak_begins()
    }

    #[cold]
    fn peak_begins(&mut self) -> bool {
        !std::mem::replace(&mut self.peaked, true)
    }

    /// Keeps the slots ending at the highest registered number: called when that
    /// registration is revoked, it drops the slots back to the next one (their generations
    /// folded into `gen_floor`, in the generations' cyclic order, so no token of theirs names
    /// a slot made again), and a registration left at a high number stops it rather than
    /// repeating it. When the slots have halved since pages were last given back, from
    /// [`TRIM_PEAK`] or more, [`Table::trim`] gives back the pages they left, and this
    /// returns true (the caller's other tables indexed by descriptor are trimmed too).
    ///
    /// Only while a peak of [`TRIM_PEAK`] registrations or more ends: the registrations left
    /// at each trim are the next peak, so the slots fall by halves until fewer than
    /// [`TRIM_PEAK`] registrations remain, and then keep their length (at most half the
    /// length they had at the peak).
    /// Without such a peak a connection that comes and goes at a high number beside a few low
    /// ones (a shard whose neighbours hold the numbers between) would refill and drop every
    /// slot between them, each time.
    pub(crate) fn shorten(&mut self, registered: usize) -> bool {
        if !self.peaked {
            return false;
        }
        let used = self.slots.iter().rposition(|s| s.live() || s.pending).map_or(0, |i| i + 1);
        self.gen_floor = advance_floor(self.gen_floor, self.slots[used..].iter().map(Slot::gen));
        self.slots.truncate(used);
        if self.dirty >= TRIM_PEAK && used * 2 <= self.dirty {
            self.trim();
            // What is left is the new peak: under TRIM_PEAK it is over.
            self.peaked = registered >= TRIM_PEAK;
            return true;
        }
        false
    }

    /// Gives back the pages of the slots dropped since the last call (the room stays
    /// reserved up to the descriptor limit, so the next peak copies nothing). One call per
    /// halving of the slots.
    fn trim(&mut self) {
        self.trims += 1;
        if self.trims == 1 {
            // The room may sit on pages the allocator had used before: all of it, once.
            hintq_sys::release_spare(&mut self.slots);
        } else {
            hintq_sys::release_dropped(&mut self.slots, self.dirty);
        }
        self.dirty = self.slots.len();
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

    /// Declares slot `i` live with a new generation, as the queue does.
    fn declare(t: &mut Table, i: usize) -> u32 {
        t.grow(i);
        let gen = crate::token::next_gen(t[i].gen());
        t[i].key = gen | LIVE;
        gen
    }

    #[test]
    fn the_table_shortens_only_as_a_peak_ends_and_never_reuses_a_dropped_generation() {
        let mut t = Table::default();
        // Below a peak: the revoked top slot stays, so a connection coming and going at a
        // high number does not refill the slots below it each time.
        declare(&mut t, 3);
        let high = declare(&mut t, 500);
        t.registered(2);
        t[500].key = high;
        assert!(!t.shorten(1));
        assert_eq!(t.len(), 501, "shortened without a peak");
        // A peak of TRIM_PEAK registrations, then all but the lowest revoked: the slots fall
        // back to the lowest live one and the pages are given back once.
        let gens: Vec<u32> = (0..TRIM_PEAK + 10).map(|i| declare(&mut t, i)).collect();
        assert!(t.registered(TRIM_PEAK), "the peak begins at TRIM_PEAK registrations");
        t.registered(TRIM_PEAK + 10);
        for i in 1..TRIM_PEAK + 10 {
            t[i].key = gens[i];
        }
        assert!(t.shorten(1), "the end of the peak trims");
        assert_eq!((t.len(), t.trims), (1, 1));
        // A slot made again past the drop starts above every dropped generation: no token of a
        // dropped registration names it.
        let again = declare(&mut t, 700);
        assert!(gens[1..].iter().all(|&g| again > g), "generation {again} reused");
    }

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
