//! The two selects of Banga et al. (§2, Fig. 8): `select-classic` (sets rebuilt per call,
//! results tested bit by bit) must deliver what `select` (persistent shadow sets, word scan)
//! delivers, on the same descriptors in the same states; only the cost differs.

mod common;

use common::pair;
use hintq::{Backend, Event, Interest, Queue, State};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// The states a queue reports within two waits (state-based backends repeat a ready
/// descriptor, so two waits see every one), merged per descriptor.
fn reported(q: &mut Queue) -> BTreeMap<RawFd, State> {
    let mut seen = BTreeMap::new();
    let mut evs = [Event::default(); 256];
    for _ in 0..2 {
        let n = q.get_next_event(&mut evs, Some(Duration::from_millis(200))).unwrap();
        for e in &evs[..n] {
            *seen.entry(e.fd()).or_insert(State::empty()) |= e.state();
        }
    }
    seen
}

/// A descriptor numbered at or above `at`, a duplicate of `fd`.
fn dup_at(fd: RawFd, at: RawFd) -> Option<OwnedFd> {
    // SAFETY: (test) F_DUPFD takes the lowest free number >= `at`; we own the result.
    let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, at) };
    // SAFETY: (test) a fresh descriptor nobody else owns.
    (high >= 0).then(|| unsafe { OwnedFd::from_raw_fd(high) })
}

#[test]
fn classic_and_improved_report_the_same_events_on_a_mixed_workload() {
    let mut improved = Queue::new(Backend::Select).unwrap();
    let mut classic = Queue::new(Backend::SelectClassic).unwrap();
    assert_eq!(classic.backend(), Backend::SelectClassic);

    // 48 pairs, each watched by both queues: read, write, both, or read then revoked.
    let mut pairs: Vec<(UnixStream, Option<UnixStream>)> =
        (0..48).map(|_| pair()).map(|(a, b)| (a, Some(b))).collect();
    let interest = |i: usize| match i % 4 {
        0 => Interest::READ,
        1 => Interest::WRITE,
        2 => Interest::READ | Interest::WRITE,
        _ => Interest::READ,
    };
    for q in [&mut improved, &mut classic] {
        for (i, (a, _)) in pairs.iter().enumerate() {
            q.declare_interest(a.as_fd(), interest(i)).unwrap();
        }
    }
    // An exceptional condition: TCP urgent data.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut urgent_peer = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (urgent, _) = listener.accept().unwrap();
    urgent.set_nonblocking(true).unwrap();
    // A descriptor far above 1024, when the limit allows, so the sets span several words.
    hintq_sys::raise_nofile().unwrap();
    let high = dup_at(pairs[0].0.as_raw_fd(), 1300);
    if high.is_none() {
        hintq_testkit::skip("the high descriptor of the mixed workload", "RLIMIT_NOFILE below 1300");
    }
    for q in [&mut improved, &mut classic] {
        q.declare_interest(urgent.as_fd(), Interest::EXCEPT).unwrap();
        if let Some(h) = &high {
            q.declare_interest(h.as_fd(), Interest::READ).unwrap();
        }
    }

    for (i, (_, peer)) in pairs.iter_mut().enumerate() {
        // Pairs 0, 3, 6...: data; and the ones revoked below too, so revoking is tested.
        if i % 3 == 0 || i % 4 == 3 {
            peer.as_mut().unwrap().write_all(b"x").unwrap();
        }
    }
    const HUNG_UP: usize = 10; // read and write interest, no data
    pairs[HUNG_UP].1 = None;
    // SAFETY: (test) one byte of urgent data on a connected socket.
    let sent = unsafe { libc::send(urgent_peer.as_raw_fd(), b"!".as_ptr().cast(), 1, libc::MSG_OOB) };
    assert_eq!(sent, 1);
    urgent_peer.flush().unwrap();
    for q in [&mut improved, &mut classic] {
        for (i, (a, _)) in pairs.iter().enumerate().filter(|(i, _)| i % 4 == 3) {
            assert_eq!(q.declare_interest(a.as_fd(), Interest::empty()).unwrap(), State::empty(), "{i}");
        }
    }

    std::thread::sleep(Duration::from_millis(20));
    let got_improved = reported(&mut improved);
    let got_classic = reported(&mut classic);
    assert_eq!(got_classic, got_improved, "classic select differs from improved select");

    // And both are right: what was made ready is reported, the revoked are not.
    for (i, (a, _)) in pairs.iter().enumerate() {
        let s = got_improved.get(&a.as_raw_fd()).copied().unwrap_or(State::empty());
        let i_want = interest(i);
        match i % 4 {
            3 => assert!(s.is_empty(), "revoked pair {i} reported: {s:?}"),
            _ => {
                let readable = (i % 3 == 0 || i == HUNG_UP) && i_want.contains(Interest::READ);
                assert_eq!(s.contains(State::READ), readable, "{i}: {s:?}");
                assert_eq!(s.contains(State::WRITE), i_want.contains(Interest::WRITE), "{i}: {s:?}");
            }
        }
    }
    assert_eq!(got_improved.get(&urgent.as_raw_fd()), Some(&State::EXCEPT), "urgent data is exceptional");
    if let Some(h) = &high {
        assert_eq!(got_improved.get(&h.as_raw_fd()), Some(&State::READ), "the high duplicate of pair 0");
    }
}

#[test]
fn classic_select_refuses_hand_off_and_improved_takes_it() {
    let mut classic = Queue::new(Backend::SelectClassic).unwrap();
    assert_eq!(classic.handoff().unwrap_err().kind(), std::io::ErrorKind::Unsupported);
    assert!(Queue::new(Backend::Select).unwrap().handoff().is_ok());
}
