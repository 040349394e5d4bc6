//! The gooch backend's own behaviour, observed through its migration counter: quiet
//! descriptors move to the inactive set, a busy one never does, and a quiet descriptor that
//! wakes up is reported and promoted back, then demoted again once it falls silent.

mod common;

use common::{drain, pair, MS};
use hintq::{Backend, Builder, Event, GoochPolicy, Interest, Queue};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// Keeps `busy` busy while waiting, until `until` holds of the queue or `limit` passes;
/// returns whether `watch` was reported meanwhile.
fn run(
    q: &mut Queue,
    busy: &(UnixStream, UnixStream),
    watch: RawFd,
    limit: Duration,
    until: impl Fn(&Queue) -> bool,
) -> bool {
    let mut evs = [Event::default(); 16];
    let mut seen = false;
    let t = Instant::now();
    while !until(q) && t.elapsed() < limit {
        (&busy.1).write_all(b"b").unwrap();
        let n = q.get_next_event(&mut evs, Some(MS(100))).unwrap();
        for e in &evs[..n] {
            seen |= e.fd() == watch;
            drain(e.fd());
        }
    }
    seen
}

#[test]
fn quiet_descriptors_migrate_and_wake_up() {
    let policy = GoochPolicy { interval: MS(5), ..GoochPolicy::default() };
    let mut q = Builder::new(Backend::Gooch).gooch_policy(policy).build().unwrap();
    let pairs: Vec<_> = (0..10).map(|_| pair()).collect();
    for (a, _) in &pairs {
        q.declare_interest(a.as_fd(), Interest::READ).unwrap();
    }
    let (busy, quiet) = (&pairs[0], &pairs[7]);
    let migrations = |q: &Queue| q.stats().migrations;
    // The nine quiet ones are demoted; the busy one, reported every epoch, never is.
    run(&mut q, busy, -1, MS(3000), |q| migrations(q) >= 9);
    run(&mut q, busy, -1, MS(200), |_| false); // 40 epochs more

    assert_eq!(migrations(&q), 9, "exactly the quiet descriptors move: {:?}", q.stats());
    // A quiet one wakes: reported at the next epoch and promoted.
    (&quiet.1).write_all(b"q").unwrap();
    assert!(
        run(&mut q, busy, quiet.0.as_raw_fd(), MS(3000), |q| migrations(q) >= 10),
        "the woken descriptor was not reported"
    );
    assert_eq!(migrations(&q), 10, "the woken descriptor is promoted: {:?}", q.stats());
    // Silent again: demoted again.
    run(&mut q, busy, -1, MS(3000), |q| migrations(q) >= 11);
    assert_eq!(migrations(&q), 11, "{:?}", q.stats());
}
