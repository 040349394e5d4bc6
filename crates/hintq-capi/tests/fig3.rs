//! The paper's Figure 3 (`tests/c/fig3.c`), compiled against `hintq.h` with the flags of
//! `pkg-config --cflags --libs hintq`, serving TCP clients on every backend.

mod common;

use common::{assert_success, backends, compile, Checker};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::thread;
use std::time::Duration;

const CLIENTS: usize = 4;
const LINES: usize = 5;

/// `-Wno-dangling-else`: the figure's lines 15-19 rely on C's binding of `else` to the inner
/// `if`, which is what they mean; GCC's `-Wall` warns about it (see fig3.c).
fn build(name: &str, checker: Checker) -> std::path::PathBuf {
    compile("fig3.c", name, checker, &["-Wno-dangling-else"], &[])
}

/// One client: sends its lines in ragged pieces, half-closes, and checks every answer.
fn client(port: u16, id: usize) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let lines: Vec<String> = (0..LINES).map(|i| format!("client {id} line {i}")).collect();
    let mut expected = String::new();
    for line in &lines {
        let (a, b) = line.split_at(line.len() / 2);
        s.write_all(a.as_bytes()).unwrap();
        thread::sleep(Duration::from_millis(5));
        s.write_all(format!("{b}\n").as_bytes()).unwrap();
        expected.push_str(&format!("ok {line}\n"));
    }
    s.shutdown(Shutdown::Write).unwrap();
    let mut got = String::new();
    s.read_to_string(&mut got).expect("reading answers");
    assert_eq!(got, expected, "client {id}");
}

/// Starts the server, serves `CLIENTS` concurrent clients, and checks it exits 0.
fn serve(exe: &Path, checker: Checker, backend: &str) {
    let mut child = checker
        .command(exe)
        .arg(CLIENTS.to_string())
        .env("HINTQ_BACKEND", backend)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting fig3");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let port: u16 = match first.trim().strip_prefix("port ").and_then(|p| p.parse().ok()) {
        Some(p) => p,
        None => {
            let _ = child.kill();
            panic!("fig3 on {backend} printed {first:?}: {:?}", child.wait_with_output().unwrap());
        }
    };
    let clients: Vec<_> = (0..CLIENTS).map(|id| thread::spawn(move || client(port, id))).collect();
    for c in clients {
        c.join().expect("a client failed");
    }
    assert_success(&format!("fig3 on {backend} ({checker:?})"), &child.wait_with_output().unwrap());
}

#[test]
fn figure_3_serves_clients_on_every_backend() {
    if !common::can_build_c() {
        return;
    }
    let exe = build("fig3", Checker::Plain);
    for backend in backends() {
        serve(&exe, Checker::Plain, backend);
    }
}

#[test]
fn figure_3_under_memory_checker() {
    if !common::can_build_c() {
        return;
    }
    let checker = match Checker::available() {
        Ok(c) => c,
        Err(why) => return hintq_testkit::skip("C tests under the memory checker", why),
    };
    serve(&build("fig3-checked", checker), checker, "epoll");
}
