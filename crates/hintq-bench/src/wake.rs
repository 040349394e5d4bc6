//! `hintq bench wake-one`: how many threads wake for one readiness of a descriptor that N
//! blocked threads share, for a [`hintq::Group`] with [`hintq::Delivery::One`] on each
//! backend and, in the same run, for the two raw epoll ways of sharing it:
//!
//! * `epoll-shared`: N threads in `epoll_wait` on one epoll set holding the descriptor,
//!   level-triggered (the kernel queues `epoll_wait` waiters exclusively, but a level report
//!   left on the ready list wakes the next waiter, which may find nothing).
//! * `epoll-exclusive`: N threads each in `epoll_wait` on its own set holding the descriptor
//!   with `EPOLLEXCLUSIVE` ("one or more" waiters woken).
//!
//! One round: every thread is inside its wait and asleep (state `S` in
//! `/proc/self/task/<tid>/stat`), the driver writes one byte on a socket pair, and waits
//! until a thread has read it. Counted over the rounds: the threads' voluntary context
//! switches (`voluntary_ctxt_switches` in `/proc/self/task/<tid>/status`, read by the driver
//! while every thread sleeps, before the first round and after the last: a sleep that ended,
//! whether or not the wait returned to user space), and returns from the wait (`Stats::waits`
//! for a group member: calls of the backend's wait; each thread's last return, ended by the
//! stop, taken off). A wake-up
//! that found nothing to read is counted as `empty`. Nothing here is timed but the run's wall
//! time, recorded for reference.

use crate::row::{self, Row};
use crate::sys;
use hintq::{Backend, Delivery, Event, Group, Interest, Waker};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

/// Threads blocked on the shared descriptor, per point.
pub const MEMBERS: [usize; 4] = [1, 2, 4, 8];

/// The goal of issue 11: wake-ups per `One` readiness at 2, 4 and 8 members.
pub const GOAL: f64 = 1.1;

/// How long a round may wait for the threads to block or for the byte to be read.
const PATIENCE: Duration = Duration::from_secs(5);

/// What shares the descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A [`Group`] on this backend, the descriptor declared with [`Delivery::One`].
    Group(Backend),
    /// One level-triggered epoll set, every thread in `epoll_wait` on it.
    EpollShared,
    /// One epoll set per thread, the descriptor added to each with `EPOLLEXCLUSIVE`.
    EpollExclusive,
}

impl Target {
    /// The name in the rows: `group-<backend>`, `epoll-shared`, `epoll-exclusive`.
    pub fn name(self) -> String {
        match self {
            Target::Group(b) => format!("group-{b}"),
            Target::EpollShared => "epoll-shared".into(),
            Target::EpollExclusive => "epoll-exclusive".into(),
        }
    }
}

/// What a run measures.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Repetitions of every point.
    pub reps: u32,
    /// Readinesses per point.
    pub rounds: usize,
    /// What shares the descriptor.
    pub targets: Vec<Target>,
    /// The CPU every member thread is pinned to (the driver runs elsewhere).
    pub member_cpu: usize,
}

/// One measured point, before it becomes the lab's rows ([`Counted::rows`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Counted {
    /// As [`Target::name`].
    pub target: String,
    /// Threads blocked on the descriptor.
    pub members: usize,
    /// Repetition, from 0.
    pub rep: u32,
    /// Readinesses made (bytes written, one per round).
    pub readinesses: u64,
    /// Voluntary context switches of the member threads, their stop wake-ups taken off.
    pub wakeups: u64,
    /// Returns from the wait, likewise.
    pub returns: u64,
    /// Wake-ups whose thread found nothing to read.
    pub empty: u64,
}

impl Counted {
    /// Wake-ups per readiness.
    pub fn woken(&self) -> f64 {
        self.wakeups as f64 / self.readinesses.max(1) as f64
    }

    /// Returns from the wait per readiness.
    pub fn returned(&self) -> f64 {
        self.returns as f64 / self.readinesses.max(1) as f64
    }

    /// The lab's E10 rows: wake-ups, returns from the wait and wake-ups that found nothing
    /// per readiness, against the threads blocked, one series per target.
    pub fn rows(&self) -> [Row; 3] {
        let row = |metric: &str, v: f64| Row {
            rep: self.rep,
            ..Row::ok("E10", &self.target, self.members as f64, metric, v)
        };
        let empty = self.empty as f64 / self.readinesses.max(1) as f64;
        [
            row("wakeups_per_readiness", self.woken()),
            row("returns_per_readiness", self.returned()),
            row("empty_per_readiness", empty),
        ]
    }
}

