//! E9, libevent's `test/bench.c` method: µs per run (1 active pair, 1000 writes passed round
//! a ring of N socket pairs) against N, for hintq on every backend, mio, and libevent, libev
//! and libuv where their -dev packages are installed.
//!
//! Why the loops slow down from 100 to 9,000 pairs ([`GROWTH`]; on 2026-11-27 every loop,
//! libev's too, grew 1.26-1.44x): not per-event work in the loop (hintq's timed loop makes
//! the same system calls and, by callgrind, the same user-space instructions per event at
//! every pair count), nor the re-registration before each run (`--keep` leaves it out and the
//! growth stays), but the kernel memory the 1000 writes of a run touch.

use super::e3::growth;
use super::{panel, Analysis, Experiment, FigureRow, Lab, UNMEASURED};
use crate::data::{num, Line, Row, Spread, Status};
use crate::peers::{self, C_PEERS};
use crate::runner::{Cmd, Point};
use hintq::Backend;
use std::collections::BTreeMap;
use std::time::Duration;

/// E9.
pub struct E9;

const METRIC: &str = "us_per_run";

/// The cause of the growth with pairs, for the report (measured for issue 11: `strace -c`
/// and callgrind of the timed loop at 100 and 9,000 pairs, and `peer-bench --keep`).
const GROWTH: &str = "Growth with pairs: per event the timed loop makes the same system calls \
    at every pair count (recv, send and a wait: epoll_wait, or on hintq-uring an io_uring_enter \
    that runs the ring's deferred completions) and the same user-space instructions. What grows \
    is the kernel memory the timed loop touches: from 1000 pairs on, the 1000 writes of a run \
    visit 1000 distinct pairs' sockets, files and watches, where at 100 pairs they visit the \
    same 100 ten times. The re-registration before each run is not the cause: with \
    `hintq lab peer-bench --keep`, which registers the watchers once and never re-arms them \
    (what libev's ev_io_stop/ev_io_start with an unchanged mask amount to in the kernel), \
    hintq-uring grew 1.40x from 100 to 9000 pairs against 1.39x re-armed, hintq-epoll 1.43x \
    against 1.42x, mio 1.51x against 1.50x (2026-11-27, \
    crates/hintq-lab/results/e9-keep-2026-11-27.csv).";

/// The most socket pairs whose descriptors all stay below FD_SETSIZE (libevent's select).
const SELECT_PAIRS: usize = (libc::FD_SETSIZE - 64) / 2;

/// One line of the plot: how to run it.
struct Series {
    name: String,
    program: std::path::PathBuf,
    /// Arguments before the method's own.
    args: Vec<String>,
    /// State-based: cost grows with the pairs (for the estimate only).
    scans: bool,
    /// The largest pair count it can take (libevent's select: descriptors below FD_SETSIZE).
    max_pairs: usize,
}

