//! E3, Banga Fig. 6: the cost of `get_next_event`, per call and per event against
//! `array_max`, and the readiness cycle against idle (cold) descriptors.

use super::{micro, panel, Analysis, Experiment, FigureRow, Lab, PaperNumber, UNMEASURED};
use crate::data::{self, num, Row};
use crate::runner::Point;
use hintq_bench::report::Experiment as Fig;

/// E3.
pub struct E3;

impl Experiment for E3 {
    fn id(&self) -> &'static str {
        "E3"
    }
    fn title(&self) -> &'static str {
        "cost of get_next_event vs array_max and vs idle descriptors"
    }
    fn paper(&self) -> &'static str {
        "Banga et al. 1999, Fig. 6"
    }
    fn claim(&self) -> &'static str {
        "Batching amortises the call (cost per event falls as array_max grows), and the event \
         API's cost does not grow with idle connections, while select/poll cost grows with them."
    }
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        lab.need(&["bench", "micro"])
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        micro::points(lab, "E3", &[Fig::Fig6a, Fig::Fig6b])
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        let a = panel(
            rows,
            "fig6a_ns_per_event",
            "(a) get_next_event(array_max), all array_max ready",
            "array_max (events per call)",
            "ns per event",
            (true, false),
        );
        let b = panel(
            rows,
            "fig6b_ns_per_cycle",
            "(b) write, get_next_event, read: 1 active among N idle",
            "idle descriptors registered",
            "ns per cycle",
            (false, true),
        );
        let (ours, holds, reading) = verdict(&a.lines, &b.lines);
        let figures = vec![fig6_row(rows, &holds)];
        Analysis {
            panels: vec![a, b],
            ours,
            holds,
            reading,
            metrics: vec![
                ("fig6a_ns_per_call", "ns per get_next_event call"),
                ("fig6a_ns_per_event", "ns per event"),
                ("fig6b_ns_per_cycle", "ns per readiness cycle"),
            ],
            figures,
        }
    }
}

/// Banga's number for Fig. 6, in µs per call.
pub const GET_NEXT_EVENT_US: PaperNumber = PaperNumber {
    words: "about 8.4 µs per get_next_event call (§8, from Fig. 6; 500 MHz Alpha)",
    value: 8.4,
};

/// Banga Fig. 6: our µs per get_next_event call returning one event (epoll, array_max 1)
/// against the paper's 8.4.
fn fig6_row(rows: &[Row], holds: &str) -> FigureRow {
    let per_call = data::lines(rows, "fig6a_ns_per_call");
    let at1 = find(&per_call, "epoll").and_then(|l| l.median(1.0)).map(|ns| ns / 1000.0);
    FigureRow {
        figure: "Banga Fig. 6".into(),
        claim: "get_next_event costs a few µs per call, the same with 0 to 2000 cold connections; \
                batching lowers the cost per event.",
        paper: Some(GET_NEXT_EVENT_US),
        ours: at1.map_or("epoll at array_max 1 not measured".into(), |us| {
            format!("{} µs per get_next_event call (epoll, array_max 1)", num(us))
        }),
        ratio: at1.ok_or_else(|| "not measured".into()),
        holds: holds.into(),
    }
}

/// The ratio of the last point's median to the first's, with both ends.
pub fn growth(l: &data::Line) -> Option<(f64, f64, f64, f64, f64)> {
    let (a, b) = l.ends()?;
    (a.x != b.x).then(|| (a.x, a.spread.median, b.x, b.spread.median, b.spread.median / a.spread.median))
}

fn find<'a>(lines: &'a [data::Line], name: &str) -> Option<&'a data::Line> {
    lines.iter().find(|l| l.name == name)
}

fn verdict(per_event: &[data::Line], cycle: &[data::Line]) -> (String, String, Vec<String>) {
    let mut reading = Vec::new();
    let batching = find(per_event, "epoll").and_then(growth);
    if let Some((x0, m0, x1, m1, r)) = batching {
        reading.push(format!(
            "Batching: with the epoll backend one event costs {} ns when get_next_event returns {x0} \
             per call and {} ns at {x1} per call ({}x).",
            num(m0),
            num(m1),
            num(r)
        ));
    }
    let flat = find(cycle, "epoll").and_then(growth);
    let scan = find(cycle, "poll").and_then(growth);
    for l in cycle {
        if let Some((x0, m0, x1, m1, r)) = growth(l) {
            reading.push(format!(
                "{}: {} ns per cycle with {x0} idle, {} ns with {x1} idle ({}x).",
                l.name,
                num(m0),
                num(m1),
                num(r)
            ));
        }
    }
    let (Some(b), Some(f), Some(s)) = (batching, flat, scan) else {
        return ("epoll or poll missing from the rows".into(), UNMEASURED.into(), reading);
    };
    let ours = format!(
        "epoll: {} ns/event at array_max {} vs {} at {}; cycle {} ns at {} idle vs {} at {} ({}x); poll {}x",
        num(b.1),
        b.0,
        num(b.3),
        b.2,
        num(f.1),
        f.0,
        num(f.3),
        f.2,
        num(f.4),
        num(s.4)
    );
    let holds = match (b.4 < 0.9, f.4 < 1.5, s.4 > 3.0) {
        (true, true, true) => "yes",
        (false, false, _) | (_, false, false) => "no",
        _ => "partly",
    };
    reading.push(format!(
        "Verdict: batching {} per-event cost; epoll's cycle {} with idle descriptors; poll's {}.",
        if b.4 < 0.9 { "lowers" } else { "does not lower" },
        if f.4 < 1.5 { "stays flat" } else { "grows" },
        if s.4 > 3.0 { "grows with them, as the paper found for select" } else { "does not grow much here" }
    ));
    (ours, holds.into(), reading)
}

#[cfg(test)]
mod tests {
    use super::{Experiment, E3};
    use crate::data::Row;

    fn row(metric: &str, x: f64, v: f64) -> Row {
        Row::ok("E3", "epoll", x, metric, v)
    }

    #[test]
    fn fig6_sets_our_us_per_call_at_array_max_1_against_banga_s_8_4() {
        let a = E3.analyse(&[
            row("fig6a_ns_per_call", 1.0, 420.0),
            row("fig6a_ns_per_call", 64.0, 9000.0),
            row("fig6a_ns_per_event", 1.0, 420.0),
        ]);
        let f = &a.figures[0];
        assert_eq!(f.figure, "Banga Fig. 6");
        assert_eq!(f.ours, "0.420 µs per get_next_event call (epoll, array_max 1)");
        assert_eq!(f.ratio, Ok(0.42));
        assert_eq!(f.ratio_text(), "0.0500 (0.420 ÷ 8.40)");
        // Without array_max 1 there is no like-for-like number.
        let b = E3.analyse(&[row("fig6a_ns_per_call", 64.0, 9000.0)]);
        assert!(b.figures[0].ratio.is_err());
    }
}
