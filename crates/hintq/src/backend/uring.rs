//! io_uring: one multishot `IORING_OP_POLL_ADD` per watched descriptor. The kernel posts each
//! readiness as a completion (CQE) into a ring it shares with us, so when hints are already
//! there `wait` reaps them without a system call: the modern form of Banga's HINTS queue and
//! of Provos & Lever's mmap'd result area. Edge-native: after its first completion a multishot
//! poll reports wake-ups (arrivals), not states.
//!
//! Kernel quirks handled here:
//!
//! a. A multishot poll can end without notice: a CQE lacking `IORING_CQE_F_MORE` is its last
//!    (the kernel ends it, for one, when the CQ ring is full). The poll is re-armed if the
//!    registration is still current in our table, and the last CQE's readiness (`res > 0`)
//!    is still reported. A last CQE with an error other than `-ECANCELED` (`-EBADF`: the
//!    descriptor was closed before the poll was armed) is reported as `ERR` and not
//!    re-armed, or it would fail again forever.
//! b. `close(fd)` does not cancel a poll: the request holds its own reference to the file, so
//!    a socket is not torn down and its peer never sees FIN (liburing issues 932 and 568).
//!    `delete` therefore submits `IORING_OP_POLL_REMOVE` and waits for the poll's last CQE
//!    (and the remove's, unless it carries `IOSQE_CQE_SKIP_SUCCESS`, 5.17, which posts one
//!    only for a remove that failed) before returning; CQEs of other polls arriving
//!    meanwhile are kept for the next `wait`. The kernel ends the poll in the remove's own
//!    `io_uring_enter` when it runs the poll's work on this thread (always on an m ring),
//!    so that call waits for nothing, and the revoke blocks only when the CQE is not there
//!    after it. `set` on a watched descriptor cancels the same way before arming
//!    anew, because the new poll has the same `user_data` (the queue's token) and a late CQE
//!    of the old one would otherwise read as the end of the new one. Always cancelling also
//!    copes with a descriptor closed and its number reused behind the queue's back: the old
//!    poll still watches the old file.
//! c. CQ overflow: the ring is sized with `IORING_SETUP_CQSIZE`, and with `IORING_FEAT_NODROP`
//!    (implied by `EXT_ARG`) CQEs that do not fit wait on a kernel list, flagged by
//!    `IORING_SQ_CQ_OVERFLOW`. Only an `io_uring_enter` with `GETEVENTS` moves them into the
//!    ring, so `wait` makes one whenever that flag is up, even with CQEs in hand (the crate
//!    adds `GETEVENTS` when it sees the flag). `EBUSY` from an enter means the same backlog
//!    blocked it: reap, and the next enter flushes.
//! d. When the kernel cannot even allocate an overflow entry it drops the CQE, bumps the CQ
//!    ring's overflow counter, and fails one later wait with `EBADR`. Either sign raises the
//!    [`Uring::take_lost`] flag and the queue answers with a full descriptor scan. A drop
//!    during a cancel ends that wait early, since the CQE it waits for may be the lost one.
//! e. Before kernel commit a2da676376fe (2022) an overflowed `F_MORE` CQE could arrive after a
//!    poll's last one. After a re-arm it carries the live poll's `user_data`, so it reads as
//!    one more readiness of that registration: a duplicate, which the contract allows.
//! f. `io_uring_enter` with `IORING_ENTER_EXT_ARG` and a timespec (5.11) is the timed wait:
//!    `ETIME` means the timeout passed with nothing, `EINTR` goes up to the queue, which
//!    retries with the remaining time. Only the cancel wait of (b) retries `EINTR` itself:
//!    its completion is already on the way and `delete` must not return before it.
//! g. A poll armed on a descriptor that is already ready completes at once, so readiness
//!    that arrived before the arm is reported in arming order, not arrival order. `set`
//!    therefore submits its `POLL_ADD` at once (one `io_uring_enter`, as `epoll_ctl` would
//!    cost) rather than leaving it for the next wait; only re-arms (a) ride on the next enter.
//! h. Refusal: Docker's default seccomp profile and `kernel.io_uring_disabled` (6.6) make
//!    `io_uring_setup` fail with `EPERM`; kernels before 5.11 lack `EXT_ARG`; multishot poll
//!    (5.13) has no feature bit, so [`probe`] arms one on an eventfd and looks for `F_MORE`.
//! i. A `POLL_REMOVE` that meets the poll while the kernel is running it (a wake-up being
//!    posted) completes with `-EALREADY` and does *not* end a multishot poll, which goes on
//!    posting `F_MORE` completions. `delete` resubmits the remove until it takes (0) or the
//!    poll is gone (`-ENOENT`, or its last CQE seen). Found by `hintq load` against a server
//!    that closes every connection: waiting for the last CQE after one `-EALREADY` hung.
//! j. By default the kernel posts a poll's completion through task work on the submitting
//!    thread and, if that thread is running, interrupts it (an IPI) to run it; the waking
//!    side pays. Against nginx, `hintq load` on such a ring cost 12–16 µs per request and
//!    nginx 4–6 µs more per request than with epoll. The ring is therefore set up with
//!    `IORING_SETUP_COOP_TASKRUN` (5.19): no interrupt; the work runs at the thread's next
//!    kernel entry. With `IORING_SETUP_TASKRUN_FLAG` the kernel raises `IORING_SQ_TASKRUN`
//!    while work waits, and `wait` enters (with `GETEVENTS`) when it sees it, so reaping
//!    without a system call never misses a completion. A thread asleep is still woken.
//!    Older kernels refuse the flags (`EINVAL`): the ring is built without them. In hand-off
//!    mode several threads enter one ring and the one that armed a poll may be busy in user
//!    code while another waits, so `handoff` moves the registrations to a ring without the
//!    flags (as in m); with them, a completion would wait for its arming thread's next
//!    system call.
//!
//! k. Sends ([`Uring::send`]): the ring does the I/O too, not only the notification. A send
//!    is an `IORING_OP_SEND` with `MSG_WAITALL` (the kernel retries a short send on a stream
//!    socket itself, 5.18) and `MSG_NOSIGNAL`, queued in the SQ ring and submitted by the
//!    next `io_uring_enter`, the one that also waits for readiness: a batch of handlers'
//!    replies leaves in one kernel entry. The buffer is owned here until the send's CQE
//!    (its completion is reported as [`State::SENT`] on the registration), so it outlives
//!    any close of the descriptor. One send per descriptor is in flight, which keeps a
//!    connection's bytes in order (two SQEs on one socket may be retried out of order).
//!    Like a poll, an armed send holds the file: `delete` cancels it
//!    (`IORING_OP_ASYNC_CANCEL`, resubmitted on `-EALREADY`) and waits for its CQE, so a
//!    revoked and closed socket is closed. `set` leaves it be: a change of interest does
//!    not abort what the connection is sending. [`crate::Builder::uring_sends`]`(false)` turns
//!    sends off (the application then sends itself), for measuring what they are worth.
//!
//! l. Receives ([`crate::Interest::RECEIVE`]): for a registration that asks, and whose interest
//!    is reading alone, the ring receives the data too. Instead of a poll, the descriptor gets
//!    a multishot `IORING_OP_RECV` (6.0) that takes its buffers from a ring of provided buffers
//!    (`IORING_REGISTER_PBUF_RING`, 5.19; [`RECV_BUFS`] of [`RECV_BUF`] bytes consumed
//!    incrementally, `IOU_PBUF_RING_INC`, 6.12, else [`RECV_BUFS_WHOLE`] of
//!    [`RECV_BUF_WHOLE`]; made at the queue's first such registration). Each completion's
//!    bytes are copied out at once into the registration's inbox (a run of [`CHUNK`]-byte
//!    buffers, filled in turn, so a growing inbox never moves what it holds) and the buffer is
//!    given back once the kernel is done with it (no `IORING_CQE_F_BUF_MORE`), so no buffer
//!    waits on the application; the completion is reported as `READ` and the application
//!    takes the bytes with [`Uring::take_received`], without a system call and, where it
//!    takes a whole buffer into an empty vector, without a copy (the vector gets the
//!    inbox's buffer, the ring's pool the vector's). End of stream (`res == 0`) and
//!    errors end the receive and are kept for `take_received` too. `-ENOBUFS` (every buffer
//!    taken between two reaps) ends it quietly; it is re-armed like a poll (a): the bytes are
//!    still in the socket. An inbox over [`INBOX_MAX`] stops the receive (an `ASYNC_CANCEL`,
//!    [`THROTTLE`]) until the application takes it, so a peer that sends faster than the
//!    application reads fills the socket buffer and TCP's window, not our memory. A receive
//!    is cancelled with `ASYNC_CANCEL`, as a send, and holds the file as a poll does (b).
//!    With `WRITE` in the interest the descriptor is polled as usual, and what the inbox
//!    still holds is reported as `READ` at once. A revoke drops the inbox; a descriptor
//!    closed without a revoke and its number declared again keeps it (the registration, and
//!    so the token, is the same to us): revoke before closing a receiving descriptor, as
//!    `Queue::close` does. [`crate::Builder::uring_receives`]`(false)` turns receives off.
//!
//! m. Where the kernel has them (6.1), the ring is `IORING_SETUP_SINGLE_ISSUER |
//!    DEFER_TASKRUN` (with `TASKRUN_FLAG`) rather than j's `COOP_TASKRUN`: the kernel queues a
//!    completion's work on the ring, without signalling the task, and runs it all when the
//!    owning thread enters to wait, so one `io_uring_enter` reaps a batch more cheaply
//!    (measured with `crates/hintq-serve/bench/ab.sh`; `Builder::uring_defer(false)`, or
//!    `hintq serve --uring-defer off`, makes the other kind). The
//!    TASKRUN flag is raised for that work too, so a zero-timeout wait still enters for it.
//!    Only one thread may enter such a ring (others get `EEXIST`), while a `Queue` is `Send`:
//!    the ring is built disabled (`R_DISABLED`) and enabled by the first thread that enters
//!    it ([`Uring::claim`], called by every operation before it queues anything). When
//!    another thread enters it later, the queue is taken to be shared, and its registrations
//!    move to a j ring, which any thread may enter, once: the CQEs the old ring posted are
//!    reaped, the old ring is closed (its receive buffers are kept for good, counted by
//!    [`crate::leaked_buffers`]: only the old owner could cancel its receives or unregister
//!    them, and the old ring, alive after its close while its teardown runs or while a child
//!    forked meanwhile holds it, may still receive into them; completions it kept aside for want of room are recovered by a full
//!    scan, d), and each live watch is armed anew, whose first completion reports the current
//!    state. A send in flight cannot move, since only the old owner can learn how much of it
//!    went: that use fails with `ResourceBusy` and changes nothing (a revoke refused so keeps
//!    its registration, to be revoked again on the queue's own thread; a descriptor closed
//!    meanwhile without that stays open in the old ring's poll, b), so a queue is best moved,
//!    if at all, between its sends. A new ring that cannot be made leaves the queue on the
//!    old one. `hintq-patterns` makes each thread's queue on that thread.
//!    [`crate::Builder::uring_defer`]`(false)` builds j's ring from the start.
//!
//! n. Coalescing, asked for with [`crate::Builder::coalesce`] (off by default). Where the
//!    kernel has a minimum wait (6.12, `IORING_FEAT_MIN_TIMEOUT`), a wait that blocks asks
//!    for [`COALESCE_WANT`] completions with the window as the minimum wait: the kernel
//!    returns once that many are in, or, after the window (counted from the call), as soon
//!    as there is one. A thread that slept longer than the window for its first event so
//!    returns with it at once, as without coalescing; one whose events come faster sleeps
//!    through the window and takes them as one batch. Under load the thread so sleeps and
//!    wakes fewer times for the same work, and an event waits at most the window longer.
//!    With `DEFER_TASKRUN` the kernel does not even wake the thread for each completion's
//!    work while fewer than asked for are queued (its lazy wake-up). The kernel waits out
//!    a minimum wait even past the call's timeout, so the window is cut to the timeout.
//!    Only the event wait coalesces: the loops that wait for a cancel's completion ask for
//!    one. Measured (`crates/hintq-serve/bench/coalesce.sh`): with 50 clients, 11-13% less
//!    CPU per request for a median latency 1.7 times as long; with 1 or 10 clients, which
//!    wait on each reply, less throughput and more CPU per request. Hence off by default.
//!
//! `user_data`: a poll carries the queue's token unchanged (see [`crate::token`]). Our own
//! operations set [`BACKEND_BIT`] (bit 31), clear in every token: `POLL_REMOVE`s carry
//! [`REMOVE`], that bit alone, and `ASYNC_CANCEL`s [`CANCEL`]. A send carries its
//! registration's token with the bit set ([`SEND`]); its generation is never 0, so it equals
//! neither `REMOVE` nor `CANCEL`.

