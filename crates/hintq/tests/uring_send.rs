//! Sends made by the ring ([`RingIo::send`]): bytes arrive whole and in order, a send in
//! flight is reported when asked, a failed one always, and revoking interest cancels a send
//! stuck on a full socket so that the connection really closes.
//!
//! Needs io_uring; skipped, saying why, when the kernel refuses it.

mod common;

use common::{tcp, PATIENCE};

use hintq::{Backend, Event, Interest, Queue, SendError, State};
use std::io::{ErrorKind, Read};
use std::os::fd::RawFd;
use std::time::Duration;

/// A queue that sends through the ring; `None` (after saying why) when there is none here.
fn ring_queue(case: &str) -> Option<Queue> {
    let mut q = common::ring_queue(case)?;
    assert!(q.ring_io().is_some_and(|r| r.can_send()), "io_uring runs here but the queue cannot send");
    Some(q)
}

/// Waits for an event of `fd` whose state has `want`; the events of other descriptors are
/// dropped.
fn wait_for(q: &mut Queue, fd: RawFd, want: State) -> Option<Event> {
    common::wait_event(q, fd, want, PATIENCE)
}

#[test]
fn sends_arrive_whole_and_in_order() {
    let Some(mut q) = ring_queue("sends_arrive_whole_and_in_order") else { return };
    let (sock, fd, mut client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    // 200 sends of 5,000 bytes each, numbered: each waits for the one before (one in
    // flight per descriptor), so the order is the application's.
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        client.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut buf = [0u8; 65536];
        while all.len() < 200 * 5000 {
            let n = client.read(&mut buf).unwrap();
            assert!(n > 0, "connection closed after {} bytes", all.len());
            all.extend_from_slice(&buf[..n]);
        }
        all
    });
    for i in 0..200u32 {
        let mut buf = q.ring_io().map(|mut r| r.send_buffer()).unwrap_or_default();
        assert!(buf.is_empty());
        buf.extend((0..5000u32).map(|k| (i.wrapping_mul(7) + k) as u8));
        let mut buf = Some(buf);
        loop {
            match q.ring_io().expect("a ring").send(fd, buf.take().unwrap()).map_err(SendError::into_parts) {
                Ok(()) => break,
                Err((e, b)) if e.kind() == ErrorKind::WouldBlock => {
                    buf = Some(b);
                    assert!(
                        q.ring_io().is_some_and(|mut r| r.sending(fd)),
                        "WouldBlock with no send in flight"
                    );
                    // Asked: the completion is reported.
                    let ev = wait_for(&mut q, fd, State::SENT).expect("the send in flight was not reported");
                    assert!(
                        !ev.state().contains(State::ERR),
                        "send failed: {:?}",
                        q.ring_io().and_then(|mut r| r.send_error(fd))
                    );
                }
                Err((e, _)) => panic!("send {i}: {e}"),
            }
        }
    }
    while q.ring_io().is_some_and(|mut r| r.sending(fd)) {
        wait_for(&mut q, fd, State::SENT).expect("the last send was not reported");
    }
    let all = reader.join().unwrap();
    for i in 0..200u32 {
        let got = &all[i as usize * 5000..(i as usize + 1) * 5000];
        assert!(
            got.iter().enumerate().all(|(k, &b)| b == (i.wrapping_mul(7) + k as u32) as u8),
            "send {i} garbled"
        );
    }
    assert!(q.ring_io().and_then(|mut r| r.send_error(fd)).is_none());
    q.close(sock).unwrap();
}

#[test]
fn a_send_that_succeeds_is_silent_unless_asked() {
    let Some(mut q) = ring_queue("a_send_that_succeeds_is_silent_unless_asked") else { return };
    let (sock, fd, mut client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    q.ring_io().expect("a ring").send(fd, b"hello".to_vec()).unwrap();
    // The wait submits it; nothing is reported for it.
    let mut evs = [Event::default(); 4];
    let n = q.get_next_event(&mut evs, Some(Duration::from_millis(100))).unwrap();
    assert!(evs[..n].iter().all(|e| !e.state().contains(State::SENT)), "unasked report: {:?}", &evs[..n]);
    let mut got = [0u8; 5];
    client.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"hello");
    assert!(!q.ring_io().is_some_and(|mut r| r.sending(fd)));
    // Its buffer is kept for the next send.
    assert!(q.ring_io().map(|mut r| r.send_buffer()).unwrap_or_default().capacity() >= 5);
    q.close(sock).unwrap();
}

