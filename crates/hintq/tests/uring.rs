//! The io_uring rows of RELIABILITY.md (E11-E14): multishot polls that end, CQ overflow,
//! withdraw-then-close, and the epoll fallback when the kernel refuses io_uring.
//!
//! E11-E13 need io_uring and are skipped, saying why, when the kernel refuses it. E14 runs
//! everywhere: it re-executes this test binary in a child process in which io_uring is
//! refused (by a seccomp filter).

mod common;

use hintq::{Backend, Builder, Event, Interest, Queue};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// How long a test waits for readiness that must come; generous, to survive a loaded machine.
const PATIENCE: Duration = Duration::from_secs(5);

/// True when io_uring runs here; otherwise `case` is skipped, saying why (a failure under
/// `HINTQ_REQUIRE_TOOLS`: io_uring is a feature this kind of machine has).
fn uring_usable(case: &str) -> bool {
    hintq_testkit::runs(case, Backend::Uring.probe().map_err(|why| format!("io_uring unavailable: {why}")))
}

/// A queue on io_uring whose completion ring holds only `cq` entries.
fn tiny_ring(cq: u32) -> Queue {
    let q = Builder::new(Backend::Uring).uring_entries(cq).build().unwrap();
    assert_eq!(q.backend(), Backend::Uring);
    q
}

fn pairs(n: usize) -> Vec<(UnixStream, UnixStream)> {
    (0..n)
        .map(|_| {
            let (a, b) = UnixStream::pair().unwrap();
            a.set_nonblocking(true).unwrap();
            (a, b)
        })
        .collect()
}

/// Makes every pair's `a` end readable at once, then calls `get_next_event` with small
/// batches until each `a` was reported, draining each as it is; returns the ones never seen.
fn missing_after_burst(q: &mut Queue, pairs: &[(UnixStream, UnixStream)]) -> Vec<RawFd> {
    for (_, b) in pairs {
        (&*b).write_all(b"x").unwrap();
    }
    let mut missing: HashSet<RawFd> = pairs.iter().map(|(a, _)| a.as_raw_fd()).collect();
    let mut events = [Event::default(); 4];
    let deadline = Instant::now() + PATIENCE;
    while !missing.is_empty() && Instant::now() < deadline {
        let n = q.get_next_event(&mut events, Some(Duration::from_millis(100))).unwrap();
        for ev in &events[..n] {
            assert!(ev.state().is_readable(), "{ev:?}");
            if let Some((a, _)) = pairs.iter().find(|(a, _)| a.as_raw_fd() == ev.fd()) {
                common::drain(a.as_raw_fd());
                missing.remove(&ev.fd());
            }
        }
    }
    missing.into_iter().collect()
}

/// E11 / H11: with a 2-entry completion ring, a burst from 16 descriptors ends most
/// multishot polls (their CQEs arrive without `F_MORE`). Every later burst must still be
/// reported for every descriptor: the ended polls were re-armed.
#[test]
fn e11_ended_multishot_polls_keep_delivering() {
    if !uring_usable("e11") {
        return;
    }
    let mut q = tiny_ring(2);
    let pairs = pairs(16);
    for (a, _) in &pairs {
        q.declare_interest(a.as_fd(), Interest::READ).unwrap();
    }
    for round in 0..5 {
        let missing = missing_after_burst(&mut q, &pairs);
        assert!(missing.is_empty(), "round {round}: readiness lost for {missing:?}");
    }
}

/// E12 / H12: a 4-entry completion ring and 64 descriptors made readable at once: the
/// overflowed completions are flushed and every descriptor is reported.
#[test]
fn e12_cq_overflow_loses_nothing() {
    if !uring_usable("e12") {
        return;
    }
    let mut q = tiny_ring(4);
    let pairs = pairs(64);
    for (a, _) in &pairs {
        q.declare_interest(a.as_fd(), Interest::READ).unwrap();
    }
    let missing = missing_after_burst(&mut q, &pairs);
    assert!(missing.is_empty(), "never reported: {missing:?}");
}

/// A connected TCP pair over loopback: (accepted server side, client side).
fn tcp_pair() -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, _) = listener.accept().unwrap();
    server.set_nonblocking(true).unwrap();
    (server, client)
}

