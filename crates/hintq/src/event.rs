//! The bits of the paper's interface: interest masks, state masks and event records.

use std::os::fd::RawFd;

bitflags::bitflags! {
    /// What a thread wants to hear about for a descriptor. The values are the paper's
    /// `EVENT_READ`, `EVENT_WRITE` and `EVENT_EXCEPT`. An empty interest revokes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct Interest: u32 {
        /// Data (or a connection, or end of file) can be read.
        const READ = 0x1;
        /// Buffer space is available for writing.
        const WRITE = 0x2;
        /// Exceptional condition: out-of-band data (`POLLPRI`).
        const EXCEPT = 0x4;
        /// With `READ`, on a connected stream socket: the backend may receive the data itself
        /// (`uring`: a multishot receive into a ring of provided buffers, so that reading
        /// costs no system call of its own). Take it with [`crate::RingIo::take_received`]
        /// after a readable event; where the backend does not receive, that returns `None`
        /// and the application reads as usual. Ignored by every other backend, and in
        /// hand-off mode. Revoking drops what was received and not taken (see
        /// [`crate::RingIo::receiving`]).
        const RECEIVE = 0x100;
    }
}

bitflags::bitflags! {
    /// A descriptor's readiness as well as the backend can know it. `HUP` and `ERR` are
    /// always reported, whatever the interest, because they end every wait.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct State: u32 {
        /// Readable (`EVENT_READ`).
        const READ = 0x1;
        /// Writable (`EVENT_WRITE`).
        const WRITE = 0x2;
        /// Exceptional condition (`EVENT_EXCEPT`).
        const EXCEPT = 0x4;
        /// The peer hung up (`POLLHUP`/`POLLRDHUP`).
        const HUP = 0x8;
        /// An error is pending on the descriptor (`POLLERR`), or it was closed under a
        /// state-based backend (`POLLNVAL`).
        const ERR = 0x10;
        /// A send made with [`crate::RingIo::send`] completed: take its buffer and result
        /// with [`crate::Queue::take_sent`]. Not a readiness: reported whatever the interest.
        const SENT = 0x20;
    }
}

impl State {
    /// Readable, or hung up / in error (a read will not block: it returns data, EOF or
    /// the error).
    pub fn is_readable(self) -> bool {
        self.intersects(State::READ | State::HUP | State::ERR)
    }
    /// Writable, or in error.
    pub fn is_writable(self) -> bool {
        self.intersects(State::WRITE | State::ERR)
    }
    /// The bits an application that declared `interest` should see.
    pub(crate) fn visible(self, interest: Interest) -> State {
        self & (State::from_bits_truncate(interest.bits()) | State::HUP | State::ERR | State::SENT)
    }
}

/// One dequeued event: the paper's `event_descr_t` plus the registration's generation.
// Laid out as the kernel's `epoll_event` with a registration's token (the kernel's event bits,
// then the token's descriptor and generation halves), so that an epoll wait can write straight
// into the caller's array and each report be an event where it lies, checked and not rewritten
// (`backend::epoll::Epoll::wait_into`). The state is kept in the kernel's epoll bits
// ([`Event::bits`]) and turned into a [`State`] only when asked for ([`Event::state`]), as mio's
// events are read.
#[derive(Clone, Copy, Default)]
#[repr(C)]
pub struct Event {
    /// The state in epoll's bits ([`raw_of`]): what an epoll wait wrote, or a [`State`] stored so.
    pub(crate) bits: u32,
    pub(crate) fd: RawFd,
    pub(crate) gen: u32,
}

/// In an [`Event`]'s bits: [`State::SENT`], in a place the kernel never reports to an epoll
/// set (0x20 is `POLLNVAL`, which epoll does not report: a wait's bits are masked with the
/// watch's events, and no watch asks for it), so that it reads back unchanged.
const RAW_SENT: u32 = 0x20;

/// A [`State`]'s bits as an [`Event`] keeps them: epoll's (`READ` is `EPOLLIN`, `WRITE`
/// `EPOLLOUT`, `EXCEPT` `EPOLLPRI`, `HUP` `EPOLLHUP`, `ERR` `EPOLLERR`), and `SENT` as
/// [`RAW_SENT`]. Through a table of the 64 combinations: one load per event stored.
#[inline(always)]
pub(crate) fn raw_of(state: State) -> u32 {
    const RAW: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut s = 0;
        while s < 64 {
            let e = (s & 0x1) | ((s & 0x2) << 1) | ((s & 0x4) >> 1) | ((s & 0x8) << 1) | ((s & 0x10) >> 1);
            t[s] = (e | (s & 0x20)) as u8;
            s += 1;
        }
        t
    };
    const _: () = assert!(
        State::all().bits() == 0x3f
            && RAW_SENT == State::SENT.bits()
            && libc::EPOLLIN == 0x1
            && libc::EPOLLPRI == 0x2
            && libc::EPOLLOUT == 0x4
            && libc::EPOLLERR == 0x8
            && libc::EPOLLHUP == 0x10
    );
    u32::from(RAW[(state.bits() & 0x3f) as usize])
}

