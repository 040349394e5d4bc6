//! End to end: `hintq lab --quick --smoke` (one tiny point per experiment) into a temporary
//! directory; every expected file exists, every experiment is either run (CSV, SVG, PNG) or
//! reported "not run", and every number of REPORT.md's tables equals the one computed here,
//! independently, from the CSV files.

use hintq_lab::data::{self, Status};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// `target/<profile>/hintq`, built by a nested cargo into the same target directory and
/// profile as this test (`target/<profile>/deps/smoke-<hash>` is this test).
fn hintq() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>").to_path_buf();
    let profile = match dir.file_name().and_then(|p| p.to_str()).expect("a UTF-8 profile name") {
        "debug" => "dev",
        other => other,
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(env!("CARGO"))
        .args(["build", "--bin", "hintq", "--profile", profile])
        .env("CARGO_TARGET_DIR", dir.parent().expect("target dir"))
        .current_dir(&root)
        .output()
        .expect("running cargo build");
    assert!(out.status.success(), "cargo build --bin hintq:\n{}", String::from_utf8_lossy(&out.stderr));
    let bin = dir.join("hintq");
    assert!(bin.exists(), "no {}", bin.display());
    bin
}

/// The median of `v` (sorted here, on its own, not with the lab's code).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[test]
fn smoke_run_writes_every_file_and_the_report_matches_the_raw_rows() {
    let bin = hintq();
    let out = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let run = Command::new(&bin)
        .args(["lab", "--quick", "--smoke", "--no-install", "--out"])
        .arg(out.path())
        .output()
        .expect("running hintq lab");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "hintq lab --smoke failed:\n{stderr}");
    assert!(t0.elapsed() < Duration::from_secs(120), "the smoke run took {:?}", t0.elapsed());

    let dir = out.path();
    let report = std::fs::read_to_string(dir.join("REPORT.md")).expect("REPORT.md");
    let setup = std::fs::read_to_string(dir.join("SETUP.md")).expect("SETUP.md");
    for want in ["kernel", "CPU", "core pinning", "hintq commit", "rustc", "Exact commands"] {
        assert!(setup.contains(want), "SETUP.md lacks {want}");
    }
    // The first lines say what became of the peers (never installed under --smoke).
    let head: Vec<&str> = report.lines().take_while(|l| !l.starts_with("| paper figure |")).collect();
    assert!(
        head.iter().any(|l| l.starts_with("- peers present:") || l.starts_with("- peer missing:")),
        "REPORT.md does not open with the peers:\n{}",
        head.join("\n")
    );
    assert!(!head.iter().any(|l| l.contains("installed now")), "--smoke installed packages");
    let first = first_table(&report);
    let mut ran = Vec::new();
    for n in 1..=12 {
        let id = format!("E{n}");
        let rows: Vec<&Vec<String>> = first.iter().filter(|c| c[1] == id).collect();
        assert!(!rows.is_empty(), "no {id} row in the first table");
        if rows.iter().any(|c| c[7].starts_with("not run: ")) {
            assert!(!dir.join(format!("{id}.csv")).exists(), "{id} not run but has a CSV");
            continue;
        }
        for ext in ["csv", "svg", "png"] {
            let f = dir.join(format!("{id}.{ext}"));
            assert!(f.metadata().is_ok_and(|m| m.len() > 0), "{} missing or empty", f.display());
        }
        ran.push(id);
    }
    // E9, E11 (the proxy) and E12 need nothing but this binary; E3 and E4 need `hintq bench
    // micro`, E6 `hintq bench patterns`, E10 `hintq bench wake-one`, which exist.
    for id in ["E3", "E4", "E6", "E9", "E10", "E11", "E12"] {
        assert!(ran.iter().any(|r| r == id), "{id} did not run:\n{report}\n{stderr}");
    }

    let mut checked = 0;
    for id in &ran {
        let rows = data::read_csv(&std::fs::read_to_string(dir.join(format!("{id}.csv"))).unwrap()).unwrap();
        assert!(!rows.is_empty(), "{id}.csv has no row");
        let section =
            report.split(&format!("\n## {id}:")).nth(1).expect("a section").split("\n## ").next().unwrap();
        let table: Vec<&str> = section
            .lines()
            .skip_while(|l| !l.starts_with("| series |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        if table.is_empty() {
            // Every point failed (a loaded machine): accepted only when the report says so.
            let said = failures_said(&report, &rows);
            assert!(!said.is_empty(), "{id}: no table of numbers and no failure said:\n{section}");
            continue;
        }
        for line in table {
            let c: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let (series, x) = (c[0], c[1].parse::<f64>().unwrap());
            let metric = c[2].split(' ').next().unwrap();
            let values: Vec<f64> = rows
                .iter()
                .filter(|r| r.series == series && r.x == x && r.metric == metric)
                .filter(|r| matches!(r.status, Status::Ok | Status::Disturbed))
                .filter_map(|r| r.value)
                .collect();
            assert!(!values.is_empty(), "{id}: {line} has no raw row");
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let want =
                [data::num(median(values.clone())), data::num(lo), data::num(hi), values.len().to_string()];
            assert_eq!(&c[3..7], &want, "{id}: {line}");
            checked += 1;
        }
    }
    assert!(checked > 0);
    if ran.iter().any(|r| r == "E11") {
        proxy_stats_rows_or_their_failure_said(dir, &report);
    }
    let e6 = data::read_csv(&std::fs::read_to_string(dir.join("E6.csv")).unwrap()).unwrap();
    e6_claims_quote_the_table(&report, !failures_said(&report, &e6).is_empty());
    figure_rows_are_all_there_and_their_ratios_follow(&first, dir);
}

