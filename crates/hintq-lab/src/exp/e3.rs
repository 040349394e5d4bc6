//! E3, Banga Fig. 6: the cost of `get_next_event`, per call and per event against
//! `array_max`, and the readiness cycle against idle (cold) descriptors; beside them, what a
//! queue's cycle costs over the raw kernel loops of the same launch. The one place these rows
//! are judged: `hintq bench micro` prints [`summary`].

use super::{micro, panel, Analysis, Experiment, FigureRow, PaperNumber, UNMEASURED};
use crate::data::{self, num, Row, Spread, Status};
use crate::verdict::{self, Verdict};

/// E3: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E3",
    title: "cost of get_next_event vs array_max and vs idle descriptors",
    paper: "Banga et al. 1999, Fig. 6",
    claim: "Batching amortises the call (cost per event falls as array_max grows), and the event \
         API's cost does not grow with idle connections, while select/poll cost grows with them.",
    needs: |lab| lab.need(&["bench", "micro"]),
    plan: |lab| micro::points(lab, "E3"),
    analyse,
};

fn analyse(rows: &[Row]) -> Analysis {
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
    let (ours, holds, mut reading) = verdict(rows, &b.lines);
    reading.extend(raw_loops(rows));
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
    let launches = verdict::launches(rows, "epoll", 1.0, "fig6a_ns_per_call").map(|f| f.scaled(1e-3));
    let literal = match &launches {
        Some(f) => format!(
            "{} (rule: every launch's µs per call under the paper's 8.4; ours {f})",
            Verdict::under(f, GET_NEXT_EVENT_US.value)
        ),
        None => "cannot say: epoll at array_max 1 not measured".into(),
    };
    FigureRow {
        inputs: Vec::new(),
        figure: "Banga Fig. 6".into(),
        claim: "get_next_event costs a few µs per call, the same with 0 to 2000 cold connections; \
                batching lowers the cost per event.",
        paper: Some(GET_NEXT_EVENT_US),
        ours: at1.map_or("epoll at array_max 1 not measured".into(), |us| {
            format!("{} µs per get_next_event call (epoll, array_max 1)", num(us))
        }),
        ratio: at1.ok_or_else(|| "not measured".into()),
        holds: holds.into(),
        rule: RULE.trim_start_matches("Rule: ").into(),
        literal,
    }
}

/// What `hintq bench micro` prints after its rows: E3's verdict and figure as the lab judges
/// them (the command's repetitions taken as launches), and the raw-loop ratios.
pub fn summary(rows: &[Row]) -> String {
    let rows: Vec<Row> = rows.iter().filter(|r| r.experiment == "E3").cloned().collect();
    let (ours, holds, reading) = verdict(&rows, &data::lines(&rows, "fig6b_ns_per_cycle"));
    let fig6 = fig6_row(&rows, &holds);
    let mut s = format!(
        "\nE3 (Banga Fig. 6), judged as `hintq lab` judges it, each repetition a launch:\n  shape: {holds}\n  \
         ours: {ours}\n  literal: {}\n",
        fig6.literal
    );
    for line in reading.iter().chain(&raw_loops(&rows)).chain(&own_goal(&rows)) {
        s += &format!("  {line}\n");
    }
    s
}

/// The cycle of a queue over a raw loop's cycle in the same launch, at each idle count: what
/// hintq costs above the bare system calls (hintq's own figure beside the paper's claim: read,
/// not judged), as the median of the launches' own ratios with their range.
pub fn raw_loops(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for (b, raw) in [("epoll", "raw-epoll"), ("uring", "raw-epoll"), ("uring", "raw-uring")] {
        let at: Vec<String> = over_raw(rows, b, raw)
            .into_iter()
            .filter_map(|(x, ratios)| {
                let s = Spread::of(&ratios)?;
                Some(format!("{} idle {:.3}x ({:.3}–{:.3}, n={})", num(x), s.median, s.min, s.max, s.n))
            })
            .collect();
        if !at.is_empty() {
            out.push(format!("{b}'s readiness cycle over {raw}'s in the same launch: {}.", at.join(", ")));
        }
    }
    out
}

/// hintq's own goal for a queue's readiness cycle over the raw loop of its own mechanism (the
/// issue "The core, lean and layered"): at most this ratio at every idle count.
pub const OWN_GOAL: f64 = 1.03;

/// The cycle of `b` over `raw`'s at each idle count of `b`'s line, one ratio per launch that
/// measured both (each launch's own, so that a slow launch cancels).
fn over_raw(rows: &[Row], b: &str, raw: &str) -> Vec<(f64, Vec<f64>)> {
    const M: &str = "fig6b_ns_per_cycle";
    let counted = |r: &&Row| r.metric == M && matches!(r.status, Status::Ok | Status::Disturbed);
    let cycle = |s: &str, x: f64, rep: u32| {
        rows.iter().filter(counted).find(|r| r.series == s && r.x == x && r.rep == rep).and_then(|r| r.value)
    };
    let Some(line) = data::lines(rows, M).into_iter().find(|l| l.name == b) else { return Vec::new() };
    line.points
        .iter()
        .map(|p| {
            let ratios = rows
                .iter()
                .filter(counted)
                .filter(|r| r.series == b && r.x == p.x)
                .filter_map(|r| Some(r.value? / cycle(raw, p.x, r.rep)?))
                .collect();
            (p.x, ratios)
        })
        .collect()
}

