//! Runs `tests/c/server.c`: wakers, groups with wake-one and wake-all delivery, a threaded
//! echo server with idle timers, a bounded queue with its overflow scan and statistics, and
//! NULL arguments, from C through `hintq.h` only, on every backend.

mod common;

use common::{assert_success, backends, compile, Checker};

/// One process per backend: under valgrind each takes seconds (threads that wait on io_uring
/// poll 1 ms at a time), and each gets the whole kill timeout of `common`.
fn run(checker: Checker) {
    let exe = compile("server.c", &format!("server-{checker:?}"), checker, &["-pthread"], &[]);
    for backend in backends() {
        let mut cmd = checker.command(&exe);
        if checker == Checker::Valgrind {
            // Valgrind runs no other thread while one is blocked in io_uring_enter.
            cmd.arg("--bounded-waits");
        }
        let out = cmd.arg(backend).env_remove("HINTQ_BACKEND").output().unwrap();
        assert_success(&format!("server on {backend} under {checker:?}"), &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("ok NULL arguments\n"), "{stdout}");
        for case in ["wakers", "group delivery", "echo server", "bounded queue", "timers"] {
            let line = format!("ok {case} on {backend}\n");
            assert!(stdout.contains(&line), "{line:?} missing:\n{stdout}");
        }
    }
}

#[test]
fn library_from_c_on_every_backend() {
    if !common::can_build_c() {
        return;
    }
    run(Checker::Plain);
}

#[test]
fn library_from_c_under_memory_checker() {
    if !common::can_build_c() {
        return;
    }
    match Checker::available() {
        Ok(checker) => run(checker),
        Err(why) => eprintln!("SKIP server under the memory checker: {why}"),
    }
}
