//! Test support: a temporary root and an in-process server per backend × pattern, read with
//! the tests' one raw client, [`crate::tools::Client`] (responses by their framing, a closed
//! connection told from an open one).
#![allow(dead_code)]

use hintq::Backend;
use hintq_patterns::{Config, Pattern};
use hintq_serve::serve::{self, ServeConfig, Serving};
use std::net::SocketAddr;
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
        Srv::start_tuned(backend, pattern, case, tweak, |_| {})
    }

    /// [`Srv::start_with`], with the pattern's configuration tweaked too.
    pub fn start_tuned(
        backend: Backend,
        pattern: Pattern,
        case: &str,
        tweak: impl FnOnce(&mut ServeConfig),
        tune: impl FnOnce(&mut Config),
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
        tune(&mut pc);
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

pub use crate::tools::Client;

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
