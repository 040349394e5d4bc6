//! The open-file cache and the gathered sends of `hintq serve`, as a client sees them:
//! a file changed, replaced or deleted while cached is served as `--file-cache-valid`
//! promises (the old bytes within the period, the new state after it); a symlink retargeted
//! outside the root stops being served when the cached entry is revalidated through the
//! `openat2` fence; pipelined responses of every kind (bodies held in memory, `sendfile`d
//! files, 304, 404, ranges) stay in order and byte-exact on every backend; a client that
//! pipelines without reading is stopped being read, so the server's memory stays bounded.

mod support;
mod tools;

use hintq::Backend;
use hintq_patterns::Pattern;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{Client, Srv, FILE_VALID};

fn get(c: &mut Client, path: &str) -> (u16, Vec<u8>) {
    c.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    let r = c.response(false);
    (r.status, r.body)
}

/// Past the validity period of the test servers.
fn after_validity() {
    std::thread::sleep(FILE_VALID + Duration::from_millis(100));
}

/// Over the default hold limits (`HOLD_MAX` and `HOLD_MAX_RING`, 16 and 32 KiB): cached by
/// descriptor and sent with `sendfile`.
fn large(fill: u8) -> Vec<u8> {
    vec![fill; 100 * 1024]
}

#[test]
fn changed_replaced_and_deleted_files_show_after_the_validity_period() {
    let Some(srv) = Srv::start(Backend::Epoll, Pattern::Reactor, "cache changes") else { return };
    let root = srv.root.path();
    let mut c = srv.client();
    for (name, first, second, third) in [
        ("small.txt", b"one\n".to_vec(), b"two, longer\n".to_vec(), b"three\n".to_vec()),
        ("large.bin", large(b'1'), large(b'2'), large(b'3')),
    ] {
        let path = format!("/{name}");
        std::fs::write(root.join(name), &first).unwrap();
        assert_eq!(get(&mut c, &path), (200, first.clone()), "{name}");
        // Changed in place.
        std::fs::write(root.join(name), &second).unwrap();
        after_validity();
        assert_eq!(get(&mut c, &path), (200, second), "{name}: changed in place");
        // Replaced by another file (a new inode renamed over it, as editors and deploys do).
        std::fs::write(root.join("new.tmp"), &third).unwrap();
        std::fs::rename(root.join("new.tmp"), root.join(name)).unwrap();
        after_validity();
        assert_eq!(get(&mut c, &path), (200, third), "{name}: replaced");
        // Deleted.
        std::fs::remove_file(root.join(name)).unwrap();
        after_validity();
        assert_eq!(get(&mut c, &path).0, 404, "{name}: deleted");
        // And back: a deleted path is not remembered as missing.
        std::fs::write(root.join(name), &first).unwrap();
        assert_eq!(get(&mut c, &path), (200, first), "{name}: created again");
    }
    c.assert_kept("/a.txt", b"alpha\n");
}

#[test]
fn within_the_validity_period_the_cached_file_is_served_and_zero_turns_the_cache_off() {
    let long = Duration::from_secs(30);
    let Some(srv) =
        Srv::start_with(Backend::Epoll, Pattern::Reactor, "cache hit", |c| c.file_cache_valid = long)
    else {
        return;
    };
    let root = srv.root.path();
    std::fs::write(root.join("f.txt"), "cached\n").unwrap();
    let mut c = srv.client();
    let t0 = Instant::now();
    assert_eq!(get(&mut c, "/f.txt"), (200, b"cached\n".to_vec()));
    std::fs::write(root.join("f.txt"), "edited\n").unwrap();
    let r = get(&mut c, "/f.txt");
    if t0.elapsed() < long {
        assert_eq!(r, (200, b"cached\n".to_vec()), "served from the cache within its validity");
    }
    drop(srv);

    let Some(srv) = Srv::start_with(Backend::Epoll, Pattern::Reactor, "no cache", |c| {
        c.file_cache_valid = Duration::ZERO
    }) else {
        return;
    };
    let root = srv.root.path();
    std::fs::write(root.join("f.txt"), "first\n").unwrap();
    let mut c = srv.client();
    assert_eq!(get(&mut c, "/f.txt"), (200, b"first\n".to_vec()));
    std::fs::write(root.join("f.txt"), "second\n").unwrap();
    assert_eq!(get(&mut c, "/f.txt"), (200, b"second\n".to_vec()), "no cache: every request opens");
}

