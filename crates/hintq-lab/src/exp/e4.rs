//! E4, Banga Fig. 7: the cost of declaring and of revoking interest against the number of
//! descriptors already registered.

use super::e3::growth;
use super::{micro, panel, Analysis, Experiment, FigureRow, Lab, UNMEASURED};
use crate::data::{num, Row};
use crate::runner::Point;
use hintq_bench::report::Experiment as Fig;

/// E4.
pub struct E4;

impl Experiment for E4 {
    fn id(&self) -> &'static str {
        "E4"
    }
    fn title(&self) -> &'static str {
        "cost of declare_interest and of revoking it vs registered descriptors"
    }
    fn paper(&self) -> &'static str {
        "Banga et al. 1999, Fig. 7"
    }
    fn claim(&self) -> &'static str {
        "Declaring and revoking interest cost a few microseconds and do not grow with the number \
         of descriptors already registered."
    }
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        lab.need(&["bench", "micro"])
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        micro::points(lab, "E4", &[Fig::Fig7])
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        let x = "descriptors already registered";
        let d =
            panel(rows, "fig7_ns_per_declare", "(a) declare_interest(READ)", x, "ns per call", (false, true));
        let r =
            panel(rows, "fig7_ns_per_revoke", "(b) revoke (empty interest)", x, "ns per call", (false, true));
        let mut reading = Vec::new();
        for (what, lines) in [("declare", &d.lines), ("revoke", &r.lines)] {
            for l in lines.iter() {
                if let Some((x0, m0, x1, m1, g)) = growth(l) {
                    reading.push(format!(
                        "{what}, {}: {} ns with {x0} registered, {} ns with {x1} ({}x).",
                        l.name,
                        num(m0),
                        num(m1),
                        num(g)
                    ));
                }
            }
        }
        let epoll = |lines: &[crate::data::Line]| lines.iter().find(|l| l.name == "epoll").and_then(growth);
        let (ours, holds) = match (epoll(&d.lines), epoll(&r.lines)) {
            (Some(a), Some(b)) => {
                let flat = a.4 < 1.5 && b.4 < 1.5;
                let cheap = a.3 < 5000.0 && b.3 < 5000.0;
                (
                    format!(
                        "epoll: declare {} ns at {} registered vs {} at {} ({}x); revoke {} vs {} ({}x)",
                        num(a.1),
                        a.0,
                        num(a.3),
                        a.2,
                        num(a.4),
                        num(b.1),
                        num(b.3),
                        num(b.4)
                    ),
                    match (flat, cheap) {
                        (true, true) => "yes",
                        (false, false) => "no",
                        _ => "partly",
                    }
                    .to_string(),
                )
            }
            _ => ("epoll missing from the rows".into(), UNMEASURED.into()),
        };
        let figures = vec![FigureRow {
            figure: "Banga Fig. 7".into(),
            claim: "declare_interest and revoking it cost a few µs, with slight variation over 0 to 2000 \
                    cold connections.",
            paper: None,
            ours: ours.clone(),
            ratio: Err("the paper prints no number".into()),
            holds: holds.clone(),
        }];
        Analysis {
            panels: vec![d, r],
            ours,
            holds,
            reading,
            metrics: vec![("fig7_ns_per_declare", "ns per declare"), ("fig7_ns_per_revoke", "ns per revoke")],
            figures,
        }
    }
}