/// The verdict on [`OWN_GOAL`] for each queue with a raw loop of its own mechanism (epoll and
/// epoll-et over `raw-epoll`, uring over `raw-uring`), at each idle count, as the lab judges a
/// bound ([`Verdict::under`]: yes when every launch's ratio is under it, no when every one is
/// over, else within noise).
pub fn own_goal(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for (b, raw) in [("epoll", "raw-epoll"), ("epoll-et", "raw-epoll"), ("uring", "raw-uring")] {
        let at: Vec<String> = over_raw(rows, b, raw)
            .into_iter()
            .filter_map(|(x, ratios)| {
                let f = verdict::Figure::new(ratios)?;
                let v = Verdict::under(&f, OWN_GOAL);
                Some(format!(
                    "{} idle {v} ({:.3}x, {:.3}–{:.3}, n={})",
                    num(x),
                    f.median(),
                    f.min(),
                    f.max(),
                    f.n()
                ))
            })
            .collect();
        if !at.is_empty() {
            out.push(format!("{b}'s cycle under {OWN_GOAL}x {raw}'s in every launch: {}.", at.join(", ")));
        }
    }
    out
}

/// A line's first x and median, last x and median, and the last median over the first.
pub type Growth = (f64, f64, f64, f64, f64);

/// The ratio of the last point's median to the first's, with both ends.
pub fn growth(l: &data::Line) -> Option<Growth> {
    let (a, b) = l.ends()?;
    (a.x != b.x).then(|| (a.x, a.spread.median, b.x, b.spread.median, b.spread.median / a.spread.median))
}

fn find<'a>(lines: &'a [data::Line], name: &str) -> Option<&'a data::Line> {
    lines.iter().find(|l| l.name == name)
}

/// The rule of E3's verdict.
const RULE: &str = "Rule: yes when epoll's cost per event at the largest array_max is below its cost at \
    array_max 1 (batching), its readiness cycle's launches at the most idle descriptors overlap its \
    launches at the fewest and every one is within 10% of every other (flat: growth ruled out; overlap \
    with a wider spread is within noise), and poll's cycle at the most idle above its cycle at the fewest (grows), each \
    by launches' ranges apart or overlapping, 3 launches or more.";

fn verdict(rows: &[Row], cycle: &[data::Line]) -> (String, String, Vec<String>) {
    let mut reading = Vec::new();
    let batching = verdict::ends(rows, "epoll", "fig6a_ns_per_event");
    if let Some(b) = &batching {
        reading.push(format!("Batching, ns per event: {}.", verdict::growth("epoll", "events per call", b)));
    }
    for l in cycle {
        if let Some(e) = verdict::ends(rows, &l.name, "fig6b_ns_per_cycle") {
            reading.push(format!("ns per cycle: {}.", verdict::growth(&l.name, "idle", &e)));
        }
    }
    let flat = verdict::ends(rows, "epoll", "fig6b_ns_per_cycle");
    let scan = verdict::ends(rows, "poll", "fig6b_ns_per_cycle");
    reading.push(verdict::with_chance(RULE));
    let (Some(b), Some(f), Some(s)) = (batching, flat, scan) else {
        return ("epoll or poll missing from the rows".into(), UNMEASURED.into(), reading);
    };
    let ours = format!(
        "epoll: {} ns/event at array_max {} vs {} at {}; cycle {} ns at {} idle vs {} at {}; poll cycle {} vs {}",
        b.1,
        num(b.0),
        b.3,
        num(b.2),
        f.1,
        num(f.0),
        f.3,
        num(f.2),
        s.1,
        s.3
    );
    let holds = Verdict::all(&[
        Verdict::below(&b.3, &b.1),
        Verdict::same(&f.3, &f.1, verdict::FLAT_TOL),
        Verdict::above(&s.3, &s.1),
    ]);
    (ours, holds.to_string(), reading)
}

#[cfg(test)]
mod tests {
    use super::analyse;
    use crate::data::Row;

    fn row(metric: &str, x: f64, v: f64) -> Row {
        Row::ok("E3", "epoll", x, metric, v)
    }