/// Figs. 6 and 7 inside the proxy: rows from the proxy's `--stats` file, in E11.csv. A point
/// that failed (on a loaded machine the proxy's stats point has failed) leaves no such row;
/// then the report must say so out loud: in its first lines, and as the reason the first
/// table's Banga Fig. 6 (proxy) row cannot say.
fn proxy_stats_rows_or_their_failure_said(dir: &Path, report: &str) {
    let rows = data::read_csv(&std::fs::read_to_string(dir.join("E11.csv")).unwrap()).unwrap();
    let first = first_table(report);
    let f6 = first.iter().find(|c| c[0] == "Banga Fig. 6 (proxy)").expect("a Banga Fig. 6 (proxy) row");
    let failures = failures_said(report, &rows);
    for metric in ["fig6_us_per_call", "fig6_events_per_call", "fig7_us_per_declare", "fig7_us_per_revoke"] {
        if rows.iter().any(|r| r.metric == metric && r.status != Status::Failed && r.value.is_some()) {
            continue;
        }
        let said = failures.iter().any(|f| f6[6..8].iter().any(|c| c.contains(f.as_str())));
        assert!(
            said,
            "E11.csv has no {metric} row and the report does not say which point failed and why: \
             failures said {failures:?}, Fig. 6 (proxy) row {f6:?}"
        );
    }
    if !f6[6].starts_with("cannot say") && !f6[7].starts_with("cannot say") {
        assert!(f6[4].contains("µs per get_next_event call"), "{f6:?}");
    }
}

/// The failures of `rows` (a series and the points where it failed, with the error) that the
/// report names in its first lines and again under "Not measured in this run", as
/// `hintq-epoll failed at 2: <error>`; a failure it does not name fails the test.
fn failures_said(report: &str, rows: &[data::Row]) -> Vec<String> {
    let head: Vec<&str> = report.lines().take_while(|l| !l.starts_with("| paper figure |")).collect();
    let not_measured = report.split("## Not measured in this run").nth(1).unwrap_or("");
    data::failures(rows)
        .iter()
        .map(|f| {
            let line = format!("- failed: {}: {}", f.experiment, f.said());
            assert!(head.contains(&line.as_str()), "{line} is not in the first lines: {head:?}");
            assert!(not_measured.contains(&line), "{line} is not under Not measured in this run");
            f.said()
        })
        .collect()
}

