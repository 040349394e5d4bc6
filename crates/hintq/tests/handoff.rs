//! Hand-off mode (`Queue::handoff`): a delivered descriptor stays quiet until re-armed, and a
//! re-arm from another thread reaches a `get_next_event` already blocked.

use hintq::{Backend, Event, Interest, Queue};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

const BACKENDS: [Backend; 5] =
    [Backend::Epoll, Backend::EpollEt, Backend::EpollOneshot, Backend::Select, Backend::Uring];

fn pair() -> (UnixStream, UnixStream) {
    let (a, b) = UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    (a, b)
}

#[test]
fn delivered_descriptor_stays_quiet_until_rearmed_from_another_thread() {
    for backend in BACKENDS {
        if !hintq_testkit::runs(&format!("hand-off on {backend}"), backend.probe()) {
            continue;
        }
        let mut q = Queue::new(backend).unwrap();
        let rearm = q.handoff().unwrap();
        let (watched, mut peer) = pair();
        q.declare(watched.as_fd(), Interest::READ).unwrap();
        peer.write_all(b"x").unwrap();
        let mut ev = [Event::default(); 4];
        assert_eq!(q.get_next_event(&mut ev, Some(Duration::from_secs(5))).unwrap(), 1, "{backend}");
        let got = ev[0];
        // Still readable (nothing read), and more arrives: not reported while deactivated
        // (edge-native backends report the new arrival: that is what `is_edge` says).
        peer.write_all(b"y").unwrap();
        let n = q.get_next_event(&mut ev, Some(Duration::from_millis(50))).unwrap();
        assert_eq!(n, usize::from(rearm.is_edge()), "{backend}: reported while deactivated");
        // A re-arm from another thread wakes the blocked wait (level and one-shot report the
        // unread data again; select needs the wake-up). Edge backends need a new arrival.
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            rearm.rearm(&got, Interest::READ).unwrap();
            if rearm.is_edge() {
                peer.write_all(b"z").unwrap();
            }
            peer
        });
        let start = Instant::now();
        let mut n = 0;
        while n == 0 && start.elapsed() < Duration::from_secs(5) {
            n = q.get_next_event(&mut ev, Some(Duration::from_secs(5))).unwrap();
        }
        assert_eq!(n, 1, "{backend}: re-arm did not reach the blocked wait");
        assert_eq!(ev[0].fd(), watched.as_raw_fd());
        drop(t.join().unwrap());
        q.close(watched.into()).unwrap();
    }
}

#[test]
fn handoff_refused_where_no_thread_safe_path_exists() {
    for backend in [Backend::Poll, Backend::SelectClassic, Backend::Gooch] {
        let mut q = Queue::new(backend).unwrap();
        assert_eq!(q.handoff().unwrap_err().kind(), std::io::ErrorKind::Unsupported, "{backend}");
    }
}