impl Event {
    /// An event of `fd`'s registration of generation `gen` in `state`.
    #[inline(always)]
    pub(crate) fn new(fd: RawFd, state: State, gen: u32) -> Event {
        Event { bits: raw_of(state), fd, gen }
    }
    /// Adds `state` to the event's (a report coalesced into it).
    #[inline(always)]
    pub(crate) fn add(&mut self, state: State) {
        self.bits |= raw_of(state);
    }
    /// The descriptor the event is for.
    pub fn fd(&self) -> RawFd {
        self.fd
    }
    /// The state of the descriptor when the event was collected.
    #[inline]
    pub fn state(&self) -> State {
        state_from_epoll(self.bits) | State::from_bits_retain(self.bits & RAW_SENT)
    }
    /// The generation of the registration that produced the event; see [`crate::Queue::is_current`].
    pub fn generation(&self) -> u32 {
        self.gen
    }
}

impl PartialEq for Event {
    /// Events are equal when their descriptor, generation and [`Event::state`] are.
    fn eq(&self, other: &Event) -> bool {
        (self.fd, self.gen, self.state()) == (other.fd, other.gen, other.state())
    }
}

impl Eq for Event {}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("state", &self.state())
            .field("fd", &self.fd)
            .field("gen", &self.gen)
            .finish()
    }
}

/// Maps epoll event bits to a [`State`], with shifts and masks rather than a test per bit
/// (it runs for every event): `EPOLLIN` (0x1) is `READ`, `EPOLLOUT` (0x4) and `EPOLLHUP` (0x10)
/// move down one place to `WRITE` and `HUP`, `EPOLLPRI` (0x2) and `EPOLLERR` (0x8) up one to
/// `EXCEPT` and `ERR`, and `EPOLLRDHUP` (0x2000) down ten to `HUP`.
#[inline]
pub(crate) fn state_from_epoll(e: u32) -> State {
    const _: () = assert!(
        libc::EPOLLIN == 0x1
            && libc::EPOLLPRI == 0x2
            && libc::EPOLLOUT == 0x4
            && libc::EPOLLERR == 0x8
            && libc::EPOLLHUP == 0x10
            && libc::EPOLLRDHUP == 0x2000
    );
    // The five low bits through a table of their 32 combinations (one load where the shifts
    // took a dozen instructions, for every event), `EPOLLRDHUP` by its shift.
    const LOW: [u8; 32] = {
        let mut t = [0u8; 32];
        let mut e = 0;
        while e < 32 {
            t[e] = epoll_shifts(e as u32) as u8;
            e += 1;
        }
        t
    };
    State::from_bits_retain(u32::from(LOW[(e & 0x1f) as usize]) | ((e >> 10) & 0x8))
}

/// The state bits of epoll bits `e`, by shifts and masks (see [`state_from_epoll`]).
const fn epoll_shifts(e: u32) -> u32 {
    (e & 0x1) | ((e >> 1) & 0xA) | ((e << 1) & 0x14) | ((e >> 10) & 0x8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every state reads back from an event as it was stored, and the kernel's bits of an
    /// epoll report read as the state the other paths make of them.
    #[test]
    fn an_events_state_reads_back_as_stored_and_as_the_kernel_reported_it() {
        for s in 0..64u32 {
            let state = State::from_bits_retain(s);
            let ev = Event::new(3, state, 7);
            assert_eq!(ev.state(), state, "{s:#x}");
            let mut e = Event::new(3, State::empty(), 7);
            e.add(state);
            assert_eq!(e, ev);
        }
        let kernel =
            [libc::EPOLLIN, libc::EPOLLPRI, libc::EPOLLOUT, libc::EPOLLERR, libc::EPOLLHUP, libc::EPOLLRDHUP];
        for combo in 0u32..64 {
            let e = kernel
                .iter()
                .enumerate()
                .filter(|(k, _)| combo & (1 << k) != 0)
                .fold(0, |e, (_, &b)| e | b as u32);
            let ev = Event { bits: e, fd: 3, gen: 7 };
            assert_eq!(ev.state(), state_from_epoll(e), "{e:#x}");
            assert!(!ev.state().contains(State::SENT), "{e:#x}: a kernel report read as SENT");
        }
    }
}
