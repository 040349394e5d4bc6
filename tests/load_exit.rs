//! `hintq load`'s exit status is a verdict a script can trust: a run in which nothing
//! succeeded, or whose error rate is above `--max-error-rate`, exits 1 and says on standard
//! error which rule it broke; a wrong command line exits 2, a run that could not be made (or
//! whose report could not be written) 3. `--json -` writes the report to standard output.

mod common;

use common::server_with;
use hintq_testkit::Refusing;
use std::net::SocketAddr;
use std::process::{Command, Output};

/// Runs `hintq load --quiet ARGS URL` in `dir` (for at most 10 s unless ARGS say).
fn load_in(dir: &std::path::Path, url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hintq"))
        .current_dir(dir)
        .args(["load", "--quiet"])
        .args(if args.contains(&"--duration") { &[][..] } else { &["--duration", "10s"] })
        .args(args)
        .arg(url)
        .output()
        .unwrap()
}

fn load(addr: SocketAddr, args: &[&str]) -> Output {
    load_in(&std::env::temp_dir(), &format!("http://{addr}/x"), args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn load_with_no_server_on_the_port_exits_non_zero() {
    // A port nobody listens on, held for the whole test so no other test can take it.
    let nobody = Refusing::new();
    let out = load(nobody.addr, &["--connections", "2", "--duration", "1s"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("failed: no request succeeded (errors: connect "), "{err}");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(!summary.contains("GENERATOR LAGGED"), "no latency, no lag verdict: {summary}");
    assert!(summary.contains("cannot say whether the generator kept up"), "{summary}");
}

#[test]
fn load_against_a_server_answering_404_exits_non_zero() {
    let (addr, _) = server_with(|_| 404);
    let out = load(addr, &["--connections", "2", "--requests", "50"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("failed: no request succeeded (errors: status >= 400 50)"), "{err}");
    assert!(err.contains("error rate 100% (50 errors, 0 successes) is above --max-error-rate 1%"), "{err}");
}

/// Every hot request succeeds, but one of the two cold connections goes to a port that
/// refuses it, over and over: the cold connect error rate fails the run, and says so.
#[test]
fn cold_connects_that_fail_fail_the_run_beside_good_hot_requests() {
    let (good, _) = server_with(|_| 200);
    let nobody = Refusing::new();
    // Connection i, hot or cold, goes to target i % 2: the one hot connection and cold
    // connection 0 to the server, cold connection 1 to the refusing port.
    let urls = [format!("http://{good}/x"), format!("http://{}/x", nobody.addr)];
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hintq"))
            .args(["load", "--quiet", "--connections", "1", "--cold", "2", "--duration", "1s"])
            .args(extra)
            .args(&urls)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("hintq load: failed: cold connect error rate "), "{err}");
    assert!(!err.contains("no request succeeded"), "the hot side passed: {err}");
    // At 100% the cold side passes: one cold connection opened.
    let out = run(&["--max-error-rate", "100%"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// One request in ten answered 404, on one connection: an error rate of exactly 10%, which
/// passes at `--max-error-rate 10%` (or 0.1) and fails just below.
#[test]
fn max_error_rate_is_a_bound_the_run_may_reach() {
    let every_tenth = |n: usize| if n.is_multiple_of(10) { 404 } else { 200 };
    for (rate, passes) in [("10%", true), ("0.1", true), ("9.9%", false), ("0.05", false)] {
        let (addr, _) = server_with(every_tenth);
        let out = load(addr, &["--connections", "1", "--requests", "100", "--max-error-rate", rate]);
        let err = stderr(&out);
        assert_eq!(out.status.success(), passes, "--max-error-rate {rate}: {err}");
        if !passes {
            assert!(
                err.contains("error rate 10% (10 errors, 90 successes) is above --max-error-rate"),
                "{err}"
            );
        }
    }
    // The default is 1%: 10% fails.
    let (addr, _) = server_with(every_tenth);
    assert_eq!(load(addr, &["--connections", "1", "--requests", "100"]).status.code(), Some(1));
    let bad = load(addr, &["--max-error-rate", "150%"]);
    assert_eq!(bad.status.code(), Some(2), "a usage error: {}", stderr(&bad));
}

/// Each exit status means one thing, the one `hintq load --help` gives it.
#[test]
fn exit_statuses_tell_usage_errors_from_failed_runs_and_runs_not_made() {
    let help = Command::new(env!("CARGO_BIN_EXE_hintq")).args(["load", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for line in [
        "Exit status:",
        "  0  the run passed",
        "  1  the run happened and broke a rule",
        "  2  usage error",
        "  3  the run could not be made",
    ] {
        assert!(help.contains(line), "{line:?} in\n{help}");
    }
    let nobody = Refusing::new();
    let url = format!("http://{}/", nobody.addr);
    let hintq = |env: &[(&str, &str)], args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_hintq"))
            .env_remove("HINTQ_BACKEND")
            .envs(env.iter().copied())
            .args(["load", "--quiet", "--duration", "1s"])
            .args(args)
            .arg(&url)
            .output()
            .unwrap();
        (out.status.code(), stderr(&out))
    };
    // Usage errors, from clap and from flags that contradict each other: 2.
    for args in [
        &["--backend", "nope"][..],
        &["--connections", "x"],
        &["--spin", "50us"],
        &["--connections", "0", "--cold", "0"],
    ] {
        let (code, err) = hintq(&[], args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
    }
    // The run cannot be made: 3.
    let (code, err) = hintq(&[("HINTQ_BACKEND", "nope")], &[]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("HINTQ_BACKEND"), "{err}");
    // The run was made and failed (nobody listens): 1.
    let (code, err) = hintq(&[], &["--connections", "1"]);
    assert_eq!(code, Some(1), "{err}");
}

#[test]
fn json_dash_writes_the_report_to_standard_output() {
    let (addr, _) = server_with(|_| 200);
    let dir = std::env::temp_dir().join(format!("hintq-json-dash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = load_in(&dir, &format!("http://{addr}/x"), &["--requests", "20", "--json", "-"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("standard output is the JSON");
    assert_eq!(report["hot"]["successes"], 20);
    assert_eq!(report["failed"], serde_json::json!([]));
    assert!(stderr(&out).contains("20 succeeded"), "the summary goes to stderr: {}", stderr(&out));
    assert!(!dir.join("-").exists(), "no file named -");
    std::fs::remove_dir_all(&dir).unwrap();
}