#[test]
fn a_failed_send_is_reported_with_its_error() {
    let Some(mut q) = ring_queue("a_failed_send_is_reported_with_its_error") else { return };
    let (sock, fd, client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    // The peer resets the connection (SO_LINGER 0), so the send fails.
    common::reset(client);
    std::thread::sleep(Duration::from_millis(20));
    // Several sends: the first may be taken by the kernel before the reset is seen.
    let mut failed = None;
    for _ in 0..20 {
        match q.ring_io().expect("a ring").send(fd, vec![7u8; 1000]).map_err(SendError::into_parts) {
            Ok(()) => {}
            Err((e, _)) if e.kind() == ErrorKind::WouldBlock => {}
            Err((e, _)) => {
                failed = Some(e);
                break;
            }
        }
        if let Some(ev) = wait_for(&mut q, fd, State::SENT) {
            assert!(ev.state().contains(State::ERR));
            failed = Some(
                q.ring_io().and_then(|mut r| r.send_error(fd)).expect("a reported failure has an error"),
            );
            break;
        }
    }
    let e = failed.expect("sends to a reset peer never failed");
    assert!(
        matches!(e.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET)),
        "unexpected error for a reset peer: {e}"
    );
    q.close(sock).unwrap();
}

#[test]
fn revoking_cancels_a_send_stuck_on_a_full_socket() {
    let Some(mut q) = ring_queue("revoking_cancels_a_send_stuck_on_a_full_socket") else { return };
    let (sock, fd, mut client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    // 64 MiB: far more than the socket buffers hold, and the client does not read.
    q.ring_io().expect("a ring").send(fd, vec![1u8; 64 << 20]).unwrap();
    let mut evs = [Event::default(); 4];
    q.get_next_event(&mut evs, Some(Duration::from_millis(50))).unwrap();
    assert!(
        q.ring_io().is_some_and(|mut r| r.sending(fd)),
        "a 64 MiB send to a peer that does not read completed"
    );
    // Revoke, then close: the send is cancelled, so the socket really closes and the client
    // reads end-of-file after what was sent.
    q.close(sock).unwrap();
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0usize;
    loop {
        match client.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("no end-of-file after {total} bytes: {e}"),
        }
    }
    assert!(total < 64 << 20, "the whole send arrived although it was cancelled");
}

#[test]
fn queues_that_cannot_send_say_so_and_give_the_buffer_back() {
    // Backends without a ring have no way to the ring's I/O at all.
    for backend in [Backend::Epoll, Backend::Poll] {
        let mut q = Queue::new(backend).unwrap();
        assert!(q.ring_io().is_none(), "{backend} has a ring's I/O");
    }
    // A descriptor the queue does not watch.
    if let Some(mut q) = ring_queue("send_to_an_unwatched_descriptor") {
        let (sock, fd, _client) = tcp();
        let (e, _) = q.ring_io().expect("a ring").send(fd, b"abc".to_vec()).unwrap_err().into_parts();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        drop(sock);
    }
}

/// The descriptors of this process that are io_uring instances.
fn rings() -> Vec<RawFd> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let link = std::fs::read_link(e.path()).ok()?;
            (link.to_string_lossy() == "anon_inode:[io_uring]")
                .then(|| e.file_name().to_str()?.parse().ok())?
        })
        .collect()
}

