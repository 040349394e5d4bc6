//! E9, libevent's `test/bench.c` method: µs per run (1 active pair, 1000 writes passed round
//! a ring of N socket pairs) against N, for hintq on every backend, mio, and libevent, libev
//! and libuv where their -dev packages are installed.
//!
//! Why the loops slow down with pairs: [`GROWTH`] (the kernel memory a run's writes touch).

use super::{panel, Analysis, Experiment, FigureRow, Lab};
use crate::data::{num, Row};
use crate::peers::{self, C_PEERS};
use crate::runner::{Cmd, Point};
use crate::verdict::{self, Verdict};
use hintq::Backend;
use std::time::Duration;

const METRIC: &str = "us_per_run";

/// The cause of the growth with pairs (issue 11: `strace -c`, callgrind, `peer-bench --keep`).
const GROWTH: &str = "Growth with pairs: the timed loop makes the same system calls and user-space \
    instructions per event at every pair count; from 1000 pairs on, a run's 1000 writes visit 1000 \
    distinct pairs' kernel objects instead of the same 100 ten times. Re-registering before each run is \
    not the cause: registered once (`hintq lab peer-bench --keep`), hintq-epoll grew 1.43x from 100 to \
    9000 pairs against 1.42x re-armed (results/lab/e9-keep-2026-11-27.csv).";

/// The most socket pairs whose descriptors all stay below FD_SETSIZE (libevent's select).
const SELECT_PAIRS: usize = (libc::FD_SETSIZE - 64) / 2;

/// One line of the plot: its program and arguments before the method's own, whether it scans
/// every pair (for the estimate only), the most pairs it can take (libevent's select: below
/// FD_SETSIZE).
struct Series {
    name: String,
    program: std::path::PathBuf,
    args: Vec<String>,
    scans: bool,
    max_pairs: usize,
}

/// A series run by this binary's `hintq lab peer-bench --lib <lib> [args]`.
fn ours(lab: &Lab, name: String, lib: &str, args: &[&str], scans: bool) -> Series {
    let args = ["lab", "peer-bench", "--lib", lib].iter().chain(args).map(|a| a.to_string()).collect();
    Series { name, program: lab.exe.clone(), args, scans, max_pairs: usize::MAX }
}

fn series(lab: &Lab) -> Vec<Series> {
    let mut out = Vec::new();
    let left_out =
        |b: &str, why: &str| lab.missing.borrow_mut().push(format!("E9: hintq-{b} left out: {why}"));
    let backends: Vec<Backend> = if lab.smoke { vec![Backend::Epoll] } else { Backend::ALL.to_vec() };
    for b in backends {
        match b {
            // Measured: 50 s for 5 runs of 1000 writes at 1000 pairs, then killed.
            Backend::Gooch => left_out(
                "gooch",
                "the method passes each write to a pair idle since the last run, which the gooch policy \
                 only polls every 10 ms (about 10 s per run of 1000 writes); E7 measures gooch",
            ),
            Backend::SelectClassic => left_out(
                "select-classic",
                "the method compares loops with libevent's, libev's and libuv's, whose select is the \
                 improved kind (hintq-select); E1, E2 and E5 measure the classical one",
            ),
            _ => match b.probe() {
                Err(why) => lab.missing.borrow_mut().push(format!("E9: hintq-{} not run: {why}", b.name())),
                // hintq's select sizes its sets at run time: no FD_SETSIZE limit.
                Ok(()) => out.push(ours(
                    lab,
                    format!("hintq-{}", b.name()),
                    "hintq",
                    &["--backend", b.name()],
                    matches!(b, Backend::Poll | Backend::Select),
                )),
            },
        }
    }
    out.push(ours(lab, "mio".into(), "mio", &[], false));
    for p in &C_PEERS {
        match peers::build_c(p, &lab.raw("E9").join("bin")) {
            Ok((path, version)) => {
                lab.peers.borrow_mut().push((p.name.into(), version));
                let methods = if lab.smoke { &p.methods[..1] } else { p.methods };
                out.extend(methods.iter().map(|m| Series {
                    name: format!("{}-{m}", p.name),
                    program: path.clone(),
                    args: vec!["-m".into(), m.to_string()],
                    scans: *m != "epoll",
                    // Debian builds libevent with _FORTIFY_SOURCE: its FD_SET aborts the
                    // program at descriptors >= FD_SETSIZE (seen: SIGABRT at 1000 pairs).
                    max_pairs: if (p.name, *m) == ("libevent", "select") { SELECT_PAIRS } else { usize::MAX },
                }));
            }
            Err(why) => lab.missing.borrow_mut().push(format!("E9: {why}")),
        }
    }
    out
}