use super::fdmap::FdMap;
use super::poller::{Arm, Capabilities, Handoff, Poller, ProbeError, ProbeErrorKind, Ready};
use crate::event::raw_of;
use crate::token::{is_internal, untoken, BACKEND_BIT};
use crate::{sys, Interest, State};
use hintq_sys::BufRing;
use io_uring::{cqueue, opcode, squeue, types, IoUring, Probe};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

/// The kernel's `io_uring_params` (uapi), of which `io_uring::Parameters` is a transparent
/// wrapper: where the SQ ring's indexes and flags lie in its mapping.
#[repr(C)]
struct KernelParams {
    sq_entries: u32,
    cq_entries: u32,
    flags: u32,
    sq_thread_cpu: u32,
    sq_thread_idle: u32,
    features: u32,
    wq_fd: u32,
    resv: [u32; 3],
    sq_off: SqOffsets,
    cq_off: [u32; 10],
}

/// The kernel's `io_sqring_offsets` (uapi).
#[repr(C)]
struct SqOffsets {
    head: u32,
    tail: u32,
    ring_mask: u32,
    ring_entries: u32,
    flags: u32,
    dropped: u32,
    array: u32,
    resv1: u32,
    user_addr: u64,
}

const _: () = assert!(std::mem::size_of::<KernelParams>() == std::mem::size_of::<io_uring::Parameters>());

/// `IORING_SQ_CQ_OVERFLOW | IORING_SQ_TASKRUN`: completions wait in the kernel (quirks c, j).
const SQ_DUE: u32 = 2 | 4;

/// A mapping of our own of a ring's SQ indexes and flags and of its SQ entries (the
/// crate's is not reachable), for the hot paths: the lean wait reads the SQ ring's state in
/// one look, and a revoke's remove and a declaration's poll are written where the kernel
/// reads them, with no copy. The crate's views of the ring read its indexes afresh each
/// time, so the two agree as long as neither is used while the other is (`&mut Uring`).
/// A mapping holds the ring's file: it is unmapped when dropped, with or before its ring.
struct RawSq {
    ring: (*mut libc::c_void, usize),
    sqes: (*mut libc::c_void, usize),
    head: *const AtomicU32,
    tail: *const AtomicU32,
    flags: *const AtomicU32,
    mask: u32,
    entries: u32,
}

// SAFETY: the pointers are into mappings this value owns; the ring they view is `Send` with it.
unsafe impl std::marker::Send for RawSq {}

impl RawSq {
    fn new(ring: &IoUring) -> io::Result<RawSq> {
        // SAFETY: `Parameters` is `repr(transparent)` over the kernel's `io_uring_params`,
        // whose layout `KernelParams` spells out (sizes checked above).
        let k = unsafe { &*(ring.params() as *const io_uring::Parameters).cast::<KernelParams>() };
        let fd = ring.as_raw_fd();
        let map = |offset: libc::off_t, len: usize| {
            // SAFETY: a new shared mapping of the ring's memory; nothing of ours is overlaid.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd,
                    offset,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            Ok((p, len))
        };
        const IORING_OFF_SQ_RING: libc::off_t = 0;
        const IORING_OFF_SQES: libc::off_t = 0x1000_0000;
        let entries = k.sq_entries as usize;
        let ring_map = map(IORING_OFF_SQ_RING, k.sq_off.array as usize + entries * 4)?;
        let sqes = match map(IORING_OFF_SQES, entries * std::mem::size_of::<squeue::Entry>()) {
            Ok(m) => m,
            Err(e) => {
                // SAFETY: mapped just above, used by nothing.
                unsafe { libc::munmap(ring_map.0, ring_map.1) };
                return Err(e);
            }
        };
        // SAFETY: the offsets the kernel gave lie within the ring's mapping.
        let at = |off: u32| unsafe { ring_map.0.cast::<u8>().add(off as usize) };
        Ok(RawSq {
            head: at(k.sq_off.head).cast(),
            tail: at(k.sq_off.tail).cast(),
            flags: at(k.sq_off.flags).cast(),
            // SAFETY: as above; the kernel wrote them at set-up and never changes them.
            mask: unsafe { at(k.sq_off.ring_mask).cast::<u32>().read() },
            // SAFETY: likewise.
            entries: unsafe { at(k.sq_off.ring_entries).cast::<u32>().read() },
            ring: ring_map,
            sqes,
        })
    }

    /// The entries waiting in the SQ ring, and whether completions wait in the kernel
    /// ([`SQ_DUE`]).
    #[inline(always)]
    fn state(&self) -> (u32, bool) {
        // SAFETY: the pointers are into this value's mapping of the ring.
        let (head, tail, flags) = unsafe {
            (
                (*self.head).load(Ordering::Acquire),
                (*self.tail).load(Ordering::Relaxed),
                (*self.flags).load(Ordering::Acquire),
            )
        };
        (tail.wrapping_sub(head), flags & SQ_DUE != 0)
    }

    /// Writes the entry `make` builds into the SQ ring, in place, and returns how many
    /// entries the ring then holds; `None` (nothing written) if it is full.
    ///
    /// # Safety
    /// As for [`Uring::push_entry`]: memory the entry points at stays valid and unmoved
    /// until its CQE is reaped.
    #[inline(always)]
    unsafe fn push(&mut self, make: impl FnOnce() -> squeue::Entry) -> Option<u32> {
        // SAFETY: the pointers are into this value's mappings; the slot at the tail is ours
        // until the tail moves past it (the kernel reads up to the tail only).
        unsafe {
            let head = (*self.head).load(Ordering::Acquire);
            let tail = (*self.tail).load(Ordering::Relaxed);
            if tail.wrapping_sub(head) >= self.entries {
                return None;
            }
            let slot = self.sqes.0.cast::<squeue::Entry>().add((tail & self.mask) as usize);
            slot.write(make());
            (*self.tail).store(tail.wrapping_add(1), Ordering::Release);
            Some(tail.wrapping_add(1).wrapping_sub(head))
        }
    }
}

impl Drop for RawSq {
    fn drop(&mut self) {
        for (p, len) in [self.ring, self.sqes] {
            // SAFETY: mapped by `new`, used by nothing once this value goes.
            unsafe { libc::munmap(p, len) };
        }
    }
}

/// How a ring runs the kernel's work for its completions (quirks j and m).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    /// `SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG`, built disabled (`R_DISABLED`): only
    /// the thread that enables it enters it, and the work runs when that thread waits (m).
    Deferred,
    /// `COOP_TASKRUN | TASKRUN_FLAG`: any thread enters it; no interrupt (j).
    Coop,
    /// Neither: several threads enter the ring (hand-off mode), or the kernel has no flags.
    Plain,
}

/// A ring with `cq` completion entries run as `run` says.
fn ring(cq: u32, run: Run) -> io::Result<IoUring> {
    let mut b = IoUring::builder();
    b.setup_cqsize(cq).setup_clamp();
    match run {
        Run::Deferred => {
            b.setup_single_issuer().setup_defer_taskrun().setup_taskrun_flag().setup_r_disabled()
        }
        Run::Coop => b.setup_coop_taskrun().setup_taskrun_flag(),
        Run::Plain => &mut b,
    };
    // The kernel wants at least as many CQ entries as SQ entries.
    b.build(SQ.min(cq))
}

/// The calling thread's id (`gettid`, once per thread). Not `pthread_self`, which a thread
/// started after another ended often gets again, where the kernel's owner of a ring is the
/// task itself.
fn thread_id() -> libc::pid_t {
    thread_local!(static TID: std::cell::Cell<libc::pid_t> = const { std::cell::Cell::new(0) });
    TID.with(|t| {
        if t.get() == 0 {
            t.set(hintq_sys::gettid());
        }
        t.get()
    })
}