/// Waits for an event on `fd` and returns it, checking every event seen on the way with
/// `check`.
fn event_for(q: &mut Queue, fd: RawFd, mut check: impl FnMut(&Queue, &Event)) -> Option<Event> {
    let mut events = [Event::default(); 16];
    let deadline = Instant::now() + PATIENCE;
    while Instant::now() < deadline {
        let n = q.get_next_event(&mut events, Some(Duration::from_millis(100))).unwrap();
        for ev in &events[..n] {
            check(q, ev);
        }
        if let Some(ev) = events[..n].iter().find(|e| e.fd() == fd) {
            return Some(*ev);
        }
    }
    None
}

/// E13 / H13: `Queue::close` on a socket with an armed multishot poll really closes it (the
/// peer reads EOF within 1 s), and once the number is reused and declared again, no event
/// of the old registration is delivered, even when the old peer stirs.
#[test]
fn e13_close_cancels_the_poll_and_old_events_never_return() {
    if !uring_usable("e13") {
        return;
    }
    let mut q = Queue::new(Backend::Uring).unwrap();
    let (mut server, mut client) = tcp_pair();
    let fd = server.as_raw_fd();
    q.declare_interest(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    client.write_all(b"hello").unwrap();
    let old = event_for(&mut q, fd, |_, _| {}).expect("no event for the first socket");
    // Read it all: closing with unread data would send RST instead of FIN.
    assert_eq!(server.read(&mut [0u8; 16]).unwrap(), 5);
    let fd = server.as_raw_fd();

    q.close(server.into()).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut buf = [0u8; 16];
    match client.read(&mut buf) {
        Ok(0) => {}
        r => panic!("peer did not see FIN within 1 s after close: {r:?} (poll still holds the file?)"),
    }

    // Take descriptors until the closed number comes back (other tests run in parallel).
    let mut spare = Vec::new();
    let (reused, peer) = loop {
        let (a, b) = UnixStream::pair().unwrap();
        if a.as_raw_fd() == fd {
            break (a, b);
        }
        if b.as_raw_fd() == fd {
            break (b, a);
        }
        assert!(spare.len() < 400, "descriptor {fd} never reused");
        spare.push((a, b));
    };
    reused.set_nonblocking(true).unwrap();
    q.declare_interest(hintq_testkit::by_number(fd), Interest::READ).unwrap();
    // The old peer stirs: were the old poll alive, it would report its file now.
    let _ = client.write_all(b"late");
    let _ = client.shutdown(Shutdown::Both);
    (&peer).write_all(b"new").unwrap();

    let stale = |q: &Queue, ev: &Event| {
        if ev.fd() == fd {
            assert_ne!(ev.generation(), old.generation(), "event of the closed registration: {ev:?}");
            assert!(q.is_current(ev), "{ev:?}");
        }
    };
    let new = event_for(&mut q, fd, stale).expect("the reused descriptor was never reported");
    assert!(new.state().is_readable());
    // Whatever else is still coming for this number must belong to the new registration.
    let mut events = [Event::default(); 16];
    let n = q.get_next_event(&mut events, Some(Duration::from_millis(200))).unwrap();
    events[..n].iter().for_each(|ev| stale(&q, ev));
}

/// In the child: io_uring is refused, so asking for it gives a working epoll queue.
fn fallback_works() {
    let refused = Backend::Uring.probe().expect_err("io_uring_setup is refused here");
    assert_eq!(refused.kind(), hintq::ProbeErrorKind::Refused, "{refused}");
    assert_eq!(Backend::recommended(), Backend::Epoll);
    let mut q = Queue::new(Backend::Uring).unwrap();
    assert_eq!(q.backend(), Backend::Epoll);
    assert_eq!(Queue::new(Backend::Uring).unwrap().backend(), Backend::Epoll);
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    q.declare_interest(a.as_fd(), Interest::READ).unwrap();
    (&b).write_all(b"x").unwrap();
    let ev = event_for(&mut q, a.as_raw_fd(), |_, _| {}).expect("no event on the fallback queue");
    assert!(ev.state().is_readable());
}

/// The warning lines in a child's standard error: exactly one is expected, with the reason.
fn fallback_warning(stderr: &str, reason: &str) {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("io_uring unavailable")).collect();
    assert_eq!(lines.len(), 1, "expected one fallback warning, got:\n{stderr}");
    assert!(lines[0].contains(reason), "warning without the reason {reason:?}: {}", lines[0]);
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// Installs a seccomp filter on this thread making `io_uring_setup` fail with `EPERM`, as
/// Docker's default profile does.
fn deny_io_uring_setup() {
    let op = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let ret = libc::BPF_RET | libc::BPF_K;
    let mut filter = [
        op(load, 4), // seccomp_data.arch
        jeq(AUDIT_ARCH, 1, 0),
        op(ret, libc::SECCOMP_RET_ALLOW),
        op(load, 0), // seccomp_data.nr
        jeq(libc::SYS_io_uring_setup as u32, 0, 1),
        op(ret, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        op(ret, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() };
    // SAFETY: (test) prctl with the documented arguments; `prog` and `filter` outlive the call.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        let r =
            libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog);
        assert_eq!(r, 0, "seccomp: {}", std::io::Error::last_os_error());
    }
}

/// E14 / H14: with `io_uring_setup` refused by seccomp (`EPERM`), a queue asked for io_uring
/// runs on epoll, works, and the fallback is reported once with its reason.
#[test]
fn e14_seccomp_refusal_falls_back_to_epoll() {
    let parent = common::in_child("e14_seccomp_refusal_falls_back_to_epoll", &[], || {
        deny_io_uring_setup();
        fallback_works();
    });
    if let Some(stderr) = parent {
        fallback_warning(&stderr, "Operation not permitted");
    }
}

/// Regression (quirk i): closing a descriptor while its multishot poll is posting a wake-up
/// made `POLL_REMOVE` complete with `-EALREADY`, and `close` then waited forever for a last
/// CQE that never came. Found by `hintq load` against `python3 -m http.server`, which closes
/// every connection right after its response: connect, interest WRITE then READ, request,
/// close as soon as the body is in while the server's FIN is on its way. The race needs the
/// peer in another process (an in-process server thread never hit it); with that peer it hung
/// within a few hundred rounds every time before the fix.
#[test]
fn close_racing_a_wakeup_does_not_hang() {
    if !uring_usable("close_racing_a_wakeup_does_not_hang") {
        return;
    }
    let Some(server) = PythonHttpServer::start() else { return };
    let addr = server.addr;
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut q = Queue::new(Backend::Uring).unwrap();
        for _ in 0..400 {
            let c = TcpStream::connect(addr).unwrap();
            c.set_nonblocking(true).unwrap();
            q.declare(c.as_fd(), Interest::WRITE).unwrap();
            event_for(&mut q, c.as_raw_fd(), |_, _| {}).expect("writable");
            q.declare(c.as_fd(), Interest::READ).unwrap();
            (&c).write_all(b"GET /f HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut got = Vec::new();
            while !got.ends_with(b"ok") && event_for(&mut q, c.as_raw_fd(), |_, _| {}).is_some() {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = (&c).read(&mut buf) {
                    got.extend_from_slice(&buf[..n]);
                }
            }
            q.close(c.into()).unwrap();
        }
        done_tx.send(()).unwrap();
    });
    done_rx.recv_timeout(Duration::from_secs(120)).expect("close hung waiting for a cancelled poll");
}