    #[test]
    fn fig6_sets_our_us_per_call_at_array_max_1_against_banga_s_8_4() {
        let a = analyse(&[
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
        let b = analyse(&[row("fig6a_ns_per_call", 64.0, 9000.0)]);
        assert!(b.figures[0].ratio.is_err());
    }

    /// Three launches (repetitions) of each point: `values[rep]`.
    fn reps(series: &str, metric: &str, x: f64, values: [f64; 3]) -> Vec<Row> {
        (0..3).map(|rep| Row { rep, ..Row::ok("E3", series, x, metric, values[rep as usize]) }).collect()
    }

    #[test]
    fn an_epoll_cycle_that_grew_1_37x_apart_is_not_flat_and_two_launches_say_nothing() {
        let mut rows = Vec::new();
        rows.extend(reps("epoll", "fig6a_ns_per_event", 1.0, [400.0, 410.0, 420.0]));
        rows.extend(reps("epoll", "fig6a_ns_per_event", 64.0, [100.0, 101.0, 102.0]));
        rows.extend(reps("poll", "fig6b_ns_per_cycle", 0.0, [1000.0, 1010.0, 1020.0]));
        rows.extend(reps("poll", "fig6b_ns_per_cycle", 2000.0, [9000.0, 9100.0, 9200.0]));
        let mut flat = rows.clone();
        let mut wide = flat.clone();
        flat.extend(reps("epoll", "fig6b_ns_per_cycle", 0.0, [1000.0, 1020.0, 1040.0]));
        flat.extend(reps("epoll", "fig6b_ns_per_cycle", 2000.0, [1030.0, 1050.0, 1070.0]));
        assert_eq!(analyse(&flat).holds, "yes");
        // Overlapping launches whose spread allows 1.17x growth do not show flatness.
        wide.extend(reps("epoll", "fig6b_ns_per_cycle", 0.0, [1000.0, 1100.0, 1200.0]));
        wide.extend(reps("epoll", "fig6b_ns_per_cycle", 2000.0, [1150.0, 1160.0, 1170.0]));
        assert_eq!(analyse(&wide).holds, "within noise");
        let mut grew = rows.clone();
        grew.extend(reps("epoll", "fig6b_ns_per_cycle", 0.0, [1000.0, 1000.0, 1010.0]));
        grew.extend(reps("epoll", "fig6b_ns_per_cycle", 2000.0, [1370.0, 1370.0, 1380.0]));
        let a = analyse(&grew);
        assert_eq!(a.holds, "no");
        assert!(
            a.reading.iter().any(|r| r.contains(
                "epoll from 0 to 2000 idle (1.37x by the medians): at 2000 1370 (1370–1380, n=3) above at 0"
            )),
            "{:?}",
            a.reading
        );
        let two: Vec<Row> = flat.into_iter().filter(|r| r.rep < 2).collect();
        assert_eq!(analyse(&two).holds, "cannot say: fewer than 3 launches");
    }

    /// A slow launch moves the raw loop and the queue alike: each launch's own ratio is taken,
    /// so it cancels; a launch without the raw loop gives no ratio.
    #[test]
    fn the_queue_is_set_against_the_raw_loop_of_the_same_launch() {
        let mut rows = reps("raw-epoll", "fig6b_ns_per_cycle", 0.0, [700.0, 1000.0, 700.0]);
        rows.extend(reps("epoll", "fig6b_ns_per_cycle", 0.0, [720.0, 1030.0, 1030.0]));
        rows.push(Row { rep: 3, ..Row::ok("E3", "epoll", 0.0, "fig6b_ns_per_cycle", 5.0) });
        let lines = super::raw_loops(&rows);
        assert_eq!(lines, ["epoll's readiness cycle over raw-epoll's in the same launch: 0 idle 1.030x (1.029–1.471, n=3)."]);
        let s = super::summary(&rows);
        assert!(s.contains("shape: epoll or poll missing") || s.contains("shape: cannot say"), "{s}");
        assert!(s.contains(&lines[0]), "{s}");
    }

    /// hintq's own goal is judged per launch's ratio, not by their median: a median under it
    /// with one launch past it is within noise; only queues with a raw loop of their own
    /// mechanism are judged, and none without that loop.
    #[test]
    fn the_own_goal_is_judged_launch_by_launch() {
        let mut rows = Vec::new();
        for (rep, raw, epoll) in [(0, 1000.0, 1000.0), (1, 2000.0, 2040.0), (2, 1500.0, 1530.0)] {
            // Launch 1 ran on a machine twice as slow: paired, epoll is 1.02 there.
            let cycle = |series: &str, x: f64, ns: f64| Row {
                rep,
                ..Row::ok("E3", series, x, "fig6b_ns_per_cycle", ns)
            };
            rows.push(cycle("raw-epoll", 0.0, raw));
            rows.push(cycle("epoll", 0.0, epoll));
            rows.push(cycle("raw-epoll", 1000.0, raw));
            rows.push(cycle("epoll", 1000.0, raw * if rep == 0 { 1.10 } else { 1.01 }));
            rows.push(cycle("poll", 0.0, raw * 3.0));
        }
        let lines = super::own_goal(&rows);
        assert_eq!(
            lines,
            ["epoll's cycle under 1.03x raw-epoll's in every launch: 0 idle yes (1.020x, 1.000–1.020, n=3), \
              1000 idle within noise (1.010x, 1.010–1.100, n=3)."]
        );
        assert!(super::summary(&rows).contains(&lines[0]));
        rows.retain(|r| r.series != "raw-epoll");
        assert!(super::own_goal(&rows).is_empty(), "no raw loop, no verdict");
    }
}
