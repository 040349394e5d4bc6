//! E1, Banga Fig. 8: throughput, errors and server CPU per request as
//! cold (idle) connections grow, per backend, and nginx with one worker beside. Banga's three
//! lines are there: classical select (`select-classic`), improved select (`select`) and the
//! event API on a kernel event queue (`uring`, `epoll`), up to 15,000 cold connections, served
//! by one process.
//!
//! The full run goes on to 100,000 cold connections for uring, epoll, poll (until it
//! collapses: its points may fail on their time limit, and are recorded so) and nginx, more
//! than one process may hold here (`RLIMIT_NOFILE`): `hintq serve --processes N` and nginx
//! with N workers, N = [`serve::processes_for`] (at most 15,000 connections each), both with a
//! listener per process (`SO_REUSEPORT`). Their CPU is the sum over the server's processes.
//!
//! From the server's side (the runner's sampler), at every point: the connections its
//! processes hold (descriptors beyond those before the load, the least over the hot phase),
//! and the memory per connection held: user space (their summed RSS, minus before the load)
//! and kernel (the machine's slab plus TCP socket memory, minus before: both ends of each
//! connection, since client and server share the kernel here).

use super::serve::{self, load_limits, server_side, servers, LOAD_CPU, REQUESTS, THROUGHPUT};
use super::{panel, Analysis, Experiment, Lab, UNMEASURED};
use crate::data::{num, Line, Row, Status};
use crate::plot::label;
use crate::runner::Point;
use std::time::Duration;

/// Cold counts up to this are served by one process (as they were before the larger counts
/// were added); above it, by [`serve::processes_for`] processes.
pub const ONE_PROCESS_MAX: usize = 15_000;

/// Hot connections.
const HOT: usize = 32;

/// The series run above [`ONE_PROCESS_MAX`]: the event API, poll (until it collapses) and
/// nginx.
const LARGE: [&str; 4] = ["hintq-uring", "hintq-epoll", "hintq-poll", "nginx"];

/// Processes serving `cold` cold connections (and the hot ones): 1 up to
/// [`ONE_PROCESS_MAX`]; in the smoke run, 2 for any cold count, to try the path cheaply.
fn processes(lab: &Lab, cold: usize) -> usize {
    match (lab.smoke, cold) {
        (true, 0) => 1,
        (true, _) => 2,
        (false, c) if c > ONE_PROCESS_MAX => serve::processes_for(c + HOT),
        _ => 1,
    }
}

/// E1: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E1",
    title: "static server throughput vs cold connections",
    paper: "Banga et al. Fig. 8",
    claim: "With select/poll, throughput falls as cold connections grow; with the event API it stays \
         flat (Banga: +28% at 2000 connections).",
    needs: super::needs_server,
    plan,
    analyse,
};

