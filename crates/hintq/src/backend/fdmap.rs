//! A map from descriptor number to a value, for state that only some descriptors have at a
//! time (io_uring's sends in flight and received bytes, both looked up a few times a
//! request): a 4-byte index per number into a dense list of the entries.
//!
//! Against a hash map keyed by the number, a lookup is one load and a compare, not a hash
//! and a probe, and a removal moves one entry (the last, into the hole). The price is the
//! index: 4 bytes for every number up to the highest that ever had an entry, which
//! [`FdMap::trim`] gives back.

use std::os::fd::RawFd;

/// No entry for this number.
const NONE: u32 = u32::MAX;

pub(crate) struct FdMap<V> {
    /// Position in `items` by descriptor number, or [`NONE`].
    index: Vec<u32>,
    items: Vec<(RawFd, V)>,
}

impl<V> Default for FdMap<V> {
    fn default() -> Self {
        Self { index: Vec::new(), items: Vec::new() }
    }
}

impl<V> FdMap<V> {
    fn slot(&self, fd: RawFd) -> Option<usize> {
        let i = *self.index.get(usize::try_from(fd).ok()?)?;
        (i != NONE).then_some(i as usize)
    }

    pub(crate) fn get(&self, fd: RawFd) -> Option<&V> {
        self.slot(fd).map(|i| &self.items[i].1)
    }

    pub(crate) fn get_mut(&mut self, fd: RawFd) -> Option<&mut V> {
        self.slot(fd).map(|i| &mut self.items[i].1)
    }

    /// Sets `fd`'s value; returns the one it replaces.
    ///
    /// # Panics
    /// A negative `fd`.
    pub(crate) fn insert(&mut self, fd: RawFd, v: V) -> Option<V> {
        if let Some(i) = self.slot(fd) {
            return Some(std::mem::replace(&mut self.items[i].1, v));
        }
        let at = usize::try_from(fd).expect("a descriptor number");
        if self.index.len() <= at {
            if self.index.capacity() == 0 {
                self.index.reserve(crate::sys::fd_table_reserve().max(at + 1));
            }
            self.index.resize(at + 1, NONE);
        }
        self.index[at] = u32::try_from(self.items.len()).expect("fewer entries than descriptors");
        self.items.push((fd, v));
        None
    }

    /// `fd`'s value, made with `V::default()` if it has none.
    pub(crate) fn get_or_default(&mut self, fd: RawFd) -> &mut V
    where
        V: Default,
    {
        let i = match self.slot(fd) {
            Some(i) => i,
            None => {
                self.insert(fd, V::default());
                self.items.len() - 1
            }
        };
        &mut self.items[i].1
    }

    pub(crate) fn remove(&mut self, fd: RawFd) -> Option<V> {
        let i = self.slot(fd)?;
        self.index[fd as usize] = NONE;
        let (_, v) = self.items.swap_remove(i);
        if let Some(&(moved, _)) = self.items.get(i) {
            self.index[moved as usize] = i as u32;
        }
        Some(v)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.items.iter().map(|(_, v)| v)
    }

    /// Gives back the room of the entries past `max / 4`, if it exceeds `max` (so a second
    /// call does nothing).
    pub(crate) fn shrink(&mut self, max: usize) {
        if self.items.capacity() > max {
            self.items.shrink_to(max / 4);
        }
    }

    /// Gives back the pages of the index past the highest number with an entry (its room
    /// stays reserved).
    pub(crate) fn trim(&mut self) {
        let used = self.items.iter().map(|&(fd, _)| fd as usize + 1).max().unwrap_or(0);
        hintq_sys::truncate_release(&mut self.index, used);
    }

    #[cfg(test)]
    fn room(&self) -> (usize, usize) {
        (self.index.len(), self.items.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Any sequence of inserts, removals and lookups agrees with a hash map, and after each
    /// step the index and the entries point at each other.
    #[test]
    fn agrees_with_a_hash_map() {
        let mut m = FdMap::default();
        let mut reference = HashMap::new();
        // A fixed pseudo-random walk over 64 numbers: enough removals to move entries.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for step in 0..20_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let fd = (x % 64) as RawFd;
            match x >> 60 {
                0..=6 => assert_eq!(m.insert(fd, step), reference.insert(fd, step)),
                7..=12 => assert_eq!(m.remove(fd), reference.remove(&fd)),
                _ => *m.get_or_default(fd) += 1,
            }
            if x >> 60 > 12 {
                *reference.entry(fd).or_default() += 1;
            }
            assert_eq!(m.get(fd), reference.get(&fd));
            assert_eq!(m.is_empty(), reference.is_empty());
            // Each entry's number points at it, and every number that points somewhere
            // points at an entry of its own.
            for (i, &(fd, _)) in m.items.iter().enumerate() {
                assert_eq!(m.index[fd as usize] as usize, i);
            }
            for (fd, &i) in m.index.iter().enumerate().filter(|(_, &i)| i != NONE) {
                assert_eq!(m.items[i as usize].0 as usize, fd);
            }
        }
        let mut got: Vec<_> = m.values().copied().collect();
        let mut want: Vec<_> = reference.values().copied().collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
    }

    #[test]
    #[should_panic(expected = "a descriptor number")]
    fn a_negative_number_cannot_be_given_an_entry() {
        FdMap::default().insert(-1, 0u8);
    }

    #[test]
    fn negative_and_unknown_numbers_have_no_entry() {
        let mut m: FdMap<u8> = FdMap::default();
        assert_eq!(m.get(-1), None);
        assert_eq!(m.remove(-1), None);
        assert_eq!(m.get(1 << 20), None);
        m.insert(3, 1);
        assert_eq!(m.get(2), None);
        assert_eq!(m.get_mut(3), Some(&mut 1));
    }

    /// A burst at high numbers leaves neither its entries' room nor its index's pages behind
    /// once trimmed and shrunk; an entry still there keeps the index up to its number.
    #[test]
    fn trim_gives_back_what_a_burst_left() {
        let mut m = FdMap::default();
        for fd in 0..5000 {
            m.insert(fd, [0u8; 48]);
        }
        for fd in 1..5000 {
            m.remove(fd);
        }
        let resident = |m: &FdMap<[u8; 48]>| {
            // The whole pages of the burst's index past the one number 0 keeps.
            let page = hintq_sys::page_size();
            let start = m.index.as_ptr() as usize;
            let from = (start + 4).next_multiple_of(page);
            let end = (start + 5000 * 4) / page * page;
            hintq_sys::resident_pages(from as *const u8, end.saturating_sub(from)).expect("mincore")
        };
        assert!(resident(&m) > 0, "the burst wrote its index");
        m.trim();
        assert_eq!(m.room().0, 1, "the index ends after number 0, the one left");
        assert_eq!(resident(&m), 0, "the pages of the dropped numbers are given back");
        m.remove(0);
        m.trim();
        m.shrink(1024);
        let (index, room) = m.room();
        assert_eq!(index, 0);
        assert!(room <= 1024 / 4, "{room}");
        m.insert(7, [1; 48]);
        assert_eq!(m.get(7), Some(&[1; 48]));
    }
}
