//! A `Queue` is `Send`: made on one thread, used on another, moved again. On io_uring its ring
//! lets only one thread in (`SINGLE_ISSUER | DEFER_TASKRUN`, the backend's quirk m), so the
//! first move takes the registrations to a ring any thread may enter. These tests check what
//! a user sees: every registration keeps reporting after moves, bytes received through the
//! ring are not lost, and a move that cannot be made (a send in flight) is refused with an
//! error that changes nothing, not a hang.
//!
//! Needs io_uring; skipped, saying why, when the kernel refuses it.

mod common;

use common::{ring_queue, tcp, PATIENCE};
use hintq::{Backend, Event, Interest, Queue, State};
use std::io::{ErrorKind, Write};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Waits for an event of `fd` whose state has `want`; other descriptors' events are dropped.
fn wait_for(q: &mut Queue, fd: RawFd, want: State) -> bool {
    common::wait_event(q, fd, want, PATIENCE).is_some()
}

/// Takes what the ring received for `fd` until `want` bytes came.
fn receive(q: &mut Queue, fd: RawFd, want: usize) -> Vec<u8> {
    let end = Instant::now() + PATIENCE;
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < end {
        match q.ring_io().and_then(|mut r| r.take_received(fd, &mut got, usize::MAX)) {
            Some(Ok(n)) => assert!(n > 0, "end of stream after {} bytes", got.len()),
            Some(Err(e)) if e.kind() == ErrorKind::WouldBlock => {
                wait_for(q, fd, State::READ);
            }
            Some(Err(e)) => panic!("take_received: {e}"),
            None => panic!("the registration does not receive through the ring"),
        }
    }
    got
}

/// Runs `f` with the queue on a new thread and gives the queue back.
fn elsewhere<T: Send + 'static>(q: Queue, f: impl FnOnce(&mut Queue) -> T + Send + 'static) -> (Queue, T) {
    std::thread::spawn(move || {
        let mut q = q;
        let t = f(&mut q);
        (q, t)
    })
    .join()
    .unwrap()
}

/// Whether this kernel builds the one-thread ring (`DEFER_TASKRUN`, Linux 6.1), which a
/// default builder asks for.
fn one_thread_ring() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut v = release.split(|c: char| !c.is_ascii_digit()).map(|n| n.parse::<u32>().unwrap_or(0));
    let (major, minor) = (v.next().unwrap_or(0), v.next().unwrap_or(0));
    (major, minor) >= (6, 1)
}

#[test]
fn registrations_follow_the_queue_from_thread_to_thread() {
    let case = "registrations_follow_the_queue_from_thread_to_thread";
    let Some(mut q) = ring_queue(case) else { return };
    let (_a, fa, mut ca) = tcp();
    let (_b, fb, mut cb) = tcp();
    q.declare(hintq_testkit::by_number(fa), Interest::READ | Interest::RECEIVE).unwrap();
    q.declare(hintq_testkit::by_number(fb), Interest::READ).unwrap();
    if !q.ring_io().is_some_and(|r| r.receiving(fa)) {
        hintq_testkit::runs(case, Err("io_uring receives unavailable here".to_string()));
        return;
    }
    // Used here first: this thread owns the ring.
    ca.write_all(b"one").unwrap();
    assert_eq!(receive(&mut q, fa, 3), b"one");

    // Bytes that arrive before the queue moves, and after, are all received on the new thread;
    // the plain poll registration reports there too.
    ca.write_all(b"two").unwrap();
    cb.write_all(b"x").unwrap();
    let (mut q, (got, polled)) = elsewhere(q, move |q| {
        let polled = wait_for(q, fb, State::READ);
        ca.write_all(b"three").unwrap();
        (receive(q, fa, 8), polled)
    });
    assert_eq!(got, b"twothree");
    assert!(polled, "the polled descriptor reported nothing after the queue moved");

    // Declared on another thread, used back on this one.
    let (_c, fc, mut cc) = tcp();
    let (q2, ()) = elsewhere(q, move |q| {
        q.declare(hintq_testkit::by_number(fc), Interest::READ | Interest::RECEIVE).unwrap()
    });
    q = q2;
    cc.write_all(b"back").unwrap();
    assert_eq!(receive(&mut q, fc, 4), b"back");

    // Shared from now on: back and forth, every registration still reports.
    for round in 0..6u8 {
        let (q2, (polled, cb2)) = elsewhere(q, move |q| {
            cb.write_all(&[round]).unwrap();
            (wait_for(q, fb, State::READ), cb)
        });
        (q, cb) = (q2, cb2);
        assert!(polled, "round {round}: the polled descriptor reported nothing on the other thread");
        cc.write_all(&[b'0' + round]).unwrap();
        assert_eq!(receive(&mut q, fc, 1), [b'0' + round], "round {round}");
    }
}

