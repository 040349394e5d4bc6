//! The rtsig backend's own rows: RELIABILITY E9 (signal-queue overflow and poll recovery),
//! E10 (queued signals of a closed or reused descriptor), the hybrid switch of Provos &
//! Lever, and the per-thread ownership the paper describes.

mod common;

use hintq::{Backend, Builder, Event, Hybrid, Interest, Queue, State};
use std::collections::HashMap;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use common::{drain, pair, MS};

fn hybrid_off() -> Hybrid {
    Hybrid { enabled: false, ..Hybrid::default() }
}

/// Every event within `limit`, draining each descriptor as it is reported.
fn serve(q: &mut Queue, limit: Duration) -> HashMap<RawFd, usize> {
    let mut seen = HashMap::new();
    let mut evs = [Event::default(); 64];
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let n = q.get_next_event(&mut evs, Some(MS(50))).unwrap();
        if n == 0 {
            break;
        }
        for e in &evs[..n] {
            drain(e.fd());
            *seen.entry(e.fd()).or_default() += 1;
        }
    }
    seen
}

/// Signals queued now for this user, by every process (the first figure of `SigQ`).
fn user_signals_queued() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("SigQ:")).expect("SigQ in /proc/self/status");
    line.trim().split('/').next().unwrap().parse().unwrap()
}

/// Runs `body` in a fresh process with room for only `limit` more queued signals. The limit
/// (RLIMIT_SIGPENDING) counts every signal queued for the *user*, by any process, so signals
/// other processes hold or release meanwhile (a server on rtsig, this binary's other test)
/// would move the overflow. As root the child therefore first becomes a user of its own (a
/// uid derived from the test's name, which nothing else runs as), whose count starts at 0;
/// otherwise the limit is set `limit` above what the user holds queued now.
fn with_sigpending(name: &str, limit: u64, body: impl FnOnce()) {
    common::in_child(name, &[], || {
        // SAFETY: (test, own process) geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let uid = 60_000 + name.bytes().map(u32::from).sum::<u32>() % 5_000;
            // SAFETY: (test, own process) drops this child's privileges for good.
            assert_eq!(unsafe { libc::setresuid(uid, uid, uid) }, 0, "setresuid({uid})");
        }
        let limit = user_signals_queued() + limit;
        let r = libc::rlimit { rlim_cur: limit, rlim_max: limit };
        // SAFETY: (test, own process) lowers a limit of this process only.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_SIGPENDING, &r) }, 0);
        body();
    });
}

/// E9: 200 descriptors ready at once against a signal queue of 4: the kernel falls back to
/// SIGIO, the queue flushes and scans, every descriptor is reported exactly once, and
/// signal mode resumes afterwards.
#[test]
fn e9_overflow_recovers_every_fd_exactly_once() {
    with_sigpending("e9_overflow_recovers_every_fd_exactly_once", 4, || {
        let mut q = Builder::new(Backend::Rtsig).rtsig_hybrid(hybrid_off()).build().unwrap();
        let pairs: Vec<_> = (0..200).map(|_| pair()).collect();
        for (a, _) in &pairs {
            assert!(!q.declare_interest(a.as_fd(), Interest::READ).unwrap().contains(State::READ));
        }
        for (_, p) in &pairs {
            (&*p).write_all(b"x").unwrap();
        }
        let seen = serve(&mut q, MS(3000));
        assert!(q.stats().recoveries >= 1, "the queue must have overflowed: {:?}", q.stats());
        for (a, _) in &pairs {
            assert_eq!(seen.get(&a.as_raw_fd()), Some(&1), "fd {} not reported exactly once", a.as_raw_fd());
        }
        // Back in signal mode: one more arrival is reported, without another recovery.
        let before = q.stats().recoveries;
        (&pairs[7].1).write_all(b"y").unwrap();
        let again = serve(&mut q, MS(2000));
        assert_eq!(again.get(&pairs[7].0.as_raw_fd()), Some(&1));
        assert_eq!(q.stats().recoveries, before);
        assert_eq!(q.stats().switches, 0, "hybrid is off");
    });
}