fn series(lab: &Lab) -> Vec<Series> {
    let exe = lab.exe.clone();
    let mut out = Vec::new();
    let backends: Vec<Backend> = if lab.smoke { vec![Backend::Epoll] } else { Backend::ALL.to_vec() };
    for b in backends {
        if b == Backend::Gooch {
            // Measured: 50 s for 5 runs of 1000 writes at 1000 pairs, then killed.
            lab.missing.borrow_mut().push(
                "E9: hintq-gooch left out: the method passes each write to a pair idle since the last run, which \
                 the gooch policy only polls every 10 ms (about 10 s per run of 1000 writes); E7 measures gooch"
                    .into(),
            );
            continue;
        }
        if b == Backend::SelectClassic {
            lab.missing.borrow_mut().push(
                "E9: hintq-select-classic left out: the method compares loops with libevent's, libev's and \
                 libuv's, whose select is the improved kind (hintq-select); E1, E2 and E5 measure the classical one"
                    .into(),
            );
            continue;
        }
        if let Err(why) = b.probe() {
            lab.missing.borrow_mut().push(format!("E9: hintq-{} not run: {why}", b.name()));
            continue;
        }
        out.push(Series {
            name: format!("hintq-{}", b.name()),
            program: exe.clone(),
            args: vec![
                "lab".into(),
                "peer-bench".into(),
                "--lib".into(),
                "hintq".into(),
                "--backend".into(),
                b.name().into(),
            ],
            scans: matches!(b, Backend::Poll | Backend::Select),
            // hintq's select sizes its sets at run time: no FD_SETSIZE limit.
            max_pairs: usize::MAX,
        });
    }
    out.push(Series {
        name: "mio".into(),
        program: exe,
        args: vec!["lab".into(), "peer-bench".into(), "--lib".into(), "mio".into()],
        scans: false,
        max_pairs: usize::MAX,
    });
    let bin = lab.raw("E9").join("bin");
    for p in &C_PEERS {
        match peers::build_c(p, &bin) {
            Ok((path, version)) => {
                lab.peers.borrow_mut().push((p.name.into(), version));
                let methods = if lab.smoke { &p.methods[..1] } else { p.methods };
                for m in methods {
                    out.push(Series {
                        name: format!("{}-{m}", p.name),
                        program: path.clone(),
                        args: vec!["-m".into(), m.to_string()],
                        scans: *m != "epoll",
                        // Debian builds libevent with _FORTIFY_SOURCE: its FD_SET aborts the
                        // program at descriptors >= FD_SETSIZE (seen: SIGABRT at 1000 pairs).
                        max_pairs: if p.name == "libevent" && *m == "select" {
                            SELECT_PAIRS
                        } else {
                            usize::MAX
                        },
                    });
                }
            }
            Err(why) => lab.missing.borrow_mut().push(format!("E9: {why}")),
        }
    }
    out
}

impl Experiment for E9 {
    fn id(&self) -> &'static str {
        "E9"
    }
    fn title(&self) -> &'static str {
        "libevent bench.c method: time per run vs socket pairs, ours vs libevent, libev, libuv, mio"
    }
    fn paper(&self) -> &'static str {
        "libevent test/bench.c; Kerrisk 2006"
    }
    fn claim(&self) -> &'static str {
        "With 1 active pair, epoll-based loops take the same time whatever the number of idle \
         pairs, while poll and select grow with it (PERF.md anchor: epoll 932-1258 µs, poll \
         4943 µs at 100 pairs to 1653500 µs at 9000)."
    }
    fn needs(&self, _: &Lab) -> Result<(), String> {
        Ok(())
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        let soft = match hintq_sys::nofile() {
            Ok((soft, _)) => soft, // raised to the hard limit by `run_lab`
            Err(e) => {
                lab.missing.borrow_mut().push(format!("E9: not run, RLIMIT_NOFILE unknown: {e}"));
                return Vec::new();
            }
        };
        let pairs: Vec<usize> = lab.pick(vec![100, 1000, 5000, 9000], vec![100, 1000, 5000], vec![100]);
        // Launches, not runs, are what orders these loops: the median of 15 runs in one
        // process moves by up to 40% from one launch to the next (memory layout, descriptor
        // numbers, where the kernel's objects fall in the caches), while the runs within a
        // launch agree to a few percent (the full run of 2026-11-24 shows no first-run
        // effect) and the loops differ by 5-15%. So a point is 5 launches of 3 runs: as many
        // runs as its one launch of 15 before, not more, because every launch also pays its
        // process's start and the runner's two quiet windows (0.6 s in the full run): the
        // 285 launches of the full run's 15 series spend about 3 minutes in those windows
        // alone, of a plan estimate of 257 s for E9 (373 s before, for one launch of 15 runs,
        // with poll and select's scans overestimated). 9 runs a launch would triple the
        // timed part and order the loops no better; and even 3 runs of poll and select at
        // 5000 and 9000 pairs (0.4 to 1.4 s a run) would add about 1.5 minutes, so those run
        // one a launch ([`LAUNCH_RUNS_US`]).
        let method = Method {
            writes: lab.pick(1000, 1000, 100),
            runs: lab.pick(3, 2, 2),
            launches: lab.pick(5, 2, 1),
        };
        points(lab, &series(lab), &pairs, method, soft)
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        let p = panel(
            rows,
            METRIC,
            "1 active, writes passed round N pairs",
            "socket pairs",
            "µs per run",
            (true, true),
        );
        let mut reading = Vec::new();
        reading.extend(launches(rows));
        reading.extend(ranking(rows, &p.lines));
        for l in &p.lines {
            if let Some((x0, m0, x1, m1, g)) = growth(l) {
                reading.push(format!(
                    "{}: {} µs at {x0} pairs, {} µs at {x1} ({}x).",
                    l.name,
                    num(m0),
                    num(m1),
                    num(g)
                ));
            }
        }
        reading.push(GROWTH.into());
        let get = |name: &str| p.lines.iter().find(|l| l.name == name).and_then(growth);
        let flat = get("hintq-epoll");
        let scan = get("hintq-poll").or_else(|| get("libevent-poll"));
        let (ours, holds) = match (flat, scan) {
            (Some(f), Some(s)) => {
                let mut ours = format!(
                    "hintq-epoll {} µs at {} pairs, {} at {} ({}x); poll {}x",
                    num(f.1),
                    f.0,
                    num(f.3),
                    f.2,
                    num(f.4),
                    num(s.4)
                );
                if let Some(le) = get("libevent-epoll").filter(|le| le.2 == f.2) {
                    ours.push_str(&format!("; libevent-epoll {} µs at {} pairs", num(le.3), le.2));
                }
                let holds = match (f.4 < 1.5, s.4 > 5.0) {
                    (true, true) => "yes",
                    (false, false) => "no",
                    _ => "partly",
                };
                (ours, holds.to_string())
            }
            (Some(f), None) => (
                format!(
                    "hintq-epoll {} µs at {} pairs, {} at {} (poll not measured)",
                    num(f.1),
                    f.0,
                    num(f.3),
                    f.2
                ),
                "partly measured: epoll only".into(),
            ),
            _ => ("hintq-epoll not measured at two pair counts".into(), UNMEASURED.into()),
        };
        let figures = vec![FigureRow {
            figure: "libevent test/bench.c".into(),
            claim: "With 1 active pair, epoll-based loops take the same time whatever the number of idle \
                    pairs, while poll and select grow with it.",
            paper: None,
            ours: ours.clone(),
            ratio: Err("libevent publishes no number".into()),
            holds: holds.clone(),
        }];
        Analysis { panels: vec![p], ours, holds, reading, metrics: vec![(METRIC, "µs per run")], figures }
    }
}