/// The best ring this kernel builds, trying [`Run::Deferred`] (unless `defer` is false:
/// [`crate::Builder::uring_defer`]), then [`Run::Coop`], then [`Run::Plain`]; older kernels
/// refuse the flags with `EINVAL`.
fn best_ring(cq: u32, defer: bool) -> io::Result<(IoUring, Run)> {
    let runs: &[Run] = if defer { &[Run::Deferred, Run::Coop, Run::Plain] } else { &[Run::Coop, Run::Plain] };
    let mut last = io::Error::from_raw_os_error(libc::EINVAL);
    for &run in runs {
        match ring(cq, run) {
            Ok(r) => return Ok((r, run)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The `user_data` of our own `POLL_REMOVE`s (see the module docs).
const REMOVE: u64 = BACKEND_BIT;
/// The `user_data` of our own `ASYNC_CANCEL`s of a send.
const CANCEL: u64 = BACKEND_BIT | 1;
/// The `user_data` of the `ASYNC_CANCEL` that stops a receive whose inbox is full (quirk l);
/// its own completion says nothing we need.
const THROTTLE: u64 = BACKEND_BIT | 2;
/// In [`Watch::events`], above every poll bit: the registration asked for receives (quirk l).
const RECV: u16 = 0x8000;
/// Provided buffers of the receive ring, and their size (quirk l): 512 KiB per queue that
/// receives, consumed incrementally where the kernel can (6.12: a completion takes from the
/// head buffer only the bytes it received, so a 64 KiB buffer serves many small receives
/// and a large body comes in 64 KiB pieces), each given back once the kernel is done with
/// it and its bytes are copied out.
const RECV_BUFS: u16 = 8;
const RECV_BUF: usize = 64 * 1024;
/// Where buffers cannot be consumed incrementally: each completion takes a whole buffer, so
/// small ones, many more of them (as many receives may complete between two reaps).
const RECV_BUFS_WHOLE: u16 = 128;
const RECV_BUF_WHOLE: usize = 4096;
/// The buffer group of the receive ring.
const BGID: u16 = 0;
/// Bytes an inbox holds before its receive is stopped until they are taken (quirk l).
const INBOX_MAX: usize = 64 * 1024;
/// Marks a send's `user_data`: its registration's token with this bit (quirk k).
const SEND: u64 = BACKEND_BIT;
/// Completion-ring size unless the builder sets one; more is handled as overflow (quirk c).
const DEFAULT_CQ: u32 = 4096;
/// Submission-ring size: arms and removes between two enters.
const SQ: u32 = 256;

/// The receive buffer ring of `ring` (quirk l): [`RECV_BUFS`] of [`RECV_BUF`] bytes consumed
/// incrementally, or where the kernel refuses that (before 6.12), [`RECV_BUFS_WHOLE`] of
/// [`RECV_BUF_WHOLE`].
fn recv_buffers(ring: &IoUring) -> io::Result<BufRing> {
    BufRing::incremental(ring, RECV_BUFS, RECV_BUF, BGID)
        .or_else(|_| BufRing::new(ring, RECV_BUFS_WHOLE, RECV_BUF_WHOLE, BGID))
}

/// Whether this kernel runs the backend, and if not why; asked once per process.
pub(crate) fn probe() -> &'static Result<(), ProbeError> {
    static P: OnceLock<Result<(), ProbeError>> = OnceLock::new();
    P.get_or_init(check)
}

fn check() -> Result<(), ProbeError> {
    let mut ring = IoUring::new(2)
        .map_err(|e| ProbeError::new(ProbeErrorKind::Refused, format!("io_uring_setup: {}", refusal(&e))))?;
    if !ring.params().is_feature_ext_arg() {
        return Err(ProbeError::new(
            ProbeErrorKind::Unsupported,
            "kernel lacks IORING_FEAT_EXT_ARG (Linux 5.11)",
        ));
    }
    let mut ops = Probe::new();
    ring.submitter()
        .register_probe(&mut ops)
        .map_err(|e| ProbeError::new(ProbeErrorKind::Failed, format!("IORING_REGISTER_PROBE: {e}")))?;
    for (code, name) in [(opcode::PollAdd::CODE, "POLL_ADD"), (opcode::PollRemove::CODE, "POLL_REMOVE")] {
        if !ops.is_supported(code) {
            return Err(ProbeError::new(
                ProbeErrorKind::Unsupported,
                format!("kernel lacks IORING_OP_{name}"),
            ));
        }
    }
    multishot_works(&mut ring)?;
    let sends = ops.is_supported(opcode::Send::CODE) && ops.is_supported(opcode::AsyncCancel::CODE);
    SENDS.get_or_init(|| sends);
    RECVS.get_or_init(|| ops.is_supported(opcode::AsyncCancel::CODE) && multishot_recv_works());
    Ok(())
}

/// The kernel runs receives through the ring (quirk l): a multishot receive from a ring of
/// provided buffers. Set by the probe; a queue uses them unless its builder said not to
/// ([`crate::Builder::uring_receives`]).
static RECVS: OnceLock<bool> = OnceLock::new();

/// Registers a one-buffer ring, arms a multishot receive on a socket pair, writes a byte and
/// checks that it comes in that buffer with `F_MORE` (quirk l).
fn multishot_recv_works() -> bool {
    let Ok(mut ring) = IoUring::new(4) else { return false };
    let Ok(bufs) = BufRing::new(&ring, 1, 64, BGID) else { return false };
    let Ok((a, b)) = hintq_sys::socketpair() else { return false };
    let mut probe = || {
        let sqe = opcode::RecvMulti::new(types::Fd(a.as_raw_fd()), BGID).build().user_data(1);
        // SAFETY: the receive's memory is the registered buffer ring, which `bufs` keeps alive
        // until it is released from the ring (below, on every path), or for good.
        if unsafe { ring.submission().push(&sqe) }.is_err() {
            return false;
        }
        // SAFETY: one byte from a static buffer.
        if unsafe { libc::send(b.as_raw_fd(), b"x".as_ptr().cast(), 1, libc::MSG_NOSIGNAL) } != 1 {
            return false;
        }
        ring.submit_and_wait(1).is_ok()
            && ring.completion().next().is_some_and(|c| {
                c.result() == 1 && cqueue::more(c.flags()) && cqueue::buffer_select(c.flags()) == Some(0)
            })
    };
    let works = probe();
    if let Err(kept) = bufs.release(&ring, BGID) {
        std::mem::forget(kept);
    }
    works
}

/// The kernel runs sends through the ring (quirk k): it has `IORING_OP_SEND` and
/// `IORING_OP_ASYNC_CANCEL`. Set by the probe; a queue makes them unless its builder said not
/// to ([`crate::Builder::uring_sends`]).
static SENDS: OnceLock<bool> = OnceLock::new();

/// What the probe found about sends ([`SENDS`]); false before it ran.
pub(crate) fn sends() -> bool {
    SENDS.get().copied().unwrap_or(false)
}

/// `io_uring_setup`'s error in words, naming the usual culprits (quirk h).
fn refusal(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => "Operation not permitted (kernel.io_uring_disabled or seccomp)".into(),
        Some(libc::ENOSYS) => "Function not implemented (kernel built without io_uring)".into(),
        _ => e.to_string(),
    }
}

/// Arms a multishot poll for writability on an eventfd, which is always writable, and checks
/// that its first CQE is readiness with `F_MORE` (quirk h).
fn multishot_works(ring: &mut IoUring) -> Result<(), ProbeError> {
    let failed = |why: String| ProbeError::new(ProbeErrorKind::Failed, why);
    let efd = sys::eventfd().map_err(|e| failed(format!("eventfd: {e}")))?;
    let sqe = poll_add(efd.as_raw_fd(), libc::POLLOUT as u32, 0);
    // SAFETY: a POLL_ADD entry points at no memory of ours.
    unsafe { ring.submission().push(&sqe) }.map_err(|_| failed("io_uring: empty SQ ring is full".into()))?;
    ring.submit_and_wait(1).map_err(|e| failed(format!("io_uring_enter: {e}")))?;
    match ring.completion().next() {
        Some(c) if c.result() > 0 && cqueue::more(c.flags()) => Ok(()),
        Some(c) => Err(ProbeError::new(
            ProbeErrorKind::Unsupported,
            format!("kernel lacks multishot POLL_ADD (Linux 5.13): result {}", c.result()),
        )),
        None => Err(failed("io_uring: POLL_ADD on an eventfd did not complete".into())),
    }
}

fn poll_add(fd: RawFd, events: u32, token: u64) -> squeue::Entry {
    opcode::PollAdd::new(types::Fd(fd), events).multi(true).build().user_data(token)
}

/// A CQE's poll mask as a state. The mask fits in 16 bits: `POLLRDHUP` (0x2000) is the
/// highest bit asked for, and `POLLERR`/`POLLHUP` are lower. (The lean path tests for
/// `POLLIN` alone, the most common completion, before calling this.)
fn poll_state(res: i32) -> State {
    sys::state_from_poll(res as u16 as libc::c_short)
}

/// One watched descriptor: 16 bytes (an `Option` of it too), for every descriptor number
/// up to the highest watched.
struct Watch {
    /// The poll's `user_data`.
    token: u64,
    fd: RawFd,
    /// `poll(2)` events asked for, and [`RECV`] if the registration asked for receives.
    events: u16,
    /// The registration wants its poll re-armed when it ends (false while cancelling).
    keep: bool,
    /// A poll for it is queued or armed and its last CQE has not been seen.
    live: bool,
}

impl Watch {
    /// Armed as a multishot receive, not a poll (quirk l): receives asked for, reading alone.
    fn receives(&self) -> bool {
        self.events & RECV != 0 && self.events & libc::POLLOUT as u16 == 0
    }
}

/// What is watched: at most one watch per descriptor, found by descriptor number or by
/// token. A queue token holds its descriptor in its low half, so a watch sits at that index
/// (16 bytes a descriptor, where two hash maps cost about 120 a connection); the few
/// internal watches (flagged [`crate::token::INTERNAL`]: the waker, a group member's set),
/// whose tokens do not name their descriptor, are kept apart.
#[derive(Default)]
struct Watches {
    by_fd: Vec<Option<Watch>>,
    internal: Vec<Watch>,
}

impl Watches {
    fn get(&self, token: u64) -> Option<&Watch> {
        match untoken(token) {
            _ if is_internal(token) => self.internal.iter().find(|w| w.token == token),
            (fd, _) => self.by_fd.get(fd as usize)?.as_ref().filter(|w| w.token == token),
        }
    }

    fn get_mut(&mut self, token: u64) -> Option<&mut Watch> {
        match untoken(token) {
            _ if is_internal(token) => self.internal.iter_mut().find(|w| w.token == token),
            (fd, _) => self.by_fd.get_mut(fd as usize)?.as_mut().filter(|w| w.token == token),
        }
    }

    /// The token watching `fd`.
    fn token_of(&self, fd: RawFd) -> Option<u64> {
        let own = self.by_fd.get(fd as usize).and_then(Option::as_ref).filter(|w| w.fd == fd);
        own.or_else(|| self.internal.iter().find(|w| w.fd == fd)).map(|w| w.token)
    }

    /// Adds a watch; `fd` must have none. The table's room is made at the first insert.
    #[inline(always)]
    fn insert(&mut self, w: Watch) {
        match untoken(w.token) {
            _ if is_internal(w.token) => self.internal.push(w),
            (fd, _) => {
                let i = fd as usize;
                if self.by_fd.len() <= i {
                    self.grow(i);
                }
                self.by_fd[i] = Some(w);
            }
        }
    }

    /// Makes room in `by_fd` up to index `i`.
    #[inline(never)]
    fn grow(&mut self, i: usize) {
        if self.by_fd.capacity() == 0 {
            self.by_fd.reserve(crate::sys::fd_table_reserve().max(i + 1));
        }
        self.by_fd.resize_with(i + 1, || None);
    }

    fn remove(&mut self, token: u64) {
        match untoken(token) {
            _ if is_internal(token) => self.internal.retain(|w| w.token != token),
            (fd, _) => drop(self.by_fd.get_mut(fd as usize).and_then(|s| s.take_if(|w| w.token == token))),
        }
    }

    /// Drops the entries past the highest number watched and gives back the pages of the
    /// room past them (the room stays reserved).
    fn trim(&mut self) {
        let used = self.by_fd.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
        hintq_sys::truncate_release(&mut self.by_fd, used);
    }

    /// Every watch (when the ring is dropped, not per event).
    fn iter(&self) -> impl Iterator<Item = &Watch> {
        self.by_fd.iter().flatten().chain(self.internal.iter())
    }

    /// Every watch (when the ring is replaced, not per event).
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut Watch> {
        self.by_fd.iter_mut().flatten().chain(self.internal.iter_mut())
    }
}

const _: () = assert!(std::mem::size_of::<Option<Watch>>() == 16);

/// The bookkeeping, apart from the ring so that reaping can update it while the completion
/// ring is borrowed.
#[derive(Default)]
struct Table {
    watches: Watches,
    /// Reports reaped and not handed out yet.
    pending: Vec<Ready>,
    /// Tokens whose poll ended and is to be re-armed.
    ended: Vec<u64>,
    /// The result of our last `POLL_REMOVE`, once its CQE came.
    removed: Option<i32>,
    /// Sends by descriptor: in flight, or failed and not taken yet (quirk k).
    sends: FdMap<Send>,
    /// Cleared buffers of completed sends and taken inboxes, for [`Uring::send_buffer`].
    pool: SendPool,
    /// The result of our last `ASYNC_CANCEL`, once its CQE came.
    cancelled: Option<i32>,
    /// What receives brought and was not taken yet, by descriptor (quirk l).
    inbox: FdMap<Inbox>,
    /// The provided buffers of receives, made at the first registration that receives.
    bufs: Option<BufRing>,
    /// Receives over [`INBOX_MAX`] to stop (quirk l).
    throttle: Vec<u64>,
    /// Something may wait here for the queue's usual path: a report in `pending`, a re-arm
    /// in `ended`, a stop in `throttle`, or completions lost ([`Uring::lost`]). Raised by
    /// whatever may add one (every completion taken into the table raises it), lowered only
    /// where all of them are looked at ([`Uring::recheck`]), so that [`Uring::quiet`], on
    /// every lean wait, tests one flag instead of four.
    due: bool,
}

/// The per-descriptor maps of [`Table`] give back their room once empty with more than this
/// many entries' worth (see [`Table::shrink_idle`]).
const IDLE_SLOTS: usize = 1024;

impl Table {
    /// Gives back the room of the per-descriptor maps: each grows to the most connections
    /// with bytes received or a send in flight at once, and 16,000 at once left about 1 MB
    /// behind after they closed. Called before blocking, where an empty map after a burst of
    /// more than [`IDLE_SLOTS`] is rare enough that growing again costs nothing per request;
    /// their indexes are trimmed with the watches ([`Poller::trim`]).
    fn shrink_idle(&mut self) {
        if self.inbox.is_empty() {
            self.inbox.shrink(IDLE_SLOTS);
        }
        if self.sends.is_empty() {
            self.sends.shrink(IDLE_SLOTS);
        }
    }
}

/// What the ring received for one registration and the application has not taken (quirk l).
#[derive(Default)]
struct Inbox {
    /// The registration's token.
    token: u64,
    /// The bytes in order, each buffer full but the last, so that appending never moves
    /// bytes; a large receive's buffers hold [`CHUNK`] bytes, so that a take of a whole one
    /// can hand the buffer over (see [`SendPool::chunk`]).
    chunks: VecDeque<Vec<u8>>,
    /// The bytes in `chunks` together.
    len: usize,
    /// The peer ended its stream.
    eof: bool,
    /// The receive failed with this `-errno`.
    err: i32,
    /// The receive was stopped because `data` is over [`INBOX_MAX`].
    throttled: bool,
}

impl Inbox {
    /// Something to report readable for.
    fn holds(&self) -> bool {
        self.len > 0 || self.eof || self.err != 0
    }

    /// Appends `bytes` after what it holds: into the last buffer while it has room, then into
    /// buffers from `pool` ([`SendPool::chunk`]).
    fn append(&mut self, mut bytes: &[u8], pool: &mut SendPool) {
        self.len += bytes.len();
        while !bytes.is_empty() {
            let last = match self.chunks.back_mut() {
                Some(c) if c.len() < c.capacity() => c,
                _ => {
                    self.chunks.push_back(pool.chunk(bytes.len()));
                    self.chunks.back_mut().expect("just pushed")
                }
            };
            let k = (last.capacity() - last.len()).min(bytes.len());
            last.extend_from_slice(&bytes[..k]);
            bytes = &bytes[k..];
        }
    }

    /// Moves up to `max` bytes (at least one; some held) from the front to the end of `buf`;
    /// returns how many. A full [`CHUNK`]-byte buffer taken whole into an empty `buf`, or any
    /// buffer into a `buf` with no room of its own, is not copied: `buf` gets the inbox's
    /// buffer and `pool` the one `buf` had. Others are copied, so that a caller that keeps
    /// small buffers (a request's) keeps them small. Emptied buffers go to `pool`.
    fn take(&mut self, buf: &mut Vec<u8>, max: usize, pool: &mut SendPool) -> usize {
        let mut taken = 0;
        while taken < max {
            let Some(front) = self.chunks.front_mut() else { break };
            let want = max - taken;
            if front.len() > want {
                buf.extend_from_slice(&front[..want]);
                front.drain(..want);
                taken += want;
                break;
            }
            let mut c = self.chunks.pop_front().expect("looked at");
            taken += c.len();
            if buf.is_empty() && (c.len() == CHUNK || buf.capacity() == 0) {
                std::mem::swap(buf, &mut c);
            } else {
                buf.extend_from_slice(&c);
            }
            pool.put(c);
        }
        self.len -= taken;
        taken
    }

    /// The report for what it holds.
    fn state(&self) -> State {
        State::READ
            | if self.eof { State::HUP } else { State::empty() }
            | if self.err != 0 { State::ERR } else { State::empty() }
    }
}

/// One send the ring makes for a registration (quirk k).
struct Send {
    /// The registration's token (without [`SEND`]).
    token: u64,
    buf: Vec<u8>,
    /// Report the completion even if the send succeeds ([`Uring::sending`] was asked).
    notify: bool,
    /// `-errno`, or the bytes sent when fewer than asked, once the CQE came: a failed send,
    /// kept until taken.
    failed: Option<i32>,
}

/// Cleared buffers kept for later sends and receives' inboxes, so that replies cost no
/// allocation: up to [`POOL`] of at most [`POOL_BUF_MAX`] bytes (a reply, a relay buffer, an
/// inbox), and larger ones (a large file's reply) up to [`LARGE_MAX`] each and
/// [`LARGE_BYTES`] in all, which [`SendPool::take_for`] hands out by size. Per queue, not
/// per connection: an idle connection holds none of them.
#[derive(Default)]
struct SendPool {
    small: Vec<Vec<u8>>,
    large: Vec<Vec<u8>>,
    /// The capacity of `large`'s buffers together.
    large_bytes: usize,
    /// Buffers over [`POOL_BUF_MAX`] that [`SendPool::take_for`] had to allocate or grow (for
    /// large sends).
    made: u64,
    /// The emptied lists of taken inboxes (up to [`POOL`]), so that an inbox made for each
    /// request's bytes costs no allocation: an inbox is removed once taken empty.
    lists: Vec<VecDeque<Vec<u8>>>,
}

/// Small buffers kept, and the largest one that counts as small.
const POOL: usize = 256;
const POOL_BUF_MAX: usize = 64 * 1024;
/// The capacity of each buffer of an inbox: the largest small one, so that a relay whose own
/// buffers are of this size (the proxy's) can take them and send them on as they are.
const CHUNK: usize = POOL_BUF_MAX;
/// A receive of at most this many bytes into an inbox with no room gets a buffer of its
/// size, a larger one a [`CHUNK`].
const SMALL_RECEIVE: usize = 4096;
/// The largest buffer kept, and what the larger ones kept hold in all (per queue).
const LARGE_MAX: usize = 4 << 20;
const LARGE_BYTES: usize = 16 << 20;

impl SendPool {
    /// Keeps `buf` if there is room for it, cleared.
    fn put(&mut self, mut buf: Vec<u8>) {
        let cap = buf.capacity();
        if cap == 0 {
            return;
        }
        buf.clear();
        if cap <= POOL_BUF_MAX {
            if self.small.len() < POOL {
                self.small.push(buf);
            }
        } else if cap <= LARGE_MAX && self.large_bytes + cap <= LARGE_BYTES {
            self.large_bytes += cap;
            self.large.push(buf);
        }
    }

    /// Keeps the list of an inbox taken empty.
    fn put_list(&mut self, mut list: VecDeque<Vec<u8>>) {
        debug_assert!(list.is_empty());
        list.clear();
        if list.capacity() > 0 && self.lists.len() < POOL {
            self.lists.push(list);
        }
    }

    /// An empty list for an inbox, kept or new.
    fn take_list(&mut self) -> VecDeque<Vec<u8>> {
        self.lists.pop().unwrap_or_default()
    }

    /// A small buffer, kept or new (empty, allocated on first use).
    fn take(&mut self) -> Vec<u8> {
        self.small.pop().unwrap_or_default()
    }

    /// An empty buffer for an inbox that is to take `want` more bytes: a kept one, grown only
    /// if it holds less than `want` (and [`CHUNK`]): to exactly `want` for a small receive (a
    /// request: growing every kept buffer to [`CHUNK`] reallocated one per request and cost
    /// `hintq serve` a third more CPU per 16 KiB response), else to [`CHUNK`].
    fn chunk(&mut self, want: usize) -> Vec<u8> {
        let mut b = self.take();
        if b.capacity() < want.min(CHUNK) {
            b.reserve_exact(if want > SMALL_RECEIVE { CHUNK } else { want });
        }
        b
    }

    /// A buffer that holds `len` bytes without growing: for more than [`POOL_BUF_MAX`], the
    /// smallest large one kept that fits, else the largest grown (or a new one), counted.
    fn take_for(&mut self, len: usize) -> Vec<u8> {
        if len <= POOL_BUF_MAX {
            let mut b = self.take();
            b.reserve(len);
            return b;
        }
        let fit = (0..self.large.len())
            .filter(|&i| self.large[i].capacity() >= len)
            .min_by_key(|&i| self.large[i].capacity())
            .or_else(|| (0..self.large.len()).max_by_key(|&i| self.large[i].capacity()));
        let mut b = match fit {
            Some(i) => {
                let b = self.large.swap_remove(i);
                self.large_bytes -= b.capacity();
                b
            }
            None => Vec::new(),
        };
        if b.capacity() < len {
            self.made += 1;
            b.reserve_exact(len);
        }
        b
    }
}

impl Table {
    /// Takes one CQE into account (quirks a, b, e). The results of our own removes and
    /// cancels, one in every revoke, are taken in place; the others in
    /// [`Table::complete_other`].
    #[inline]
    fn complete(&mut self, user_data: u64, res: i32, flags: u32) {
        match user_data {
            REMOVE => self.removed = Some(res),
            CANCEL => self.cancelled = Some(res),
            THROTTLE => {}
            _ => self.complete_other(user_data, res, flags),
        }
    }

    /// [`Table::complete`] of a send's, a receive's or a poll's CQE.
    #[inline(never)]
    fn complete_other(&mut self, user_data: u64, res: i32, flags: u32) {
        self.due = true;
        if user_data & SEND != 0 {
            let token = user_data & !SEND;
            let fd = untoken(token).0;
            let Some(s) = self.sends.get_mut(fd).filter(|s| s.token == token && s.failed.is_none()) else {
                return;
            };
            if res >= 0 && res as usize == s.buf.len() {
                // Sent whole: the buffer goes back to the pool, and the application hears
                // of it only if it asked.
                let s = self.sends.remove(fd).expect("found above");
                if s.notify {
                    self.pending.push(Ready { token, state: State::SENT });
                }
                self.recycle(s.buf);
            } else {
                // Failed, or short (with `MSG_WAITALL` only when the peer went away).
                s.failed = Some(if res == 0 { -libc::EPIPE } else { res });
                // (A positive `failed` is the count of a short send.)
                self.pending.push(Ready { token, state: State::SENT | State::ERR });
            }
            return;
        }
        // A poll or receive we already forgot, or a receive whose watch became a poll: a
        // straggler of a cancelled registration (a cancel cut short by lost completions,
        // quirk d). Its buffer goes back, or the ring would run dry for everyone.
        // One lookup of the watch for the common completions (a poll's); a receive's is
        // looked up again by `received`.
        let w = self.watches.get_mut(user_data);
        if w.as_ref().is_some_and(|w| w.receives()) {
            self.received(user_data, res, flags);
            return;
        }
        if let (Some(bid), Some(bufs)) = (cqueue::buffer_select(flags), self.bufs.as_mut()) {
            let bytes = bufs.received(bid, res.max(0) as usize);
            // The registration still watches the descriptor, now with a poll: the kernel took
            // these bytes from its socket, so they are the stream's next ones and go to the
            // inbox, where the application takes them before reading the socket itself
            // (`receiving` says so while the inbox holds them). A revoked one's are dropped
            // with its inbox.
            if res > 0 && w.is_some() {
                let inbox = Table::inbox_of(&mut self.inbox, &mut self.pool, untoken(user_data).0, user_data);
                inbox.append(bytes, &mut self.pool);
                self.pending.push(Ready { token: user_data, state: State::READ });
            }
            if !hintq_sys::buf_more(flags) {
                bufs.give(bid);
            }
            return;
        }
        let Some(w) = w else { return };
        let ended = !cqueue::more(flags);
        let failed = res < 0 && res != -libc::ECANCELED;
        if ended {
            w.live = false;
            if w.keep && !failed {
                self.ended.push(user_data);
            }
        }
        if res > 0 {
            self.pending.push(Ready { token: user_data, state: poll_state(res) });
        } else if failed {
            self.pending.push(Ready { token: user_data, state: State::ERR });
        }
    }

    /// The inbox of `fd` for registration `token`, its list from `pool`; one left by another
    /// registration of the number is emptied first.
    fn inbox_of<'a>(
        inboxes: &'a mut FdMap<Inbox>,
        pool: &mut SendPool,
        fd: RawFd,
        token: u64,
    ) -> &'a mut Inbox {
        let inbox = inboxes.get_or_default(fd);
        if inbox.token != token {
            let chunks = match inbox.chunks.capacity() {
                0 => pool.take_list(),
                _ => {
                    let mut list = std::mem::take(&mut inbox.chunks);
                    list.drain(..).for_each(|c| pool.put(c));
                    list
                }
            };
            *inbox = Inbox { token, chunks, ..Inbox::default() };
        }
        inbox
    }

    /// One completion of `token`'s multishot receive (quirk l).
    fn received(&mut self, token: u64, res: i32, flags: u32) {
        let fd = untoken(token).0;
        let more = cqueue::more(flags);
        if let Some(bid) = cqueue::buffer_select(flags) {
            if res > 0 {
                let inbox = Table::inbox_of(&mut self.inbox, &mut self.pool, fd, token);
                let bufs = self.bufs.as_mut().expect("a receive completed: its buffer ring exists");
                inbox.append(bufs.received(bid, res as usize), &mut self.pool);
                if inbox.len >= INBOX_MAX {
                    inbox.throttled = true;
                    // Asked again at every completion past the bound while the receive goes
                    // on: a cancel that met it running (`-EALREADY`) did not take.
                    if more {
                        self.throttle.push(token);
                    }
                }
            }
            // Kept while the kernel still fills it (incremental consumption).
            if !hintq_sys::buf_more(flags) {
                self.bufs.as_mut().expect("a receive completed: its buffer ring exists").give(bid);
            }
        }
        let inbox_throttled = self.inbox.get(fd).is_some_and(|i| i.token == token && i.throttled);
        let mut state = State::READ;
        if res == 0 || (res < 0 && res != -libc::ENOBUFS && res != -libc::ECANCELED) {
            let inbox = Table::inbox_of(&mut self.inbox, &mut self.pool, fd, token);
            if res == 0 {
                inbox.eof = true;
                state |= State::HUP;
            } else {
                inbox.err = res;
                state |= State::ERR;
            }
        }
        let w = self.watches.get_mut(token).expect("found by the caller");
        if !more {
            w.live = false;
            // Re-armed after -ENOBUFS, or a kernel end (a); not after the stream's end, an
            // error, or a stop for a full inbox.
            let again = res > 0 || res == -libc::ENOBUFS || (res == -libc::ECANCELED && w.keep);
            if w.keep && again && !inbox_throttled {
                self.ended.push(token);
            }
        }
        if res >= 0 || state.contains(State::ERR) {
            self.pending.push(Ready { token, state });
        }
    }

    /// Keeps `buf` for a later send or receive, if the pool has room for it.
    fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.put(buf);
    }

    fn is_live(&self, token: u64) -> bool {
        self.watches.get(token).is_some_and(|w| w.live)
    }
}