/// Measures every target at every member count, `plan.reps` times, targets interleaved
/// within a repetition so that a noisy moment spreads over all of them.
///
/// # Errors
/// A failing system call, or a round whose threads never block or whose byte is never read.
pub fn run(plan: &Plan) -> io::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for rep in 0..plan.reps {
        for &members in &MEMBERS {
            for &target in &plan.targets {
                let row = point(plan, target, members, rep)
                    .map_err(|e| io::Error::new(e.kind(), format!("{} x{members}: {e}", target.name())))?;
                for r in row.rows() {
                    println!("{}", row::line(&r));
                    rows.push(r);
                }
            }
        }
    }
    Ok(rows)
}

/// What the member threads and the driver share.
#[derive(Default)]
struct Shared {
    /// Threads inside their wait (or about to enter it).
    inside: AtomicUsize,
    /// Bytes read.
    consumed: AtomicUsize,
    empty: AtomicU64,
    stop: AtomicBool,
}

/// How the driver ends a member's last wait.
enum Stop {
    Waker(Waker),
    EventFd(Arc<OwnedFd>),
}

impl Stop {
    fn signal(&self) -> io::Result<()> {
        match self {
            Stop::Waker(w) => w.wake(),
            Stop::EventFd(fd) => sys::write_eventfd(fd.as_raw_fd()),
        }
    }
}

/// Data of the watched descriptor and of the stop eventfd in the raw epoll sets.
const DATA_FD: u64 = 1;
const DATA_STOP: u64 = 2;