/// The rows the summaries count (as [`crate::data::lines`] does): E9's metric, a value, ok or
/// disturbed.
fn counted(rows: &[Row]) -> impl Iterator<Item = &Row> {
    rows.iter().filter(|r| {
        r.metric == METRIC && r.value.is_some() && matches!(r.status, Status::Ok | Status::Disturbed)
    })
}

/// The launch a row came from, from its note (`launch 2; quiet: ...`); `None` for the rows
/// of a run made before E9 had launches (one process per point).
fn launch_of(r: &Row) -> Option<u32> {
    let rest = r.note.strip_prefix("launch ")?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// Runs by launch (`None`: rows without a launch) of one point.
type Launches = BTreeMap<Option<u32>, usize>;

/// Runs per launch of each point: the series in order of first appearance, each one's pair
/// counts ascending.
fn shapes(rows: &[Row]) -> Vec<(String, f64, Launches)> {
    let mut order: Vec<&str> = Vec::new();
    let mut by: BTreeMap<(usize, u64), (f64, Launches)> = BTreeMap::new();
    for r in counted(rows) {
        let i = order.iter().position(|s| *s == r.series).unwrap_or_else(|| {
            order.push(&r.series);
            order.len() - 1
        });
        // Pair counts are positive: their bits sort as the numbers do.
        let e = by.entry((i, r.x.to_bits())).or_insert_with(|| (r.x, BTreeMap::new()));
        *e.1.entry(launch_of(r)).or_default() += 1;
    }
    by.into_iter().map(|((i, _), (x, l))| (order[i].to_string(), x, l)).collect()
}

/// "L launches × R runs", or the launches and runs in all when the launches differ.
fn shape(launches: &Launches) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "es" });
    let runs: Vec<usize> = launches.values().copied().collect();
    let l = plural(launches.len(), "launch");
    if runs.iter().all(|&r| r == runs[0]) {
        format!("{l} × {} run{}", runs[0], if runs[0] == 1 { "" } else { "s" })
    } else {
        format!("{l}, {} runs in all", runs.iter().sum::<usize>())
    }
}