pub(crate) struct Uring {
    ring: IoUring,
    table: Table,
    /// CQEs were dropped (quirk d); see [`Uring::take_lost`].
    lost: bool,
    /// The CQ ring's overflow (drop) counter when last read.
    dropped: u32,
    /// The completion ring's size asked for.
    cq: u32,
    /// How the ring runs completions (quirks j and m).
    run: Run,
    /// The thread (its id, never 0) that enabled a [`Run::Deferred`] ring, the only one the
    /// kernel lets in; 0 until one does (quirk m).
    owner: libc::pid_t,
    /// The receive buffers of a ring replaced by [`Uring::rebuild`] that the kernel would not
    /// unregister (only a one-thread ring's owner thread may), each with whether that ring's
    /// receives were cancelled and reaped before it closed. One not so proven quiet is leaked
    /// when this value drops: the old ring lives on after its close while its teardown runs,
    /// or while another descriptor of it is open (a child forked meanwhile), and its receive
    /// may still write into these buffers.
    retired: Vec<(BufRing, bool)>,
    /// Coalescing's window in µs (quirk n); 0: off, or a kernel without a minimum wait.
    window_us: u32,
    /// This queue's sends go through the ring (quirk k): the kernel can, and the builder
    /// did not turn them off.
    sends: bool,
    /// This queue's receives go through the ring where asked (quirk l), likewise.
    recvs: bool,
    /// The flags of a revoke's remove: `IOSQE_CQE_SKIP_SUCCESS` where the kernel has it
    /// (5.17), so that a remove that takes posts no CQE ([`Uring::forget_token`]).
    skip: squeue::Flags,
    /// Our own view of the SQ ring (the lean wait's, a revoke's and a declaration's).
    sq: RawSq,
}