#[test]
fn the_hold_limit_decides_which_bodies_are_served_from_memory() {
    // Within a long validity period a file rewritten in place shows its old bytes if its body
    // is held, its new ones if it is sent from the descriptor: that tells the two apart.
    // Without a limit given, the backend's and pattern's: a 20 KiB file is held where the
    // ring sends the replies (io_uring, 32 KiB), not on epoll nor on io_uring in hand-off mode
    // (Leader/Followers) nor with ring sends turned off (`--uring-sends off`), where replies go
    // by `sendmsg` (16 KiB).
    let long = Duration::from_secs(30);
    let uring_sends = Backend::Uring.sends();
    let cases = [
        (true, Backend::Epoll, Pattern::Reactor, Some(16), [16, 17], [true, false]),
        (true, Backend::Epoll, Pattern::Reactor, Some(0), [16, 17], [false, false]),
        (true, Backend::Epoll, Pattern::Reactor, None, [20 * 1024, 40 * 1024], [false, false]),
        (true, Backend::Uring, Pattern::Reactor, Some(16), [16, 17], [true, false]),
        (true, Backend::Uring, Pattern::Reactor, Some(0), [16, 17], [false, false]),
        (true, Backend::Uring, Pattern::Reactor, None, [20 * 1024, 40 * 1024], [uring_sends, false]),
        // A held body over 64 KiB leaves in one of the ring's large send buffers.
        (true, Backend::Uring, Pattern::Reactor, Some(1 << 20), [300 * 1024, 2 << 20], [uring_sends, false]),
        (false, Backend::Uring, Pattern::Reactor, None, [20 * 1024, 40 * 1024], [false, false]),
        (true, Backend::Uring, Pattern::LeaderFollowers, None, [20 * 1024, 40 * 1024], [false, false]),
    ];
    for (sends, backend, pattern, hold, sizes, held) in cases {
        let tweak = |c: &mut hintq_serve::serve::ServeConfig| {
            c.file_cache_valid = long;
            c.file_cache_hold = hold;
        };
        let Some(srv) = Srv::start_tuned(backend, pattern, "cache hold", tweak, |p| p.uring_sends = sends)
        else {
            continue;
        };
        let root = srv.root.path();
        let files = [("h1.bin", sizes[0]), ("h2.bin", sizes[1])];
        for (name, len) in files {
            std::fs::write(root.join(name), vec![b'a'; len]).unwrap();
        }
        let mut c = srv.client();
        let t0 = Instant::now();
        for (name, len) in files {
            assert_eq!(get(&mut c, &format!("/{name}")), (200, vec![b'a'; len]), "{backend:?} {name}");
            std::fs::write(root.join(name), vec![b'b'; len]).unwrap();
        }
        for ((name, len), held) in files.into_iter().zip(held) {
            let r = get(&mut c, &format!("/{name}"));
            if t0.elapsed() < long {
                let fill = if held { b'a' } else { b'b' };
                assert_eq!(
                    r,
                    (200, vec![fill; len]),
                    "{backend:?}/{pattern:?} ring sends {sends}, hold {hold:?}: {name} held {held}"
                );
            }
        }
        c.assert_kept("/a.txt", b"alpha\n");
    }
}

#[test]
fn a_symlink_retargeted_outside_the_root_stops_being_served_at_revalidation() {
    let Some(srv) = Srv::start(Backend::Epoll, Pattern::Reactor, "cache symlink") else { return };
    let root = srv.root.path();
    std::fs::write(root.join("inside.txt"), "inside\n").unwrap();
    std::os::unix::fs::symlink("inside.txt", root.join("link")).unwrap();
    let mut c = srv.client();
    assert_eq!(get(&mut c, "/link"), (200, b"inside\n".to_vec()));
    // Retarget the link outside the root (atomically, as `ln -sfn` through a rename does).
    std::os::unix::fs::symlink(srv.root.dir.join("secret.txt"), root.join("link.tmp")).unwrap();
    std::fs::rename(root.join("link.tmp"), root.join("link")).unwrap();
    after_validity();
    for _ in 0..3 {
        let (status, body) = get(&mut c, "/link");
        assert_eq!(status, 403, "the fence refuses the new target");
        assert!(!String::from_utf8_lossy(&body).contains("SECRET"));
    }
    // The same with a file that was never cached: refused from the start.
    assert_eq!(get(&mut c, "/out").0, 403);
}