/// Drops a queue (on this thread, or on another when `elsewhere`) while a 64 KiB send of
/// `S` bytes is stuck behind socket buffers filled with `F` bytes, then reuses the freed
/// memory for buffers of `0xEE` and lets the peer read everything. The peer must receive the
/// `F`s, then at most the `S`s, and nothing else. Returns the bytes of the send that arrived.
///
/// To see what the kernel does with the send after the drop, the test holds a duplicate of
/// the ring's descriptor, as a child forked meanwhile would: the ring's teardown then never
/// cancels the send, and entering the duplicate runs the send's deferred work (the peer's
/// reads make the socket writable). A send the drop did not cancel is so carried out
/// deterministically, from whatever its buffer's memory holds by then.
fn drop_with_a_send_stuck(case: &str, elsewhere: bool) -> Option<usize> {
    // The probe's rings are gone once it answered (it answers once per process).
    let _ = Backend::Uring.probe();
    let before = rings();
    let mut q = ring_queue(case)?;
    if elsewhere {
        // A one-thread ring, which only its owner thread (this one) may enter.
        drop(q);
        q = hintq::Builder::new(Backend::Uring).uring_defer(true).build().unwrap();
    }
    let (sock, fd, mut client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    let ring = *rings().iter().find(|r| !before.contains(r)).expect("the queue's ring among the descriptors");
    // The socket buffers, filled: the send below cannot go.
    let mut filled = 0usize;
    loop {
        // SAFETY: (test) a live buffer and its length.
        let n = unsafe { libc::send(fd, [b'F'; 4096].as_ptr().cast(), 4096, libc::MSG_NOSIGNAL) };
        if n < 0 {
            assert_eq!(std::io::Error::last_os_error().kind(), ErrorKind::WouldBlock);
            break;
        }
        filled += n as usize;
    }
    const LEN: usize = 64 << 10;
    q.ring_io().expect("a ring").send(fd, vec![b'S'; LEN]).unwrap();
    let mut evs = [Event::default(); 4];
    q.get_next_event(&mut evs, Some(Duration::ZERO)).unwrap();
    assert!(q.ring_io().is_some_and(|mut r| r.sending(fd)), "a send to full socket buffers completed");
    // SAFETY: (test) duplicates a descriptor this process holds.
    let held = unsafe { libc::dup(ring) };
    assert!(held >= 0, "dup: {}", std::io::Error::last_os_error());
    if elsewhere {
        // Another thread's wait is refused while the send is in flight exactly when the ring
        // is a one-thread ring; the kernel may not make those (before 6.1).
        let one_thread = std::thread::spawn(move || {
            let r = q.get_next_event(&mut [Event::default(); 4], Some(Duration::from_millis(10)));
            drop(q);
            matches!(r, Err(e) if e.kind() == ErrorKind::ResourceBusy)
        })
        .join()
        .unwrap();
        if !one_thread {
            hintq_testkit::skip(case, "the kernel made no one-thread ring (IORING_SETUP_DEFER_TASKRUN)");
            // SAFETY: (test) our duplicate, closed once.
            unsafe { libc::close(held) };
            return None;
        }
    } else {
        drop(q);
    }
    // The freed memory reused: blocks of the send buffer's size, filled with a marker.
    let reuse: Vec<Vec<u8>> = (0..256).map(|_| vec![0xEE; LEN]).collect();
    let reader = std::thread::spawn(move || {
        client.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(n @ 1..) = client.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    // The send's deferred work runs on the ring's owner thread (this one) when it enters.
    while !reader.is_finished() {
        // SAFETY: (test) io_uring_enter on a ring descriptor we hold, submitting nothing and
        // waiting for nothing (GETEVENTS with no minimum): it only runs the ring's work.
        unsafe { libc::syscall(libc::SYS_io_uring_enter, held, 0, 0, 1u32, std::ptr::null::<u8>(), 0usize) };
        std::thread::sleep(Duration::from_millis(5));
    }
    let got = reader.join().unwrap();
    drop(reuse);
    let foreign = got.iter().filter(|&&b| b != b'F' && b != b'S').count();
    assert_eq!(foreign, 0, "the peer received {foreign} bytes the program never sent");
    let fs = got.iter().take_while(|&&b| b == b'F').count();
    assert_eq!(fs, filled, "the filler did not arrive whole and first");
    assert!(got.len() - fs <= LEN, "more of the send arrived than it held");
    // SAFETY: (test) our duplicate, closed once.
    unsafe { libc::close(held) };
    drop(sock);
    Some(got.len() - fs)
}

#[test]
fn dropping_a_queue_cancels_its_send_before_the_buffer_is_freed() {
    let case = "dropping_a_queue_cancels_its_send_before_the_buffer_is_freed";
    common::in_child(case, &[], || {
        if drop_with_a_send_stuck(case, false).is_some() {
            assert_eq!(hintq::leaked_buffers(), 0, "the send was left to the kernel, not cancelled");
        }
    });
}

#[test]
fn a_send_a_drop_cannot_cancel_keeps_its_buffer() {
    let case = "a_send_a_drop_cannot_cancel_keeps_its_buffer";
    common::in_child(case, &[], || {
        // Dropped on another thread, a one-thread ring cannot be entered to cancel: the
        // buffer is left allocated, counted, and sent intact.
        if let Some(sent) = drop_with_a_send_stuck(case, true) {
            assert!(hintq::leaked_buffers() >= 1, "the send's buffer was not kept");
            assert_eq!(sent, 64 << 10, "the leaked send did not complete from its intact buffer");
        }
    });
}

/// The builder turns the ring's sends and receives off (they were environment variables read
/// inside the library): such a queue cannot send, and a registration that asks for receives
/// is read by the application.
#[test]
fn a_builder_turns_ring_sends_and_receives_off() {
    let case = "a_builder_turns_ring_sends_and_receives_off";
    let Some(_) = ring_queue(case) else { return };
    let mut q = hintq::Builder::new(Backend::Uring).uring_sends(false).uring_receives(false).build().unwrap();
    assert_eq!(q.backend(), Backend::Uring);
    assert!(!q.ring_io().is_some_and(|r| r.can_send()), "sends off, yet the queue can send");
    let (sock, fd, mut client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ | Interest::RECEIVE).unwrap();
    let (e, buf) = q.ring_io().expect("a ring").send(fd, b"abc".to_vec()).unwrap_err().into_parts();
    assert_eq!((e.kind(), buf.as_slice()), (ErrorKind::Unsupported, &b"abc"[..]));
    std::io::Write::write_all(&mut client, b"ping").unwrap();
    wait_for(&mut q, fd, State::READ).expect("no readable event");
    assert!(!q.ring_io().is_some_and(|r| r.receiving(fd)), "receives off, yet the ring receives");
    assert!(
        q.ring_io().and_then(|mut r| r.take_received(fd, &mut Vec::new(), 64)).is_none(),
        "receives off, yet the ring took the bytes"
    );
    assert_eq!(common::drain(fd), 4, "the bytes are not in the socket for the application");
    q.close(sock).unwrap();
}

/// A one-thread ring (`uring_defer(true)`) whose queue moves to another thread is replaced
/// by a new ring; the old ring, which only its owner thread could enter to cancel its
/// multishot receive, must not be left a receive that writes into freed buffers. The test
/// holds a duplicate of the old ring's descriptor (as a child forked meanwhile would), drops
/// the moved queue, reuses the freed memory for blocks of `0xEE`, sends bytes to the socket
/// and enters the duplicate from the old owner thread, which runs the receive: no block may
/// change, and the old ring's buffers must be counted as leaked.
#[test]
fn a_queue_moved_off_its_one_thread_ring_keeps_that_rings_receive_buffers() {
    let case = "a_queue_moved_off_its_one_thread_ring_keeps_that_rings_receive_buffers";
    common::in_child(case, &[], || {
        // The probe's rings are gone once it answered (it answers once per process).
        let Some(probe_q) = ring_queue(case) else { return };
        drop(probe_q);
        let before = rings();
        let mut q = hintq::Builder::new(Backend::Uring).uring_defer(true).build().unwrap();
        let (sock, fd, mut client) = tcp();
        q.declare(hintq_testkit::by_number(fd), Interest::READ | Interest::RECEIVE).unwrap();
        let mut evs = [Event::default(); 4];
        // This thread enters first (a wait that enters the kernel): it owns a one-thread ring
        // from now on.
        q.get_next_event(&mut evs, Some(Duration::from_millis(10))).unwrap();
        if !q.ring_io().is_some_and(|r| r.receiving(fd)) {
            hintq_testkit::skip(case, "the ring does not receive here");
            return;
        }
        let old =
            *rings().iter().find(|r| !before.contains(r)).expect("the queue's ring among the descriptors");
        // SAFETY: (test) duplicates a descriptor this process holds.
        let held = unsafe { libc::dup(old) };
        assert!(held >= 0, "dup: {}", std::io::Error::last_os_error());
        let replaced = std::thread::spawn(move || {
            q.get_next_event(&mut [Event::default(); 4], Some(Duration::from_millis(10))).unwrap();
            let now = rings();
            drop(q);
            now.iter().any(|r| !before.contains(r) && *r != old && *r != held)
        })
        .join()
        .unwrap();
        if !replaced {
            hintq_testkit::skip(case, "the kernel made no one-thread ring (IORING_SETUP_DEFER_TASKRUN)");
            return;
        }
        // The freed memory reused: blocks of the receive buffers' size (mapped as the
        // allocator maps blocks that large, so into the hole their unmapping left), filled
        // with a marker.
        const BLOCK: usize = 512 << 10;
        let reuse: Vec<&mut [u8]> = (0..16)
            .map(|_| {
                // SAFETY: (test) a fresh private anonymous mapping, never unmapped: the
                // slice lives as long as the process.
                unsafe {
                    let p = libc::mmap(
                        std::ptr::null_mut(),
                        BLOCK,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    );
                    assert_ne!(p, libc::MAP_FAILED, "mmap: {}", std::io::Error::last_os_error());
                    let b = std::slice::from_raw_parts_mut(p.cast::<u8>(), BLOCK);
                    b.fill(0xEE);
                    b
                }
            })
            .collect();
        std::io::Write::write_all(&mut client, &[b'R'; 8192]).unwrap();
        // The receive's deferred work runs on the old ring's owner thread (this one) when it
        // enters the duplicate.
        for _ in 0..20 {
            // SAFETY: (test) io_uring_enter on a ring descriptor we hold, submitting nothing
            // and waiting for nothing (GETEVENTS with no minimum): it only runs the ring's work.
            unsafe {
                libc::syscall(libc::SYS_io_uring_enter, held, 0, 0, 1u32, std::ptr::null::<u8>(), 0usize)
            };
            std::thread::sleep(Duration::from_millis(5));
        }
        let written = reuse.iter().map(|b| b.iter().filter(|&&x| x != 0xEE).count()).sum::<usize>();
        assert_eq!(written, 0, "the old ring wrote {written} received bytes into freed memory");
        assert!(hintq::leaked_buffers() >= 1, "the old ring's receive buffers were freed, not kept");
        // SAFETY: (test) our duplicate, closed once.
        unsafe { libc::close(held) };
        drop(sock);
    });
}

/// Sends `len` bytes of `fill` on each of `fds` through the ring at once, from buffers of
/// [`hintq::RingIo::send_buffer_for`], and waits until every one completed; `readers` drain
/// the peers.
fn send_large_at_once(q: &mut Queue, fds: &[RawFd], len: usize, fill: u8) {
    for &fd in fds {
        let mut buf = q.ring_io().expect("a ring").send_buffer_for(len);
        assert!(buf.is_empty() && buf.capacity() >= len);
        buf.resize(len, fill);
        q.ring_io().expect("a ring").send(fd, buf).unwrap();
    }
    for &fd in fds {
        while q.ring_io().is_some_and(|mut r| r.sending(fd)) {
            let ev = wait_for(q, fd, State::SENT).expect("a large send was not reported");
            assert!(!ev.state().contains(State::ERR), "send failed");
        }
    }
}

/// Reads `len` bytes of `fill` from `client`, on a thread.
fn drain(mut client: std::net::TcpStream, len: usize, fill: u8) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        client.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut got = vec![0u8; len];
        client.read_exact(&mut got).unwrap();
        assert!(got.iter().all(|&b| b == fill), "garbled");
    })
}

