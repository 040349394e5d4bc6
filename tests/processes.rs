//! `hintq serve --processes N` and `hintq proxy --processes N`: a supervisor and N worker
//! processes, each with its own `SO_REUSEPORT` listener on one address. Checked end to end on
//! the binary (here, not in `crates/hintq-serve/tests`, because only this package's tests
//! can run the `hintq` binary), at a small scale, on both servers:
//!
//! * connections spread over the workers: which worker holds a connection is read from
//!   `/proc` (the worker's descriptors matched to the established sockets of the port);
//! * SIGTERM to the supervisor drains every worker: responses in flight, on connections held
//!   by several workers, arrive whole, every process exits, and the exit status is 0;
//! * a worker killed with SIGKILL is reported with its pid and signal, the others serve every
//!   new connection, and the supervisor's exit status then says that not all ended cleanly;
//! * each worker's descriptors are back to their baseline once the clients are gone;
//! * a supervisor killed with SIGKILL leaves no worker serving (`PR_SET_PDEATHSIG`).

mod servers;

use servers::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// `hintq proxy` with `--processes 4` in front of [`upstream`], plus `extra`.
fn proxy(extra: &[&str]) -> Hintq {
    let up = upstream().to_string();
    let mut args = vec!["proxy", "--listen", "127.0.0.1:0", "--upstream", &up, "--processes", "4"];
    args.extend_from_slice(extra);
    Hintq::start(&args)
}

/// Opens 64 keep-alive connections, each served once, and checks from `/proc` that all 64
/// are held by the workers and that more than one worker holds some.
fn spread(h: &Hintq) -> Vec<TcpStream> {
    assert_eq!(h.pids.len(), 4, "four worker processes announced");
    let clients: Vec<TcpStream> = (0..64)
        .map(|_| {
            let mut c = connect(h.addr);
            assert_eq!(get(&mut c, "/a.txt"), (200, b"hello\n".to_vec()));
            c
        })
        .collect();
    let held = held_by(&h.pids, &established(h.addr.port()));
    assert_eq!(held.values().sum::<usize>(), 64, "every connection is held by a worker: {held:?}");
    let serving = held.values().filter(|&&n| n > 0).count();
    assert!(serving > 1, "connections spread over the workers: {held:?}");
    clients
}

#[test]
fn serve_connections_spread_over_worker_processes() {
    let _one = serial();
    let root = Root::new("spread");
    let h = serve(&root, &["--processes", "4"]);
    drop(spread(&h));
    assert!(h.stop().success());
}

#[test]
fn proxy_connections_spread_over_worker_processes() {
    let _one = serial();
    let h = proxy(&["--pattern", "sharded", "--threads", "2"]);
    drop(spread(&h));
    assert!(h.stop().success());
}