fn plan(lab: &Lab) -> Vec<Point> {
    let colds: Vec<usize> = lab.pick(
        // 10000, 15000 and 25000 left out for the full run's time (issue 26's budget).
        vec![0, 1000, 2000, 5000, 50_000, 100_000],
        // Banga's Fig. 8 number is at 2000 cold.
        vec![0, 2000],
        vec![0, 100],
    );
    let backends = lab.pick(
        &["uring", "epoll", "poll", "select-classic", "select", "rtsig"][..],
        &["epoll", "poll", "select-classic", "select"][..],
        &["epoll"][..],
    );
    // Three launches of every point, the selects' too: a verdict needs 3 (verdict.rs).
    let (reps, secs): (u32, f64) = (lab.pick(3, 3, 1), lab.pick(3.0, 1.0, 0.5));
    let mut points = Vec::new();
    for s in servers(lab, backends) {
        for &cold in &colds {
            let large = cold > ONE_PROCESS_MAX;
            if large && !LARGE.contains(&s.as_str()) {
                continue;
            }
            // The counts beyond one process run once each (the full run's time).
            let reps = if large { 1 } else { reps };
            let procs = processes(lab, cold);
            for rep in 0..reps {
                let port = serve::port();
                let Ok(mut server) = serve::server_processes(lab, &s, port, procs) else { continue };
                // About 6 looks in the hot phase, at most 2 a second.
                server.sample = Some(Duration::from_secs_f64((secs / 6.0).min(0.5)));
                let name = s.clone();
                let note = match (procs, s.as_str()) {
                    (1, _) => String::new(),
                    (n, "nginx") => serve::nginx_note(n),
                    (n, _) => format!("hintq serve --processes {n} --idle-timeout 600s"),
                };
                points.push(Point {
                    experiment: "E1",
                    series: s.clone(),
                    x: cold as f64,
                    name: format!("{s}-cold{cold}-rep{rep}"),
                    server: Some(server),
                    cmd: serve::load(lab, port, "1k.html", HOT, cold, None, secs),
                    // Bounded, so a collapsing server (poll at the largest counts) fails
                    // its point rather than holding the run.
                    timeout: Duration::from_secs_f64(secs + 60.0 + cold as f64 / 2000.0),
                    estimate: Duration::from_secs_f64(
                        secs + 1.0 + cold as f64 / 5000.0 + (procs - 1) as f64 * 0.3,
                    ),
                    parse: Box::new(move |ran| {
                        let json = serve::load_json(ran)?;
                        let mut rows = serve::rows(
                            "E1",
                            &name,
                            cold as f64,
                            &json,
                            &[
                                ("throughput_rps", THROUGHPUT, 1.0),
                                ("load_cpu_us_per_request", LOAD_CPU, 1.0),
                            ],
                        )?;
                        let requests = serve::at(&json, REQUESTS).ok_or("load.json has no /hot/successes")?;
                        let first = rows[0].clone();
                        let row = |metric: &str, v: f64| Row {
                            metric: metric.into(),
                            value: Some(v),
                            status: Status::Ok,
                            ..first.clone()
                        };
                        if let (Some(cpu), true) = (ran.server_cpu, requests > 0.0) {
                            rows.push(row("server_cpu_us_per_request", cpu * 1e6 / requests));
                        }
                        let phase = |p: &str| serve::at(&json, p);
                        let (warm, hot, wall) =
                            (phase("/warmup_seconds"), phase("/hot_seconds"), phase("/wall_seconds"));
                        let side = match (&ran.samples, warm, hot, wall) {
                            (Some(s), Some(warm), Some(hot), Some(wall)) => server_side(s, warm, hot, wall),
                            _ => None,
                        };
                        if let Some(side) = side {
                            rows.push(row("held_connections", side.held));
                            // Per idle connection: not at 0 cold (the hot ones alone).
                            if cold > 0 && side.held > 0.0 {
                                rows.push(row("user_bytes_per_connection", side.user));
                                rows.push(row("kernel_bytes_per_connection", side.kernel));
                            }
                        }
                        for r in rows.iter_mut() {
                            r.rep = rep;
                            if !note.is_empty() {
                                r.note = note.clone();
                            }
                        }
                        Ok(rows)
                    }),
                });
            }
        }
    }
    points
}

fn analyse(rows: &[Row]) -> Analysis {
    let panel =
        |metric, title, y, log_y| panel(rows, metric, title, "cold (idle) connections", y, (false, log_y));
    let t = panel(
        "throughput_rps",
        "(a) throughput, 32 hot connections, 1 KB file",
        "requests per second",
        false,
    );
    let c = panel("server_cpu_us_per_request", "(b) server CPU per request", "µs CPU per request", true);
    let user = panel(
        "user_bytes_per_connection",
        "(c) user-space memory per connection held (server's processes, RSS)",
        "bytes per connection",
        false,
    );
    let kernel = panel(
        "kernel_bytes_per_connection",
        "(d) kernel memory per connection held (slab + TCP buffers, both ends)",
        "bytes per connection",
        false,
    );
    let mut reading = super::cold_growth(&t.lines, label);
    reading.extend(load_limits(rows, &t.lines));
    reading.extend(beyond_one_process(rows, &t.lines, &c.lines, &user.lines, &kernel.lines));
    // Banga's comparison over the counts one process serves (classical select goes no
    // further); the larger counts are said after it.
    let single: Vec<Line> = t
        .lines
        .iter()
        .map(|l| Line {
            name: l.name.clone(),
            points: l.points.iter().filter(|p| p.x <= ONE_PROCESS_MAX as f64).copied().collect(),
        })
        .collect();
    // Banga's comparison: the event API (epoll) against classical select (poll stands in
    // when it was not measured), from 0 cold to the most cold one process serves where
    // both were measured.
    let xs = |n: &str| {
        single.iter().find(|l| l.name == n).map(|l| l.points.iter().map(|p| p.x).collect::<Vec<_>>())
    };
    let scan_xs = xs("hintq-select-classic").or_else(|| xs("hintq-poll")).unwrap_or_default();
    let last = xs("hintq-epoll")
        .unwrap_or_default()
        .into_iter()
        .filter(|x| *x > 0.0 && scan_xs.contains(x))
        .max_by(f64::total_cmp);
    let (ours, holds): (String, String) = match last {
        Some(x) => {
            let (v, figures) = super::banga::fig8_verdict(rows, "throughput_rps", x);
            let mut ours = figures;
            // The other lines by Fig. 8's words for epoll: their launches at `x` cold the
            // same as at 0 (verdict::FLAT_TOL), not a share of the medians kept.
            for (other, n) in [("improved select", "hintq-select"), ("poll", "hintq-poll")] {
                ours += &same_as_at_zero(rows, other, n, x);
            }
            (
                ours + &large_ours(&t.lines, &user.lines, &kernel.lines),
                format!("{v} ({})", super::banga::FIG8_RULE),
            )
        }
        None => {
            ("epoll, or classical select and poll, not measured at two cold counts".into(), UNMEASURED.into())
        }
    };
    let figures = vec![super::banga::fig8(super::banga::Setting::Server, rows, "throughput_rps", &t.lines)];
    Analysis {
        panels: vec![t, c, user, kernel],
        ours,
        holds,
        reading,
        metrics: vec![
            ("throughput_rps", "requests per second"),
            ("errors", "errors"),
            (
                "server_cpu_us_per_request",
                "server µs CPU per request (its CPU over the run ÷ hot-phase requests)",
            ),
            ("load_hot_busy_pct", "load generator busiest hot thread, % of the hot phase"),
            ("load_cpu_us_per_request", "load generator µs CPU per request"),
            ("held_connections", "connections the server held, least in the hot phase"),
            ("user_bytes_per_connection", "user-space bytes per connection held"),
            ("kernel_bytes_per_connection", "kernel bytes per connection held, both ends"),
        ],
        figures,
    }
}

