//! Model checks of the hand-off structures: every interleaving loom can find.
//!
//! Not part of `cargo test`; run with
//! `RUSTFLAGS="--cfg loom" cargo test -p hintq-patterns --release --test loom`.

#![cfg(loom)]

use hintq_patterns::handoff::{Gate, InFlight, Leadership, WorkQueue};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;

/// One leader at a time (loom's cell tracking fails on overlapping access), every thread
/// gets its turn, and nobody is left waiting (loom reports deadlocks).
#[test]
fn leadership_is_exclusive_and_handed_on() {
    loom::model(|| {
        let l = Arc::new(Leadership::new(0usize));
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let l = Arc::clone(&l);
                thread::spawn(move || {
                    let mut leader = l.lead().expect("not stopped");
                    leader.with(|v| *v += 1);
                })
            })
            .collect();
        {
            let mut leader = l.lead().expect("not stopped");
            leader.with(|v| *v += 1);
        }
        ts.into_iter().for_each(|t| t.join().unwrap());
        let mut leader = l.lead().unwrap();
        assert_eq!(leader.with(|v| *v), 3);
    });
}

/// A follower waiting behind a leader is released by `stop`.
#[test]
fn stop_releases_followers() {
    loom::model(|| {
        let l = Arc::new(Leadership::new(()));
        let leader = l.lead().unwrap();
        let f = {
            let l = Arc::clone(&l);
            thread::spawn(move || l.lead().is_none())
        };
        l.stop();
        drop(leader);
        assert!(f.join().unwrap());
    });
}

/// Every item pushed is popped exactly once, and no popper sleeps through a push.
#[test]
fn work_queue_hands_each_item_to_one_worker() {
    loom::model(|| {
        let q = Arc::new(WorkQueue::default());
        let sum = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (q, sum) = (Arc::clone(&q), Arc::clone(&sum));
                thread::spawn(move || {
                    let v: usize = q.pop().expect("open");
                    sum.fetch_add(v, SeqCst);
                })
            })
            .collect();
        q.push(1).unwrap();
        q.push(10).unwrap();
        workers.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(sum.load(SeqCst), 11);
        assert!(q.is_empty());
    });
}

/// `close` wakes a sleeping popper, and a closed queue refuses pushes.
#[test]
fn work_queue_close_wakes_poppers() {
    loom::model(|| {
        let q = Arc::new(WorkQueue::<u8>::default());
        let w = {
            let q = Arc::clone(&q);
            thread::spawn(move || q.pop())
        };
        q.close();
        assert_eq!(w.join().unwrap(), None);
        assert_eq!(q.push(1), Err(1));
    });
}

/// Two reports of one descriptor race: never two handlers at once, and the last arrival is
/// seen by some handling round (no lost report).
#[test]
fn in_flight_never_overlaps_and_loses_nothing() {
    loom::model(|| {
        let flag = Arc::new(InFlight::new());
        let arrived = Arc::new(AtomicUsize::new(0));
        let inside = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicUsize::new(0));
        let report = {
            let (flag, arrived, inside, seen) =
                (Arc::clone(&flag), Arc::clone(&arrived), Arc::clone(&inside), Arc::clone(&seen));
            move || {
                arrived.fetch_add(1, SeqCst);
                if flag.enter() {
                    loop {
                        assert_eq!(inside.fetch_add(1, SeqCst), 0, "two handlers at once");
                        seen.fetch_max(arrived.load(SeqCst), SeqCst);
                        inside.fetch_sub(1, SeqCst);
                        if flag.leave() {
                            break;
                        }
                    }
                }
            }
        };
        let t = thread::spawn(report.clone());
        report();
        t.join().unwrap();
        assert_eq!(seen.load(SeqCst), 2, "an arrival was never handled");
    });
}

/// A parked thread passes once the gate opens to it, or returns false when stopped.
#[test]
fn gate_unparks_on_grow_and_on_stop() {
    loom::model(|| {
        let g = Arc::new(Gate::new(1));
        let t = {
            let g = Arc::clone(&g);
            thread::spawn(move || g.pass(1))
        };
        g.set_active(2);
        assert!(t.join().unwrap());
        let t = {
            let g = Arc::clone(&g);
            thread::spawn(move || g.pass(5))
        };
        g.stop();
        assert!(!t.join().unwrap());
    });
}
