//! A queue whose wait keeps failing stops its thread (with a message on standard error)
//! instead of spinning: the thread's connections are closed, and the failures are counted.
//! Alone in its test binary: it breaks the one epoll descriptor of the process.

use hintq::{Backend, State};
use hintq_patterns::{start, Config, Cx, Handler, Next, Pattern, PERSISTENT_WAIT_ERRORS};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Answers each read with `ok`.
struct Ok1;

impl Handler for Ok1 {
    type Conn = ();
    type Local = ();

    fn accept(&self, _fd: RawFd) -> Option<()> {
        Some(())
    }

    fn event(&self, _cx: &mut Cx<'_, ()>, _conn: &mut (), fd: RawFd, _state: State) -> Next {
        let mut buf = [0u8; 64];
        // SAFETY: (test) reads into, then writes from, live local buffers.
        match unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } {
            0 => Next::Close,
            n if n < 0 => Next::Read,
            _ => {
                // SAFETY: (test) two bytes from a static buffer.
                unsafe { libc::write(fd, b"ok".as_ptr().cast(), 2) };
                Next::Read
            }
        }
    }
}

/// The descriptors of this process that are epoll instances.
fn epoll_fds() -> Vec<RawFd> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let target = std::fs::read_link(e.path()).ok()?;
            (target.to_str()? == "anon_inode:[eventpoll]").then(|| e.file_name().to_str()?.parse().ok())?
        })
        .collect()
}

#[test]
fn a_wait_that_keeps_failing_stops_the_thread_and_closes_its_connections() {
    let cfg = Config::new(Pattern::Reactor, 1, Backend::Epoll, "127.0.0.1:0".parse().unwrap());
    let server = start(cfg, std::sync::Arc::new(Ok1)).unwrap();
    let mut client = TcpStream::connect(server.local_addr()).unwrap();
    client.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    client.write_all(b"hi").unwrap();
    let mut buf = [0u8; 2];
    client.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"ok", "the connection is served before the queue breaks");

    // Break the queue: its epoll descriptor now names /dev/null, so every epoll_wait fails
    // with EINVAL, for good.
    let epolls = epoll_fds();
    assert_eq!(epolls.len(), 1, "the reactor's queue is the only epoll instance: {epolls:?}");
    let null = std::fs::File::open("/dev/null").unwrap();
    // SAFETY: (test) replaces the queue's descriptor behind its back, which is the point.
    assert_eq!(unsafe { libc::dup2(null.as_raw_fd(), epolls[0]) }, epolls[0]);

    // The thread stops and closes its connections: the client sees the end of the stream
    // (a spinning thread would keep it open until shutdown, and the read would time out).
    let end = client.read(&mut buf);
    assert!(matches!(end, Ok(0)), "the connection was not closed by the stopping thread: {end:?}");
    let stats = server.shutdown();
    assert_eq!(stats[0].wait_errors, PERSISTENT_WAIT_ERRORS, "waits after the thread stopped: {stats:?}");
    assert!(stats[0].interest_errors >= 1, "the failed revoke of the closed connection is counted");
}