/// `; <name> at <x> cold the same as at 0 (rule): <verdict> (<launches at 0>, <at x>)` for the
/// series `series` of `rows`' throughput, by [`crate::verdict::Verdict::same`] within
/// [`crate::verdict::FLAT_TOL`]; empty when it was not measured at both.
fn same_as_at_zero(rows: &[Row], name: &str, series: &str, x: f64) -> String {
    use crate::verdict::{launches, Verdict, FLAT_TOL};
    let at = |c: f64| launches(rows, series, c, "throughput_rps");
    let (Some(a0), Some(ax)) = (at(0.0), at(x)) else { return String::new() };
    let (x, tol, v) = (num(x), num(FLAT_TOL * 100.0), Verdict::same(&ax, &a0, FLAT_TOL));
    format!(
        "; {name} the same at {x} cold as at 0 (rule: launches overlap, each within {tol}% of every other): \
         {v} ({a0}, {ax} req/s)"
    )
}

/// The largest of the cold counts `xs` above [`ONE_PROCESS_MAX`].
fn past_one_process(xs: impl Iterator<Item = f64>) -> Option<f64> {
    xs.filter(|&x| x > ONE_PROCESS_MAX as f64).max_by(f64::total_cmp)
}

/// The figures past one process, for the opening table: at the largest cold count measured
/// above [`ONE_PROCESS_MAX`], the share of its throughput at 0 cold each series keeps, and
/// epoll's memory per connection held.
fn large_ours(throughput: &[Line], user: &[Line], kernel: &[Line]) -> String {
    let Some(top) = past_one_process(throughput.iter().flat_map(|l| l.points.iter().map(|p| p.x))) else {
        return String::new();
    };
    let kept: Vec<String> = throughput
        .iter()
        .filter_map(|l| {
            let (first, at) = (l.points.first()?, l.at(top)?);
            Some(format!("{} {}%", label(&l.name), num(at.spread.median / first.spread.median * 100.0)))
        })
        .collect();
    let mut out = format!(
        "; at {top} cold (servers of {} processes): {}",
        serve::processes_for(top as usize + HOT),
        kept.join(", ")
    );
    let mem = |lines: &[Line]| lines.iter().find(|l| l.name == "hintq-epoll")?.median(top);
    if let (Some(u), Some(k)) = (mem(user), mem(kernel)) {
        out += &format!(
            "; epoll {} B user space and {} B kernel (both ends) per connection held",
            num(u),
            num(k)
        );
    }
    out
}

