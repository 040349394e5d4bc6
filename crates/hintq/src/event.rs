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
// Laid out as the kernel's `epoll_event` with a registration's token (the state where its
// bits are, then the token's descriptor and generation halves), so that an epoll wait can
// write straight into the caller's array and each report be turned into an event in place
// (`backend::epoll::Epoll::wait_into`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Event {
    pub(crate) state: State,
    pub(crate) fd: RawFd,
    pub(crate) gen: u32,
}

impl Event {
    /// The descriptor the event is for.
    pub fn fd(&self) -> RawFd {
        self.fd
    }
    /// The state of the descriptor when the event was collected.
    pub fn state(&self) -> State {
        self.state
    }
    /// The generation of the registration that produced the event; see [`crate::Queue::is_current`].
    pub fn generation(&self) -> u32 {
        self.gen
    }
}