/// `python3 -m http.server` serving a file `f` holding "ok", on a free loopback port; killed
/// (by its pid) on drop.
struct PythonHttpServer {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    dir: std::path::PathBuf,
}

impl PythonHttpServer {
    fn start() -> Option<PythonHttpServer> {
        let dir = std::env::temp_dir().join(format!("hintq-pyhttp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), "ok").unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let spawned = std::process::Command::new("python3")
            .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1"])
            .current_dir(&dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        let Ok(child) = spawned else {
            hintq_testkit::skip("close_racing_a_wakeup_does_not_hang", "python3 is not installed");
            return None;
        };
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let t = Instant::now();
        while TcpStream::connect(addr).is_err() {
            assert!(t.elapsed() < PATIENCE, "python3 -m http.server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(PythonHttpServer { child, addr, dir })
    }
}

impl Drop for PythonHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Quirk j: the ring runs completions cooperatively, so readiness caused by another thread
/// while the queue's thread runs user code (no system call, no interrupt) waits as task work.
/// A zero-timeout `get_next_event` must still report it: the backend sees the kernel's
/// `IORING_SQ_TASKRUN` flag and enters the ring. (Reaping the ring alone found nothing.)
#[test]
fn readiness_caused_while_the_thread_runs_user_code_is_reported_at_once() {
    if !uring_usable("readiness_caused_while_the_thread_runs_user_code_is_reported_at_once") {
        return;
    }
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Arc;
    let mut q = Queue::new(Backend::Uring).unwrap();
    let mut missed = 0;
    for _ in 0..50 {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        q.declare_interest(a.as_fd(), Interest::READ).unwrap();
        let written = Arc::new(AtomicBool::new(false));
        let w = Arc::clone(&written);
        let writer = std::thread::spawn(move || {
            (&b).write_all(b"x").unwrap();
            w.store(true, SeqCst);
            b
        });
        // Spin without a system call until the write has happened.
        let t = Instant::now();
        while !written.load(SeqCst) && t.elapsed() < PATIENCE {
            std::hint::spin_loop();
        }
        let mut events = [Event::default(); 4];
        let n = q.get_next_event(&mut events, Some(Duration::ZERO)).unwrap();
        if !events[..n].iter().any(|e| e.fd() == a.as_raw_fd()) {
            missed += 1;
        }
        let _b = writer.join().unwrap();
        q.declare_interest(a.as_fd(), Interest::empty()).unwrap();
    }
    assert_eq!(missed, 0, "readiness already caused was not reported by a zero-timeout wait");
}

/// Coalescing (`Builder::coalesce`): a wait whose event is already there sleeps through the
/// window for a batch and returns with it; an event that comes after the window is returned
/// at once, not held for a window of its own; the caller's timeout still ends a wait that
/// found nothing; a queue without it returns the pending event at once.
#[test]
fn coalescing_holds_a_wait_for_its_window_and_no_longer() {
    if !uring_usable("coalescing_holds_a_wait_for_its_window_and_no_longer") {
        return;
    }
    // Long enough that a loaded machine's scheduling delays (tens of ms) cannot pass for it.
    let window = Duration::from_secs(1);
    let mut q = Builder::new(Backend::Uring).coalesce(window).build().unwrap();
    let kernel = q.coalescing().map(drop).ok_or("this kernel has no minimum wait for io_uring (Linux 6.12)");
    if !hintq_testkit::runs("coalescing_holds_a_wait_for_its_window_and_no_longer", kernel) {
        return;
    }
    assert_eq!(q.coalescing(), Some(window));
    assert_eq!(Queue::new(Backend::Uring).unwrap().coalescing(), None, "off unless asked for");
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    q.declare_interest(a.as_fd(), Interest::READ).unwrap();
    let mut events = [Event::default(); 4];

    // Nothing comes: the caller's timeout, shorter than the window, ends the wait.
    let t = Instant::now();
    assert_eq!(q.get_next_event(&mut events, Some(Duration::from_millis(50))).unwrap(), 0);
    assert!(t.elapsed() < window / 2, "timeout not kept: {:?}", t.elapsed());

    // Ready before the wait: held for the window (a batch may follow), then returned.
    (&b).write_all(b"x").unwrap();
    let t = Instant::now();
    let n = q.get_next_event(&mut events, Some(PATIENCE)).unwrap();
    let held = t.elapsed();
    assert_eq!((n, events[0].fd()), (1, a.as_raw_fd()));
    assert!(held >= window - Duration::from_millis(50) && held < PATIENCE, "held {held:?}");
    common::drain(a.as_raw_fd());

    // Comes after the window: returned as it comes, not after a window counted from it.
    let late = window + window / 2;
    let writer = std::thread::spawn(move || {
        std::thread::sleep(late);
        (&b).write_all(b"y").unwrap();
        (b, Instant::now())
    });
    let n = q.get_next_event(&mut events, Some(PATIENCE)).unwrap();
    let returned = Instant::now();
    let (b, written) = writer.join().unwrap();
    assert_eq!((n, events[0].fd()), (1, a.as_raw_fd()));
    let after = returned.saturating_duration_since(written);
    assert!(after < window / 2, "returned {after:?} after the write");
    common::drain(a.as_raw_fd());

    // Without coalescing, the same pending event is returned at once.
    let mut plain = Queue::new(Backend::Uring).unwrap();
    plain.declare_interest(a.as_fd(), Interest::READ).unwrap();
    (&b).write_all(b"z").unwrap();
    let t = Instant::now();
    assert_eq!(plain.get_next_event(&mut events, Some(PATIENCE)).unwrap(), 1);
    assert!(t.elapsed() < window / 2, "a plain wait was held: {:?}", t.elapsed());
}