/// Sentences on the counts beyond one process: each series' throughput and CPU per request
/// at the largest count against 0 cold, whether the server held the connections, its memory
/// per connection, and the points that failed (a server that collapsed).
fn beyond_one_process(
    rows: &[Row],
    throughput: &[Line],
    cpu: &[Line],
    user: &[Line],
    kernel: &[Line],
) -> Vec<String> {
    let mut out = Vec::new();
    let held = crate::data::lines(rows, "held_connections");
    let errors = crate::data::lines(rows, "errors");
    for l in throughput {
        let Some(top) = past_one_process(l.points.iter().map(|p| p.x)) else { continue };
        let name = label(&l.name);
        let (Some(first), Some(at)) = (l.points.first(), l.at(top)) else { continue };
        let mut s = format!(
            "{name} at {top} cold, {} processes: {}% of its throughput at {} cold",
            serve::processes_for(top as usize + HOT),
            num(at.spread.median / first.spread.median * 100.0),
            first.x
        );
        let find = |ls: &[Line]| ls.iter().find(|c| c.name == l.name).cloned();
        if let Some(c) = find(cpu) {
            if let (Some(c0), Some(c1)) = (c.median(first.x), c.median(top)) {
                s += &format!(
                    ", server CPU per request (all its CPU over the run, accepting the cold connections \
                     included, ÷ the hot phase's requests) {} µs against {} µs at {} cold ({}x)",
                    num(c1),
                    num(c0),
                    first.x,
                    num(c1 / c0)
                );
            }
        }
        if let Some(h) = find(&held).and_then(|h| h.median(top)) {
            let want = top + HOT as f64;
            s += &format!("; it held {} of the {} connections", num(h), num(want));
            if h < 0.99 * want {
                let errors = find(&errors).and_then(|e| e.median(top)).unwrap_or(0.0);
                s += &if errors > 0.0 {
                    format!(" (fewer: the load counted {} errors)", num(errors))
                } else {
                    " (fewer, with no errors counted: the count is the server's open descriptors at a sample \
                     in the hot phase)"
                        .to_string()
                };
            }
        }
        if let (Some(u), Some(k)) =
            (find(user).and_then(|u| u.median(top)), find(kernel).and_then(|k| k.median(top)))
        {
            s += &format!(", {} B of user space and {} B of kernel memory per connection", num(u), num(k));
        }
        out.push(s + ".");
    }
    // A server that collapsed: its points failed (time limit) or left no throughput.
    let mut failed: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r.experiment == "E1" && r.status == Status::Failed && r.x > ONE_PROCESS_MAX as f64)
        .map(|r| (r.series.clone(), r.x))
        .collect();
    failed.dedup();
    for (series, x) in failed {
        out.push(format!(
            "{}: its point at {x} cold failed (collapsed or timed out; see its row).",
            label(&series)
        ));
    }
    if !out.is_empty() {
        out.push(
            "Kernel memory is the machine's (slab and TCP buffers): it counts both ends of each \
             connection and whatever else ran meanwhile; it is meaningful at large counts only."
                .into(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exp::check::{contains, starts};

    #[test]
    fn large_counts_are_served_by_processes_of_at_most_15000_connections() {
        assert_eq!(serve::processes_for(15_000), 1);
        assert_eq!(serve::processes_for(25_000 + HOT), 2);
        assert_eq!(serve::processes_for(50_000 + HOT), 4);
        assert_eq!(serve::processes_for(100_000 + HOT), 7);
        const { assert!(serve::PER_PROCESS * 6 / 5 <= 18_000, "room for uneven hashing under 20,000") };
    }

    #[test]
    fn the_reading_and_figure_go_on_to_100000_cold_and_name_a_collapse() {
        let row = |series: &str, x: f64, metric: &str, v: f64| Row::ok("E1", series, x, metric, v);
        let mut rows = Vec::new();
        for (s, scan) in [("hintq-epoll", 1.0), ("hintq-poll", 0.5)] {
            for (x, f) in [(0.0, 1.0), (2000.0, scan), (15000.0, scan), (100_000.0, 0.9)] {
                // Three launches, a little apart.
                for rep in 0..3 {
                    let v = 10_000.0 * f * (1.0 + 0.001 * rep as f64);
                    rows.push(Row { rep, ..row(s, x, "throughput_rps", v) });
                }
                rows.push(row(s, x, "server_cpu_us_per_request", 20.0 / f));
                rows.push(row(s, x, "held_connections", x + 32.0));
            }
        }
        rows.retain(|r| !(r.series == "hintq-poll" && r.x == 100_000.0));
        rows.push(Row {
            value: None,
            status: Status::Failed,
            metric: String::new(),
            ..row("hintq-poll", 100_000.0, "", 0.0)
        });
        rows.push(row("hintq-epoll", 100_000.0, "user_bytes_per_connection", 300.0));
        rows.push(row("hintq-epoll", 100_000.0, "kernel_bytes_per_connection", 4000.0));
        let a = analyse(&rows);
        assert_eq!(a.panels.len(), 4);
        let text = a.reading.join("\n");
        contains(&text, "at 100000 cold, 7 processes: 90.0% of its throughput");
        contains(&text, "it held 100032 of the 100032 connections");
        contains(&text, "300 B of user space and 4000 B of kernel memory");
        contains(&text, "point at 100000 cold failed");
        // Banga's verdict over one process's counts (poll kept 50% at 15000), then the rest.
        starts(&a.holds, "yes (rule: epoll's throughput launches");
        starts(&a.ours, "req/s at 0 and 15000 cold: epoll 10010 (10000–10020, n=3), 10010 (10000–10020, n=3); poll 10010 (10000–10020, n=3), 5005 (5000–5010, n=3)");
        // Banga's Fig. 8 row judges at 2000 cold, where poll fell apart too.
        assert_eq!(a.figures[0].holds, "yes");
        // The other lines by the same literal rule, not a share of the medians "kept".
        assert!(
            a.ours.contains(
                "; poll the same at 15000 cold as at 0 (rule: launches overlap, each within 10.0% of every \
                 other): no (10010 (10000–10020, n=3), 5005 (5000–5010, n=3) req/s)"
            ),
            "{}",
            a.ours
        );
        assert!(!a.ours.contains("keeps"), "{}", a.ours);
        // A Fig. 8 row whose figure says "not both measured at 2000 cold" cannot say yes.
        let panel: Vec<Line> = crate::data::lines(&rows, "throughput_rps")
            .into_iter()
            .map(|l| Line { points: l.points.into_iter().filter(|p| p.x != 2000.0).collect(), ..l })
            .collect();
        let f =
            super::super::banga::fig8(super::super::banga::Setting::Server, &rows, "throughput_rps", &panel);
        contains(&f.ours, "not both measured at 2000 cold");
        starts(&f.holds, "cannot say");
        // A launch whose load generator was 70% busy at 2000 cold leaves Fig. 8 unjudged.
        let mut busy = rows.clone();
        busy.push(Row { rep: 1, ..row("hintq-poll", 2000.0, "load_hot_busy_pct", 70.0) });
        let f8 = analyse(&busy).figures[0].holds.clone();
        assert!(
            f8.starts_with(
                "cannot say: the load generator's busiest hot thread was 70.0% busy for hintq-poll at 2000"
            ),
            "{f8}"
        );
        // Two launches: cannot say.
        let two: Vec<Row> = rows.iter().filter(|r| r.rep < 2).cloned().collect();
        assert!(analyse(&two).holds.starts_with("cannot say: fewer than 3 launches"));
        contains(&a.ours, "0 and 15000 cold");
        contains(&a.ours, "at 100000 cold (servers of 7 processes)");
        contains(&a.ours, "epoll 300 B user space and 4000 B kernel");
    }

    #[test]
    fn the_load_generator_is_judged_on_its_hot_phase_and_fewer_held_names_errors_only_if_any() {
        let row = |series: &str, x: f64, metric: &str, v: f64| Row::ok("E1", series, x, metric, v);
        let mut rows = Vec::new();
        for s in ["hintq-epoll", "hintq-poll"] {
            for (x, held) in [(0.0, 32.0), (100_000.0, 90_000.0)] {
                rows.push(row(s, x, "throughput_rps", 50_000.0));
                // 50 µs of load CPU per request at 100000 cold: 2.5 cores if it were all hot.
                rows.push(row(s, x, "load_cpu_us_per_request", if x > 0.0 { 50.0 } else { 10.0 }));
                rows.push(row(s, x, "held_connections", held));
                rows.push(row(s, x, "server_cpu_us_per_request", 10.0));
            }
        }
        rows.push(row("hintq-poll", 100_000.0, "errors", 12.0));
        rows.push(row("hintq-poll", 0.0, "errors", 0.0));
        // epoll's run recorded its hot phase: 13% busy, not a limit.
        rows.push(row("hintq-epoll", 100_000.0, "load_hot_busy_pct", 13.0));
        let text = analyse(&rows).reading.join("\n");
        assert!(!text.contains("may limit"), "{text}");
        contains(&text, "The load generator is judged at 0 cold only");
        contains(&text, "server CPU per request (all its CPU over the run, accepting the cold connections included, ÷ the hot phase's requests) 10.0 µs against 10.0 µs at 0 cold");
        contains(&text, "hintq-poll at 100000 cold, 7 processes: 100% of its throughput at 0 cold");
        contains(&text, "(fewer: the load counted 12.0 errors)");
        contains(&text, "(fewer, with no errors counted:");
        // A busy hot thread is named.
        rows.push(row("hintq-epoll", 0.0, "load_hot_busy_pct", 97.0));
        let text = analyse(&rows).reading.join("\n");
        contains(
            &text,
            "hintq-epoll: the load generator's busiest hot thread was 97.0% busy in the hot phase at 0 cold",
        );
    }
}