/// E9 with the hybrid on: the overflow switches to polling, calm switches back.
#[test]
fn e9_overflow_switches_hybrid_to_polling_and_back() {
    with_sigpending("e9_overflow_switches_hybrid_to_polling_and_back", 4, || {
        let hybrid = Hybrid { enabled: true, to_poll: 1_000, to_signals: 4, calm_waits: 3 };
        let mut q = Builder::new(Backend::Rtsig).rtsig_hybrid(hybrid).build().unwrap();
        let pairs: Vec<_> = (0..100).map(|_| pair()).collect();
        for (a, _) in &pairs {
            q.declare_interest(a.as_fd(), Interest::READ).unwrap();
        }
        for (_, p) in &pairs {
            (&*p).write_all(b"x").unwrap();
        }
        let seen = serve(&mut q, MS(3000));
        assert_eq!(seen.len(), 100, "every descriptor reported");
        // Quiet waits: calm, back to signals.
        let mut evs = [Event::default(); 4];
        for _ in 0..5 {
            q.get_next_event(&mut evs, Some(MS(10))).unwrap();
        }
        let s = q.stats();
        assert!(s.recoveries >= 1 && s.switches >= 2, "to polling and back: {s:?}");
        (&pairs[3].1).write_all(b"y").unwrap();
        assert_eq!(serve(&mut q, MS(2000)).get(&pairs[3].0.as_raw_fd()), Some(&1));
    });
}

/// The hybrid switches on load alone (many signals in one wait), without an overflow.
#[test]
fn hybrid_switches_on_load_without_overflow() {
    let hybrid = Hybrid { enabled: true, to_poll: 16, to_signals: 2, calm_waits: 2 };
    let mut q = Builder::new(Backend::Rtsig).rtsig_hybrid(hybrid).build().unwrap();
    let pairs: Vec<_> = (0..40).map(|_| pair()).collect();
    for (a, _) in &pairs {
        q.declare_interest(a.as_fd(), Interest::READ).unwrap();
    }
    for round in 0..3 {
        for (_, p) in &pairs {
            (&*p).write_all(b"x").unwrap();
        }
        let seen = serve(&mut q, MS(3000));
        assert_eq!(seen.len(), 40, "round {round}: every descriptor reported in either mode");
    }
    let mut evs = [Event::default(); 4];
    for _ in 0..3 {
        q.get_next_event(&mut evs, Some(MS(10))).unwrap(); // quiet: calm
    }
    let s = q.stats();
    assert_eq!(s.recoveries, 0, "{s:?}");
    assert!(s.switches >= 2, "load must switch to polling and calm back: {s:?}");
}

/// A waker wakes a queue that the hybrid switched to polling: its signal is blocked and does
/// not end a `poll(2)`, so the poll includes a `signalfd` of it (it used to wait the whole
/// timeout).
#[test]
fn waker_wakes_a_queue_in_polling_mode() {
    let hybrid = Hybrid { enabled: true, to_poll: 16, to_signals: 2, calm_waits: 1_000_000 };
    let mut q = Builder::new(Backend::Rtsig).rtsig_hybrid(hybrid).build().unwrap();
    let pairs: Vec<_> = (0..40).map(|_| pair()).collect();
    for (a, _) in &pairs {
        q.declare_interest(a.as_fd(), Interest::READ).unwrap();
    }
    for (_, p) in &pairs {
        (&*p).write_all(b"x").unwrap();
    }
    assert_eq!(serve(&mut q, MS(3000)).len(), 40);
    assert_eq!(q.stats().switches, 1, "switched to polling and stays there: {:?}", q.stats());
    let waker = q.waker().unwrap();
    let t = std::thread::spawn(move || {
        std::thread::sleep(MS(100));
        waker.wake().unwrap();
    });
    let start = Instant::now();
    let mut evs = [Event::default(); 4];
    assert_eq!(q.get_next_event(&mut evs, Some(MS(10_000))).unwrap(), 0);
    let took = start.elapsed();
    t.join().unwrap();
    assert!(took < MS(5000), "the waker's signal did not end the polling wait: {took:?}");
    assert_eq!(q.stats().switches, 1);
}

