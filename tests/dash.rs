//! `-` stands for standard output (or input) wherever a `hintq` flag asks for a file, and is
//! never taken for a file named `-`; where the output cannot go to standard output (the raw
//! rows of a benchmark, beside its summary) it is refused with a reason.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// An empty working directory of its own for `case`.
fn workdir(case: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hintq-dash-{}-{case}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `hintq ARGS` in `dir` and reads standard error up to the line announcing the
/// address (`... on http://ADDR ...`).
fn start(dir: &PathBuf, args: &[&str]) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hintq"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if args.contains(&"-") && args.contains(&"floor") {
        child.stdin.take().unwrap().write_all(b"from stdin\n").unwrap();
    }
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains(" on http://") {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "hintq ended before announcing its address");
    }
    let addr = line.split(" on http://").nth(1).unwrap().split([' ', ',', '\n']).next().unwrap();
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (child, addr.parse().unwrap())
}

/// One GET on a new connection; the whole response.
fn get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut r = Vec::new();
    let _ = s.read_to_end(&mut r);
    String::from_utf8_lossy(&r).into_owned()
}

#[test]
fn bench_floor_file_dash_reads_the_body_from_standard_input() {
    let dir = workdir("floor");
    let (mut child, addr) = start(&dir, &["bench", "floor", "--listen", "127.0.0.1:0", "--file", "-"]);
    let r = get(addr, "/");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(r.starts_with("HTTP/1.1 200") && r.ends_with("\r\n\r\nfrom stdin\n"), "{r:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn serve_stats_dash_writes_the_counters_to_standard_output() {
    let dir = workdir("stats");
    std::fs::write(dir.join("a.txt"), "hello\n").unwrap();
    let root = dir.to_str().unwrap();
    let (mut child, addr) =
        start(&dir, &["serve", "--root", root, "--listen", "127.0.0.1:0", "--stats", "-"]);
    assert!(get(addr, "/a.txt").ends_with("hello\n"));
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(child.wait().unwrap().success());
    let stats: serde_json::Value = serde_json::from_str(&out).expect("standard output is the JSON");
    assert!(stats["threads"].is_array(), "{stats}");
    assert!(!dir.join("-").exists(), "no file named -");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bench_out_dash_is_refused_with_a_reason() {
    for bench in ["micro", "rtsig", "gooch", "wake-one", "patterns"] {
        let out =
            Command::new(env!("CARGO_BIN_EXE_hintq")).args(["bench", bench, "--out", "-"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bench}: {err}");
        assert!(err.contains("the raw rows need a file"), "{bench}: {err}");
    }
}
