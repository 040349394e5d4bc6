//! Test support: a temporary root, an in-process server per backend × pattern, and a raw
//! client that reads responses by their framing and tells a closed connection from an open one.
#![allow(dead_code)]

use hintq::Backend;
use hintq_patterns::{Config, Pattern};
use hintq_serve::serve::{self, ServeConfig, Serving};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const IDLE: Duration = Duration::from_millis(1000);
pub const HEADER: Duration = Duration::from_millis(700);
pub const SEND: Duration = Duration::from_secs(2);
/// The open-file cache's validity period in tests: a changed file shows after it.
pub const FILE_VALID: Duration = Duration::from_millis(200);

/// The bytes of `big.bin` (4 MiB): a pattern that shows misplaced ranges.
pub fn big_bytes() -> Vec<u8> {
    (0..4 << 20).map(|i: u32| (i % 251) as u8).collect()
}

/// A temporary directory: `<dir>/root` is served, `<dir>/secret.txt` lies outside it.
pub struct Root {
    pub dir: PathBuf,
}

impl Root {
    pub fn new() -> Root {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "hintq-serve-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("noindex")).unwrap();
        std::fs::create_dir_all(root.join("evil.com")).unwrap();
        std::fs::create_dir_all(root.join("a dir")).unwrap();
        std::fs::create_dir_all(root.join("idxdir/index.html")).unwrap();
        std::fs::write(dir.join("secret.txt"), "SECRET outside the root\n").unwrap();
        std::fs::write(root.join("index.html"), "<h1>hello</h1>\n").unwrap();
        std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
        std::fs::write(root.join("a b.txt"), "space\n").unwrap();
        std::fs::write(root.join("1k.bin"), vec![b'x'; 1024]).unwrap();
        std::fs::write(root.join("big.bin"), big_bytes()).unwrap();
        std::fs::write(root.join("sub/index.html"), "<p>sub</p>\n").unwrap();
        std::fs::write(root.join("sub/style.css"), "p{}\n").unwrap();
        std::fs::write(root.join("evil.com/index.html"), "local\n").unwrap();
        std::fs::write(root.join("a dir/index.html"), "spaced\n").unwrap();
        std::fs::write(root.join("empty.txt"), "").unwrap();
        std::os::unix::fs::symlink(dir.join("secret.txt"), root.join("out")).unwrap();
        std::os::unix::fs::symlink("../../secret.txt", root.join("sub/up")).unwrap();
        std::os::unix::fs::symlink("a.txt", root.join("in")).unwrap();
        Root { dir }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join("root")
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server on 127.0.0.1:0 with short timeouts, and its root.
pub struct Srv {
    pub backend: Backend,
    pub pattern: Pattern,
    pub serving: Option<Serving>,
    pub addr: SocketAddr,
    pub root: Root,
}

impl Srv {
    /// `None` (with a printed reason) when this kernel or pattern cannot run `backend`.
    pub fn start(backend: Backend, pattern: Pattern, case: &str) -> Option<Srv> {
        Srv::start_with(backend, pattern, case, |_| {})
    }

    pub fn start_with(
        backend: Backend,
        pattern: Pattern,
        case: &str,
        tweak: impl FnOnce(&mut ServeConfig),
    ) -> Option<Srv> {
        if !hintq_testkit::runs(&format!("{case} on {backend}/{pattern}"), backend.probe()) {
            return None;
        }
        let root = Root::new();
        let mut cfg = ServeConfig::new(root.path());
        cfg.idle_timeout = IDLE;
        cfg.header_timeout = HEADER;
        cfg.send_timeout = SEND;
        cfg.file_cache_valid = FILE_VALID;
        tweak(&mut cfg);
        let mut pc = Config::new(pattern, 2, backend, "127.0.0.1:0".parse().unwrap());
        pc.tick = Duration::from_millis(50);
        pc.max_fds = 8192;
        match serve::start(cfg, pc) {
            Ok(serving) => {
                Some(Srv { backend, pattern, addr: serving.local_addr(), serving: Some(serving), root })
            }
            // The thread pools hand a descriptor between threads, which poll, select-classic,
            // gooch and rtsig cannot re-activate: that combination does not exist, and starting it must say
            // so. Checked, not skipped: the case has nothing else to run.
            Err(e) if pattern.hands_off() => {
                let refused =
                    matches!(
                        backend,
                        Backend::Poll | Backend::SelectClassic | Backend::Gooch | Backend::Rtsig
                    ) && e.to_string().contains("cannot re-activate a descriptor from another thread");
                assert!(refused, "{case}: start {backend}/{pattern}: {e}");
                None
            }
            Err(e) => panic!("start {backend}/{pattern}: {e}"),
        }
    }

    /// `epoll/reactor`, for messages.
    pub fn combo(&self) -> String {
        format!("{}/{}", self.backend, self.pattern)
    }

    pub fn client(&self) -> Client {
        Client::connect(self.addr)
    }

    /// The server still answers a fresh client.
    pub fn still_serves(&self) {
        let mut c = self.client();
        c.send(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = c.response(false);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"alpha\n"[..]), "the next client is served");
    }

    pub fn open_connections(&self) -> usize {
        self.serving.as_ref().unwrap().open_connections()
    }

    /// Waits until the server holds no connection (after clients left or timed out).
    pub fn wait_idle(&self, limit: Duration) {
        let end = Instant::now() + limit;
        while self.open_connections() > 0 {
            assert!(
                Instant::now() < end,
                "{} connections still open after {limit:?}",
                self.open_connections()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Srv {
    fn drop(&mut self) {
        if let Some(s) = self.serving.take() {
            s.shutdown();
        }
    }
}

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// A raw client over one connection.
pub struct Client {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Client { s, buf: Vec::new() }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// One read (5 s at most, `EINTR` retried: the rtsig tests in this process send signals).
    fn fill(&mut self) -> usize {
        let mut tmp = [0u8; 65536];
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            match self.s.read(&mut tmp) {
                Ok(n) => {
                    self.buf.extend_from_slice(&tmp[..n]);
                    return n;
                }
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return 0,
                Err(e) if e.kind() == ErrorKind::Interrupted && Instant::now() < end => continue,
                Err(e) => panic!("read: {e} (have {:?})", String::from_utf8_lossy(&self.buf)),
            }
        }
    }

    /// The next response (interim 1xx ones included); `no_body` for HEAD.
    pub fn response(&mut self, no_body: bool) -> Resp {
        let end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            assert!(
                self.fill() > 0,
                "closed before a complete head: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
        };
        let head = String::from_utf8(self.buf[..end].to_vec()).unwrap();
        self.buf.drain(..end);
        let status: u16 = head[9..12].parse().unwrap();
        let mut r = Resp { status, head, body: Vec::new() };
        let len = if no_body || status < 200 || status == 304 {
            0
        } else {
            r.header("content-length").expect("every response we send has a length").parse().unwrap()
        };
        while self.buf.len() < len {
            assert!(self.fill() > 0, "closed inside a body");
        }
        r.body = self.buf.drain(..len).collect();
        r
    }

    /// Whether the server closed (EOF or reset) with nothing more sent; false if it stays
    /// open for `wait`.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        assert!(self.buf.is_empty(), "unread bytes {:?}", String::from_utf8_lossy(&self.buf));
        crate::tools::closed_within(&mut self.s, wait)
    }

    /// Asserts the connection is closed (within 3 s).
    pub fn assert_closed(&mut self) {
        assert!(self.closed_within(Duration::from_secs(3)), "connection should be closed");
    }

    /// Asserts the connection is kept: it answers one more request.
    pub fn assert_kept(&mut self) {
        self.send(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = self.response(false);
        assert_eq!((r.status, r.body.as_slice()), (200, &b"alpha\n"[..]), "connection kept");
    }

    pub fn shutdown_write(&mut self) {
        self.s.shutdown(Shutdown::Write).unwrap();
    }

    /// Everything until the server closes.
    pub fn read_to_end(&mut self) -> Vec<u8> {
        while self.fill() > 0 {}
        std::mem::take(&mut self.buf)
    }
}

/// Sends `req` on a fresh connection; expects one response with `status` and then a close.
pub fn refused(srv: &Srv, req: &[u8], status: u16) {
    let mut c = srv.client();
    c.send(req);
    let r = c.response(false);
    assert_eq!(r.status, status, "for {:?}: {}", String::from_utf8_lossy(req), r.head);
    assert_eq!(r.header("connection"), Some("close"), "{}", r.head);
    c.assert_closed();
}

pub fn root_of(srv: &Srv) -> &Path {
    &srv.root.dir
}