/// The completions a coalescing wait asks for (quirk n): more than a window brings on this
/// machine, so that under load a wait takes the whole window.
const COALESCE_WANT: usize = 64;

/// Buffers left allocated, for the life of the process, because the kernel might still
/// read or write them: sends and receives that a dropped ring could not cancel (a
/// [`Run::Deferred`] ring dropped on a thread other than its owner, or completions lost,
/// quirk d), and cancelled sends whose completion was lost. See [`crate::leaked_buffers`].
static LEAKED: AtomicU64 = AtomicU64::new(0);

/// The count behind [`crate::leaked_buffers`].
pub(crate) fn leaked() -> u64 {
    LEAKED.load(Ordering::Relaxed)
}

/// Leaks `v` and counts it in [`LEAKED`]: the kernel may still use its memory.
fn leak<T>(v: T) {
    std::mem::forget(v);
    LEAKED.fetch_add(1, Ordering::Relaxed);
}

/// How long dropping a ring waits for its cancelled sends and receives to complete.
const DROP_PATIENCE: Duration = Duration::from_secs(1);

impl Drop for Uring {
    /// A ring's teardown runs asynchronously after its descriptor is closed (and not at all
    /// while another descriptor of it is open, as a child forked meanwhile holds one): a send
    /// still armed then would be carried out from a buffer already freed and reused, sending
    /// bytes the program never sent; a receive would write into freed buffers. So before the
    /// ring closes, every send and receive in flight is cancelled and its completion reaped
    /// ([`Uring::quiesce`], bounded by [`DROP_PATIENCE`]); what cannot be (a one-thread ring
    /// dropped on another thread, or completions lost) keeps its buffers allocated for good
    /// and counted ([`crate::leaked_buffers`]). The buffer group is unregistered too, after
    /// which no receive can take its buffers.
    fn drop(&mut self) {
        for (bufs, quiet) in self.retired.drain(..) {
            if !quiet {
                leak(bufs);
            }
        }
        let quiet = self.quiesce(DROP_PATIENCE);
        if let Some(bufs) = self.table.bufs.take() {
            if !quiet.receives {
                // A receive still running may hold one of its buffers, unregistered or not.
                leak(bufs);
            } else if let Err(kept) = bufs.release(&self.ring, BGID) {
                leak(kept);
            }
        }
        if !quiet.sends {
            let fds: Vec<RawFd> = self.table.sends.values().map(|s| untoken(s.token).0).collect();
            for fd in fds {
                if let Some(s) = self.table.sends.remove(fd) {
                    if s.failed.is_none() {
                        leak(s.buf);
                    }
                }
            }
        }
    }
}

/// What [`Uring::quiesce`] left in flight: true where nothing is.
struct Quiet {
    sends: bool,
    receives: bool,
}

/// The ring's settings a [`crate::Builder`] passes down.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// A one-thread ring with deferred work where the kernel has it (quirk m).
    pub defer: bool,
    /// Sends through the ring where the kernel has them (quirk k).
    pub sends: bool,
    /// Receives through the ring where asked and the kernel has them (quirk l).
    pub receives: bool,
    /// The completion ring's size (`None`: [`DEFAULT_CQ`]).
    pub cq: Option<u32>,
    /// The coalescing window (`None`: off); see [`crate::Builder::coalesce`].
    pub coalesce: Option<Duration>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { defer: true, sends: true, receives: true, cq: None, coalesce: None }
    }
}

impl Uring {
    /// A ring whose completion queue has `config.cq` entries (rounded up to a power of two
    /// by the kernel), [`DEFAULT_CQ`] when `None`. `config.coalesce`: the window of quirk n,
    /// kept only where the kernel has a minimum wait.
    pub(crate) fn new(config: &Settings) -> io::Result<Uring> {
        let (cq_entries, coalesce) = (config.cq, config.coalesce);
        let cq = cq_entries.unwrap_or(DEFAULT_CQ).max(1);
        let (ring, run) = best_ring(cq, config.defer)?;
        let window_us = match coalesce {
            Some(w) if ring.params().is_feature_min_timeout() => w.as_micros().min(u32::MAX.into()) as u32,
            _ => 0,
        };
        let skip = match ring.params().is_feature_skip_cqe_on_success() {
            true => squeue::Flags::SKIP_SUCCESS,
            false => squeue::Flags::empty(),
        };
        let sq = RawSq::new(&ring)?;
        Ok(Uring {
            sq,
            ring,
            table: Table::default(),
            lost: false,
            dropped: 0,
            cq,
            run,
            owner: 0,
            retired: Vec::new(),
            window_us,
            sends: sends() && config.sends,
            recvs: RECVS.get().copied().unwrap_or(false) && config.receives,
            skip,
        })
    }

    /// Makes the calling thread the one that enters a [`Run::Deferred`] ring (quirk m): the
    /// first caller enables it; a caller on another thread later moves the registrations to
    /// a [`Run::Coop`] ring, which any thread may enter ([`Uring::rebuild`]). Called before
    /// anything is queued by every operation that may enter the kernel. Nothing to do for
    /// other rings.
    fn claim(&mut self) -> io::Result<()> {
        if self.run != Run::Deferred {
            return Ok(());
        }
        let me = thread_id();
        match self.owner {
            0 => {
                self.ring.submitter().register_enable_rings()?;
                self.owner = me;
                Ok(())
            }
            t if t == me => Ok(()),
            _ => self.rebuild(Run::Coop),
        }
    }

    /// This thread may enter the ring without [`Uring::claim`] doing anything: a ring any
    /// thread enters, or a [`Run::Deferred`] one it owns.
    #[inline(always)]
    fn claimed(&self) -> bool {
        self.run != Run::Deferred || self.owner == thread_id()
    }