/// E10: a signal queued for a descriptor that is then closed (through the queue, or behind
/// its back) is never delivered to the new owner of the number.
#[test]
fn e10_queued_signal_of_closed_fd_is_discarded() {
    for revoke_first in [true, false] {
        let mut q = Builder::new(Backend::Rtsig).rtsig_hybrid(hybrid_off()).build().unwrap();
        let (old, mut peer) = pair();
        q.declare_interest(old.as_fd(), Interest::READ).unwrap();
        peer.write_all(b"stale").unwrap(); // queues a signal for the old file
        let num = old.into_raw_fd();
        if revoke_first {
            q.declare_interest(hintq_testkit::by_number(num), Interest::empty()).unwrap();
        }
        let (fresh, _p2) = pair();
        // SAFETY: (test) `num` is ours; dup2 closes the old file and reuses the number.
        assert_eq!(unsafe { libc::dup2(fresh.as_raw_fd(), num) }, num);
        let state = q.declare_interest(hintq_testkit::by_number(num), Interest::READ).unwrap();
        assert!(!state.contains(State::READ), "the new file has nothing to read");
        let seen = serve(&mut q, MS(300));
        assert_eq!(
            seen.get(&num),
            None,
            "revoke_first={revoke_first}: stale signal delivered to the new owner"
        );
        // SAFETY: (test) `num` is ours (the dup2 above made it a descriptor of its own).
        q.close(unsafe { OwnedFd::from_raw_fd(num) }).unwrap();
    }
}

/// Two rtsig queues on one thread each get their own descriptors' events (one RT signal
/// number per queue), and a waker wakes only its own queue.
#[test]
fn two_queues_on_one_thread_do_not_steal_signals() {
    let mut q1 = Queue::new(Backend::Rtsig).unwrap();
    let mut q2 = Queue::new(Backend::Rtsig).unwrap();
    let (a1, mut p1) = pair();
    let (a2, mut p2) = pair();
    q1.declare_interest(a1.as_fd(), Interest::READ).unwrap();
    q2.declare_interest(a2.as_fd(), Interest::READ).unwrap();
    p2.write_all(b"2").unwrap();
    p1.write_all(b"1").unwrap();
    let s1 = serve(&mut q1, MS(1000));
    let s2 = serve(&mut q2, MS(1000));
    assert_eq!(s1.keys().copied().collect::<Vec<_>>(), [a1.as_raw_fd()]);
    assert_eq!(s2.keys().copied().collect::<Vec<_>>(), [a2.as_raw_fd()]);
    q1.waker().unwrap().wake().unwrap();
    let mut evs = [Event::default(); 4];
    let t = Instant::now();
    assert_eq!(q2.get_next_event(&mut evs, Some(MS(100))).unwrap(), 0);
    assert!(t.elapsed() >= MS(100), "q1's wake-up must not end q2's wait");
    assert_eq!(q1.get_next_event(&mut evs, Some(MS(1000))).unwrap(), 0);
    assert!(t.elapsed() < MS(1000), "q1 is woken");
}

/// A queue moved to another thread re-owns its descriptors there (F_SETOWN_EX names a
/// thread) and loses nothing.
#[test]
fn queue_moved_to_another_thread_keeps_delivering() {
    let mut q = Builder::new(Backend::Rtsig).rtsig_hybrid(hybrid_off()).build().unwrap();
    let (a, mut p) = pair();
    q.declare_interest(a.as_fd(), Interest::READ).unwrap();
    p.write_all(b"before").unwrap(); // pending on the creating thread
    let fd = a.as_raw_fd();
    let (seen, mut q, mut p) = std::thread::spawn(move || {
        let seen = serve(&mut q, MS(2000));
        (seen, q, p)
    })
    .join()
    .unwrap();
    assert_eq!(seen.get(&fd), Some(&1), "the arrival before the move is recovered");
    let fd2 = fd;
    let handle = std::thread::spawn(move || {
        let w = q.waker().unwrap();
        p.write_all(b"after").unwrap();
        let seen = serve(&mut q, MS(2000));
        w.wake().unwrap();
        seen
    });
    assert_eq!(handle.join().unwrap().get(&fd2), Some(&1), "arrivals on the new thread are signalled there");
    drop(a);
}