/// E9: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E9",
    title: "libevent bench.c method: time per run vs socket pairs, ours vs libevent, libev, libuv, mio",
    paper: "libevent test/bench.c; Kerrisk 2006",
    claim: "With 1 active pair, epoll-based loops take the same time whatever the number of idle \
         pairs, while poll and select grow with it (PERF.md anchor: epoll 932-1258 µs, poll \
         4943 µs at 100 pairs to 1653500 µs at 9000).",
    needs: |_| Ok(()),
    plan,
    analyse,
};

fn plan(lab: &Lab) -> Vec<Point> {
    let soft = match hintq_sys::nofile() {
        Ok((soft, _)) => soft, // raised to the hard limit by `run_lab`
        Err(e) => {
            lab.missing.borrow_mut().push(format!("E9: not run, RLIMIT_NOFILE unknown: {e}"));
            return Vec::new();
        }
    };
    // The verdict reads the ends; the quick run measures only them.
    let pairs: Vec<usize> = lab.pick(vec![100, 1000, 5000, 9000], vec![100, 5000], vec![100]);
    // Launches, not runs, order these loops: a launch's median moves by up to 40% from one
    // launch to the next (layout, descriptor numbers, caches) while its runs agree to a few
    // percent and the loops differ by 5-15%. So a point is a few launches of a few runs, each
    // launch paying its start and two quiet windows; poll and select's slow runs at 5000 and
    // 9000 pairs are one a launch ([`LAUNCH_RUNS_US`]).
    let method =
        Method { writes: lab.pick(1000, 1000, 100), runs: lab.pick(3, 2, 2), launches: lab.pick(5, 3, 1) };
    points(lab, &series(lab), &pairs, method, soft)
}

fn analyse(rows: &[Row]) -> Analysis {
    let p = panel(
        rows,
        METRIC,
        "1 active, writes passed round N pairs",
        "socket pairs",
        "µs per run",
        (true, true),
    );
    let xs = crate::data::distinct(p.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x)));
    let fig = |series: &str, x: f64| verdict::launches(rows, series, x, METRIC);
    let mut reading = vec![METHOD.to_string()];
    for &x in &xs {
        // hintq's best by the median of its launches, against every peer (not the peers'
        // best by median: picking the lowest median of several is biased low).
        let figs = p.lines.iter().filter_map(|l| Some((l.name.as_str(), fig(&l.name, x)?)));
        let (ours, peers): (Vec<_>, Vec<_>) = figs.partition(|f| f.0.starts_with("hintq-"));
        let Some(h) = ours.into_iter().min_by(|a, b| a.1.median().total_cmp(&b.1.median())) else { continue };
        if peers.is_empty() {
            continue;
        }
        let each: Vec<String> = peers.iter().map(|q| verdict::compare((h.0, &h.1), (q.0, &q.1))).collect();
        let ahead = Verdict::all(&peers.iter().map(|q| Verdict::below(&h.1, &q.1)).collect::<Vec<_>>());
        let (x, each) = (num(x), each.join("; "));
        reading.push(format!(
            "{x} pairs, hintq's best against each peer (µs per run): {each}; hintq ahead of every peer: {ahead}."
        ));
    }
    let ends = |series: &str| verdict::ends(rows, series, METRIC);
    for l in &p.lines {
        if let Some(e) = ends(&l.name) {
            reading.push(format!("{}.", verdict::growth(&l.name, "pairs", &e)));
        }
    }
    reading.push(GROWTH.into());
    let flat = ends("hintq-epoll").map(|e| ("hintq-epoll", e));
    let scan = ["hintq-poll", "libevent-poll"].into_iter().find_map(|s| Some((s, ends(s)?)));
    let holds = Verdict::all(&[
        flat.as_ref().map_or(Verdict::unmeasured("hintq-epoll at two pair counts"), |(_, e)| {
            Verdict::same(&e.3, &e.1, verdict::FLAT_TOL)
        }),
        scan.as_ref()
            .map_or(Verdict::unmeasured("poll at two pair counts"), |(_, e)| Verdict::above(&e.3, &e.1)),
    ])
    .to_string();
    let said = |(name, (x0, f0, x1, f1)): &(&str, verdict::Ends)| {
        format!("{name} {f0} µs at {} pairs, {f1} at {}", num(*x0), num(*x1))
    };
    let parts: Vec<String> = flat.iter().chain(scan.iter()).map(said).collect();
    let ours = match parts.is_empty() {
        true => "hintq-epoll and poll not measured at two pair counts".into(),
        false => parts.join("; "),
    };
    reading.push(verdict::with_chance(RULE));
    // The fewest and the most pairs of the run (failed points included): epoll and poll
    // (libevent-poll stands in) there.
    let planned = rows.iter().map(|r| r.x);
    let (lo, hi) = (planned.clone().fold(f64::INFINITY, f64::min), planned.fold(f64::NEG_INFINITY, f64::max));
    let inputs = ["hintq-epoll", "hintq-poll", "libevent-poll"]
        .iter()
        .flat_map(|s| [(s.to_string(), lo), (s.to_string(), hi)])
        .collect();
    let figures = vec![FigureRow {
        inputs,
        ..FigureRow::without_number(
            "libevent test/bench.c",
            "With 1 active pair, epoll-based loops take the same time whatever the number of idle pairs, \
             while poll and select grow with it.",
            ours.clone(),
            holds.clone(),
            RULE.trim_start_matches("Rule: "),
        )
    }];
    Analysis { panels: vec![p], ours, holds, reading, metrics: vec![(METRIC, "µs per run")], figures }
}

