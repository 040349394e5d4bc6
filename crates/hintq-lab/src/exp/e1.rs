//! E1, Banga Fig. 8 and Provos Figs. 4-10: throughput, errors and server CPU per request as
//! cold (idle) connections grow, per backend, and nginx with one worker beside. Banga's three
//! lines are there: classical select (`select-classic`), improved select (`select`) and the
//! event API on a kernel event queue (`uring`, `epoll`), all up to the largest cold count.

use super::e3::growth;
use super::serve::{self, LOAD_CPU, REQUESTS, THROUGHPUT};
use super::{panel, Analysis, Experiment, Lab, UNMEASURED};
use crate::data::{num, Row, Status};
use crate::plot::label;
use crate::runner::Point;
use std::time::Duration;

/// E1.
pub struct E1;

/// The series of the server experiments: hintq backends the kernel supports, and nginx when
/// installed (else said, with its install command).
pub fn servers(lab: &Lab, backends: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = backends
        .iter()
        .filter(|b| b.parse::<hintq::Backend>().is_ok_and(|b| b.probe().is_ok()))
        .map(|b| format!("hintq-{b}"))
        .collect();
    match crate::peers::nginx() {
        Ok((_, v)) => {
            lab.peers.borrow_mut().push(("nginx".into(), v));
            out.push("nginx".into());
        }
        Err(why) => lab.missing.borrow_mut().push(why),
    }
    out
}

/// The repetitions of series `s`: the two selects, added to E1 and E2 at every cold count,
/// run once in the quick run and at most twice in the full one, to keep each run within its
/// time (a line run once shows no spread).
pub fn select_reps(lab: &Lab, s: &str, reps: u32) -> u32 {
    match (s.starts_with("hintq-select"), lab.quick) {
        (true, true) => 1,
        (true, false) => reps.min(2),
        (false, _) => reps,
    }
}

impl Experiment for E1 {
    fn id(&self) -> &'static str {
        "E1"
    }
    fn title(&self) -> &'static str {
        "static server throughput vs cold connections"
    }
    fn paper(&self) -> &'static str {
        "Banga et al. Fig. 8; Provos & Lever Figs. 4-10"
    }
    fn claim(&self) -> &'static str {
        "With select/poll, throughput falls as cold connections grow; with the event API it stays \
         flat (Banga: +28% at 2000 connections)."
    }
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        lab.need(&["serve"]).and(lab.need(&["load"]))
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        let colds: Vec<usize> = lab.pick(vec![0, 1000, 2000, 5000, 10000, 15000], vec![0, 5000], vec![0]);
        let backends = lab.pick(
            &["uring", "epoll", "poll", "select-classic", "select", "rtsig"][..],
            &["epoll", "poll", "select-classic", "select"][..],
            &["epoll"][..],
        );
        let (reps, secs) = (lab.pick(3, 2, 1), lab.pick(3.0, 2.0, 0.5));
        let mut points = Vec::new();
        for s in servers(lab, backends) {
            for &cold in &colds {
                for rep in 0..select_reps(lab, &s, reps) {
                    let port = serve::port();
                    let Ok(server) = serve::server(lab, &s, port) else { continue };
                    let name = s.clone();
                    points.push(Point {
                        experiment: "E1",
                        series: s.clone(),
                        x: cold as f64,
                        name: format!("{s}-cold{cold}-rep{rep}"),
                        server: Some(server),
                        cmd: serve::load(lab, port, "1k.html", 32, cold, None, secs),
                        timeout: Duration::from_secs_f64(secs + 60.0),
                        estimate: Duration::from_secs_f64(secs + 1.0 + cold as f64 / 5000.0),
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
                            let requests =
                                serve::at(&json, REQUESTS).ok_or("load.json has no /hot/successes")?;
                            if let (Some(cpu), true) = (ran.server_cpu, requests > 0.0) {
                                rows.push(Row {
                                    metric: "server_cpu_us_per_request".into(),
                                    value: Some(cpu * 1e6 / requests),
                                    status: Status::Ok,
                                    ..rows[0].clone()
                                });
                            }
                            rows.iter_mut().for_each(|r| r.rep = rep);
                            Ok(rows)
                        }),
                    });
                }
            }
        }
        points
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        let x = "cold (idle) connections";
        let t = panel(
            rows,
            "throughput_rps",
            "(a) throughput, 32 hot connections, 1 KB file",
            x,
            "requests per second",
            (false, false),
        );
        let c = panel(
            rows,
            "server_cpu_us_per_request",
            "(b) server CPU per request",
            x,
            "µs CPU per request",
            (false, false),
        );
        let mut reading = Vec::new();
        for l in &t.lines {
            if let Some((x0, m0, x1, m1, g)) = growth(l) {
                reading.push(format!(
                    "{}: {} req/s with {x0} cold, {} req/s with {x1} ({}x).",
                    label(&l.name),
                    num(m0),
                    num(m1),
                    num(g)
                ));
            }
        }
        // PERF.md: show the load generator was not the bottleneck.
        let load = crate::data::lines(rows, "load_cpu_us_per_request");
        for l in &t.lines {
            let Some(lc) = load.iter().find(|c| c.name == l.name) else { continue };
            let busiest = l
                .points
                .iter()
                .filter_map(|p| Some((p.x, p.spread.median * lc.median(p.x)? / 1e6)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            if let Some((x, cores)) = busiest.filter(|b| b.1 > 0.9) {
                reading.push(format!(
                    "{}: the load generator used {} of its core at {x} cold: it, not the server, may limit this throughput.",
                    l.name,
                    num(cores)
                ));
            }
        }
        let get = |n: &str| t.lines.iter().find(|l| l.name == n).and_then(growth);
        // Banga's comparison: the event API (epoll) against classical select; poll stands in
        // when classical select was not measured.
        let scan = get("hintq-select-classic")
            .map(|g| ("classical select", g))
            .or_else(|| get("hintq-poll").map(|g| ("poll", g)));
        let (ours, holds): (String, String) = match (get("hintq-epoll"), scan) {
            (Some(e), Some((name, s))) => {
                let kept = |g: (f64, f64, f64, f64, f64)| format!("{}%", num(g.4 * 100.0));
                let mut ours =
                    format!("epoll keeps {} of its throughput at {} cold, {name} {}", kept(e), e.2, kept(s));
                for (other, n) in [("improved select", "hintq-select"), ("poll", "hintq-poll")] {
                    if let Some(g) = get(n).filter(|_| other != name) {
                        ours += &format!(", {other} {}", kept(g));
                    }
                }
                let holds = match (e.4 > 0.8, s.4 < 0.7) {
                    (true, true) => "yes",
                    (false, false) => "no",
                    _ => "partly",
                };
                (ours, holds.into())
            }
            _ => (
                "epoll, or classical select and poll, not measured at two cold counts".into(),
                UNMEASURED.into(),
            ),
        };
        let figures = vec![super::banga::fig8(super::banga::Setting::Server, &t.lines, &holds)];
        Analysis {
            panels: vec![t, c],
            ours,
            holds,
            reading,
            metrics: vec![
                ("throughput_rps", "requests per second"),
                ("errors", "errors"),
                ("server_cpu_us_per_request", "server µs CPU per request"),
                ("load_cpu_us_per_request", "load generator µs CPU per request"),
            ],
            figures,
        }
    }
}