#[test]
fn a_move_with_a_send_in_flight_is_refused_and_changes_nothing() {
    let case = "a_move_with_a_send_in_flight_is_refused_and_changes_nothing";
    let Some(mut q) = ring_queue(case) else { return };
    if !q.ring_io().is_some_and(|r| r.can_send()) {
        hintq_testkit::runs(case, Err("io_uring sends unavailable here".to_string()));
        return;
    }
    if !one_thread_ring() {
        // Any thread may enter this ring: no move, nothing to refuse.
        eprintln!("n/a: the ring is not a one-thread ring here (kernel before 6.1)");
        return;
    }
    let (sock, fd, client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    let mut evs = [Event::default(); 4];
    q.get_next_event(&mut evs, Some(Duration::ZERO)).unwrap();
    // More than the socket buffers hold, to a peer that does not read: it stays in flight.
    let mut buf = q.ring_io().map(|mut r| r.send_buffer()).unwrap_or_default();
    buf.resize(64 << 20, 7);
    q.ring_io().expect("a ring").send(fd, buf).unwrap();
    q.get_next_event(&mut evs, Some(Duration::ZERO)).unwrap();
    let registered = q.registered();
    let (_d, fd2, _cd) = tcp();
    let generation = q.generation(fd);
    let (mut q, (waited, declared, revoked)) = elsewhere(q, move |q| {
        // A wait that enters the kernel (a zero timeout with nothing due from the kernel
        // enters nothing, and so claims nothing).
        let waited = q.get_next_event(&mut [Event::default(); 4], Some(Duration::from_millis(10))).map(drop);
        let declared = q.declare(hintq_testkit::by_number(fd2), Interest::READ);
        (waited, declared, q.declare(hintq_testkit::by_number(fd), Interest::empty()))
    });
    for (what, r) in [("get_next_event", waited), ("declare", declared), ("revoke", revoked)] {
        let e = r.expect_err(&format!("{what} on another thread worked with a send in flight"));
        assert_eq!(e.kind(), ErrorKind::ResourceBusy, "{what}: {e}");
    }
    assert_eq!(q.registered(), registered, "the refused declare registered something");
    // The refused revoke left the registration as it was, so the close below can still
    // revoke it (it had forgotten it, and the ring kept the socket open).
    assert_eq!(q.generation(fd), generation, "the refused revoke forgot the registration");
    // Back on its own thread the queue works: revoking cancels the send, and the peer sees
    // the connection end before the whole send went out.
    q.get_next_event(&mut evs, Some(Duration::ZERO)).unwrap();
    q.close(sock).unwrap();
    let mut client = client;
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut sink = Vec::new();
    let r = std::io::Read::read_to_end(&mut client, &mut sink);
    assert!(r.is_ok() || r.as_ref().is_err_and(|e| e.kind() == ErrorKind::ConnectionReset), "{r:?}");
    assert!(sink.len() < 64 << 20, "the whole send went out though it was cancelled");
}

/// `Builder::uring_defer(false)`: a ring any thread may enter from the start, so a queue with
/// a send in flight moves between threads without the refusal a one-thread ring gives.
#[test]
fn a_ring_built_for_any_thread_moves_with_a_send_in_flight() {
    let case = "a_ring_built_for_any_thread_moves_with_a_send_in_flight";
    let Some(_) = ring_queue(case) else { return };
    let mut q = hintq::Builder::new(Backend::Uring).uring_defer(false).build().unwrap();
    if !q.ring_io().is_some_and(|r| r.can_send()) {
        hintq_testkit::runs(case, Err("io_uring sends unavailable here".to_string()));
        return;
    }
    let (sock, fd, _client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    q.ring_io().expect("a ring").send(fd, vec![7; 64 << 20]).unwrap();
    q.get_next_event(&mut [Event::default(); 4], Some(Duration::ZERO)).unwrap();
    assert!(
        q.ring_io().is_some_and(|mut r| r.sending(fd)),
        "a 64 MiB send to a peer that does not read completed"
    );
    let (mut q, waited) = elsewhere(q, |q| {
        q.get_next_event(&mut [Event::default(); 4], Some(Duration::from_millis(10))).map(drop)
    });
    waited.expect("a ring any thread may enter refused another thread");
    q.close(sock).unwrap();
}

/// A queue whose first use is a wait: the lean wait does not claim the ring, and a one-thread
/// ring that no thread has enabled yet refuses the enter (`EBADFD`), so the wait goes the
/// usual way, which enables the ring for this thread; a wait on another thread then finds the
/// ring owned (`EEXIST`) and moves it. Every wait times out as asked, and the registrations
/// made after each still report.
#[test]
fn a_wait_before_anything_is_declared_claims_the_ring() {
    let case = "a_wait_before_anything_is_declared_claims_the_ring";
    let Some(mut q) = ring_queue(case) else { return };
    let mut evs = [Event::default(); 4];
    for timeout in [Duration::from_millis(20), Duration::ZERO] {
        assert_eq!(q.get_next_event(&mut evs, Some(timeout)).unwrap(), 0, "a wait on an empty queue");
    }
    let (a, fa, mut ca) = tcp();
    q.declare(hintq_testkit::by_number(fa), Interest::READ).unwrap();
    ca.write_all(b"x").unwrap();
    assert!(wait_for(&mut q, fa, State::READ), "no event after the first wait");
    // Read, so that the move's fresh arm has nothing to report.
    std::io::Read::read_exact(&mut &std::net::TcpStream::from(a.try_clone().unwrap()), &mut [0; 1]).unwrap();
    let (mut q, waited) = elsewhere(q, |q| {
        let waited = q.get_next_event(&mut [Event::default(); 4], Some(Duration::from_millis(20)));
        let (_b, fb, mut cb) = tcp();
        q.declare(hintq_testkit::by_number(fb), Interest::READ).unwrap();
        cb.write_all(b"y").unwrap();
        (waited.map_err(|e| e.to_string()), wait_for(q, fb, State::READ))
    });
    assert_eq!(waited.0, Ok(0), "a wait on another thread");
    assert!(waited.1, "no event on the other thread");
    ca.write_all(b"z").unwrap();
    assert!(wait_for(&mut q, fa, State::READ), "no event back on this thread");
}