/// How a point is timed and read, for the reading.
const METHOD: &str = "Each point: separate launches (processes) of a few runs each, launch k of every \
    series before launch k+1 of any, the series' order turned at each launch; a point's figure is the \
    median of each launch's runs, one value per launch: median (min–max, n launches).";

/// The rule of E9's verdict.
const RULE: &str = "Rule: yes when hintq-epoll's launches at the most pairs overlap its launches at the \
    fewest with every launch within 10% of every other (the same time: growth ruled out; overlap with a \
    wider spread is within noise) and poll's (hintq-poll, else libevent-poll) at the most pairs \
    are all above its launches at the fewest (grows); no when epoll's are apart or poll's are not \
    above; cannot say with fewer than 3 launches.";

/// How E9 times a point: writes passed on per run, runs per launch (fewer where they would
/// take longer than [`LAUNCH_RUNS_US`]), launches (separate processes) per point.
#[derive(Clone, Copy, Debug)]
struct Method {
    writes: usize,
    runs: usize,
    launches: usize,
}

/// The points of `series` at each pair count: launch k of every series before launch k+1 of
/// any (a drift of the machine falls on all alike), the series' order turned by 1/L of them at
/// each of the L launches; each launch has its own name (`hintq-epoll-n1000-l2`) and command
/// line (`-l 2`: the runner remembers output per command line).
fn points(lab: &Lab, series: &[Series], pairs: &[usize], m: Method, soft: u64) -> Vec<Point> {
    let mut out = Vec::new();
    for &n in pairs {
        if 2 * n as u64 + 64 > soft {
            lab.missing
                .borrow_mut()
                .push(format!("E9: {n} pairs need more descriptors than RLIMIT_NOFILE {soft}"));
            continue;
        }
        let (here, over): (Vec<&Series>, Vec<&Series>) = series.iter().partition(|s| n <= s.max_pairs);
        for s in over {
            let limit = format!("FD_SETSIZE ({})", libc::FD_SETSIZE);
            let why = format!("its select(2) cannot watch descriptors at or above {limit}");
            lab.missing.borrow_mut().push(format!("E9: {} not run at {n} pairs: {why}", s.name));
        }
        for launch in 0..m.launches {
            let turn = launch * here.len() / m.launches;
            for i in 0..here.len() {
                out.push(point(lab, here[(i + turn) % here.len()], n, launch, m));
            }
        }
    }
    out
}

/// Launch `launch` of `s` at `n` pairs.
fn point(lab: &Lab, s: &Series, n: usize, launch: usize, m: Method) -> Point {
    let runs = runs(s.scans, n, m);
    let mut args: Vec<String> = s.args.clone();
    args.extend(format!("-n {n} -a 1 -w {} -r {runs} -l {launch}", m.writes).split(' ').map(String::from));
    let estimate = estimate(s.scans, n, m.writes, runs, lab.window());
    let (name, x) = (s.name.clone(), n as f64);
    Point {
        experiment: "E9",
        series: s.name.clone(),
        x,
        name: format!("{}-n{n}-l{launch}", s.name),
        server: None,
        cmd: Cmd { program: s.program.clone(), args, cpu: lab.cores.bench },
        timeout: estimate * 10 + Duration::from_secs(30),
        estimate,
        parse: Box::new(move |ran| parse(&ran.stdout, &name, x, launch, runs)),
    }
}

