//! The gooch backend's own behaviour: quiet descriptors migrate to the inactive set, busy
//! ones stay active, and a quiet descriptor that wakes up is still reported (within the
//! documented interval while the process is busy).

mod common;

use hintq::{Backend, Builder, Event, GoochPolicy, Interest};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::time::Instant;

use common::{drain, pair, MS};

#[test]
fn quiet_descriptors_migrate_and_still_wake() {
    let policy = GoochPolicy { interval: MS(5), promote_at: 2 };
    let mut q = Builder::new(Backend::Gooch).gooch_policy(policy).build().unwrap();
    let pairs: Vec<_> = (0..50).map(|_| pair()).collect();
    for (a, _) in &pairs {
        q.declare_interest(a.as_raw_fd(), Interest::READ).unwrap();
    }
    let (busy, busy_peer) = &pairs[0];
    let mut evs = [Event::default(); 16];
    // One busy descriptor for 200 ms: the 49 quiet ones decay and are demoted.
    let t = Instant::now();
    while t.elapsed() < MS(200) {
        (&*busy_peer).write_all(b"b").unwrap();
        let n = q.get_next_event(&mut evs, Some(MS(100))).unwrap();
        assert!(evs[..n].iter().all(|e| e.fd() == busy.as_raw_fd()));
        drain(busy.as_raw_fd());
    }
    let demoted = q.stats().migrations;
    assert!(demoted >= 49, "the quiet descriptors must move to the inactive set: {:?}", q.stats());
    // A quiet one wakes while the busy one keeps the process busy: still reported.
    let (quiet, quiet_peer) = &pairs[31];
    (&*quiet_peer).write_all(b"q").unwrap();
    let t = Instant::now();
    let mut found = false;
    while !found && t.elapsed() < MS(2000) {
        (&*busy_peer).write_all(b"b").unwrap();
        let n = q.get_next_event(&mut evs, Some(MS(100))).unwrap();
        found = evs[..n].iter().any(|e| e.fd() == quiet.as_raw_fd());
        drain(busy.as_raw_fd());
    }
    assert!(found, "a demoted descriptor that wakes must be reported");
    // Keep it busy: it is promoted back.
    for _ in 0..20 {
        (&*quiet_peer).write_all(b"q").unwrap();
        q.get_next_event(&mut evs, Some(MS(100))).unwrap();
        drain(quiet.as_raw_fd());
    }
    assert!(q.stats().migrations > demoted, "a busy descriptor is promoted back: {:?}", q.stats());
}