/// Sixteen clients ask for `path` (a response still in flight when the drain begins:
/// `/big.bin` from the server, more than the socket buffers hold while the client does not
/// read; `/slow` through the proxy, waiting for the upstream); SIGTERM to the supervisor;
/// every response arrives whole (`len` body bytes), then the connection closes; every worker
/// exits, and so does the supervisor, with status 0.
fn drains_every_worker(h: Hintq, path: &str, len: usize) {
    let pids = h.pids.clone();
    let mut clients: Vec<TcpStream> = (0..16)
        .map(|_| {
            let mut c = connect(h.addr);
            c.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let held = held_by(&pids, &established(h.addr.port()));
    assert!(held.values().filter(|&&n| n > 0).count() > 1, "requests in flight in several workers: {held:?}");
    h.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    for c in &mut clients {
        let (status, body) = response(c);
        assert_eq!((status, body.len()), (200, len), "the response in flight finished");
        assert_eq!(c.read(&mut [0u8; 16]).unwrap(), 0, "closed after the response");
    }
    let status = h.wait();
    assert!(status.success(), "supervisor exit status after a clean drain: {status}");
    for pid in pids {
        assert!(!alive(pid), "worker {pid} still running after the supervisor exited");
    }
}

#[test]
fn serve_sigterm_drains_every_worker() {
    let _one = serial();
    let root = Root::new("drain");
    drains_every_worker(serve(&root, &["--processes", "4"]), "/big.bin", BIG);
}

#[test]
fn proxy_sigterm_drains_every_worker() {
    let _one = serial();
    drains_every_worker(proxy(&[]), "/slow", 6);
}

/// SIGKILL to one worker: the supervisor reports it with its pid and signal, the others
/// serve every new connection, and the supervisor's exit status says not all ended cleanly.
fn survives_a_killed_worker(mut h: Hintq) {
    let victim = h.pids[0];
    signal(victim, libc::SIGKILL);
    let report = format!("worker process {victim} ended: signal: 9 (SIGKILL)");
    let line = h.wait_line(|l| l.contains(&report));
    assert!(line.contains("3 of 4 still running"), "{line}");
    for i in 0..32 {
        let mut c = connect(h.addr);
        assert_eq!(get(&mut c, "/a.txt"), (200, b"hello\n".to_vec()), "connection {i} after the kill");
    }
    let status = h.stop();
    assert!(!status.success(), "a killed worker makes the exit status a failure: {status}");
}

#[test]
fn serve_worker_killed_is_reported_and_the_others_serve() {
    let _one = serial();
    let root = Root::new("kill");
    survives_a_killed_worker(serve(&root, &["--processes", "4"]));
}

#[test]
fn proxy_worker_killed_is_reported_and_the_others_serve() {
    let _one = serial();
    survives_a_killed_worker(proxy(&[]));
}

/// Each worker's descriptor count rises while 64 clients are connected (so these are the
/// processes that serve) and is back to its baseline within 5 s of the clients leaving.
fn descriptors_back_to_baseline(h: Hintq) {
    let before: Vec<usize> = h.pids.iter().map(|&p| fd_count(p)).collect();
    let clients = spread(&h);
    let during: Vec<usize> = h.pids.iter().map(|&p| fd_count(p)).collect();
    let rise: usize = during.iter().zip(&before).map(|(d, b)| d.saturating_sub(*b)).sum();
    assert!(rise >= 64, "descriptors rose by {rise} for 64 connections: {before:?} -> {during:?}");
    drop(clients);
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let now: Vec<usize> = h.pids.iter().map(|&p| fd_count(p)).collect();
        if now == before {
            break;
        }
        assert!(Instant::now() < end, "descriptors per worker {before:?} before, {now:?} 5 s after");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(h.stop().success());
}

#[test]
fn serve_worker_descriptors_back_to_baseline() {
    let _one = serial();
    let root = Root::new("fds");
    descriptors_back_to_baseline(serve(
        &root,
        &["--processes", "4", "--pattern", "sharded", "--threads", "2"],
    ));
}

#[test]
fn proxy_worker_descriptors_back_to_baseline() {
    let _one = serial();
    // No idle upstream connections kept: the pool would hold descriptors on purpose.
    descriptors_back_to_baseline(proxy(&["--max-idle-upstream", "0"]));
}

/// A supervisor killed with SIGKILL (no chance to stop anything) leaves no worker behind:
/// each got SIGTERM from the kernel (`PR_SET_PDEATHSIG`), drained and exited.
#[test]
fn workers_do_not_outlive_a_killed_supervisor() {
    let _one = serial();
    let root = Root::new("orphans");
    let mut h = serve(&root, &["--processes", "3"]);
    h.signal(libc::SIGKILL);
    let _ = h.child.wait();
    let end = Instant::now() + Duration::from_secs(5);
    while h.pids.iter().any(|&p| alive(p)) {
        assert!(Instant::now() < end, "workers still running 5 s after the supervisor died");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(TcpStream::connect(h.addr).is_err_and(|e| e.kind() == ErrorKind::ConnectionRefused));
}

#[test]
fn help_says_how_many_processes_and_how_connections_spread() {
    let _one = serial();
    for cmd in ["serve", "proxy"] {
        let out = Command::new(env!("CARGO_BIN_EXE_hintq")).args([cmd, "--help"]).output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        for word in ["--processes", "SO_REUSEPORT", "RLIMIT_NOFILE"] {
            assert!(help.contains(word), "{word} missing from hintq {cmd} --help");
        }
        assert!(!help.contains("--worker"), "the internal flag is hidden");
    }
}
