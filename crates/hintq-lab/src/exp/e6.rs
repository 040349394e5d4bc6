//! E6, Strebelow & Prehofer Figs. 6-13: patterns (reactor, Leader/Followers, Half-Sync/
//! Half-Async, sharded) x backends x threads with 512 request/response connections; read from
//! `hintq bench patterns`, whose CSV is read by column name.

use super::micro::tool_points;
use super::{panel, Analysis, Experiment, Lab, UNMEASURED};
use crate::data::{num, Row, Status};
use crate::runner::Point;
use std::time::Duration;

/// E6.
pub struct E6;

/// Our rows from the patterns benchmark's CSV: replies per second, ns waiting per event and
/// ns per re-activation, against threads, one series per pattern and backend. Columns are
/// found by name; a missing one fails the point.
pub fn convert(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header: Vec<&str> = lines.next().ok_or("no header")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or(format!("no column {name}"));
    let (pattern, backend, threads) = (col("pattern")?, col("backend")?, col("threads")?);
    let metrics = [
        ("throughput_rps", col("throughput")?),
        ("wait_ns_per_event", col("wait_ns_per_event")?),
        ("rearm_ns_per_op", col("rearm_ns_per_op")?),
    ];
    let mut out = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let get = |i: usize| f.get(i).copied().ok_or_else(|| format!("short line: {line}"));
        let series = format!("{}/{}", get(pattern)?, get(backend)?);
        let x: f64 = get(threads)?.parse().map_err(|_| format!("bad threads: {line}"))?;
        for (metric, i) in metrics {
            // Empty where it does not apply (no re-activation on edge-triggered backends).
            let Ok(v) = get(i)?.parse::<f64>() else { continue };
            out.push(Row {
                experiment: "E6".into(),
                series: series.clone(),
                x,
                rep: 0,
                metric: metric.into(),
                value: Some(v),
                status: Status::Ok,
                note: String::new(),
            });
        }
    }
    Ok(out)
}

impl Experiment for E6 {
    fn id(&self) -> &'static str {
        "E6"
    }
    fn title(&self) -> &'static str {
        "patterns x backends x threads, 512 request/response connections"
    }
    fn paper(&self) -> &'static str {
        "Strebelow & Prehofer, Figs. 6-13"
    }
    fn claim(&self) -> &'static str {
        "Leader/Followers gives the highest throughput and scales with threads; edge-triggered \
         epoll avoids the re-activation cost that level-triggered and one-shot pay."
    }
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        if lab.smoke {
            return Err(
                "left out of --smoke: `hintq bench patterns --quick` alone takes about a minute".into()
            );
        }
        lab.need(&["bench", "patterns"])
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        let (server, client) = (lab.cores.bench.to_string(), lab.cores.load.to_string());
        let est = Duration::from_secs(lab.pick(120, 30, 30));
        let mut extra = vec!["--server-cpu", server.as_str(), "--client-cpu", client.as_str()];
        if lab.quick {
            // Every pattern, the backends that tell level, edge and uring apart, 1 and 2 threads.
            extra.extend(["--backends", "epoll,epoll-et,uring", "--threads", "1,2"]);
        }
        tool_points(lab, "E6", "patterns", &extra, lab.pick(3, 2, 1), est, |_, text| convert(text))
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        // Strebelow's figures: one panel per pattern, one line per backend.
        let mut patterns: Vec<&str> = Vec::new();
        for r in rows {
            let Some((p, _)) = r.series.split_once('/') else { continue };
            if !patterns.contains(&p) {
                patterns.push(p);
            }
        }
        let mut panels: Vec<_> = patterns
            .iter()
            .map(|p| {
                let prefix = format!("{p}/");
                let sub: Vec<Row> = rows
                    .iter()
                    .filter_map(|r| {
                        Some(Row { series: r.series.strip_prefix(&prefix)?.to_string(), ..r.clone() })
                    })
                    .collect();
                panel(
                    &sub,
                    "throughput_rps",
                    &format!("throughput: {p}"),
                    "threads",
                    "replies per second",
                    (false, false),
                )
            })
            .collect();
        let t = panel(rows, "throughput_rps", "", "", "", (false, false));
        let w = panel(
            rows,
            "rearm_ns_per_op",
            "re-activation cost",
            "threads",
            "ns per re-activation",
            (false, true),
        );
        let best = t
            .lines
            .iter()
            .filter_map(|l| {
                l.points
                    .iter()
                    .map(|p| (p.spread.median, p.x))
                    .max_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|m| (l, m))
            })
            .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0));
        let reading: Vec<String> = t
            .lines
            .iter()
            .filter_map(|l| {
                l.points
                    .last()
                    .map(|p| format!("{}: {} replies/s with {} threads.", l.name, num(p.spread.median), p.x))
            })
            .collect();
        let (ours, holds) = match best {
            Some((l, (v, x))) => (
                format!("best: {} at {} replies/s with {x} threads", l.name, num(v)),
                if l.name.starts_with("leader") { "yes" } else { "no: another pattern is fastest here" }
                    .into(),
            ),
            None => ("no throughput measured".into(), UNMEASURED.into()),
        };
        panels.push(w);
        Analysis {
            panels,
            ours,
            holds,
            reading,
            metrics: vec![
                ("throughput_rps", "replies per second"),
                ("wait_ns_per_event", "ns in get_next_event per event"),
                ("rearm_ns_per_op", "ns per re-activation"),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_patterns_rows_by_column_name_and_skips_empty_cells() {
        let csv = "# x: y\npattern,backend,threads,throughput,wait_ns_per_event,rearm_ns_per_op,spread\n\
                   leader-followers,epoll,2,120000.5,800.0,,256/256\n";
        let rows = super::convert(csv).unwrap();
        let got: Vec<(&str, &str, f64, f64)> =
            rows.iter().map(|r| (r.series.as_str(), r.metric.as_str(), r.x, r.value.unwrap())).collect();
        assert_eq!(
            got,
            [
                ("leader-followers/epoll", "throughput_rps", 2.0, 120000.5),
                ("leader-followers/epoll", "wait_ns_per_event", 2.0, 800.0)
            ]
        );
        assert!(super::convert("pattern,backend\n").unwrap_err().contains("threads"));
    }
}

#[cfg(test)]
mod panel_tests {
    use super::*;

    #[test]
    fn one_throughput_panel_per_pattern_then_the_reactivation_panel() {
        let row = |series: &str, x: f64, metric: &str, v: f64| Row {
            experiment: "E6".into(),
            series: series.into(),
            x,
            rep: 0,
            metric: metric.into(),
            value: Some(v),
            status: Status::Ok,
            note: String::new(),
        };
        let rows = vec![
            row("reactor/epoll", 1.0, "throughput_rps", 10.0),
            row("leader-followers/epoll", 1.0, "throughput_rps", 20.0),
            row("leader-followers/uring", 2.0, "throughput_rps", 30.0),
            row("leader-followers/epoll", 1.0, "rearm_ns_per_op", 170.0),
            Row { status: Status::Failed, value: None, ..row("hintq bench patterns", 0.0, "", 0.0) },
        ];
        let a = E6.analyse(&rows);
        let titles: Vec<&str> = a.panels.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(titles, ["throughput: reactor", "throughput: leader-followers", "re-activation cost"]);
        let names: Vec<&str> = a.panels[1].lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["epoll", "uring"]);
        assert!(a.ours.contains("leader-followers/uring") && a.holds == "yes", "{} / {}", a.ours, a.holds);
    }
}