/// How many launches × runs each point took, for the reading: the usual shape, and the
/// points that differ (a launch failed, or ran fewer runs).
fn launches(rows: &[Row]) -> Option<String> {
    let shapes = shapes(rows);
    let labels: Vec<(&str, f64, String)> =
        shapes.iter().map(|(s, x, l)| (s.as_str(), *x, shape(l))).collect();
    let mut tally: Vec<(&str, usize)> = Vec::new();
    for (_, _, label) in &labels {
        match tally.iter_mut().find(|(t, _)| *t == label) {
            Some(t) => t.1 += 1,
            None => tally.push((label, 1)),
        }
    }
    let usual = tally.iter().max_by_key(|t| t.1)?.0;
    let (l, total) =
        shapes.iter().find(|v| shape(&v.2) == usual).map(|v| (v.2.len(), v.2.values().sum::<usize>()))?;
    let mut s = if l > 1 {
        format!(
            "Each point: {usual}, the launches separate processes started in turn across the series \
             (launch k of every series before launch k+1 of any, the series' order turned at each \
             launch), so that where a process's memory and descriptors fall, and the machine's drift, \
             weigh on every series alike; medians are over all {total} runs."
        )
    } else {
        format!("Each point: {usual} (one process); medians are over its {total} runs.")
    };
    // The other points: by shape, then the series of the same pair counts together.
    let mut per: Vec<(&str, &str, Vec<String>)> = Vec::new();
    for (series, x, label) in labels.iter().filter(|l| l.2 != usual) {
        match per.iter_mut().find(|p| p.0 == label && p.1 == *series) {
            Some(p) => p.2.push(num(*x)),
            None => per.push((label, series, vec![num(*x)])),
        }
    }
    let mut groups: Vec<(&str, Vec<String>, Vec<String>)> = Vec::new();
    for (label, series, xs) in per {
        match groups.iter_mut().find(|g| g.0 == label && g.1 == xs) {
            Some(g) => g.2.push(series.to_string()),
            None => groups.push((label, xs, vec![series.to_string()])),
        }
    }
    if !groups.is_empty() {
        let odd: Vec<String> = groups
            .iter()
            .map(|(label, xs, series)| format!("{label} for {} at {} pairs", and_list(series), and_list(xs)))
            .collect();
        s.push_str(&format!(" Except: {}.", odd.join("; ")));
    }
    Some(s)
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn is_hintq(series: &str) -> bool {
    series.starts_with("hintq-")
}

/// Each launch's median, by series, pair count and launch.
struct ByLaunch<'a>(BTreeMap<(&'a str, u64, u32), f64>);

