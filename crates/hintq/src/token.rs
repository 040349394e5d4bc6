//! The 64-bit tokens under which the queue registers descriptors with its backend, in one
//! place: the queue and the group make them, the backends only compare them, look for the
//! [`INTERNAL`] flag and, to index their own tables, read the descriptor half.
//!
//! ```text
//!  63      62        61 ........ 32   31   30 ............ 0
//! GROUP  INTERNAL   generation (30 bits)  0    descriptor (31 bits)
//! ```
//!
//! * A registration's token is `generation << 32 | fd`, generations in `1..2^30`
//!   ([`next_gen`]), so a stale report of an earlier registration of the same number is
//!   told apart by its generation.
//! * [`GROUP_BIT`] marks a registration of a [`crate::Group`] (its generation is the
//!   group's).
//! * [`INTERNAL`] marks the queue's own watches (the waker's eventfd, a group's epoll sets):
//!   a flag, so that no backend has to guess from a generation of zero.
//! * Bit 31 is clear in every token (descriptors are non-negative): [`BACKEND_BIT`] is free
//!   for a backend's own operations (io_uring's cancels and sends).

use std::os::fd::RawFd;

/// Marks a registration of a [`crate::Group`].
pub(crate) const GROUP_BIT: u64 = 1 << 63;
/// Marks the queue's own watches.
pub(crate) const INTERNAL: u64 = 1 << 62;
/// Clear in every token; a backend may set it in the `user_data` of its own operations.
pub(crate) const BACKEND_BIT: u64 = 1 << 31;

/// The queue's waker (an eventfd).
pub(crate) const TOKEN_WAKER: u64 = INTERNAL;
/// A group's shared epoll set, as a member's backend watches it.
pub(crate) const TOKEN_GROUP_SHARED: u64 = INTERNAL | 1;
/// A group member's own epoll set.
pub(crate) const TOKEN_GROUP_OWN: u64 = INTERNAL | 2;

/// Marks, in an [`crate::Event`]'s 32-bit generation, an event of a group registration.
pub(crate) const GROUP_GEN: u32 = 1 << 31;

/// The token of `fd`'s registration of generation `gen`.
pub(crate) fn token(fd: RawFd, gen: u32) -> u64 {
    (u64::from(gen) << 32) | u64::from(fd as u32)
}

/// The descriptor and generation of a registration's token (not of an [`INTERNAL`] one).
pub(crate) fn untoken(token: u64) -> (RawFd, u32) {
    (token as u32 as RawFd, ((token & !(GROUP_BIT | INTERNAL)) >> 32) as u32)
}

/// True for the queue's own watches.
pub(crate) fn is_internal(token: u64) -> bool {
    token & INTERNAL != 0
}

/// The next generation in `1..2^30` (0 is never one; bits 30 and 31 of the high half are
/// [`INTERNAL`] and [`GROUP_BIT`]).
pub(crate) fn next_gen(gen: u32) -> u32 {
    if gen >= (1 << 30) - 1 {
        1
    } else {
        gen + 1
    }
}

/// How many generations there are before [`next_gen`] wraps to 1.
const GEN_CYCLE: i64 = (1 << 30) - 1;

/// `floor` moved up to the furthest of `gens` ahead of it in the generations' cyclic order
/// ([`next_gen`]), so that `next_gen` of the result equals none of them. A generation more
/// than half a cycle ahead is taken as behind (older than the floor), which it is: a floor
/// moves by what one descriptor number went through, far less than 2^29. `floor` 0 is "none
/// yet", just before 1.
pub(crate) fn advance_floor(floor: u32, gens: impl Iterator<Item = u32>) -> u32 {
    let ahead = |g: u32| (i64::from(g) - i64::from(floor)).rem_euclid(GEN_CYCLE);
    let best = gens.map(ahead).filter(|&d| d < GEN_CYCLE / 2).max().unwrap_or(0);
    if best == 0 {
        floor
    } else {
        ((i64::from(floor) + best - 1).rem_euclid(GEN_CYCLE) + 1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The floor a trim leaves makes the next generation of a re-made slot differ from every
    /// generation the trim dropped, across the wrap from 2^30 - 1 to 1 as well.
    #[test]
    fn the_floor_stays_ahead_of_dropped_generations_across_the_wrap() {
        let top = (1 << 30) - 1;
        for (floor, dropped, want) in [
            (0, vec![7, 3], 7),
            (5, vec![3], 5),
            (top - 1, vec![top], top),
            (top, vec![1, 2], 2),
            (top - 2, vec![1, top], 1),
            (1000, vec![5], 1000),
        ] {
            let f = advance_floor(floor, dropped.iter().copied());
            assert_eq!(f, want, "floor {floor}, dropped {dropped:?}");
            assert!(
                !dropped.contains(&next_gen(f)),
                "floor {floor}, dropped {dropped:?}: next {}",
                next_gen(f)
            );
        }
        // A floor at the top and a number registered, dropped and made again, time after
        // time: never the same generation twice in a row.
        let mut floor = top;
        let mut last = 0;
        for _ in 0..5 {
            let gen = next_gen(floor);
            assert_ne!(gen, last);
            floor = advance_floor(floor, [gen].into_iter());
            last = gen;
        }
    }

    #[test]
    fn tokens_keep_descriptor_generation_and_flags_apart() {
        for (fd, gen) in [(0, 1), (7, (1 << 30) - 1), (i32::MAX, 12345)] {
            let t = token(fd, gen);
            assert_eq!(untoken(t), (fd, gen));
            assert_eq!(untoken(GROUP_BIT | t), (fd, gen));
            assert!(!is_internal(t) && !is_internal(GROUP_BIT | t));
            assert_eq!(t & BACKEND_BIT, 0);
        }
        for t in [TOKEN_WAKER, TOKEN_GROUP_SHARED, TOKEN_GROUP_OWN] {
            assert!(is_internal(t));
            assert_eq!(t & (GROUP_BIT | BACKEND_BIT), 0);
        }
        assert_eq!(next_gen((1 << 30) - 1), 1);
        assert_eq!(next_gen(0), 1);
    }
}
