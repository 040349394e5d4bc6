//! Errors name what they concern: the valid backends beside an unknown name, the path of a
//! file that cannot be read or written, the variable or flag that was wrong.

mod common;

use std::process::{Command, Output};

fn hintq(env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hintq")).envs(env.iter().copied()).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The README's Rust example returns `Backend::from_env()?` from a `main` giving
/// `io::Result`, which prints the error's `Debug`: it names the valid backends too.
#[test]
fn an_unknown_backend_from_main_names_the_valid_ones() {
    let e: std::io::Error = "nope".parse::<hintq::Backend>().unwrap_err().into();
    let printed = format!("Error: {e:?}");
    assert!(printed.contains(r#"unknown backend "nope"; valid: uring, epoll, "#), "{printed}");
    assert!(e.to_string().starts_with(r#"unknown backend "nope"; valid: uring, epoll, "#), "{e}");
}

#[test]
fn an_unknown_hintq_backend_is_named_by_the_binary() {
    let out = hintq(&[("HINTQ_BACKEND", "nope")], &["load", "-n", "1", "http://127.0.0.1:1/"]);
    assert_eq!(out.status.code(), Some(3), "could not run: {}", stderr(&out));
    assert!(
        stderr(&out).starts_with(r#"hintq load: HINTQ_BACKEND: unknown backend "nope"; valid: uring"#),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_servers_name_hintq_backend_when_it_is_wrong() {
    let root = std::env::temp_dir();
    for server in [&["serve", "--root", root.to_str().unwrap()][..], &["proxy", "--upstream", "127.0.0.1:1"]]
    {
        let out = hintq(&[("HINTQ_BACKEND", "nope")], &[server, &["--listen", "127.0.0.1:0"]].concat());
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let want = format!(r#"hintq {}: HINTQ_BACKEND: unknown backend "nope"; valid: uring"#, server[0]);
        assert!(stderr(&out).starts_with(&want), "{}", stderr(&out));
    }
}

#[test]
fn files_that_cannot_be_used_are_named() {
    let missing = std::env::temp_dir().join(format!("hintq-errors-{}/none", std::process::id()));
    let missing = missing.to_str().unwrap();
    let (addr, _) = common::server();
    let json = format!("{missing}/r.json");
    let out = hintq(&[], &["load", "--quiet", "-n", "5", "--json", &json, &format!("http://{addr}/")]);
    assert_eq!(out.status.code(), Some(3), "the report could not be written: {}", stderr(&out));
    assert!(stderr(&out).contains(&format!("--json {json}: No such file")), "{}", stderr(&out));
    let out = hintq(&[], &["bench", "floor", "--listen", "127.0.0.1:0", "--file", missing]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&format!("--file {missing}: No such file")), "{}", stderr(&out));
    let out = hintq(&[], &["serve", "--listen", "127.0.0.1:0", "--root", missing]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(missing), "{}", stderr(&out));
    let root = std::env::temp_dir();
    let log = format!("{missing}/access.log");
    for server in [&["serve", "--root", root.to_str().unwrap()][..], &["proxy", "--upstream", "127.0.0.1:1"]]
    {
        let out = hintq(&[], &[server, &["--listen", "127.0.0.1:0", "--access-log", &log]].concat());
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr(&out).contains(&format!("--access-log {log}: No such file")), "{}", stderr(&out));
    }
}
