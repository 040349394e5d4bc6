//! E4, Banga Fig. 7: the cost of declaring and of revoking interest against the number of
//! descriptors already registered.

use super::{micro, panel, Analysis, Experiment, FigureRow, UNMEASURED};
use crate::data::{num, Row};
use crate::verdict::{self, Verdict};

/// "A few µs", as ns: the bound of every launch of declare and revoke.
const A_FEW_US: f64 = 5000.0;

/// The rule of E4's verdict.
const RULE: &str =
    "Rule: yes when epoll's declare and revoke at the most registered overlap those at the fewest \
    with every launch within 10% of every other (\"slight variation\"; overlap with a wider spread is \
    within noise), and every launch of both is under 5 µs (\"a few µs\"); no \
    when a range is apart or every launch over 5 µs; 3 launches or more.";

/// E4: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E4",
    title: "cost of declare_interest and of revoking it vs registered descriptors",
    paper: "Banga et al. 1999, Fig. 7",
    claim: "Declaring and revoking interest cost a few microseconds and do not grow with the number \
         of descriptors already registered.",
    needs: |lab| lab.need(&["bench", "micro"]),
    plan: |lab| micro::points(lab, "E4"),
    analyse,
};

fn analyse(rows: &[Row]) -> Analysis {
    let x = "descriptors already registered";
    let d = panel(rows, "fig7_ns_per_declare", "(a) declare_interest(READ)", x, "ns per call", (false, true));
    let r = panel(rows, "fig7_ns_per_revoke", "(b) revoke (empty interest)", x, "ns per call", (false, true));
    let mut reading = Vec::new();
    for (what, metric, lines) in
        [("declare", "fig7_ns_per_declare", &d.lines), ("revoke", "fig7_ns_per_revoke", &r.lines)]
    {
        for l in lines.iter() {
            if let Some(e) = verdict::ends(rows, &l.name, metric) {
                reading.push(format!("{what}, ns per call: {}.", verdict::growth(&l.name, "registered", &e)));
            }
        }
    }
    reading.push(verdict::with_chance(RULE));
    let epoll = |metric: &str| verdict::ends(rows, "epoll", metric);
    let (ours, holds) = match (epoll("fig7_ns_per_declare"), epoll("fig7_ns_per_revoke")) {
        (Some(a), Some(b)) => {
            let parts: Vec<Verdict> = [&a, &b]
                .iter()
                .flat_map(|e| {
                    [
                        Verdict::same(&e.3, &e.1, verdict::FLAT_TOL),
                        Verdict::under(&e.1, A_FEW_US),
                        Verdict::under(&e.3, A_FEW_US),
                    ]
                })
                .collect();
            (
                format!(
                    "epoll: declare {} ns at {} registered vs {} at {}; revoke {} vs {}",
                    a.1,
                    num(a.0),
                    a.3,
                    num(a.2),
                    b.1,
                    b.3
                ),
                Verdict::all(&parts).to_string(),
            )
        }
        _ => ("epoll missing from the rows".into(), UNMEASURED.into()),
    };
    let figures = vec![FigureRow::without_number(
        "Banga Fig. 7",
        "declare_interest and revoking it cost a few µs, with slight variation over 0 to 2000 cold \
         connections.",
        ours.clone(),
        holds.clone(),
        RULE.trim_start_matches("Rule: "),
    )];
    Analysis {
        panels: vec![d, r],
        ours,
        holds,
        reading,
        metrics: vec![("fig7_ns_per_declare", "ns per declare"), ("fig7_ns_per_revoke", "ns per revoke")],
        figures,
    }
}
