//! # hintq: explicit event delivery for Linux
//!
//! This crate is the event API of Banga, Mogul & Druschel, *A scalable and explicit event
//! delivery mechanism for UNIX* (USENIX 1999), built over the readiness mechanisms a modern
//! Linux kernel offers. A thread owns a [`Queue`] (the paper's per-thread HINTS queue), says
//! once which descriptors it cares about with [`Queue::declare_interest`], and dequeues
//! readiness *events* in batches with [`Queue::get_next_event`].
//!
//! ```no_run
//! use hintq::{Backend, Event, Interest, Queue};
//! use std::os::fd::AsFd;
//! use std::time::Duration;
//! # fn main() -> std::io::Result<()> {
//! # let fd = std::io::stdin();
//! let mut q = Queue::new(Backend::from_env()?)?;
//! let state = q.declare_interest(fd.as_fd(), Interest::READ)?;
//! if state.is_readable() { /* read now: readiness that predates the call is in `state` */ }
//! let mut events = [Event::default(); 64];
//! let n = q.get_next_event(&mut events, Some(Duration::from_millis(100)))?;
//! for ev in &events[..n] { let _ = (ev.fd(), ev.state()); }
//! # Ok(()) }
//! ```
//!
//! ## The contract every backend honours
//!
//! * **No lost readiness.** The [`State`] returned by `declare_interest` is the descriptor's
//!   state *after* interest took effect; anything that becomes ready later arrives as an event.
//! * **FIFO and coalescing.** Events are dequeued in order of arrival. A registration has at
//!   most one pending event: N arrivals between two calls give one event.
//! * **Spurious events are allowed, lost ones are not.** An event is a hint. Descriptors must be
//!   non-blocking, and `EAGAIN` after an event means "not ready after all". State-based
//!   backends ([`Backend::Epoll`], [`Backend::Poll`], both selects ([`Backend::Select`],
//!   [`Backend::SelectClassic`]), and
//!   [`Backend::EpollOneshot`] after each re-arm) repeat an event for as long as the state
//!   stays ready; edge-native ones ([`Backend::Uring`], [`Backend::EpollEt`]) report arrivals.
//!   Declare `WRITE` only while you have something to write.
//! * **No stale events.** Once `declare_interest(fd, Interest::empty())` or [`Queue::close`]
//!   returns, no event of that registration is delivered, even if the number is reused and
//!   declared again at once. Each event carries the registration's generation; inside a batch
//!   you already hold, [`Queue::is_current`] tells whether an event still belongs to a live
//!   registration (the case of closing descriptor #47 while handling #13).
//! * **Bounded queue.** A queue built with [`Builder::capacity`] below the number of
//!   registrations falls back, when it overflows, to a descriptor-order scan whose start
//!   rotates so that no descriptor starves (the paper's scan always began at 0 and could).
//! * **Process-wide interest.** A [`Group`] of per-thread queues delivers a descriptor's
//!   readiness to exactly one member ([`Delivery::One`], the paper's `SO_WAKEUP_ONE`: it
//!   wakes one member blocked in `get_next_event`, not all) or to every member
//!   ([`Delivery::All`]).
//!
//! ## Cost per backend
//!
//! | backend | `get_next_event` | `declare_interest` |
//! |---|---|---|
//! | `uring`, `epoll*` | O(events returned) | O(1) (one `epoll_ctl` / one SQE) |
//! | `poll`, `select` | O(registered) per wait | O(1) user-space update |
//!
//! Threads: a [`Queue`] is `Send` but not `Sync`; it belongs to one thread at a time, as in
//! the paper. [`Waker`] and [`Group`] are `Send + Sync`. For thread pools that take events
//! in one thread and handle them in another (Leader/Followers, Half-Sync/Half-Async), a queue
//! in hand-off mode leaves each delivered descriptor deactivated until a `Send + Sync`
//! [`Rearm`] re-activates it from the handling thread: see [`shared`].

#![deny(missing_docs)]

pub mod accept;
mod backend;
mod event;
mod fifo;
mod group;
mod member;
mod queue;
mod ring;
pub mod shared;
mod slots;
mod sys;
pub mod timer;
mod token;
mod waker;

pub use accept::{Accepted, Acceptor};
pub use backend::{
    leaked_buffers, Backend, GoochPolicy, Hybrid, ParseBackendError, ProbeError, ProbeErrorKind,
};
pub use event::{Event, Interest, State};
pub use group::{Delivery, Group};
pub use queue::{Builder, Queue, Stats};
pub use ring::{RingIo, SendBuffers, SendError};
pub use shared::Rearm;
pub use timer::{TimerId, Timers, Wheel};
pub use waker::Waker;