/// Every kind of response, pipelined in one write, comes back in order and byte-exact.
fn pipelined_in_order(srv: &Srv) {
    let root = srv.root.path();
    let mid: Vec<u8> = (0..40_000u32).map(|i| (i % 253) as u8).collect();
    std::fs::write(root.join("mid.bin"), &mid).unwrap();
    let big = support::big_bytes();
    let mut c = srv.client();
    // A first round fills the cache; the second is answered from it.
    for round in 0..2 {
        let tag = {
            c.send(b"HEAD /mid.bin HTTP/1.1\r\nHost: t\r\n\r\n");
            c.response(true).header("etag").unwrap().to_string()
        };
        let mut req = Vec::new();
        for _ in 0..3 {
            req.extend_from_slice(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
            req.extend_from_slice(b"GET /mid.bin HTTP/1.1\r\nHost: t\r\n\r\n");
            req.extend_from_slice(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=1000-70999\r\n\r\n");
            req.extend_from_slice(
                format!("GET /mid.bin HTTP/1.1\r\nHost: t\r\nIf-None-Match: {tag}\r\n\r\n").as_bytes(),
            );
            req.extend_from_slice(b"GET /missing HTTP/1.1\r\nHost: t\r\n\r\n");
            req.extend_from_slice(b"GET /mid.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=-10\r\n\r\n");
            req.extend_from_slice(b"GET /empty.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        }
        req.extend_from_slice(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
        c.send(&req);
        let combo = format!("{} round {round}", srv.combo());
        for _ in 0..3 {
            assert_eq!(c.response(false).body, b"alpha\n", "{combo}");
            assert!(c.response(false).body == mid, "{combo}: mid.bin whole");
            let r = c.response(false);
            assert_eq!(r.status, 206, "{combo}");
            assert!(r.body == big[1000..71000], "{combo}: range of a sendfile'd file");
            assert_eq!(c.response(true).status, 304, "{combo}");
            assert_eq!(c.response(false).status, 404, "{combo}");
            let r = c.response(false);
            assert_eq!(
                (r.status, r.body.as_slice()),
                (206, &mid[mid.len() - 10..]),
                "{combo}: range of a held body"
            );
            let r = c.response(false);
            assert_eq!((r.status, r.body.len()), (200, 0), "{combo}");
        }
        assert!(c.response(false).body == big, "{combo}: big.bin whole");
    }
    c.assert_kept("/a.txt", b"alpha\n");
}

#[test]
fn pipelined_responses_stay_in_order_with_gathered_sends_on_every_backend() {
    for b in Backend::ALL {
        for p in [Pattern::Reactor, Pattern::LeaderFollowers] {
            if let Some(srv) = Srv::start(b, p, "pipelined in order") {
                pipelined_in_order(&srv);
            }
        }
    }
}

/// A client that pipelines requests for a file held in memory and never reads: the server
/// stops reading it once its output queue is full, so what the client manages to write is
/// bounded by the kernel's socket buffers, not by the server's memory.
#[test]
fn a_client_that_stops_reading_is_stopped_being_read() {
    for b in [Backend::Epoll, Backend::Uring, Backend::Poll] {
        let Some(srv) = Srv::start(b, Pattern::Reactor, "stops reading") else { continue };
        let mut s = TcpStream::connect(srv.addr).unwrap();
        s.set_nonblocking(true).unwrap();
        let req = b"GET /1k.bin HTTP/1.1\r\nHost: t\r\n\r\n".repeat(1000);
        let mut written = 0usize;
        let mut stalled_since = Instant::now();
        let start = Instant::now();
        while stalled_since.elapsed() < Duration::from_millis(500)
            && start.elapsed() < Duration::from_secs(20)
        {
            match s.write(&req) {
                Ok(n) => {
                    written += n;
                    stalled_since = Instant::now();
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err(e) => panic!("{b}: {e}"),
            }
        }
        // Each 33-byte request asks for over 1 KiB: answering them all would mean 32 times
        // what was written. Socket buffers on loopback hold a few MiB at most.
        assert!(written < 64 << 20, "{b}: the client wrote {written} bytes without being stopped");
        assert!(start.elapsed() < Duration::from_secs(20), "{b}: the server kept reading");
        drop(s);
        srv.still_serves();
    }
}

/// On io_uring a reply leaves through the ring, and a send that succeeds is silent: a
/// connection idle after its reply must live to its idle timeout, not be taken for one whose
/// send made no progress (the send timeout, shorter here). And a reply followed by
/// `Connection: close` arrives whole before the close, whether it was sent from memory or
/// with `sendfile` after a send of the ring.
#[test]
fn replies_sent_by_the_ring_keep_the_timeouts_and_arrive_before_a_close() {
    for b in [Backend::Uring, Backend::Epoll] {
        let Some(srv) = Srv::start_with(b, Pattern::Reactor, "ring sends", |cfg| {
            cfg.send_timeout = Duration::from_millis(200);
            cfg.idle_timeout = Duration::from_millis(3000);
        }) else {
            continue;
        };
        let mut c = srv.client();
        assert_eq!(get(&mut c, "/a.txt"), (200, b"alpha\n".to_vec()), "{b}");
        // Several send timeouts and ticks pass: the connection is idle, not stuck.
        std::thread::sleep(Duration::from_millis(800));
        assert_eq!(get(&mut c, "/a.txt"), (200, b"alpha\n".to_vec()), "{b}: kept past the send timeout");
        let big = support::big_bytes();
        let mut req = b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n".to_vec();
        req.extend_from_slice(b"GET /big.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        c.send(&req);
        assert_eq!(c.response(false).body, b"alpha\n", "{b}");
        assert!(c.response(false).body == big, "{b}: the file after a ring send, whole");
        c.assert_closed();
    }
}