impl<'a> ByLaunch<'a> {
    fn of(rows: &'a [Row]) -> ByLaunch<'a> {
        let mut runs: BTreeMap<(&str, u64, u32), Vec<f64>> = BTreeMap::new();
        for r in counted(rows) {
            if let (Some(k), Some(v)) = (launch_of(r), r.value) {
                runs.entry((r.series.as_str(), r.x.to_bits(), k)).or_default().push(v);
            }
        }
        ByLaunch(runs.into_iter().filter_map(|(key, v)| Some((key, Spread::of(&v)?.median))).collect())
    }

    fn medians(&self, series: &str, x: f64) -> BTreeMap<u32, f64> {
        let range = (series, x.to_bits(), 0)..=(series, x.to_bits(), u32::MAX);
        self.0.range(range).map(|(&(_, _, k), &m)| (k, m)).collect()
    }

    /// Of the launches both ran, in how many `a`'s median was below `b`'s, in how many above,
    /// and how many there were; `None` for fewer than two such launches.
    fn wins(&self, a: &str, b: &str, x: f64) -> Option<(usize, usize, usize)> {
        let (a, b) = (self.medians(a, x), self.medians(b, x));
        let both: Vec<u32> = a.keys().filter(|k| b.contains_key(k)).copied().collect();
        let count = |f: fn(f64, f64) -> bool| both.iter().filter(|k| f(a[k], b[k])).count();
        (both.len() > 1).then(|| (count(|p, q| p < q), count(|p, q| p > q), both.len()))
    }
}

/// The series measured at `x`, fastest (lowest median) first.
fn ranked(lines: &[Line], x: f64) -> Vec<(&str, f64)> {
    let mut at: Vec<(&str, f64)> =
        lines.iter().filter_map(|l| Some((l.name.as_str(), l.median(x)?))).collect();
    at.sort_by(|a, b| a.1.total_cmp(&b.1));
    at
}

/// The fastest series (lowest median over every launch's runs) at each pair count, by how
/// much over the second and in how many launches it was ahead of it, the best of the other
/// side (hintq or its peers) when the second is on the same side, and at which pair counts
/// hintq is first; then [`head_to_head`].
fn ranking(rows: &[Row], lines: &[Line]) -> Option<String> {
    let mut xs: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().map(|p| p.x)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let by = ByLaunch::of(rows);
    let behind = |a: f64, b: f64| format!("{:.1}%", (b / a - 1.0) * 100.0);
    let (mut parts, mut first, mut not) = (Vec::new(), Vec::new(), Vec::new());
    for &x in &xs {
        let at = ranked(lines, x);
        let Some(&(top, m)) = at.first() else { continue };
        let mut part = format!("{} pairs: {top} {} µs", num(x), num(m));
        match at.get(1) {
            None => part.push_str(", the only series measured"),
            Some(&(second, m2)) => {
                part.push_str(&format!(", {} ahead of {second} ({} µs)", behind(m, m2), num(m2)));
                if let Some((won, _, of)) = by.wins(top, second, x) {
                    part.push_str(&format!(", ahead in {won} of {of} launches"));
                }
                let other = at.iter().find(|(n, _)| is_hintq(n) != is_hintq(top));
                if let (true, Some(&(o, mo))) = (is_hintq(second) == is_hintq(top), other) {
                    let side = if is_hintq(top) { "peer" } else { "hintq" };
                    part.push_str(&format!("; best {side} {o}, {} behind", behind(m, mo)));
                }
            }
        }
        parts.push(part);
        if is_hintq(top) {
            first.push(num(x));
        } else {
            not.push(format!("{} ({top} first)", num(x)));
        }
    }
    if parts.is_empty() {
        return None;
    }
    let verdict = if !lines.iter().any(|l| is_hintq(&l.name)) {
        "hintq was not measured.".to_string()
    } else if not.is_empty() {
        "hintq is first at every pair count.".to_string()
    } else if first.is_empty() {
        "hintq is first at no pair count.".to_string()
    } else {
        format!("hintq is first at {} pairs, not at {}.", and_list(&first), and_list(&not))
    };
    let mut s = format!("Fastest at each pair count (lowest median): {}. {verdict}", parts.join("; "));
    s.extend(head_to_head(lines, &xs, &by));
    Some(s)
}

/// hintq's best series against the best peer's at each pair count, launch by launch: ahead
/// in every launch, split, behind in every launch, or not compared (fewer than two launches
/// in common). A lead by the medians that some launches reverse is inside the machine's
/// launch-to-launch spread, and the sentence says so rather than crown it. `None` for rows
/// without launches (one process per point).
fn head_to_head(lines: &[Line], xs: &[f64], by: &ByLaunch<'_>) -> Option<String> {
    let mut sides: [Vec<String>; 4] = Default::default();
    for &x in xs {
        let at = ranked(lines, x);
        let best = |ours: bool| at.iter().find(|(n, _)| is_hintq(n) == ours).map(|&(n, _)| n);
        let (Some(h), Some(p)) = (best(true), best(false)) else { continue };
        let (side, label) = match by.wins(h, p, x) {
            None => (3, format!("{} pairs", num(x))),
            Some((won, _, of)) if won == of => (0, format!("{} pairs ({of} of {of})", num(x))),
            Some((_, lost, of)) if lost == of => (2, format!("{} pairs ({of} of {of})", num(x))),
            Some((won, lost, of)) => (
                1,
                format!("{} pairs ({h} ahead of {p} in {won}, behind in {lost} of {of} launches)", num(x)),
            ),
        };
        sides[side].push(label);
    }
    if sides[..3].iter().all(Vec::is_empty) {
        return None;
    }
    let phrases = ["ahead in every launch at", "split at", "behind in every launch at", "not compared at"];
    let said: Vec<String> = sides
        .iter()
        .zip(phrases)
        .filter(|(v, _)| !v.is_empty())
        .map(|(v, phrase)| format!("{phrase} {}", and_list(v)))
        .collect();
    let mut s = format!(" hintq's best against the best peer, launch by launch: {}.", said.join("; "));
    if !sides[1].is_empty() {
        s.push_str(
            " A split is inside this machine's launch-to-launch spread: neither loop is shown faster there.",
        );
    }
    Some(s)
}

/// How E9 times a point.
#[derive(Clone, Copy, Debug)]
struct Method {
    /// Writes passed on per run.
    writes: usize,
    /// Runs per launch, the lines one process prints: this many, or fewer where they would
    /// take longer than [`LAUNCH_RUNS_US`].
    runs: usize,
    /// Launches per point: separate processes, each of `runs` runs.
    launches: usize,
}

/// The points of `series` at each pair count: for each pair count, launch 0 of every series,
/// then launch 1 of every series, and so on, so that launch k of every series runs before
/// launch k+1 of any (a drift of the shared machine falls on every series alike); the
/// series' order is turned by 1/L of the series at each of the L launches, so that each
/// series runs early in some launches and late in others. Each launch has its own point name (`hintq-epoll-n1000-l2`: its directory) and its
/// own command line (`-l 2`: the runner remembers output per command line).
fn points(lab: &Lab, series: &[Series], pairs: &[usize], m: Method, soft: u64) -> Vec<Point> {
    let mut out = Vec::new();
    for &n in pairs {
        if 2 * n as u64 + 64 > soft {
            lab.missing
                .borrow_mut()
                .push(format!("E9: {n} pairs need more descriptors than RLIMIT_NOFILE {soft}"));
            continue;
        }
        let here: Vec<&Series> = series
            .iter()
            .filter(|s| {
                let fits = n <= s.max_pairs;
                if !fits {
                    lab.missing.borrow_mut().push(format!(
                        "E9: {} not run at {n} pairs: its select(2) cannot watch descriptors at or above FD_SETSIZE ({})",
                        s.name,
                        libc::FD_SETSIZE
                    ));
                }
                fits
            })
            .collect();
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
    let mut args: Vec<String> = s.args.clone();
    args.extend(
        [
            "-n",
            &n.to_string(),
            "-a",
            "1",
            "-w",
            &m.writes.to_string(),
            "-r",
            &runs(s.scans, n, m).to_string(),
            "-l",
            &launch.to_string(),
        ]
        .map(String::from),
    );
    let runs = runs(s.scans, n, m);
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

/// The timed passes of one launch's runs take about this long at most: a launch runs
/// [`Method::runs`] runs, or as many as fit in this (at least one). The point of a launch is
/// to sample the process's layout anew, which one run does as well as three; and poll and
/// select from 5000 pairs on (0.4 to 1.4 s a run, a hundred times the epoll loops) would
/// otherwise make up half of E9's time.
const LAUNCH_RUNS_US: f64 = 1e6;

/// The runs of one launch of a series at `n` pairs.
fn runs(scans: bool, n: usize, m: Method) -> usize {
    ((LAUNCH_RUNS_US / run_us(scans, n, m.writes)) as usize).clamp(1, m.runs)
}

/// How long one run takes, µs: the timed passes, with a scan of every pair per pass for
/// poll and select, and the untimed re-registration of the N watchers before it. Measured
/// with `hintq lab peer-bench` on the 2-core machine of 2026-11: 1 µs a pass, plus 0.06 to
/// 0.15 µs per pair for poll and select (1000 to 9000 pairs); 2.5 µs per pair to re-register.
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
            Ok(Row {
                experiment: "E9".into(),
                series: series.into(),
                x,
                rep: (launch * runs + run) as u32,
                metric: METRIC.into(),
                value: Some(v),
                status: Status::Ok,
                note: format!("launch {launch}"),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::read_csv;
    use crate::machine::Cores;
    use crate::runner::Ran;
    use std::cell::RefCell;
    use std::collections::HashMap;

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
        Lab {
            quick: false,
            smoke: false,
            peer_setup: Vec::new(),
            configs: RefCell::new(Vec::new()),
            exe: "/usr/bin/hintq".into(),
            out: out.to_path_buf(),
            cores: Cores::pick(),
            peers: RefCell::new(Vec::new()),
            missing: RefCell::new(Vec::new()),
            subcommands: RefCell::new(HashMap::new()),
        }
    }

    fn one(name: &str, program: &str, max_pairs: usize) -> Series {
        Series {
            name: name.into(),
            program: program.into(),
            args: vec!["--lib".into(), name.into()],
            scans: false,
            max_pairs,
        }
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
        let mut names: Vec<&str> = points.iter().map(|p| p.name.as_str()).collect();
        let mut cmds: Vec<String> = points.iter().map(|p| p.cmd.shell()).collect();
        names.sort();
        names.dedup();
        cmds.sort();
        cmds.dedup();
        assert_eq!((names.len(), cmds.len()), (points.len(), points.len()), "a name or command line repeats");
        assert!(points
            .iter()
            .any(|p| p.name == "mio-n1000-l3" && p.cmd.args.ends_with(&["-l".into(), "3".into()])));
        assert_eq!(
            lab.missing.borrow().len(),
            1,
            "said once, not once per launch: {:?}",
            lab.missing.borrow()
        );
        // In run order: the pair counts one after the other; within one, launch k of every
        // series before launch k+1 of any.
        let launch = |p: &Point| p.name.rsplit_once("-l").unwrap().1.parse::<usize>().unwrap();
        let order: Vec<(f64, usize)> = points.iter().map(|p| (p.x, launch(p))).collect();
        assert!(order.windows(2).all(|w| w[0] <= w[1]), "not interleaved: {order:?}");
        for (x, n) in [(100.0, 3), (1000.0, 2)] {
            for k in 0..4 {
                let mut here: Vec<&str> =
                    points.iter().filter(|p| p.x == x && launch(p) == k).map(|p| p.series.as_str()).collect();
                assert_eq!(here.len(), n);
                here.sort();
                here.dedup();
                assert_eq!(here.len(), n, "a series twice in launch {k} at {x}");
            }
        }
        // The order of the series turns by a quarter of them at each of the 4 launches.
        let firsts: Vec<&str> =
            points.iter().filter(|p| p.x == 100.0).step_by(3).map(|p| p.series.as_str()).collect();
        assert_eq!(firsts, ["hintq-epoll", "hintq-epoll", "mio", "libevent-select"]);
        // Each launch's rows are numbered apart from the others'.
        let p = points.iter().find(|p| p.name == "mio-n100-l2").unwrap();
        let ran = Ran { dir: dir.path().into(), stdout: "1\n2\n3\n".into(), server_cpu: None, samples: None };
        assert_eq!((p.parse)(&ran).unwrap().iter().map(|r| r.rep).collect::<Vec<_>>(), [6, 7, 8]);
        // Each launch pays its quiet windows.
        assert!(points.iter().all(|p| p.estimate >= lab.window() * 2));
        // A run of poll at 9000 pairs takes about a second: one a launch, numbered by launch.
        let points = super::points(&lab, &[scanning], &[1000, 9000], m, 1 << 20);
        let r = |p: &Point| p.cmd.args.windows(2).find(|w| w[0] == "-r").unwrap()[1].clone();
        assert_eq!(points.len(), 8);
        assert!(points.iter().all(|p| r(p) == if p.x == 1000.0 { "3" } else { "1" }));
        let p = points.iter().find(|p| p.name == "hintq-poll-n9000-l2").unwrap();
        let ran = Ran { dir: dir.path().into(), stdout: "1000000\n".into(), server_cpu: None, samples: None };
        assert_eq!((p.parse)(&ran).unwrap().iter().map(|r| r.rep).collect::<Vec<_>>(), [2]);
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
    fn the_reading_ranks_the_series_at_each_pair_count_and_counts_launches() {
        let mut csv = String::new();
        // 100 pairs: hintq-epoll first (median 100), mio 105 (but faster in launch 2), libev-epoll 120.
        rows(&mut csv, "hintq-epoll", 100, &[&[99.0, 100.0], &[100.0, 101.0], &[98.0, 104.0]]);
        rows(&mut csv, "mio", 100, &[&[105.0, 107.0], &[105.0, 106.0], &[95.0, 100.0]]);
        rows(&mut csv, "libev-epoll", 100, &[&[120.0, 120.0], &[120.0, 120.0], &[120.0, 120.0]]);
        // 1000 pairs: mio first (200), libev-epoll second (210), hintq-epoll 220.
        rows(&mut csv, "hintq-epoll", 1000, &[&[220.0, 220.0], &[220.0, 220.0], &[220.0, 220.0]]);
        rows(&mut csv, "mio", 1000, &[&[200.0, 200.0], &[200.0, 200.0], &[200.0, 200.0]]);
        rows(&mut csv, "libev-epoll", 1000, &[&[210.0, 210.0], &[210.0, 210.0], &[210.0, 210.0]]);
        // 5000 pairs: two hintq backends before the peers; libev-epoll lost a launch.
        rows(&mut csv, "hintq-epoll", 5000, &[&[300.0, 300.0], &[300.0, 300.0], &[300.0, 300.0]]);
        rows(&mut csv, "hintq-uring", 5000, &[&[310.0, 310.0], &[310.0, 310.0], &[310.0, 310.0]]);
        rows(&mut csv, "mio", 5000, &[&[330.0, 330.0], &[330.0, 330.0], &[330.0, 330.0]]);
        rows(&mut csv, "libev-epoll", 5000, &[&[400.0, 400.0], &[400.0, 400.0]]);
        let a = E9.analyse(&read_csv(&csv).unwrap());
        let launches = &a.reading[0];
        assert!(
            launches.starts_with("Each point: 3 launches × 2 runs, the launches separate processes"),
            "{launches}"
        );
        assert!(launches.contains("medians are over all 6 runs"), "{launches}");
        assert!(
            launches.ends_with(" Except: 2 launches × 2 runs for libev-epoll at 5000 pairs."),
            "{launches}"
        );
        let rank = &a.reading[1];
        assert_eq!(
            rank.as_str(),
            "Fastest at each pair count (lowest median): \
             100 pairs: hintq-epoll 100 µs, 5.0% ahead of mio (105 µs), ahead in 2 of 3 launches; \
             1000 pairs: mio 200 µs, 5.0% ahead of libev-epoll (210 µs), ahead in 3 of 3 launches; best hintq hintq-epoll, 10.0% behind; \
             5000 pairs: hintq-epoll 300 µs, 3.3% ahead of hintq-uring (310 µs), ahead in 3 of 3 launches; best peer mio, 10.0% behind. \
             hintq is first at 100 and 5000 pairs, not at 1000 (mio first). \
             hintq's best against the best peer, launch by launch: ahead in every launch at 5000 pairs (3 of 3); \
             split at 100 pairs (hintq-epoll ahead of mio in 2, behind in 1 of 3 launches); \
             behind in every launch at 1000 pairs (3 of 3). \
             A split is inside this machine's launch-to-launch spread: neither loop is shown faster there."
        );
        // hintq first everywhere, and rows of one process per point (no launch in the note).
        let old = "E9,hintq-epoll,100,0,us_per_run,1,ok,quiet: busy 1%\nE9,hintq-epoll,100,1,us_per_run,2,ok,quiet\n\
                   E9,mio,100,0,us_per_run,3,ok,quiet\nE9,mio,100,1,us_per_run,4,ok,quiet\n";
        let a = E9.analyse(&read_csv(old).unwrap());
        assert_eq!(a.reading[0], "Each point: 1 launch × 2 runs (one process); medians are over its 2 runs.");
        assert_eq!(
            a.reading[1],
            "Fastest at each pair count (lowest median): 100 pairs: hintq-epoll 1.50 µs, 133.3% ahead of mio (3.50 µs). \
             hintq is first at every pair count."
        );
    }
}