/// Replies over 64 KiB reuse the buffer of an earlier one of about their size instead of
/// allocating one per send (a 256 KiB reply, 20 times: one buffer made); what the ring keeps
/// of them is bounded (40 replies of 1 MiB at once: 16 MiB kept at most, the rest freed).
#[test]
fn large_send_buffers_are_reused_and_bounded() {
    let Some(mut q) = ring_queue("large_send_buffers_are_reused_and_bounded") else { return };
    const LEN: usize = 256 << 10;
    let (sock, fd, client) = tcp();
    q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    let reader = drain(client, 20 * LEN, 3);
    for _ in 0..20 {
        send_large_at_once(&mut q, &[fd], LEN, 3);
    }
    reader.join().unwrap();
    let b = q.ring_io().expect("a ring").send_buffers();
    assert_eq!((b.made, b.kept), (1, 1), "one 256 KiB buffer, reused: {b:?}");
    assert!(b.kept_bytes >= LEN, "{b:?}");
    // A smaller large reply takes the same buffer; a small one does not.
    assert!(q.ring_io().expect("a ring").send_buffer().capacity() < LEN);
    let mid = q.ring_io().expect("a ring").send_buffer_for(100 << 10);
    assert!(mid.capacity() >= LEN && q.ring_io().expect("a ring").send_buffers().kept == 0);
    drop(mid);
    q.close(sock).unwrap();

    const BIG: usize = 1 << 20;
    let conns: Vec<_> = (0..40).map(|_| tcp()).collect();
    let fds: Vec<RawFd> = conns.iter().map(|c| c.1).collect();
    for &fd in &fds {
        q.declare(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    }
    let mut socks = Vec::new();
    let mut readers = Vec::new();
    for (sock, _, client) in conns {
        socks.push(sock);
        readers.push(drain(client, BIG, 9));
    }
    send_large_at_once(&mut q, &fds, BIG, 9);
    readers.into_iter().for_each(|r| r.join().unwrap());
    let b = q.ring_io().expect("a ring").send_buffers();
    assert!(b.kept_bytes <= 16 << 20 && b.kept <= 16 && b.kept >= 8, "{b:?}");
    assert_eq!(b.made, 1 + 40, "{b:?}");
    for sock in socks {
        q.close(sock).unwrap();
    }
}

/// Many connections receiving at once share the ring's few large receive buffers (consumed
/// incrementally where the kernel can): 24 senders of 200 KB each in 1000-byte writes, all
/// interleaved, and every connection gets its own bytes, whole and in order.
#[test]
fn many_connections_receive_through_shared_buffers_byte_exact() {
    let Some(mut q) = ring_queue("many_connections_receive_through_shared_buffers_byte_exact") else {
        return;
    };
    const LEN: usize = 200 * 1000;
    let conns: Vec<_> = (0..24).map(|_| tcp()).collect();
    let mut writers = Vec::new();
    let mut socks = Vec::new();
    for (i, (sock, fd, mut client)) in conns.into_iter().enumerate() {
        q.declare(hintq_testkit::by_number(fd), Interest::READ | Interest::RECEIVE).unwrap();
        socks.push((sock, fd, Vec::new()));
        writers.push(std::thread::spawn(move || {
            use std::io::Write;
            let bytes: Vec<u8> = (0..LEN).map(|k| (k * 7 + i * 13) as u8).collect();
            for chunk in bytes.chunks(1000) {
                client.write_all(chunk).unwrap();
            }
            client
        }));
    }
    assert!(
        q.ring_io().is_some_and(|r| r.receiving(socks[0].1)),
        "io_uring runs here but the queue does not receive"
    );
    let deadline = std::time::Instant::now() + 4 * PATIENCE;
    let mut evs = [Event::default(); 64];
    while socks.iter().any(|s| s.2.len() < LEN) {
        assert!(std::time::Instant::now() < deadline, "not all bytes came");
        let n = q.get_next_event(&mut evs, Some(Duration::from_millis(100))).unwrap();
        for ev in &evs[..n] {
            let Some(s) = socks.iter_mut().find(|s| s.1 == ev.fd()) else { continue };
            match q.ring_io().and_then(|mut r| r.take_received(s.1, &mut s.2, usize::MAX)) {
                Some(Ok(n)) => assert!(n > 0, "end of stream before the bytes"),
                Some(Err(e)) if e.kind() == ErrorKind::WouldBlock => {}
                other => panic!("take: {other:?}"),
            }
        }
    }
    let clients: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    for (i, (sock, _, got)) in socks.into_iter().enumerate() {
        assert_eq!(got.len(), LEN);
        assert!(got.iter().enumerate().all(|(k, &b)| b == (k * 7 + i * 13) as u8), "connection {i} garbled");
        q.close(sock).unwrap();
    }
    drop(clients);
}