/// A launch runs [`Method::runs`] runs, or as many as fit in this (at least one): a launch
/// samples the process's layout anew, which one run of poll at 9000 pairs (1.4 s) does too.
const LAUNCH_RUNS_US: f64 = 1e6;

/// The runs of one launch of a series at `n` pairs.
fn runs(scans: bool, n: usize, m: Method) -> usize {
    ((LAUNCH_RUNS_US / run_us(scans, n, m.writes)) as usize).clamp(1, m.runs)
}

/// How long one run takes, µs (measured here, 2026-11): 1 µs a pass, 0.06 to 0.15 µs more per
/// pair for poll and select, 2.5 µs per pair to re-register before it.
fn run_us(scans: bool, n: usize, writes: usize) -> f64 {
    let n = n as f64;
    (writes + 1) as f64 * (1.0 + if scans { 0.12 * n } else { 0.0 }) + 2.5 * n
}

/// How long one launch takes: its runs, the creation of the N pairs (12 µs each), the
/// process's start (50 ms), and the runner's quiet windows before and after it.
fn estimate(scans: bool, n: usize, writes: usize, runs: usize, window: Duration) -> Duration {
    let us = runs as f64 * run_us(scans, n, writes) + 12.0 * n as f64;
    Duration::from_secs_f64(us / 1e6 + 0.05) + window * 2
}