fn point(plan: &Plan, target: Target, members: usize, rep: u32) -> io::Result<Counted> {
    let (watched, peer) = hintq_sys::socketpair()?;
    let fd = watched.as_raw_fd();
    let sh = Arc::new(Shared::default());
    let stop_fd = Arc::new(hintq_sys::eventfd()?);
    let group = match target {
        Target::Group(b) => {
            let g = Group::new(b)?;
            g.declare_interest(watched.as_fd(), Interest::READ, Delivery::One)?;
            Some(g)
        }
        _ => None,
    };
    let shared_set = match target {
        Target::EpollShared => {
            let ep = Arc::new(hintq_sys::epoll_create()?);
            sys::epoll_add(ep.as_raw_fd(), fd, libc::EPOLLIN as u32, DATA_FD)?;
            sys::epoll_add(ep.as_raw_fd(), stop_fd.as_raw_fd(), libc::EPOLLIN as u32, DATA_STOP)?;
            Some(ep)
        }
        _ => None,
    };
    let (tx, rx) = mpsc::channel();
    let threads: Vec<_> = (0..members)
        .map(|_| {
            let (sh, tx, group, shared_set, stop_fd) =
                (sh.clone(), tx.clone(), group.clone(), shared_set.clone(), stop_fd.clone());
            let cpu = plan.member_cpu;
            thread::spawn(move || -> io::Result<u64> {
                hintq_sys::pin(cpu)?;
                match (group, shared_set) {
                    (Some(g), _) => group_member(&sh, fd, &g, &tx),
                    (None, Some(ep)) => epoll_member(&sh, fd, &ep, Stop::EventFd(stop_fd), &tx),
                    (None, None) => {
                        let ep = hintq_sys::epoll_create()?;
                        let excl = (libc::EPOLLIN | libc::EPOLLEXCLUSIVE) as u32;
                        sys::epoll_add(ep.as_raw_fd(), fd, excl, DATA_FD)?;
                        sys::epoll_add(ep.as_raw_fd(), stop_fd.as_raw_fd(), libc::EPOLLIN as u32, DATA_STOP)?;
                        epoll_member(&sh, fd, &ep, Stop::EventFd(stop_fd), &tx)
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let joined: Vec<(libc::pid_t, Stop)> = rx.iter().take(members).collect();
    let tids: Vec<libc::pid_t> = joined.iter().map(|(t, _)| *t).collect();
    let outcome = drive(plan, &sh, &tids, peer.as_raw_fd());
    sh.stop.store(true, Ordering::Release);
    for (_, stop) in &joined {
        stop.signal()?;
    }
    let mut returns = 0;
    for t in threads {
        returns += t.join().map_err(|_| io::Error::other("a member thread panicked"))??;
    }
    let wakeups = outcome?;
    Ok(Counted {
        target: target.name(),
        members,
        rep,
        readinesses: plan.rounds as u64,
        wakeups,
        returns: returns.saturating_sub(members as u64),
        empty: sh.empty.load(Ordering::Relaxed),
    })
}

/// The rounds: wait until every member sleeps in its wait, write a byte, wait until it is
/// read; at the end, wait until every member sleeps again. Returns the members' wake-ups over
/// the rounds: their voluntary context switches (sleeps begun) between the first moment all
/// slept and the last, read from `/proc`. The stop that ends each member is thus left out,
/// and so are the wake-ups it causes in other members (every rtsig member's `signalfd` wakes
/// for a signal to any thread of the process: stopping 8 members one by one woke 28 sleeps
/// that were not the readiness's, 0.14 per readiness over 200 rounds).
fn drive(plan: &Plan, sh: &Shared, tids: &[libc::pid_t], peer: RawFd) -> io::Result<u64> {
    let switches = || tids.iter().try_fold(0, |sum, &t| Ok::<_, io::Error>(sum + hintq_sys::switches_of(t)?));
    all_asleep(sh, tids)?;
    let before = switches()?;
    for round in 0..plan.rounds {
        all_asleep(sh, tids)?;
        sys::write1(peer)?;
        let deadline = Instant::now() + PATIENCE;
        while sh.consumed.load(Ordering::Acquire) <= round {
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("round {round}: readiness lost"),
                ));
            }
            thread::yield_now();
        }
    }
    all_asleep(sh, tids)?;
    Ok(switches()? - before)
}

fn all_asleep(sh: &Shared, tids: &[libc::pid_t]) -> io::Result<()> {
    let deadline = Instant::now() + PATIENCE;
    while sh.inside.load(Ordering::Acquire) < tids.len() || !tids.iter().all(|&t| hintq_sys::is_sleeping(t)) {
        if Instant::now() > deadline {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "the member threads never all slept"));
        }
        thread::sleep(Duration::from_micros(20));
    }
    Ok(())
}

/// A member's loop: wait, read what was reported, until stopped. `wait` blocks and says
/// whether the shared descriptor was reported.
fn member(sh: &Shared, fd: RawFd, mut wait: impl FnMut() -> io::Result<bool>) -> io::Result<()> {
    loop {
        sh.inside.fetch_add(1, Ordering::AcqRel);
        let reported = wait();
        sh.inside.fetch_sub(1, Ordering::AcqRel);
        if sh.stop.load(Ordering::Acquire) {
            return Ok(());
        }
        if reported? {
            match hintq_sys::drain(fd) {
                0 => sh.empty.fetch_add(1, Ordering::Relaxed),
                k => sh.consumed.fetch_add(k, Ordering::AcqRel) as u64,
            };
        }
    }
}

fn group_member(
    sh: &Shared,
    fd: RawFd,
    group: &Group,
    tx: &mpsc::Sender<(libc::pid_t, Stop)>,
) -> io::Result<u64> {
    let mut q = group.queue()?;
    tx.send((hintq_sys::gettid(), Stop::Waker(q.waker()?))).map_err(io::Error::other)?;
    let waits = q.stats().waits;
    let mut evs = [Event::default(); 8];
    member(sh, fd, || {
        let n = q.get_next_event(&mut evs, None)?;
        Ok(evs[..n].iter().any(|e| e.fd() == fd))
    })?;
    Ok(q.stats().waits - waits)
}

fn epoll_member(
    sh: &Shared,
    fd: RawFd,
    ep: &OwnedFd,
    stop: Stop,
    tx: &mpsc::Sender<(libc::pid_t, Stop)>,
) -> io::Result<u64> {
    tx.send((hintq_sys::gettid(), stop)).map_err(io::Error::other)?;
    let mut buf = [libc::epoll_event { events: 0, u64: 0 }; 8];
    let mut returns = 0;
    member(sh, fd, || {
        let data = sys::epoll_wait_data(ep.as_raw_fd(), &mut buf)?;
        returns += 1;
        Ok(data.contains(&DATA_FD))
    })?;
    Ok(returns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_becomes_wakeups_and_returns_per_readiness() {
        let c = Counted {
            target: "group-uring".into(),
            members: 2,
            rep: 1,
            readinesses: 100,
            wakeups: 150,
            returns: 100,
            empty: 25,
        };
        let got: Vec<String> = c.rows().iter().map(row::line).collect();
        assert_eq!(
            got,
            [
                "E10,group-uring,2,1,wakeups_per_readiness,1.5,ok,",
                "E10,group-uring,2,1,returns_per_readiness,1,ok,",
                "E10,group-uring,2,1,empty_per_readiness,0.25,ok,"
            ]
        );
    }
}
