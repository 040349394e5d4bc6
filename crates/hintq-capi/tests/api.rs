//! Runs `tests/c/api.c`, the call-by-call contract of `hintq.h`, on every backend.

mod common;

use common::{assert_success, backends, compile, pkg_config, Checker};

/// The default queue on each `HINTQ_BACKEND`, and an `hq_queue` on the same backend.
#[test]
fn contract_holds_on_every_backend() {
    if !common::can_build_c() {
        return;
    }
    let exe = compile("api.c", "api", Checker::Plain, &["-pthread"], &[]);
    for backend in backends() {
        let out = Checker::Plain.command(&exe).arg(backend).env("HINTQ_BACKEND", backend).output().unwrap();
        assert_success(&format!("api with HINTQ_BACKEND={backend}"), &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        for check in ["ok default queue", "ok per-thread", &format!("ok hq_queue {backend} ")] {
            assert!(stdout.contains(check), "{check:?} missing:\n{stdout}");
        }
    }
}

/// An unknown name in `HINTQ_BACKEND` is `EINVAL` from the calls that create a queue from it.
#[test]
fn unknown_backend_in_environment_is_einval() {
    if !common::can_build_c() {
        return;
    }
    let exe = compile("api.c", "api-bad-env", Checker::Plain, &["-pthread"], &[]);
    let out = Checker::Plain.command(&exe).arg("--bad-env").env("HINTQ_BACKEND", "no-such-backend").output();
    assert_success("api --bad-env", &out.unwrap());
}

/// The whole contract again, with an `hq_queue` on every backend, under valgrind (or ASan):
/// no invalid access, no leak, in the C program or in the library, including the per-thread
/// queue dropped at thread exit.
#[test]
fn contract_under_memory_checker() {
    if !common::can_build_c() {
        return;
    }
    let checker = match Checker::available() {
        Ok(c) => c,
        Err(why) => return hintq_testkit::skip("C tests under the memory checker", why),
    };
    let exe = compile("api.c", "api-checked", checker, &["-pthread"], &[]);
    let out = checker.command(&exe).args(backends()).env("HINTQ_BACKEND", "epoll").output().unwrap();
    assert_success(&format!("api under {checker:?}"), &out);
}

/// `libhintq.a` links with the libraries `pkg-config --static` names.
#[test]
fn static_library_links() {
    if !common::can_build_c() {
        return;
    }
    let libs = pkg_config(&["--static", "--libs"])
        .into_iter()
        .map(|w| if w == "-lhintq" { "-l:libhintq.a".to_string() } else { w })
        .collect::<Vec<_>>();
    let exe = compile("api.c", "api-static", Checker::Plain, &["-pthread"], &libs);
    let out = Checker::Plain.command(&exe).args(["epoll", "poll"]).env_remove("LD_LIBRARY_PATH").output();
    assert_success("statically linked api", &out.unwrap());
    let ldd = std::process::Command::new("ldd").arg(&exe).output().unwrap();
    assert!(!String::from_utf8_lossy(&ldd.stdout).contains("libhintq.so"), "linked dynamically");
}
