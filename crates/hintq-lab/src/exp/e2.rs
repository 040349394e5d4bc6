//! E2, Banga Fig. 9 and Provos Fig. 14: latency against offered rate at 750 cold
//! connections, open loop (measured from the intended send time).

use super::e1::servers;
use super::serve;
use super::{panel, Analysis, Experiment, Lab, UNMEASURED};
use crate::data::{num, Row};
use crate::runner::Point;
use std::time::Duration;

/// E2.
pub struct E2;

const COLD: usize = 750;
/// The latency bound that defines the rate a server sustains.
const P99_BOUND_MS: f64 = 10.0;

impl Experiment for E2 {
    fn id(&self) -> &'static str {
        "E2"
    }
    fn title(&self) -> &'static str {
        "latency vs offered rate at 750 cold connections"
    }
    fn paper(&self) -> &'static str {
        "Banga et al. Fig. 9; Provos & Lever Fig. 14"
    }
    fn claim(&self) -> &'static str {
        "With cold connections held, select/poll servers saturate at a lower rate and their \
         latency climbs; the event API keeps latency low up to a higher rate."
    }
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        lab.need(&["serve"]).and(lab.need(&["load"]))
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        let rates: Vec<f64> = lab.pick(
            vec![1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0],
            vec![1000.0, 8000.0],
            vec![500.0],
        );
        let backends = lab.pick(&["uring", "epoll", "poll"][..], &["epoll", "poll"][..], &["epoll"][..]);
        let (reps, secs) = (lab.pick(3, 2, 1), lab.pick(3.0, 2.0, 0.5));
        let mut points = Vec::new();
        for s in servers(lab, backends) {
            for &rate in &rates {
                for rep in 0..reps {
                    let port = serve::port();
                    let Ok(server) = serve::server(lab, &s, port) else { continue };
                    let name = s.clone();
                    points.push(Point {
                        experiment: "E2",
                        series: s.clone(),
                        x: rate,
                        name: format!("{s}-rate{rate}-rep{rep}"),
                        server: Some(server),
                        cmd: serve::load(lab, port, "1k.html", 32, COLD, Some(rate), secs),
                        timeout: Duration::from_secs_f64(secs + 60.0),
                        estimate: Duration::from_secs_f64(secs + 1.5),
                        parse: Box::new(move |ran| {
                            let json = serve::load_json(ran)?;
                            let mut rows = serve::rows(
                                "E2",
                                &name,
                                rate,
                                &json,
                                &[
                                    ("p50_ms", "/latency_us/p50", 1e-3),
                                    ("p99_ms", "/latency_us/p99", 1e-3),
                                    ("max_ms", "/latency_us/max", 1e-3),
                                    ("throughput_rps", serve::THROUGHPUT, 1.0),
                                ],
                            )?;
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
        let x = "offered rate (requests per second)";
        let p50 =
            panel(rows, "p50_ms", "(a) median latency, 750 cold", x, "ms from intended send", (true, true));
        let p99 = panel(
            rows,
            "p99_ms",
            "(b) 99th percentile latency, 750 cold",
            x,
            "ms from intended send",
            (true, true),
        );
        let mut reading = Vec::new();
        // The highest offered rate each server kept its p99 under the bound at.
        let sustained = |name: &str| -> Option<f64> {
            let l = p99.lines.iter().find(|l| l.name == name)?;
            Some(l.points.iter().filter(|p| p.spread.median < P99_BOUND_MS).map(|p| p.x).fold(0.0, f64::max))
        };
        let thr = crate::data::lines(rows, "throughput_rps");
        let rate = |v: f64| if v > 0.0 { format!("{} req/s", num(v)) } else { "no rate of the sweep".into() };
        for l in &p99.lines {
            if let Some(last) = l.points.last() {
                let achieved = thr.iter().find(|t| t.name == l.name).and_then(|t| t.median(last.x));
                reading.push(format!(
                    "{}: p99 under {P99_BOUND_MS} ms up to {} offered; at {} req/s offered, p99 {} ms{}.",
                    l.name,
                    sustained(&l.name).map_or("no rate".into(), rate),
                    last.x,
                    num(last.spread.median),
                    achieved.map_or(String::new(), |a| format!(", {} req/s achieved", num(a)))
                ));
            }
        }
        let (ours, holds) = match (sustained("hintq-epoll"), sustained("hintq-poll")) {
            (Some(e), Some(p)) if e > 0.0 || p > 0.0 => (
                format!(
                    "p99 under {P99_BOUND_MS} ms at 750 cold up to {} req/s with epoll, {} with poll",
                    num(e),
                    num(p)
                ),
                if e > p {
                    "yes"
                } else if e == p {
                    "partly: the same in this sweep"
                } else {
                    "no"
                }
                .into(),
            ),
            (Some(_), Some(_)) => {
                (format!("neither kept p99 under {P99_BOUND_MS} ms at any rate"), UNMEASURED.into())
            }
            _ => ("epoll or poll not measured".into(), UNMEASURED.into()),
        };
        Analysis {
            panels: vec![p50, p99],
            ours,
            holds,
            reading,
            metrics: vec![
                ("p50_ms", "p50 ms"),
                ("p99_ms", "p99 ms"),
                ("max_ms", "max ms"),
                ("errors", "errors"),
            ],
        }
    }
}
