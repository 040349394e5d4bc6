//! Runs `tests/c/close.c`: a C program that closes declared descriptors without revoking
//! them leaves no connection open and gets no event for a descriptor that reuses the number,
//! on every backend, on explicit and default queues, across threads and on groups.

mod common;

use common::{assert_success, backends, compile, pkg_config, Checker};

fn run(checker: Checker) {
    let exe = compile("close.c", &format!("close-{checker:?}"), checker, &["-pthread"], &[]);
    let mut cmd = checker.command(&exe);
    if checker == Checker::Valgrind {
        // Valgrind runs no other thread while one is blocked in io_uring_enter.
        cmd.arg("--bounded-waits");
    }
    let out = cmd.args(backends()).output().unwrap();
    assert_success(&format!("close under {checker:?}"), &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for backend in backends() {
        let line = format!("ok close revokes on {backend}\n");
        assert!(stdout.contains(&line), "{line:?} missing:\n{stdout}");
    }
}

#[test]
fn close_revokes_on_every_backend() {
    if !common::can_build_c() {
        return;
    }
    run(Checker::Plain);
}

#[test]
fn close_revokes_under_memory_checker() {
    if !common::can_build_c() {
        return;
    }
    match Checker::available() {
        Ok(checker) => run(checker),
        Err(why) => eprintln!("SKIP close under the memory checker: {why}"),
    }
}

/// Linked with `libhintq.a`, the program's `close` is the library's too.
#[test]
fn close_revokes_in_a_statically_linked_program() {
    if !common::can_build_c() {
        return;
    }
    let libs = pkg_config(&["--static", "--libs"])
        .into_iter()
        .map(|w| if w == "-lhintq" { "-l:libhintq.a".to_string() } else { w })
        .collect::<Vec<_>>();
    let exe = compile("close.c", "close-static", Checker::Plain, &["-pthread"], &libs);
    let out = Checker::Plain.command(&exe).args(["uring", "poll"]).env_remove("LD_LIBRARY_PATH").output();
    let out = out.unwrap();
    assert_success("statically linked close", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok close revokes on poll\n"));
}
