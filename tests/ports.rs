//! A port is shared only within one server. Regression: with `hintq serve --pattern sharded`
//! running (its listeners in a `SO_REUSEPORT` group), `hintq serve --processes 2` on the same
//! port started without a word and took a share of the connections. Now a second server on
//! an address another one listens on refuses to start, naming the address, whatever its
//! pattern or `--processes`, and the first keeps every request.

mod servers;

use servers::*;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// What may hold the port first.
enum First {
    Hintq(Hintq),
    /// Another program's listener, in a `SO_REUSEPORT` group that a same-user socket could join.
    Foreign(std::os::fd::OwnedFd),
}

fn foreign_reuseport_listener(addr: SocketAddr) -> std::os::fd::OwnedFd {
    hintq_patterns::listen(addr, true).unwrap()
}

/// The second server, expected to refuse: its exit status and standard error.
fn second(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = spawn(args);
    let mut err = child.stderr.take().unwrap();
    let status = std::thread::scope(|s| {
        let waiter = s.spawn(|| wait_bounded(&mut child, Duration::from_secs(10)));
        let mut text = String::new();
        let _ = err.read_to_string(&mut text);
        (waiter.join(), text)
    });
    match status {
        (Ok(st), text) => (st, text),
        (Err(_), text) => {
            let _ = child.kill();
            panic!("{args:?} started on a port in use (still running after 10 s); it said {text:?}")
        }
    }
}

#[test]
fn a_second_server_on_a_served_port_refuses_and_the_first_keeps_every_request() {
    let _one = serial();
    let (mine, other) = (Root::new("port-first"), Root::new("port-second"));
    std::fs::write(other.0.join("a.txt"), "OTHER\n").unwrap();
    let up = upstream().to_string();
    let firsts: [&[&str]; 3] = [&["--pattern", "sharded", "--threads", "2"], &["--processes", "2"], &[]];
    for first_args in firsts.iter().map(Some).chain([None]) {
        let port = free_port();
        let listen = format!("127.0.0.1:{port}");
        let addr: SocketAddr = listen.parse().unwrap();
        let first = match first_args {
            Some(extra) => {
                let mut args = vec!["serve", "--root", mine.0.to_str().unwrap(), "--listen", &listen];
                args.extend_from_slice(extra);
                First::Hintq(Hintq::start(&args))
            }
            None => First::Foreign(foreign_reuseport_listener(addr)),
        };
        let what = match first_args {
            Some(a) => format!("after `hintq serve {a:?}`"),
            None => "after another program's SO_REUSEPORT listener".to_string(),
        };
        let mut seconds: Vec<Vec<&str>> =
            ["reactor", "leader-followers", "half-sync", "sharded", "sharded-shared"]
                .iter()
                .map(|p| vec!["serve", "--root", other.0.to_str().unwrap(), "--pattern", p, "--threads", "2"])
                .collect();
        seconds.push(vec!["serve", "--root", other.0.to_str().unwrap(), "--processes", "2"]);
        seconds.push(vec![
            "serve",
            "--root",
            other.0.to_str().unwrap(),
            "--processes",
            "2",
            "--pattern",
            "sharded",
        ]);
        for p in ["reactor", "sharded", "sharded-shared"] {
            seconds.push(vec!["proxy", "--upstream", &up, "--pattern", p, "--threads", "2"]);
        }
        seconds.push(vec!["proxy", "--upstream", &up, "--processes", "2"]);
        for mut args in seconds {
            args.extend(["--backend", "epoll", "--listen", &listen]);
            let (status, err) = second(&args);
            assert!(!status.success(), "{what}: {args:?} exited {status}");
            assert!(
                err.contains(&format!("{listen}: Address already in use")),
                "{what}: {args:?} does not say which address is in use: {err:?}"
            );
        }
        match first {
            First::Hintq(h) => {
                for i in 0..12 {
                    let mut c = connect(h.addr);
                    assert_eq!(get(&mut c, "/a.txt"), (200, b"hello\n".to_vec()), "{what}: request {i}");
                }
                assert!(h.stop().success(), "{what}");
            }
            First::Foreign(l) => drop(l),
        }
    }
}

/// The claim goes with the server: once it stopped, the port serves another.
#[test]
fn the_port_is_free_again_once_the_server_stopped() {
    let _one = serial();
    let root = Root::new("port-again");
    let listen = format!("127.0.0.1:{}", free_port());
    for extra in [&["--pattern", "sharded", "--threads", "2"][..], &["--processes", "2"], &[]] {
        let mut args = vec!["serve", "--root", root.0.to_str().unwrap(), "--listen", &listen];
        args.extend_from_slice(extra);
        let h = Hintq::start(&args);
        let mut c = connect(h.addr);
        assert_eq!(get(&mut c, "/a.txt").0, 200);
        drop(c);
        assert!(h.stop().success(), "{extra:?}");
    }
}