    /// Replaces the ring with a new one run as `run` (not [`Run::Deferred`]) and arms every
    /// live registration on it again (quirk m). Refused with `ResourceBusy`, changing
    /// nothing, while a send is in flight: its bytes may be partly sent, and only the old
    /// ring's owner could learn how many.
    fn rebuild(&mut self, run: Run) -> io::Result<()> {
        debug_assert!(run != Run::Deferred, "a new ring is one any thread may enter");
        if self.table.sends.values().any(|s| s.failed.is_none()) {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                "an io_uring queue with a send in flight was used from another thread; move a \
                 queue between threads only once its sends completed (Builder::uring_defer(false) \
                 lets any thread enter it)",
            ));
        }
        let mut tokens = Vec::new();
        let mut receives = false;
        for w in self.table.watches.iter_mut() {
            // Live, or ended and due again (a): what the old ring watched. Not one whose poll
            // failed (its error was reported) or whose receive stopped (b, l).
            if w.keep && (w.live || self.table.ended.contains(&w.token)) {
                tokens.push(w.token);
            }
            // Buffers for every receiving watch kept, armed now or not: one whose receive was
            // stopped (its inbox full) is armed again once its bytes are taken, and without
            // buffers that receive would end at once with ENOBUFS, again at every wait.
            receives |= w.keep && w.receives();
        }
        // The new ring and its buffers first: if either cannot be made (EMFILE, ENOMEM), the
        // queue stays as it was, on the old ring.
        let new = ring(self.cq, run)?;
        let new_sq = RawSq::new(&new)?;
        let bufs = if receives { Some(recv_buffers(&new)?) } else { None };
        // The old ring's receives are cancelled and reaped before it closes, as a drop does
        // (a closed ring lives on while its teardown runs, or while a forked child holds a
        // descriptor of it, and a receive of it would write into its buffers); the watches
        // it had are re-armed on the new ring below. Only the owner thread may enter a
        // one-thread ring, and the thread here is another: there nothing can be cancelled.
        let keep: Vec<bool> = self.table.watches.iter_mut().map(|w| w.keep).collect();
        let quiet = self.quiesce(DROP_PATIENCE).receives;
        for (w, k) in self.table.watches.iter_mut().zip(keep) {
            w.keep = k;
        }
        self.table.ended.clear();
        for w in self.table.watches.iter_mut() {
            w.live = false;
        }
        // What the old ring already posted is taken into account; the work it still holds
        // for its owner is dropped with it (a dying ring's pending work does no I/O), and the
        // fresh arms report the current state. Completions the kernel kept aside for want of
        // room (c) could only be flushed by the old owner: a full scan recovers them (d).
        self.reap();
        if self.ring.submission().cq_overflow() {
            self.mark_lost();
        }
        // The old receive buffers are unregistered from the old ring before it goes; a
        // one-thread ring lets only its owner thread do that, so there they are kept
        // (`retired`), and leaked in the end unless its receives were quiet.
        let old_ring = std::mem::replace(&mut self.ring, new);
        self.sq = new_sq;
        if let Some(old) = std::mem::replace(&mut self.table.bufs, bufs) {
            if !quiet {
                self.retired.push((old, false));
            } else if let Err(kept) = old.release(&old_ring, BGID) {
                self.retired.push((kept, true));
            }
        }
        drop(old_ring);
        self.run = run;
        self.owner = 0;
        self.dropped = 0;
        // The loops of `cancel` and `cancel_send` wait for nothing more from the old ring.
        self.table.removed = Some(0);
        self.table.cancelled = Some(0);
        // A watch the new ring cannot take yet is re-armed by the next wait (a).
        for token in tokens {
            if self.arm(token).is_err() {
                self.table.ended.push(token);
                self.table.due = true;
            }
        }
        Ok(())
    }

    /// Cancels every send and receive in flight and reaps their completions, for up to
    /// `patience` (see [`Drop for Uring`](Uring)); polls are left to the ring's teardown, as
    /// they point at no memory of ours. Says what is still in flight after that: all of it
    /// when only another thread may enter the ring ([`Run::Deferred`], quirk m).
    fn quiesce(&mut self, patience: Duration) -> Quiet {
        let busy = |t: &Table| -> (Vec<u64>, Vec<u64>) {
            let sends = t.sends.values().filter(|s| s.failed.is_none()).map(|s| s.token | SEND).collect();
            let recvs = t.watches.iter().filter(|w| w.live && w.receives()).map(|w| w.token).collect();
            (sends, recvs)
        };
        // Nothing is re-armed once cancelled.
        for w in self.table.watches.iter_mut() {
            w.keep = false;
        }
        let may_enter = self.run != Run::Deferred || (self.owner == 0 || self.owner == thread_id());
        let end = std::time::Instant::now() + patience;
        loop {
            let (sends, recvs) = busy(&self.table);
            let left = end.saturating_duration_since(std::time::Instant::now());
            if (sends.is_empty() && recvs.is_empty()) || !may_enter || left.is_zero() {
                return Quiet { sends: sends.is_empty(), receives: recvs.is_empty() };
            }
            // Asked again each round: a cancel that met its request running (`-EALREADY`)
            // did not take. The cancels' own completions say nothing we need.
            for token in sends.into_iter().chain(recvs) {
                if self.push(&opcode::AsyncCancel::new(token).build().user_data(THROTTLE)).is_err() {
                    break;
                }
            }
            // An error (EINTR) is a round like any other, within the patience.
            let _ = self.enter(Some(left.min(Duration::from_millis(50))));
            self.reap();
        }
    }

    /// Takes every CQE in the ring, without a system call.
    fn reap(&mut self) {
        self.reap_with(|_, _, _| false);
    }

    /// [`Uring::reap`], offering each CQE to `own` first: one it answers true for is its own
    /// and not taken into the table.
    #[inline(always)]
    fn reap_with(&mut self, mut own: impl FnMut(u64, i32, u32) -> bool) {
        let mut cq = self.ring.completion();
        if cq.overflow() != self.dropped {
            self.dropped = cq.overflow();
            self.lost = true;
            self.table.due = true;
        }
        for cqe in &mut cq {
            let (ud, res, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            if !own(ud, res, flags) {
                self.table.complete(ud, res, flags);
            }
        }
    }

    /// One `io_uring_enter`: submits what is queued, flushes overflowed CQEs into the ring
    /// (quirk c) and, unless `timeout` is zero, waits up to it (`None`: forever) for a CQE.
    fn enter(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.enter_for(1, timeout)
    }

    /// [`Uring::enter`] waiting for `want` CQEs, or for one once [`Uring::window_us`] has
    /// passed (quirk n).
    fn enter_for(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<()> {
        // Callers claim before queueing what a new ring would not re-arm; this one is for
        // the entries that it would (arms), queued by `set` on a ring not claimed yet.
        self.claim()?;
        self.enter_claimed(want, timeout)
    }

    /// [`Uring::enter_for`] by a caller that claimed the ring.
    #[inline]
    fn enter_claimed(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<()> {
        let r = match timeout {
            // Without a timeout or a minimum wait, the plain call (a third of the crate's
            // instructions): submits what is queued, runs the ring's pending work and, for
            // no timeout, waits for `want` completions.
            Some(t) if t.is_zero() => self.enter_plain(0).map(drop),
            None if want <= 1 || self.window_us == 0 => self.enter_plain(want as u32).map(drop),
            _ => self.enter_timed(want, timeout).map(drop),
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) => self.enter_failed(e),
        }
    }

    /// Completions were lost (quirk d): the queue is told ([`Uring::take_lost`]).
    fn mark_lost(&mut self) {
        self.lost = true;
        self.table.due = true;
    }

    /// An enter's error: `ETIME` and `EBUSY` are none (quirks f, c), `EBADR` marks completions
    /// lost (quirk d); the others are the caller's.
    #[cold]
    #[inline(never)]
    fn enter_failed(&mut self, e: io::Error) -> io::Result<()> {
        match e.raw_os_error() {
            Some(libc::ETIME | libc::EBUSY) => Ok(()),
            Some(libc::EBADR) => {
                self.mark_lost();
                Ok(())
            }
            _ => Err(e),
        }
    }

    /// One `io_uring_enter` with the extended argument: a timeout (`None`: none) and, when
    /// `want` is more than one, coalescing's minimum wait (quirk n).
    fn enter_timed(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<usize> {
        let ts = timeout.map(types::Timespec::from);
        // The kernel waits out a minimum wait even past the timeout: it is kept within it.
        let cap = timeout.map_or(u32::MAX, |t| t.as_micros().min(u32::MAX.into()) as u32);
        let args = types::SubmitArgs::new().min_wait_usec(if want > 1 { self.window_us.min(cap) } else { 0 });
        let submitter = self.ring.submitter();
        match &ts {
            Some(ts) => submitter.submit_with_args(want, &args.timespec(ts)),
            None => submitter.submit_with_args(want, &args),
        }
    }

    /// One `io_uring_enter` without a timeout argument: submits the SQ ring's entries, runs
    /// the ring's pending work (`GETEVENTS`, which also flushes overflowed completions, quirk
    /// c) and waits for `min_complete` completions (0: returns at once). Returns how many
    /// entries it left in the SQ ring (the kernel stops at an entry it cannot take).
    #[inline(always)]
    fn enter_plain(&mut self, min_complete: u32) -> io::Result<u32> {
        let to_submit = self.ring.submission().len() as u32;
        const GETEVENTS: u32 = 1;
        hintq_sys::io_uring_enter(self.ring.as_raw_fd(), to_submit, min_complete, GETEVENTS)
            .map(|n| to_submit.saturating_sub(n))
    }

    /// Whether an enter is due even with CQEs in hand: entries wait in the SQ ring, or
    /// overflowed CQEs wait in the kernel (quirk c).
    #[inline(always)]
    fn must_enter(&mut self) -> bool {
        let sq = self.ring.submission();
        !sq.is_empty() || sq.cq_overflow() || sq.taskrun()
    }

    /// Queues one entry, submitting to make room when the SQ ring is full.
    ///
    /// # Safety
    /// Memory the entry points at stays valid and unmoved until its CQE is reaped.
    #[inline(never)]
    unsafe fn push_entry(&mut self, sqe: &squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the caller's promise.
            if unsafe { self.ring.submission().push(sqe) }.is_ok() {
                return Ok(());
            }
            self.enter(Some(Duration::ZERO))?;
            self.reap();
        }
    }

    /// [`Uring::push_entry`], inline where the SQ ring has room.
    ///
    /// # Safety
    /// As for `push_entry`.
    #[inline(always)]
    unsafe fn queue(&mut self, sqe: &squeue::Entry) -> io::Result<()> {
        // SAFETY: the caller's promise.
        if unsafe { self.ring.submission().push(sqe) }.is_ok() {
            return Ok(());
        }
        // SAFETY: as above.
        unsafe { self.push_entry(sqe) }
    }

    /// Queues an entry that points at no memory of ours (`POLL_ADD`, `POLL_REMOVE`,
    /// `ASYNC_CANCEL`).
    #[inline(always)]
    fn push(&mut self, sqe: &squeue::Entry) -> io::Result<()> {
        // SAFETY: the entry points at no memory.
        unsafe { self.queue(sqe) }
    }

    /// Queues the multishot poll (or receive, quirk l) of `token` unless it is live or no
    /// longer wanted, or its inbox is full or at the stream's end.
    fn arm(&mut self, token: u64) -> io::Result<()> {
        let Some(w) = self.table.watches.get(token).filter(|w| w.keep && !w.live) else { return Ok(()) };
        let Some(sqe) = self.arm_entry(w) else { return Ok(()) };
        // SAFETY: see `arm_entry`.
        unsafe { self.queue(&sqe) }?;
        if let Some(w) = self.table.watches.get_mut(token) {
            w.live = true;
        }
        Ok(())
    }

    /// Queues the receive of the watch `token`, just inserted as live (quirk l), unless its
    /// inbox is full or at the stream's end: then the watch is not live.
    fn arm_receive(&mut self, token: u64) -> io::Result<()> {
        let Some(w) = self.table.watches.get(token) else { return Ok(()) };
        match self.arm_entry(w) {
            // SAFETY: see `arm_entry`.
            Some(sqe) => unsafe { self.queue(&sqe) },
            None => {
                if let Some(w) = self.table.watches.get_mut(token) {
                    w.live = false;
                }
                Ok(())
            }
        }
    }

    /// The entry that arms `w`: its multishot poll, or its receive (quirk l), `None` for a
    /// receive whose inbox is full or at the stream's end. A poll points at no memory; a
    /// receive at the buffer ring, which lives as long as the ring (`Table::bufs`).
    #[inline(always)]
    fn arm_entry(&self, w: &Watch) -> Option<squeue::Entry> {
        if !w.receives() {
            return Some(poll_add(w.fd, u32::from(w.events & !RECV), w.token));
        }
        let stopped = |i: &Inbox| i.token == w.token && (i.throttled || i.eof || i.err != 0);
        if self.table.inbox.get(w.fd).is_some_and(stopped) {
            return None;
        }
        Some(opcode::RecvMulti::new(types::Fd(w.fd), BGID).build().user_data(w.token))
    }

    /// Stops the receives whose inbox filled up (quirk l); each is armed again by
    /// `take_received` once the application took the bytes.
    fn stop_throttled(&mut self) -> io::Result<()> {
        while let Some(token) = self.table.throttle.pop() {
            self.push(&opcode::AsyncCancel::new(token).build().user_data(THROTTLE))?;
        }
        Ok(())
    }

    /// Makes the receive buffer ring if there is none yet; false if the kernel refused it.
    fn receive_buffers(&mut self) -> bool {
        if self.table.bufs.is_none() && self.recvs {
            self.table.bufs = recv_buffers(&self.ring).ok();
        }
        self.table.bufs.is_some()
    }

    /// Takes in the CQEs in the ring, if any, and queues what is due: the re-arms of polls
    /// that ended (quirk a) and the stops of receives over their bound (quirk l). Each part
    /// only when it has work: a wait makes two of these calls, and with `DEFER_TASKRUN` the
    /// first finds the ring empty (completions are posted in the kernel entry between them).
    /// An empty ring is still reaped when the kernel's drop counter moved (quirk d): a CQE
    /// can be dropped while the ring looks empty to us (one that could not join the
    /// overflow list, or one dropped while the last reap read the ring), and only the
    /// counter tells.
    fn settle(&mut self) -> io::Result<()> {
        let due = {
            let cq = self.ring.completion();
            !cq.is_empty() || cq.overflow() != self.dropped
        };
        if due {
            self.reap();
        }
        if !self.table.ended.is_empty() {
            self.rearm_ended()?;
        }
        if !self.table.throttle.is_empty() {
            self.stop_throttled()?;
        }
        Ok(())
    }

    /// Re-arms the polls that ended (quirk a).
    fn rearm_ended(&mut self) -> io::Result<()> {
        while let Some(token) = self.table.ended.pop() {
            if let Err(e) = self.arm(token) {
                self.table.ended.push(token);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Cancels the send in flight on `fd`, if any, waits for its CQE and forgets it with
    /// whatever completed and was not taken back (quirk k).
    fn cancel_send(&mut self, fd: RawFd) -> io::Result<()> {
        let in_flight = |t: &Table| t.sends.get(fd).is_some_and(|s| s.failed.is_none());
        if in_flight(&self.table) {
            self.claim()?;
        }
        let lost_before = std::mem::take(&mut self.lost);
        self.table.cancelled = Some(-libc::EALREADY);
        while in_flight(&self.table) && !self.lost {
            if self.table.cancelled == Some(-libc::EALREADY) {
                // Asked for the first time, or the send was running: ask (again).
                let token = self.table.sends.get(fd).expect("in flight").token;
                self.table.cancelled = None;
                self.push(&opcode::AsyncCancel::new(token | SEND).build().user_data(CANCEL))?;
            }
            // Claimed above (a claim within this call changes nothing).
            match self.enter_claimed(1, None) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => r?,
            }
            self.reap();
        }
        self.lost |= lost_before;
        if let Some(s) = self.table.sends.remove(fd) {
            if s.failed.is_some() {
                self.table.recycle(s.buf);
            }
            // Otherwise the CQE was lost (quirk d) and the kernel may still read the buffer:
            // it is leaked, never freed under the kernel.
            else {
                leak(s.buf);
            }
        }
        Ok(())
    }

    /// Cancels the watch on `fd`, if any, and forgets it. Inline: a declaration of a number
    /// not watched (most) pays the look-up alone, and a watch whose poll already ended its
    /// removal alone, not a call.
    #[inline(always)]
    fn forget(&mut self, fd: RawFd) -> io::Result<()> {
        let watches = &mut self.table.watches;
        match watches.by_fd.get_mut(fd as usize) {
            Some(slot) if slot.as_ref().is_some_and(|w| !w.live) => {
                *slot = None;
                Ok(())
            }
            Some(Some(_)) => self.forget_live_at(fd),
            // An internal watch (a re-arm of the waker's or a group's set) is found by its
            // descriptor among the few internal ones.
            _ if !watches.internal.is_empty() => match watches.token_of(fd) {
                Some(token) => self.forget_token(token),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// [`Uring::forget_live`], out of line (for `set`, where a number still watched is rare).
    #[inline(never)]
    fn forget_live_at(&mut self, fd: RawFd) -> io::Result<()> {
        self.forget_live(fd)
    }

    /// [`Uring::forget`] of the watch at `fd` (in `by_fd`), whose poll is live: it is removed
    /// as [`Uring::forget_token`] says, the watch found once.
    #[inline(always)]
    fn forget_live(&mut self, fd: RawFd) -> io::Result<()> {
        let i = fd as usize;
        let Some(w) = self.table.watches.by_fd.get_mut(i).and_then(Option::as_mut) else { return Ok(()) };
        w.keep = false;
        let (token, receive) = (w.token, w.receives());
        if self.claimed() || self.claim_to_remove(token)? {
            self.remove_live(token, receive)?;
        }
        if let Some(slot) = self.table.watches.by_fd.get_mut(i) {
            *slot = None;
        }
        Ok(())
    }

    /// [`Uring::forget`] of the watch `token`: its poll (or receive) is removed (quirk b).
    ///
    /// The remove goes in with an `io_uring_enter` that waits for nothing, which also runs
    /// the ring's pending work: on a ring whose work runs on this thread (a
    /// [`Run::Deferred`] ring, or any ring where this thread armed the poll) the poll's last
    /// CQE is in the ring when that call returns, and the revoke is over without blocking.
    /// Otherwise the wait goes on (blocking) until that CQE came, asking again while the
    /// remove meets the poll running (quirk i), or until completions were lost. Where the
    /// kernel has `IOSQE_CQE_SKIP_SUCCESS` (5.17) the remove posts a CQE only when it fails
    /// (`-EALREADY`, `-ENOENT`), and the poll's last CQE, taken here, is the revoke's only one.
    #[inline(never)]
    fn forget_token(&mut self, token: u64) -> io::Result<()> {
        let Some(w) = self.table.watches.get_mut(token) else { return Ok(()) };
        w.keep = false;
        if w.live {
            let receive = w.receives();
            if self.claimed() || self.claim_to_remove(token)? {
                self.remove_live(token, receive)?;
            }
        }
        self.table.watches.remove(token);
        Ok(())
    }

    /// [`Uring::claim`] before a remove is queued for `token`, whose watch is no longer kept:
    /// whether its poll is still to be removed. A move to another ring (quirk m) leaves the
    /// watch unarmed there: nothing left to remove. A move refused (a send in flight)
    /// changes nothing, this watch included.
    #[cold]
    fn claim_to_remove(&mut self, token: u64) -> io::Result<bool> {
        if let Err(e) = self.claim() {
            if let Some(w) = self.table.watches.get_mut(token) {
                w.keep = true;
            }
            return Err(e);
        }
        Ok(self.table.is_live(token))
    }

    /// Removes the live poll (or receive) `token` and waits for it to end, as
    /// [`Uring::forget_token`] says. The ring is claimed.
    #[inline(always)]
    fn remove_live(&mut self, token: u64, receive: bool) -> io::Result<()> {
        // A receive (quirk l) is cancelled like a send; a poll is removed.
        let skip = self.skip;
        let remove = move || {
            let sqe = match receive {
                true => opcode::AsyncCancel::new(token).build(),
                false => opcode::PollRemove::new(token).build(),
            };
            sqe.user_data(REMOVE).flags(skip)
        };
        self.table.removed = None;
        let (queued, entered) = self.push_and_enter(remove);
        if !queued {
            return entered;
        }
        match entered {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => r?,
        }
        // The poll's last CQE (the remove's doing) is taken here: the watch goes.
        let mut ended = false;
        self.reap_with(|ud, res, flags| {
            let last = ud == token && flags & F_MORE == 0 && res == -libc::ECANCELED;
            ended |= last;
            last
        });
        if ended && (self.table.removed.is_some() || self.skip.contains(squeue::Flags::SKIP_SUCCESS)) {
            return Ok(());
        }
        let lost_before = std::mem::take(&mut self.lost);
        let r = self.await_removed(token, ended, &remove());
        self.lost |= lost_before;
        r
    }

    /// [`Uring::remove_live`] when its first enter did not end the poll `token` (or, on a
    /// kernel without `IOSQE_CQE_SKIP_SUCCESS`, did not bring the remove's CQE): waits
    /// (blocking) for what is missing, asking again with `remove` while the remove meets the
    /// poll running (quirk i), or until completions were lost.
    #[cold]
    #[inline(never)]
    fn await_removed(&mut self, token: u64, ended: bool, remove: &squeue::Entry) -> io::Result<()> {
        loop {
            // `ended`: its last CQE was taken by `remove_live`, the watch not told.
            let live = !ended && self.table.is_live(token);
            let removed = self.table.removed;
            if self.lost || (!live && (removed.is_some() || self.skip.contains(squeue::Flags::SKIP_SUCCESS)))
            {
                return Ok(());
            }
            // Quirk i: the poll was running; the remove did not take. Ask again.
            let entered = if live && removed == Some(-libc::EALREADY) {
                self.table.removed = None;
                self.push(remove)?;
                self.enter_plain(0).map(drop).or_else(|e| self.enter_failed(e))
            } else {
                self.enter_claimed(1, None)
            };
            match entered {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => r?,
            }
            self.reap();
        }
    }

    /// Queues the entry `make` builds (pointing at no memory of ours) and submits what the
    /// SQ ring holds with one enter that waits for nothing but runs the ring's work (a
    /// claimed ring), one look at the SQ ring for both. Whether it was queued, and the
    /// enter's outcome (or the queueing's error).
    #[inline(always)]
    fn push_and_enter(&mut self, make: impl Fn() -> squeue::Entry) -> (bool, io::Result<()>) {
        // SAFETY: the entry points at no memory.
        let queued = match unsafe { self.sq.push(&make) } {
            Some(n) => n,
            None => match self.push(&make()) {
                Ok(()) => self.sq.state().0,
                Err(e) => return (false, Err(e)),
            },
        };
        const GETEVENTS: u32 = 1;
        let entered = hintq_sys::io_uring_enter(self.ring.as_raw_fd(), queued, 0, GETEVENTS);
        (true, entered.map(drop).or_else(|e| self.enter_failed(e)))
    }
}

/// The flags of a completion of the common shape: a multishot poll's readiness that goes on.
const F_MORE: u32 = 2;

impl Uring {
    /// True when nothing waits in the table for the queue's usual path: no reports reaped
    /// and not handed out, no poll to re-arm, no receive to stop, no completion lost. The
    /// queue's lean path then waits here ([`Uring::lean_enter`],
    /// [`Uring::lean_reap`]). One flag ([`Table::due`]) says it.
    #[inline(always)]
    pub(crate) fn quiet(&self) -> bool {
        // A coalescing window, fixed for the ring's life, keeps the queue off the lean path
        // from the start (`Queue`'s `unusual::BACKEND`).
        debug_assert!(self.table.due || !self.holds_any(), "Table::due not raised");
        !self.table.due
    }

    /// What [`Table::due`] stands for, looked at in full.
    fn holds_any(&self) -> bool {
        self.lost
            || !self.table.pending.is_empty()
            || !self.table.ended.is_empty()
            || !self.table.throttle.is_empty()
    }

    /// Lowers [`Table::due`] if nothing waits any longer.
    #[inline]
    fn recheck(&mut self) {
        self.table.due = self.holds_any();
    }

    /// The lean path's kernel entry, after one view of the SQ ring: made only when
    /// completions are due from it (entries to submit, overflowed completions, deferred
    /// work) or when the call waits (no completion in the ring and a timeout that is not
    /// zero). The ring is not claimed here: a [`Run::Deferred`] ring that this thread does
    /// not own refuses the call before taking anything (`EEXIST`, or `EBADFD` while no thread
    /// has enabled it), and `None` sends the call to the usual path, whose [`Uring::claim`]
    /// decides.
    ///
    /// `Some(rest)` otherwise, `rest` false when the SQ ring is known to be empty after the
    /// call (nothing was queued, or the enter took all of it), so that
    /// [`Uring::submit`]'s look at the ring after the completions are taken can be skipped.
    #[inline(always)]
    pub(crate) fn lean_enter(&mut self, timeout: Option<Duration>) -> io::Result<Option<bool>> {
        let (queued, due) = self.sq.state();
        // The timeout first: a call that does not wait reads no view of the completion ring here.
        let block = timeout != Some(Duration::ZERO) && self.ring.completion().is_empty();
        if !block && queued == 0 && !due {
            return Ok(Some(false));
        }
        const GETEVENTS: u32 = 1;
        let fd = self.ring.as_raw_fd();
        let entered = match (block, timeout) {
            // Submits what is queued and runs the ring's pending work, waiting for nothing.
            (false, _) => hintq_sys::io_uring_enter(fd, queued, 0, GETEVENTS).map(|n| n < queued),
            (true, None) => {
                self.table.shrink_idle();
                hintq_sys::io_uring_enter(fd, queued, 1, GETEVENTS).map(|_| true)
            }
            (true, Some(_)) => {
                self.table.shrink_idle();
                self.enter_timed(1, timeout).map(|_| true)
            }
        };
        match entered {
            Ok(rest) => Ok(Some(rest)),
            Err(e)
                if self.run == Run::Deferred
                    && matches!(e.raw_os_error(), Some(libc::EEXIST | libc::EBADFD)) =>
            {
                Ok(None)
            }
            Err(e) => self.enter_failed(e).map(|()| Some(true)),
        }
    }

    /// Takes the completions in the ring in one view of it: those of the common shape (a
    /// multishot poll's readiness, `F_MORE` alone and a result that maps to a state) go to
    /// `take`, with their state in an [`crate::Event`]'s bits ([`raw_of`], never 0), which
    /// consumes one by answering true (it answers false for a token not of a
    /// live registration: the queue's own watches', a stale one); the first it refuses, any
    /// of another shape and all that follow are taken into the table as [`Uring::reap`]
    /// would. `take`'s third argument, and the second of the answer, say whether the view
    /// holds more than one completion: only then may a registration come twice in it. The
    /// first of the answer: `take` consumed them all.
    #[inline(always)]
    pub(crate) fn lean_reap(&mut self, mut take: impl FnMut(u64, u32, bool) -> bool) -> (bool, bool) {
        let mut cq = self.ring.completion();
        if cq.overflow() != self.dropped {
            self.dropped = cq.overflow();
            self.lost = true;
            self.table.due = true;
            for cqe in &mut cq {
                self.table.complete(cqe.user_data(), cqe.result(), cqe.flags());
            }
            return (false, false);
        }
        let many = cq.len() > 1;
        while let Some(cqe) = cq.next() {
            let (ud, res, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            if flags == F_MORE && res > 0 {
                // `POLLIN` alone first: one compare, and bits known (`EPOLLIN`, `READ`'s)
                // with no conversion.
                let bits = match res == i32::from(libc::POLLIN) {
                    true => libc::EPOLLIN as u32,
                    false => raw_of(poll_state(res)),
                };
                if bits != 0 && take(ud, bits, many) {
                    continue;
                }
            }
            self.table.complete(ud, res, flags);
            for cqe in &mut cq {
                self.table.complete(cqe.user_data(), cqe.result(), cqe.flags());
            }
            return (false, many);
        }
        (true, many)
    }

    /// After a lean wait that did not take everything: what the table holds goes to the
    /// queue's list (`out`), with the re-arms and stops it calls for queued.
    pub(crate) fn lean_rest(&mut self, out: &mut Vec<Ready>) -> io::Result<()> {
        self.settle()?;
        out.append(&mut self.table.pending);
        self.recheck();
        Ok(())
    }
}

impl Uring {
    /// [`Poller::set`]'s look at the inbox of `fd`, registered as `token`: what the ring
    /// received for an earlier registration of the number is not this one's, and bytes it
    /// took before this change of interest, which no poll will report, are reported now.
    fn inbox_at_set(&mut self, fd: RawFd, token: u64) {
        if self.table.inbox.get(fd).is_some_and(|i| i.token != token) {
            self.table.inbox.remove(fd);
        }
        if let Some(i) = self.table.inbox.get(fd).filter(|i| i.holds()) {
            self.table.pending.push(Ready { token, state: i.state() });
            self.table.due = true;
        }
    }
}

impl Poller for Uring {
    fn trim(&mut self) {
        self.table.watches.trim();
        self.table.inbox.trim();
        self.table.sends.trim();
    }

    /// Arms at once (quirk g). `fresh` is not needed: the table knows what is watched (b).
    fn set(&mut self, fd: RawFd, token: u64, interest: Interest, _arm: Arm) -> io::Result<()> {
        // Before anything changes: a move to another ring (quirk m) may be refused.
        if !self.claimed() {
            self.claim()?;
        }
        self.forget(fd)?;
        let mut events = sys::poll_events(interest) as u16;
        if interest.contains(Interest::RECEIVE | Interest::READ) && self.receive_buffers() {
            events |= RECV;
        }
        if !self.table.inbox.is_empty() {
            self.inbox_at_set(fd, token);
        }
        let w = Watch { token, fd, events, keep: true, live: true };
        let receives = w.receives();
        self.table.watches.insert(w);
        let (queued, entered) = match receives {
            false => self.push_and_enter(|| poll_add(fd, u32::from(events & !RECV), token)),
            // Claimed above.
            true => match self.arm_receive(token) {
                Ok(()) => (true, self.enter_plain(0).map(drop).or_else(|e| self.enter_failed(e))),
                Err(e) => (false, Err(e)),
            },
        };
        if !queued {
            if let Some(w) = self.table.watches.get_mut(token) {
                w.live = false;
            }
        }
        entered
    }

    fn delete(&mut self, fd: RawFd, _token: u64) -> io::Result<()> {
        // `forget`, with the remove of a live poll inline: the common revoke.
        match self.table.watches.by_fd.get(fd as usize) {
            Some(Some(w)) if w.live => self.forget_live(fd)?,
            _ => self.forget(fd)?,
        }
        if !self.table.inbox.is_empty() {
            self.table.inbox.remove(fd);
        }
        match self.table.sends.is_empty() {
            true => Ok(()),
            false => self.cancel_send(fd),
        }
    }

    /// Hands out what was reaped earlier and what is in the ring; enters the kernel only to
    /// submit, to flush overflow, or to block when there is nothing to hand out.
    fn wait(&mut self, out: &mut Vec<Ready>, _max: usize, timeout: Option<Duration>) -> io::Result<()> {
        self.claim()?;
        self.settle()?;
        let block = self.table.pending.is_empty() && timeout != Some(Duration::ZERO);
        if block {
            self.table.shrink_idle();
        }
        if block || self.must_enter() {
            // Quirk n: under load, wait for a batch, a window at most.
            let want = if self.window_us > 0 { COALESCE_WANT } else { 1 };
            self.enter_for(want, if block { timeout } else { Some(Duration::ZERO) })?;
            self.settle()?;
        }
        out.append(&mut self.table.pending);
        self.recheck();
        Ok(())
    }

    fn handoff(&mut self) -> Option<Handoff> {
        // Several threads will enter the ring (quirks j, m): a ring of its own, run plainly,
        // with the registrations moved over (kept as it is if a send is in flight, which a
        // queue does not have before its threads start).
        if self.run != Run::Plain {
            // A deferred ring that could not be replaced lets only its owner in: no hand-off
            // (a send in flight, which a queue has not before its threads start, or no ring).
            if self.rebuild(Run::Plain).is_err() && self.run == Run::Deferred {
                return None;
            }
        }
        // Multishot completions after the first are edge-triggered (quirk list above), and a
        // terminated poll is re-issued by `wait` itself: nothing to re-activate.
        Some(Handoff::Edge)
    }

    fn capabilities(&self) -> Capabilities {
        let coalescing = (self.window_us > 0).then(|| Duration::from_micros(self.window_us.into()));
        Capabilities { coalescing, ..Capabilities::PLAIN }
    }
}

/// The ring's own I/O, which no other backend has: sends, receives into the ring's
/// buffers, the submission of what is queued, completions lost.
impl Uring {
    pub(crate) fn take_received(
        &mut self,
        fd: RawFd,
        token: u64,
        buf: &mut Vec<u8>,
        max: usize,
    ) -> Option<io::Result<usize>> {
        let receiving = self.table.watches.get(token).is_some_and(Watch::receives);
        let Some(inbox) = self.table.inbox.get_mut(fd).filter(|i| i.token == token) else {
            return receiving.then(|| Err(io::Error::from(io::ErrorKind::WouldBlock)));
        };
        if inbox.len == 0 {
            return Some(match inbox.err {
                0 if inbox.eof => Ok(0),
                0 => Err(io::Error::from(io::ErrorKind::WouldBlock)),
                e => Err(io::Error::from_raw_os_error(-e)),
            });
        }
        if max == 0 {
            return Some(Err(io::Error::from(io::ErrorKind::WouldBlock)));
        }
        let n = inbox.take(buf, max, &mut self.table.pool);
        let rearm = std::mem::take(&mut inbox.throttled) && inbox.len < INBOX_MAX;
        if inbox.len >= INBOX_MAX {
            inbox.throttled = true;
        }
        if inbox.holds() {
            // Bytes left over (`max`), or the stream's end or an error behind the bytes, whose
            // report was merged with theirs: report it again, or a caller that stops at what
            // it took never sees it.
            self.table.pending.push(Ready { token, state: inbox.state() });
            self.table.due = true;
        } else if let Some(taken) = self.table.inbox.remove(fd) {
            self.table.pool.put_list(taken.chunks);
        }
        if rearm && (self.claim().is_err() || self.arm(token).is_err()) {
            // The SQ ring could not take it now, or the queue moved between threads and its
            // ring could not follow yet: the next wait re-arms it.
            self.table.ended.push(token);
            self.table.due = true;
        }
        Some(Ok(n))
    }

    /// Receives asked for (polled for now if `WRITE` is in the interest), or bytes held: a
    /// revoke would drop something.
    pub(crate) fn receiving(&self, fd: RawFd, token: u64) -> bool {
        self.table.watches.get(token).is_some_and(|w| w.events & RECV != 0) || self.holds(fd)
    }

    pub(crate) fn holds(&self, fd: RawFd) -> bool {
        self.table.inbox.get(fd).is_some_and(Inbox::holds)
    }

    pub(crate) fn sends(&self) -> bool {
        self.sends
    }

    pub(crate) fn send(&mut self, fd: RawFd, token: u64, buf: Vec<u8>) -> Result<(), (io::Error, Vec<u8>)> {
        if !self.sends() {
            return Err((io::Error::from(io::ErrorKind::Unsupported), buf));
        }
        if let Err(e) = self.claim() {
            return Err((e, buf));
        }
        match self.table.sends.get(fd) {
            // A failed send of this registration: the failure is the answer.
            Some(s) if s.token == token => {
                let failed = s.failed;
                if let Some(res) = failed {
                    let s = self.table.sends.remove(fd).expect("found above");
                    self.table.recycle(s.buf);
                    let e = if res < 0 {
                        io::Error::from_raw_os_error(-res)
                    } else {
                        io::Error::from(io::ErrorKind::WriteZero)
                    };
                    return Err((e, buf));
                }
                return Err((io::Error::from(io::ErrorKind::WouldBlock), buf));
            }
            // A failed send of a registration since replaced: forgotten.
            Some(s) if s.failed.is_some() => {
                let s = self.table.sends.remove(fd).expect("found above");
                self.table.recycle(s.buf);
            }
            Some(_) => return Err((io::Error::from(io::ErrorKind::WouldBlock), buf)),
            None => {}
        }
        let len = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let sqe = opcode::Send::new(types::Fd(fd), buf.as_ptr(), len)
            .flags(libc::MSG_WAITALL | libc::MSG_NOSIGNAL)
            .build()
            .user_data(token | SEND);
        // The buffer's heap block does not move when the Vec does: it is owned by the table
        // until the CQE is reaped or the send cancelled (`cancel_send`).
        self.table.sends.insert(fd, Send { token, buf, notify: false, failed: None });
        // SAFETY: see above.
        if let Err(e) = unsafe { self.push_entry(&sqe) } {
            let s = self.table.sends.remove(fd).expect("inserted above");
            return Err((e, s.buf));
        }
        Ok(())
    }

    pub(crate) fn sending(&mut self, fd: RawFd, token: u64) -> bool {
        match self.table.sends.get_mut(fd) {
            Some(s) if s.token == token && s.failed.is_none() => {
                s.notify = true;
                true
            }
            _ => false,
        }
    }

    pub(crate) fn send_error(&mut self, fd: RawFd, token: u64) -> Option<io::Error> {
        let res = self.table.sends.get(fd).filter(|s| s.token == token)?.failed?;
        let s = self.table.sends.remove(fd).expect("found above");
        let len = s.buf.len();
        self.table.recycle(s.buf);
        Some(if res < 0 {
            io::Error::from_raw_os_error(-res)
        } else {
            io::Error::new(io::ErrorKind::WriteZero, format!("sent {res} of {len} bytes"))
        })
    }

    pub(crate) fn send_buffer(&mut self) -> Vec<u8> {
        self.table.pool.take()
    }

    pub(crate) fn send_buffer_for(&mut self, len: usize) -> Vec<u8> {
        self.table.pool.take_for(len)
    }

    /// Buffers over [`POOL_BUF_MAX`] allocated or grown for sends, and those kept now with
    /// their bytes.
    pub(crate) fn large_send_buffers(&self) -> (u64, usize, usize) {
        let p = &self.table.pool;
        (p.made, p.large.len(), p.large_bytes)
    }

    /// Submits what is queued (sends, re-arms); nothing to do, and no call, when the
    /// submission ring is empty, as it is after most waits.
    #[inline]
    pub(crate) fn submit(&mut self) -> io::Result<()> {
        if self.ring.submission().is_empty() {
            return Ok(());
        }
        self.submit_queued()
    }

    #[inline(never)]
    fn submit_queued(&mut self) -> io::Result<()> {
        self.claim()?;
        self.enter(Some(Duration::ZERO))?;
        self.reap();
        Ok(())
    }

    pub(crate) fn take_lost(&mut self) -> bool {
        let lost = std::mem::take(&mut self.lost);
        self.recheck();
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8).collect()
    }

    /// Received pieces of any size come out in order; a whole buffer taken into an empty
    /// vector is that buffer (no copy), and the vector's own goes to the pool for the next.
    #[test]
    fn an_inbox_hands_whole_buffers_over_and_keeps_the_bytes_in_order() {
        let (mut pool, mut inbox) = (SendPool::default(), Inbox::default());
        let bytes = pattern(70_000 + 1000 + CHUNK + 5);
        let mut at = 0;
        for n in [70_000, 1000, CHUNK, 5] {
            inbox.append(&bytes[at..at + n], &mut pool);
            at += n;
        }
        assert_eq!(inbox.len, bytes.len());
        assert!(inbox.chunks.iter().all(|c| c.capacity() == CHUNK), "buffers of CHUNK bytes");
        let full = inbox.chunks.iter().rev().skip(1).all(|c| c.len() == CHUNK);
        assert!(full, "every buffer full but the last: appending never left a gap");

        let first = inbox.chunks[0].as_ptr();
        let mut out = Vec::with_capacity(16);
        assert_eq!(inbox.take(&mut out, CHUNK, &mut pool), CHUNK);
        assert_eq!(out.as_ptr(), first, "a whole buffer into an empty vector is moved");
        assert_eq!(pool.small.len(), 1, "the vector's own buffer kept for the next");
        // Into a vector that holds bytes: copied, across the buffers' border.
        assert_eq!(inbox.take(&mut out, CHUNK + 7, &mut pool), CHUNK + 7);
        let mut rest = Vec::new();
        assert_eq!(inbox.take(&mut rest, usize::MAX, &mut pool), bytes.len() - 2 * CHUNK - 7);
        assert_eq!(inbox.len, 0);
        assert!(inbox.chunks.is_empty());
        out.extend_from_slice(&rest);
        assert!(out == bytes, "the bytes, in order");
    }

    /// A take smaller than the front buffer leaves the rest for the next take, in order.
    #[test]
    fn a_partial_take_leaves_the_rest_in_order() {
        let (mut pool, mut inbox) = (SendPool::default(), Inbox::default());
        let bytes = pattern(3000);
        inbox.append(&bytes, &mut pool);
        let mut out = Vec::new();
        assert_eq!(inbox.take(&mut out, 1000, &mut pool), 1000);
        assert_eq!(inbox.len, 2000);
        assert_eq!(inbox.take(&mut out, 5000, &mut pool), 2000);
        assert!(out == bytes);
    }

    /// A receive's completion that comes after its watch became a poll (its cancel cut short,
    /// quirk d) still brings the stream's bytes: they wait in the inbox for the application,
    /// in order, and are reported, not given back with the buffer and lost.
    #[test]
    fn a_receive_that_completes_after_its_watch_became_a_poll_keeps_its_bytes() {
        let Ok(()) = probe() else { return };
        let mut ring = Uring::new(&Settings::default()).expect("a ring");
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) }, 0);
        let (ours, peer) = (fds[0], fds[1]);
        let token = crate::token::token(ours, 1);
        ring.set(ours, token, Interest::READ | Interest::RECEIVE, Arm::Fresh).expect("watched");
        if !ring.table.watches.get(token).is_some_and(Watch::receives) {
            return; // no receives on this kernel
        }
        // The receive is armed; now its watch turns into a poll of the same token, as when a
        // change of interest could not wait for the receive's cancel.
        ring.table.watches.get_mut(token).expect("watched").events &= !RECV;
        let sent = pattern(3000);
        // SAFETY: writes from a live buffer of that length.
        assert_eq!(unsafe { libc::write(peer, sent.as_ptr().cast(), sent.len()) }, 3000);
        let mut got = Vec::new();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while got.len() < sent.len() && std::time::Instant::now() < deadline {
            let mut out = Vec::new();
            ring.wait(&mut out, 64, Some(Duration::from_millis(100))).expect("wait");
            if out.iter().any(|r| r.token == token && r.state.contains(State::READ)) {
                while let Some(Ok(1..)) = ring.take_received(ours, token, &mut got, usize::MAX) {}
            }
        }
        let mut left = [0u8; 4096];
        // SAFETY: reads into a live buffer of that length; the socket is blocking, so only
        // after checking that nothing is there would it block: MSG_DONTWAIT.
        let n = unsafe { libc::recv(ours, left.as_mut_ptr().cast(), left.len(), libc::MSG_DONTWAIT) };
        if n > 0 {
            got.extend_from_slice(&left[..n as usize]);
        }
        assert!(got == sent, "{} of {} bytes came through, in order", got.len(), sent.len());
        // The receive is still armed: revoked as one (a poll's remove would not find it).
        ring.table.watches.get_mut(token).expect("watched").events |= RECV;
        ring.delete(ours, token).expect("revoked");
        // SAFETY: both descriptors are ours and closed once.
        unsafe {
            libc::close(ours);
            libc::close(peer);
        }
    }

    /// A part-filled buffer is copied into a caller's empty buffer, which keeps its size: a
    /// server's small request buffers do not become the inbox's large ones.
    #[test]
    fn a_small_receive_is_copied_into_the_callers_own_buffer() {
        let (mut pool, mut inbox) = (SendPool::default(), Inbox::default());
        inbox.append(b"GET / HTTP/1.1\r\n\r\n", &mut pool);
        let mut out = Vec::with_capacity(512);
        let own = out.as_ptr();
        assert_eq!(inbox.take(&mut out, usize::MAX, &mut pool), 18);
        assert_eq!((out.as_ptr(), out.capacity()), (own, 512), "the caller's buffer, not a {CHUNK}-byte one");
        assert_eq!(out, b"GET / HTTP/1.1\r\n\r\n");
    }
}