/// One row per line of µs the benchmark printed, its repetition `launch * runs + run` (unique
/// within the point's series and pair count) and its launch in the note (`launch 2`).
fn parse(stdout: &str, series: &str, x: f64, launch: usize, runs: usize) -> Result<Vec<Row>, String> {
    let lines: Vec<&str> = stdout.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.len() != runs {
        return Err(format!("the benchmark printed {} runs, {runs} asked", lines.len()));
    }
    lines
        .iter()
        .enumerate()
        .map(|(run, l)| {
            let v: f64 = l.parse().map_err(|_| format!("not a number of µs: {l:?}"))?;
            let rep = (launch * runs + run) as u32;
            Ok(Row { rep, note: format!("launch {launch}"), ..Row::ok("E9", series, x, METRIC, v) })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::read_csv;
    use crate::exp::check::{contains, starts};
    use crate::runner::Ran;
    use std::collections::BTreeSet;

    #[test]
    fn parses_one_row_per_run_numbered_by_launch_and_refuses_garbage() {
        let rows = parse("932.5\n1195.0\n", "libevent-epoll", 100.0, 3, 2).unwrap();
        assert_eq!(
            rows.iter().map(|r| (r.rep, r.value.unwrap(), r.note.as_str())).collect::<Vec<_>>(),
            [(6, 932.5, "launch 3"), (7, 1195.0, "launch 3")]
        );
        assert!(parse("", "x", 1.0, 0, 2).is_err());
        assert!(parse("12\nXcount\n", "x", 1.0, 0, 2).is_err());
        assert!(
            parse("12\n13\n14\n", "x", 1.0, 0, 2).is_err(),
            "more runs than asked would overlap a launch"
        );
    }

    fn lab(out: &std::path::Path) -> Lab {
        Lab::new(false, false, out, Vec::new(), Vec::new())
    }

    fn one(name: &str, program: &str, max_pairs: usize) -> Series {
        let args = vec!["--lib".into(), name.into()];
        Series { name: name.into(), program: program.into(), args, scans: false, max_pairs }
    }

    #[test]
    fn the_plan_interleaves_distinct_launches_across_series() {
        let dir = tempfile::tempdir().unwrap();
        let lab = lab(dir.path());
        let series = [
            one("hintq-epoll", "/h", usize::MAX),
            one("mio", "/h", usize::MAX),
            one("libevent-select", "/c", 500),
        ];
        let scanning = Series { scans: true, ..one("hintq-poll", "/h", usize::MAX) };
        let m = Method { writes: 1000, runs: 3, launches: 4 };
        let points = points(&lab, &series, &[100, 1000], m, 1 << 20);
        // 3 series at 100 pairs, 2 at 1000 (libevent's select stops below), 4 launches each.
        assert_eq!(points.len(), (3 + 2) * 4);
        let names: BTreeSet<&str> = points.iter().map(|p| p.name.as_str()).collect();
        let cmds: BTreeSet<String> = points.iter().map(|p| p.cmd.shell()).collect();
        assert_eq!((names.len(), cmds.len()), (points.len(), points.len()), "a name or command line repeats");
        let mio = points.iter().find(|p| p.name == "mio-n1000-l3").unwrap();
        assert!(mio.cmd.args.ends_with(&["-l".into(), "3".into()]));
        let missing = lab.missing.borrow().clone();
        assert_eq!(missing.len(), 1, "said once, not once per launch: {missing:?}");
        // In run order: the pair counts one after the other; within one, launch k of every
        // series before launch k+1 of any.
        let launch = |p: &Point| p.name.rsplit_once("-l").unwrap().1.parse::<usize>().unwrap();
        let order: Vec<(f64, usize)> = points.iter().map(|p| (p.x, launch(p))).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "not interleaved: {order:?}");
        for (x, n) in [(100.0, 3), (1000.0, 2)] {
            for k in 0..4 {
                let here: Vec<&str> =
                    points.iter().filter(|p| p.x == x && launch(p) == k).map(|p| p.series.as_str()).collect();
                let distinct: BTreeSet<&str> = here.iter().copied().collect();
                assert_eq!(
                    (here.len(), distinct.len()),
                    (n, n),
                    "a series missing or twice in launch {k} at {x}"
                );
            }
        }
        // The order of the series turns by a quarter of them at each of the 4 launches.
        let firsts: Vec<&str> =
            points.iter().filter(|p| p.x == 100.0).step_by(3).map(|p| p.series.as_str()).collect();
        assert_eq!(firsts, ["hintq-epoll", "hintq-epoll", "mio", "libevent-select"]);
        // Each launch's rows are numbered apart from the others'.
        let p = points.iter().find(|p| p.name == "mio-n100-l2").unwrap();
        let reps = |p: &Point, stdout: &str| {
            let ran = Ran {
                dir: dir.path().into(),
                stdout: stdout.into(),
                server_cpu: None,
                samples: None,
                window: (0.0, 0.0),
            };
            (p.parse)(&ran).unwrap().iter().map(|r| r.rep).collect::<Vec<_>>()
        };
        assert_eq!(reps(p, "1\n2\n3\n"), [6, 7, 8]);
        // Each launch pays its quiet windows.
        assert!(points.iter().all(|p| p.estimate >= lab.window() * 2));
        // A run of poll at 9000 pairs takes about a second: one a launch, numbered by launch.
        let points = super::points(&lab, &[scanning], &[1000, 9000], m, 1 << 20);
        let r = |p: &Point| p.cmd.args.windows(2).find(|w| w[0] == "-r").unwrap()[1].clone();
        assert_eq!(points.len(), 8);
        assert!(points.iter().all(|p| r(p) == if p.x == 1000.0 { "3" } else { "1" }));
        let p = points.iter().find(|p| p.name == "hintq-poll-n9000-l2").unwrap();
        assert_eq!(reps(p, "1000000\n"), [2]);
    }

    /// Rows of `series` at `x`: launch k's runs are `values[k]`.
    fn rows(csv: &mut String, series: &str, x: u32, values: &[&[f64]]) {
        for (k, runs) in values.iter().enumerate() {
            for (i, v) in runs.iter().enumerate() {
                let rep = k * runs.len() + i;
                csv.push_str(&format!(
                    "E9,{series},{x},{rep},us_per_run,{v},ok,launch {k}; quiet: busy 1%\n"
                ));
            }
        }
    }

    #[test]
    fn the_reading_orders_hintq_and_the_peers_by_launches_and_judges_growth_by_spread() {
        let mut csv = String::new();
        // 100 pairs: launch medians hintq-epoll 99.5, 100.5, 101; mio 106, 105.5, 97.5: overlap.
        rows(&mut csv, "hintq-epoll", 100, &[&[99.0, 100.0], &[100.0, 101.0], &[98.0, 104.0]]);
        rows(&mut csv, "mio", 100, &[&[105.0, 107.0], &[105.0, 106.0], &[95.0, 100.0]]);
        rows(&mut csv, "libev-epoll", 100, &[&[120.0, 120.0], &[120.0, 120.0], &[120.0, 120.0]]);
        // 1000 pairs: mio's launches all below hintq-epoll's.
        rows(&mut csv, "hintq-epoll", 1000, &[&[220.0, 220.0], &[221.0, 221.0], &[222.0, 222.0]]);
        rows(&mut csv, "mio", 1000, &[&[200.0, 200.0], &[201.0, 201.0], &[202.0, 202.0]]);
        // 2000 pairs: the peer of lowest median (mio) is apart above hintq-epoll, libev-epoll's
        // launches overlap it: hintq is not shown ahead (the best by median alone said it was).
        rows(&mut csv, "hintq-epoll", 2000, &[&[100.0], &[101.0], &[102.0]]);
        rows(&mut csv, "mio", 2000, &[&[103.0], &[104.0], &[105.0]]);
        rows(&mut csv, "libev-epoll", 2000, &[&[95.0], &[106.0], &[107.0]]);
        // 5000 pairs: hintq-epoll below mio; libev-epoll lost a launch (2 left).
        rows(&mut csv, "hintq-epoll", 5000, &[&[100.0, 100.0], &[104.0, 104.0], &[103.0, 103.0]]);
        rows(&mut csv, "mio", 5000, &[&[330.0, 330.0], &[331.0, 331.0], &[332.0, 332.0]]);
        rows(&mut csv, "libev-epoll", 5000, &[&[90.0, 90.0], &[91.0, 91.0]]);
        rows(&mut csv, "hintq-poll", 100, &[&[500.0], &[510.0], &[505.0]]);
        rows(&mut csv, "hintq-poll", 5000, &[&[5000.0], &[5100.0], &[5050.0]]);
        let a = analyse(&read_csv(&csv).unwrap());
        let r = &a.reading;
        assert_eq!(
            r[1],
            "100 pairs, hintq's best against each peer (µs per run): hintq-epoll 100 (99.5–101, n=3) \
             within noise of mio 106 (97.5–106, n=3); hintq-epoll 100 (99.5–101, n=3) below libev-epoll 120 \
             (120–120, n=3); hintq ahead of every peer: within noise."
        );
        contains(&r[2], "hintq-epoll 221 (220–222, n=3) above mio 201 (200–202, n=3)");
        assert!(r[2].ends_with("hintq ahead of every peer: no."), "{}", r[2]);
        contains(&r[3], "below mio 104 (103–105, n=3)");
        contains(&r[3], "within noise of libev-epoll 106 (95.0–107, n=3)");
        assert!(r[3].ends_with("hintq ahead of every peer: within noise."), "{}", r[3]);
        // libev-epoll's median is lowest at 5000, from two launches: compared, too few to order.
        assert!(
            r[4].contains(
                "hintq-epoll 103 (100–104, n=3) against libev-epoll 90.5 (90.0–91.0, n=2): too few"
            ),
            "{}",
            r[4]
        );
        assert!(r[4].ends_with("hintq ahead of every peer: cannot say: fewer than 3 launches."), "{}", r[4]);
        assert!(
            r.iter()
                .any(|l| l.starts_with("hintq-poll from 100 to 5000 pairs (10.0x by the medians): at 5000")
                    && l.contains(" above at 100 ")),
            "{r:?}"
        );
        // epoll flat (100-101 against 100-104: overlapping, every launch within 10%), poll grew apart: yes.
        assert_eq!(a.holds, "yes");
        assert_eq!(a.figures[0].holds, "yes");
        starts(&a.ours, "hintq-epoll 100 (99.5–101, n=3) µs at 100 pairs, 103 (100–104, n=3) at 5000");
        // epoll and poll at 100 and 5000 pairs, one run a launch, launch k at base + k.
        let holds = |launches: u32, epoll: [f64; 2], poll: [f64; 2]| {
            let mut csv = String::new();
            for (series, at) in [("hintq-epoll", epoll), ("hintq-poll", poll)] {
                for (x, base) in [100, 5000].into_iter().zip(at) {
                    let runs: Vec<[f64; 1]> = (0..launches).map(|k| [base + f64::from(k)]).collect();
                    rows(&mut csv, series, x, &runs.iter().map(|r| &r[..]).collect::<Vec<_>>());
                }
            }
            analyse(&read_csv(&csv).unwrap()).holds
        };
        // Two launches a point: cannot say, whatever the medians.
        assert_eq!(holds(2, [100.0, 300.0], [500.0, 5000.0]), "cannot say: fewer than 3 launches");
        // epoll's launches at 5000 all above those at 100: not the same time.
        assert_eq!(holds(3, [100.0, 137.0], [500.0, 5000.0]), "no");
    }
}