/// Regression: a queue dropped (or revoking) after one of its descriptors was closed behind
/// its back must not switch off signals of the file that reused the number (found as a
/// flaky `eintr_storm` when another test's queue was dropped meanwhile).
#[test]
fn dropping_a_queue_leaves_a_reused_number_alone() {
    let mut stale = Queue::new(Backend::Rtsig).unwrap();
    let (old, _old_peer) = pair();
    let num = old.into_raw_fd();
    stale.declare_interest(hintq_testkit::by_number(num), Interest::READ).unwrap();
    let mut live = Builder::new(Backend::Rtsig).rtsig_hybrid(hybrid_off()).build().unwrap();
    let (fresh, mut peer) = pair();
    // SAFETY: (test) `num` is ours; dup2 closes the old file behind `stale`'s back.
    assert_eq!(unsafe { libc::dup2(fresh.as_raw_fd(), num) }, num);
    live.declare_interest(hintq_testkit::by_number(num), Interest::READ).unwrap();
    stale.declare_interest(hintq_testkit::by_number(num), Interest::empty()).unwrap();
    drop(stale);
    peer.write_all(b"mine").unwrap();
    assert_eq!(serve(&mut live, MS(2000)).get(&num), Some(&1), "the live queue lost its signals");
    // SAFETY: (test) `num` is ours (the dup2 above made it a descriptor of its own).
    live.close(unsafe { OwnedFd::from_raw_fd(num) }).unwrap();
}

/// The real-time signals pending on the calling thread (which blocks them all first, so a
/// signal sent to it stays there to be seen).
fn rt_signals_pending() -> Vec<libc::c_int> {
    // SAFETY: (test) sigset and mask calls on live, exclusively borrowed sets.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut all);
        for s in libc::SIGRTMIN()..=libc::SIGRTMAX() {
            libc::sigaddset(&mut all, s);
        }
        assert_eq!(libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut()), 0);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        assert_eq!(libc::sigpending(&mut pending), 0);
        (libc::SIGRTMIN()..=libc::SIGRTMAX()).filter(|&s| libc::sigismember(&pending, s) == 1).collect()
    }
}

/// A waker that outlives its rtsig queue does nothing: it must not signal whatever thread
/// now has the queue's old thread id (seen as EINTR in unrelated tests). The queue's thread
/// stays alive here with the real-time signals blocked, so a wake-up sent to it would be
/// pending there: one is, while the queue lives; none after it is dropped.
#[test]
fn waker_of_a_dropped_queue_signals_nobody() {
    let (to_main, from_thread) = std::sync::mpsc::channel();
    let (to_thread, from_main) = std::sync::mpsc::channel::<()>();
    let owner = std::thread::spawn(move || {
        let mut q = Queue::new(Backend::Rtsig).unwrap();
        let w = q.waker().unwrap();
        assert!(rt_signals_pending().is_empty());
        w.wake().unwrap();
        let live = rt_signals_pending();
        assert_eq!(live.len(), 1, "the waker of a live queue signals its thread: {live:?}");
        drop(q); // discards the pending wake-up with the queue's signal number
        assert!(rt_signals_pending().is_empty());
        to_main.send(w).unwrap();
        from_main.recv().unwrap();
        rt_signals_pending()
    });
    let w = from_thread.recv().unwrap();
    w.wake().unwrap();
    to_thread.send(()).unwrap();
    let after = owner.join().unwrap();
    assert!(after.is_empty(), "the waker of a dropped queue signalled its old thread: {after:?}");
}