/// The cells of the report's first table (paper figure, exp, paper's words, paper's number,
/// ours, ours ÷ paper, literal verdict, shape verdict, rule).
fn first_table(report: &str) -> Vec<Vec<String>> {
    let rows: Vec<Vec<String>> = report
        .lines()
        .skip_while(|l| !l.starts_with("| paper figure |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect())
        .collect();
    assert!(rows.iter().all(|c| c.len() == 9), "a first-table row without 9 cells: {rows:?}");
    for c in &rows {
        assert!(!c[8].is_empty(), "{}: no rule beside the verdict", c[0]);
        assert!(
            c[6].starts_with('—') || c[3] != "none printed",
            "{}: a literal verdict without the paper's number: {c:?}",
            c[0]
        );
    }
    rows
}

/// The numbers in `text` (`0.981`, `-40.7`, `1.044`), in order.
fn numbers(text: &str) -> Vec<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .filter_map(|w| w.trim_matches('.').parse::<f64>().ok())
        .collect()
}

/// Every experiment's figure rows (the names it gives without rows) are in the first table,
/// run or not; every ratio `R (A ÷ B)` is A ÷ B to its three digits, with A in ours and B in
/// the paper's number; and Banga Fig. 6's ours is E3.csv's median µs per call at array_max 1.
fn figure_rows_are_all_there_and_their_ratios_follow(first: &[Vec<String>], dir: &Path) {
    use hintq_lab::exp;
    for e in exp::ALL {
        for f in (e.analyse)(&[]).figures {
            assert!(
                first.iter().any(|c| c[0] == f.figure && c[1] == e.id),
                "no row for {} ({}) in the first table",
                f.figure,
                e.id
            );
        }
    }
    let mut ratios = 0;
    for c in first {
        let Some((r, rest)) = c[5].split_once(" (") else { continue };
        let Ok(r) = r.parse::<f64>() else { continue };
        let ab: Vec<f64> = numbers(rest);
        assert_eq!(ab.len(), 2, "ratio cell {:?}", c[5]);
        let (a, b) = (ab[0], ab[1]);
        assert!((r - a / b).abs() <= 0.01 * (a / b).abs() + 1e-9, "{}: {r} is not {a} ÷ {b}", c[0]);
        // A negative "longer" is said as "shorter" (E6: "48.6% shorter" for -48.6).
        let said = numbers(&c[4]).contains(&a) || (a < 0.0 && c[4].contains(&format!("{}% shorter", -a)));
        assert!(said, "{}: {a} not in ours: {}", c[0], c[4]);
        assert!(
            numbers(&c[3]).iter().any(|p| (p - b).abs() <= 0.01 * b.abs()),
            "{}: {b} not in the paper's number: {}",
            c[0],
            c[3]
        );
        ratios += 1;
    }
    assert!(ratios > 0, "no ratio in the first table: {first:?}");
    // Banga Fig. 6 from E3.csv, here: epoll's median ns per call at array_max 1, in µs.
    let rows = data::read_csv(&std::fs::read_to_string(dir.join("E3.csv")).unwrap()).unwrap();
    let per_call: Vec<f64> = rows
        .iter()
        .filter(|r| r.series == "epoll" && r.x == 1.0 && r.metric == "fig6a_ns_per_call")
        .filter(|r| matches!(r.status, Status::Ok | Status::Disturbed))
        .filter_map(|r| r.value)
        .collect();
    let fig6 = first.iter().find(|c| c[0] == "Banga Fig. 6").expect("a Banga Fig. 6 row");
    let want = format!("{} µs per get_next_event call", data::num(median(per_call) / 1000.0));
    assert!(fig6[4].starts_with(&want), "Banga Fig. 6: ours {:?}, from E3.csv {want:?}", fig6[4]);
}

/// Every claim of Strebelow & Prehofer in E6's section has a verdict, and every peak it quotes
/// ("N replies/s at T threads") is a median of E6's table (checked above against the CSV).
fn e6_claims_quote_the_table(report: &str, failed: bool) {
    let section = report.split("\n## E6:").nth(1).expect("an E6 section").split("\n## ").next().unwrap();
    let claims: Vec<&str> = section.lines().filter(|l| l.starts_with("- Claim ")).collect();
    assert_eq!(claims.len(), 9, "E6 lists the paper's nine claims:\n{section}");
    let table: Vec<Vec<&str>> = section
        .lines()
        .filter(|l| l.contains("| throughput_rps "))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    let mut quoted = 0;
    for claim in claims {
        assert!(
            ["**supported**", "**not supported**", "**within noise**", "**not measurable here**"]
                .iter()
                .any(|v| claim.contains(v)),
            "no verdict: {claim}"
        );
        let words: Vec<&str> = claim.split(' ').collect();
        for w in
            words.windows(5).filter(|w| w[1] == "replies/s" && w[2] == "at" && w[4].starts_with("threads"))
        {
            assert!(
                table.iter().any(|c| c[1] == w[3] && c[3] == w[0]),
                "{} replies/s at {} threads is no median of E6's table: {claim}",
                w[0],
                w[3]
            );
            quoted += 1;
        }
    }
    assert!(quoted > 0 || failed, "no claim quotes a peak:\n{section}");
}

/// A relative output directory (a real run of E9's smoke point under `--out rel/out`), then
/// that run's E9.csv given failed rows (hintq-poll, as a crashing peer's benchmark would leave
/// them) and read again with `--reanalyse`: REPORT.md names the failure in its first lines, in
/// its first table (E9's row reads hintq-poll: cannot say, with the error), in E9's section and
/// in "Not measured in this run".
#[test]
fn a_relative_output_directory_runs_and_a_failed_series_is_said_everywhere() {
    let bin = hintq();
    let cwd = tempfile::tempdir().unwrap();
    let run = Command::new(&bin)
        .args(["lab", "--quick", "--smoke", "--no-install", "--only", "E9", "--out", "rel/out"])
        .current_dir(cwd.path())
        .output()
        .expect("running hintq lab");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "hintq lab failed:\n{stderr}");
    assert!(!stderr.contains("FAILED"), "a point failed under a relative --out:\n{stderr}");
    let dir = cwd.path().join("rel/out");
    let csv = dir.join("E9.csv");
    let mut rows = data::read_csv(&std::fs::read_to_string(&csv).unwrap()).unwrap();
    // hintq-epoll was measured under the relative directory.
    assert!(rows
        .iter()
        .any(|r| r.series == "hintq-epoll" && r.status != Status::Failed && r.value.is_some()));
    let x = rows.iter().map(|r| r.x).fold(f64::INFINITY, f64::min);
    rows.retain(|r| r.series != "hintq-poll");
    rows.push(data::Row {
        value: None,
        status: Status::Failed,
        note: "failed: exit status: 3: peer crashed".into(),
        metric: String::new(),
        ..data::Row::ok("E9", "hintq-poll", x, "", 0.0)
    });
    std::fs::write(&csv, data::write_csv(&rows)).unwrap();
    let again = Command::new(&bin)
        .args(["lab", "--reanalyse", "rel/out"])
        .current_dir(cwd.path())
        .output()
        .expect("running hintq lab --reanalyse");
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let error = format!("hintq-poll failed at {}: exit status: 3: peer crashed", data::num(x));
    let report = std::fs::read_to_string(dir.join("REPORT.md")).expect("REPORT.md");
    let head: Vec<&str> = report.lines().take_while(|l| !l.starts_with("| paper figure |")).collect();
    assert!(head.contains(&format!("- failed: E9: {error}").as_str()), "first lines:\n{}", head.join("\n"));
    let first = first_table(&report);
    let e9 = first.iter().find(|c| c[1] == "E9").expect("an E9 row");
    assert_eq!(e9[7], format!("cannot say: {error}"), "{e9:?}");
    let not_measured = report.split("## Not measured in this run").nth(1).expect("a Not measured section");
    assert!(not_measured.contains(&format!("- failed: E9: {error}")), "{not_measured}");
    let section = report.split("\n## E9:").nth(1).expect("an E9 section");
    assert!(
        section.contains(&format!("- libevent test/bench.c: shape cannot say: {error}; literal —")),
        "{section}"
    );

    // E11's stats point failed (as it did once on a loaded machine): no Fig. 6 or 7 row, and
    // the report says which point failed and why, which the smoke check accepts; the same
    // run without the failed row (a point that gave no row and no error) it does not.
    let stats_failed = data::Row {
        value: None,
        status: Status::Failed,
        note: "failed: stats.json: No such file (the proxy writes it as it exits)".into(),
        metric: String::new(),
        ..data::Row::ok("E11", "hintq-epoll", 2.0, "", 0.0)
    };
    let fig8 = data::Row::ok("E11", "hintq-epoll", 0.0, "throughput_rps", 9000.0);
    let reanalyse = |rows: &[data::Row]| {
        std::fs::write(dir.join("E11.csv"), data::write_csv(rows)).unwrap();
        let again = Command::new(&bin).args(["lab", "--reanalyse"]).arg(&dir).output().unwrap();
        assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
        std::fs::read_to_string(dir.join("REPORT.md")).unwrap()
    };
    let report = reanalyse(&[fig8.clone(), stats_failed]);
    proxy_stats_rows_or_their_failure_said(&dir, &report);
    let report = reanalyse(&[fig8]);
    let silent = std::panic::catch_unwind(|| proxy_stats_rows_or_their_failure_said(&dir, &report));
    assert!(silent.is_err(), "no Fig. 6 row and no failure said, yet accepted");
}
