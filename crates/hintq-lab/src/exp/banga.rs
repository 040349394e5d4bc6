//! The report's rows for Banga et al.'s Figs. 8, 9 and Table 2, which the lab measures twice:
//! on the static server (E1, E2, E5) and on the proxy Banga measured (E11).

use super::{FigureRow, PaperNumber, UNMEASURED};
use crate::data::{num, Line, Row};
use crate::verdict::{self, Figure, Verdict};

/// Where a figure was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// `hintq serve` (E1, E2, E5).
    Server,
    /// `hintq proxy` (E11), Banga's own vehicle.
    Proxy,
}

/// The lines Banga drew, each with the series that stands for it here.
const CLASSICAL: (&str, &str) = ("hintq-select-classic", "classical select");
const IMPROVED: (&str, &str) = ("hintq-select", "improved select");
const POLL: (&str, &str) = ("hintq-poll", "poll");

/// Banga's cold-connection count for Fig. 8's number (§1) and for Fig. 9 and Table 2 (§7.3).
pub const FIG8_COLD: f64 = 2000.0;
/// Banga's cold-connection count for Fig. 9 and Table 2.
pub const PAPER_COLD: f64 = 750.0;

fn median(lines: &[Line], name: &str, x: f64) -> Option<f64> {
    lines.iter().find(|l| l.name == name)?.median(x)
}

/// The series that stands for select in Fig. 8's rule at `x` cold: classical select, else
/// improved select, else poll, the first measured at 0 and at `x`.
fn fig8_scan(rows: &[Row], metric: &str, x: f64) -> Option<(&'static str, Figure, Figure)> {
    [CLASSICAL, IMPROVED, POLL].into_iter().find_map(|(series, name)| {
        Some((
            name,
            verdict::launches(rows, series, 0.0, metric)?,
            verdict::launches(rows, series, x, metric)?,
        ))
    })
}

/// The rule of Fig. 8, printed beside its verdict.
pub const FIG8_RULE: &str = "rule: epoll's throughput launches at N cold overlap its launches at 0 cold \
    (does not depend on cold connections) and select's (classical, else improved; poll stands in) at N \
    cold are all below its at 0 (falls), 3 launches or more each";

/// Banga Fig. 8's rule between 0 cold and `x` cold, on the launches of `metric` (a
/// throughput): the verdict and our figures.
pub fn fig8_verdict(rows: &[Row], metric: &str, x: f64) -> (Verdict, String) {
    let epoll = |at: f64| verdict::launches(rows, "hintq-epoll", at, metric);
    match (epoll(0.0), epoll(x), fig8_scan(rows, metric, x)) {
        (Some(e0), Some(ex), Some((name, s0, sx))) => (
            Verdict::all(&[Verdict::same(&ex, &e0), Verdict::below(&sx, &s0)]),
            format!("req/s at 0 and {} cold: epoll {e0}, {ex}; {name} {s0}, {sx}", num(x)),
        ),
        _ => (
            Verdict::unmeasured(&format!("epoll and select or poll at 0 and {} cold", num(x))),
            format!("epoll and a select or poll line not both measured at 0 and {} cold", num(x)),
        ),
    }
}

/// Fig. 8: the event API's throughput (epoll) over select's at 2000 cold, against Banga's
/// +28%, judged by [`fig8_verdict`] at 2000 cold. Classical select, else improved select;
/// poll stands in (no ratio) when neither was measured there. `throughput` is the Fig. 8
/// panel's lines (x: cold connections) of `metric` in `rows`.
pub fn fig8(setting: Setting, rows: &[Row], metric: &str, throughput: &[Line]) -> FigureRow {
    let figure = match setting {
        Setting::Server => "Banga Fig. 8 (server)",
        Setting::Proxy => "Banga Fig. 8 (proxy)",
    };
    let epoll = median(throughput, "hintq-epoll", FIG8_COLD);
    let scan = [CLASSICAL, IMPROVED, POLL]
        .into_iter()
        .find_map(|(series, name)| Some((name, median(throughput, series, FIG8_COLD)?)));
    let (ours, ratio) = match (epoll, scan) {
        (Some(e), Some((name, s))) => (
            format!("{} (epoll {} ÷ {name} {} req/s at {FIG8_COLD} cold)", num(e / s), num(e), num(s)),
            if name == POLL.1 { Err("poll stands in for select".to_string()) } else { Ok(e / s) },
        ),
        _ => (
            format!("epoll and a select or poll line not both measured at {FIG8_COLD} cold"),
            Err("not measured".into()),
        ),
    };
    let (holds, figures) = fig8_verdict(rows, metric, FIG8_COLD);
    // Banga's +28%: epoll at least 1.28 times select at 2000 cold, every launch against every
    // launch; poll standing in for select is not Banga's comparison.
    let launches = |series: &str| verdict::launches(rows, series, FIG8_COLD, metric);
    let select = [CLASSICAL, IMPROVED].into_iter().find_map(|(series, name)| Some((name, launches(series)?)));
    let literal = match (launches("hintq-epoll"), select) {
        (Some(e), Some((name, s))) => format!(
            "{} (rule: every epoll launch at least 1.28 times every {name} launch at {FIG8_COLD} cold)",
            Verdict::above(&e, &s.scaled(1.28))
        ),
        _ => format!(
            "cannot say: epoll and classical or improved select not both measured at {FIG8_COLD} cold"
        ),
    };
    FigureRow {
        figure: figure.into(),
        claim: "The event API's throughput does not depend on cold connections, select's falls \
                with them.",
        paper: Some(PaperNumber {
            words: "+28% maximum throughput with 2000 connections (§1): event API ÷ select = 1.28",
            value: 1.28,
        }),
        ours: format!("{ours}; {figures}"),
        ratio,
        holds: holds.to_string(),
        rule: FIG8_RULE.trim_start_matches("rule: ").into(),
        literal,
    }
}

/// Fig. 9 at 750 cold, all from that one point: the highest rate the event API (epoll)
/// achieved over improved select's, against Banga's 1348 ÷ 1291 at saturation (no ratio if
/// neither fell short of the rate offered: neither saturated), and their p99 latency at the
/// highest rate both were offered. The claim (much lower latency, saturating somewhat higher)
/// holds if epoll's p99 is lower there and, where one saturated, epoll achieved more.
/// `achieved` and `p99` are the lines at 750 cold (x: offered rate).
pub fn fig9(setting: Setting, achieved: &[Line], p99: &[Line]) -> FigureRow {
    let figure = match setting {
        Setting::Server => "Banga Fig. 9 (server)",
        Setting::Proxy => "Banga Fig. 9 (proxy)",
    };
    // The highest median achieved, the last rate offered, and whether it fell short of it.
    let top = |name: &str| {
        let l = achieved.iter().find(|l| l.name == name)?;
        let p = l.points.iter().max_by(|a, b| a.spread.median.total_cmp(&b.spread.median))?;
        let last = l.points.last()?;
        Some((p.spread.median, last.x, last.spread.median < 0.95 * last.x))
    };
    // p99 of both at the highest rate both were offered.
    let latency = || {
        let (e, s) =
            (p99.iter().find(|l| l.name == "hintq-epoll")?, p99.iter().find(|l| l.name == IMPROVED.0)?);
        let rate = e.points.iter().rev().map(|p| p.x).find(|&x| s.at(x).is_some())?;
        Some((rate, e.median(rate)?, s.median(rate)?))
    };
    let (ours, ratio, holds) = match (top("hintq-epoll"), top(IMPROVED.0)) {
        (Some((e, offered, e_sat)), Some((s, _, s_sat))) => {
            let mut ours = format!(
                "at 750 cold: {} (epoll {} ÷ improved select {} req/s, the highest each achieved)",
                num(e / s),
                num(e),
                num(s)
            );
            let saturated = e_sat || s_sat;
            let ratio = if saturated {
                Ok(e / s)
            } else {
                Err("neither saturated within the rates offered".to_string())
            };
            let holds = match latency() {
                Some((rate, el, sl)) => {
                    ours += &format!(
                        "; p99 at {} req/s offered: epoll {} ms, improved select {} ms",
                        num(rate),
                        num(el),
                        num(sl)
                    );
                    match (el < sl, saturated, e > s) {
                        (true, true, true) => "yes".to_string(),
                        (true, false, _) => format!(
                            "partly: lower p99 at 750 cold, but neither saturated up to {} req/s offered",
                            num(offered)
                        ),
                        (true, true, false) => "partly: lower p99, but epoll saturates no higher".into(),
                        (false, ..) => "no: epoll's p99 is not lower at 750 cold".into(),
                    }
                }
                None => UNMEASURED.into(),
            };
            (ours, ratio, holds)
        }
        _ => (
            "epoll and improved select not both measured at 750 cold".into(),
            Err("not measured".into()),
            UNMEASURED.into(),
        ),
    };
    FigureRow {
        figure: figure.into(),
        claim: "At 750 cold connections the event API has much lower latency and saturates at a \
                somewhat higher rate than improved select.",
        paper: Some(PaperNumber {
            words: "saturates at 1348 req/s vs 1291 for improved select (§7.3): ratio 1.044",
            value: 1348.0 / 1291.0,
        }),
        literal: match &ratio {
            Ok(r) => format!(
                "{} (rule: epoll's highest achieved rate ÷ improved select's at least 1.044, by the medians of \
                 one cold count's points: {})",
                if *r >= 1348.0 / 1291.0 { "yes" } else { "no" },
                num(*r)
            ),
            Err(why) => format!("cannot say: {why} (Banga's ratio is of saturation rates)"),
        },
        ours,
        ratio,
        holds,
        rule: "yes when epoll's median p99 is lower than improved select's at the highest rate both were \
               offered at 750 cold and, where one saturated (achieved under 95% of the rate offered), \
               epoll's highest achieved rate is higher; partly when lower p99 but neither saturated \
               (medians: spread not judged)"
            .into(),
    }
}

/// Banga's Table 2 as a rule, said in E5's and E11's sections beside their verdicts.
pub const TABLE2_RULE: &str = "Table 2 is judged at one cold count (750, Banga's, when measured) for every \
    line: classical select must take the largest share, improved select less, and the event API at \
    most a third of the smaller select share (Banga: 34% > 12% > 0.68%); poll stands in for select \
    only when neither select was measured";

/// The literal verdict of Table 2's select rows: their shares are descriptions of Banga's
/// machine, no bound.
const SHARE: &str = "— (a share of Banga's machine, not a bound: see ours ÷ paper)";

/// Table 2's rows and their summary for a section.
pub struct Table2 {
    /// One row per line of Banga's (classical select, improved select, the event API).
    pub figures: Vec<FigureRow>,
    /// The shares at the cold count judged, for the section.
    pub ours: String,
    /// The section's verdict: `yes` if every row that could be judged holds, `no` if none
    /// does, else `partly`.
    pub holds: String,
}

/// A row's verdict: `yes`/`no` with its reason, `partly` when a line it needs is missing.
fn judge(checks: &[Option<(bool, String)>], missing: &[&str]) -> String {
    let known: Vec<&(bool, String)> = checks.iter().flatten().collect();
    if known.is_empty() {
        return UNMEASURED.into();
    }
    let failed: Vec<&str> = known.iter().filter(|c| !c.0).map(|c| c.1.as_str()).collect();
    let held: Vec<&str> = known.iter().filter(|c| c.0).map(|c| c.1.as_str()).collect();
    let not =
        if missing.is_empty() { String::new() } else { format!("; {} not measured", missing.join(", ")) };
    match (failed.is_empty(), missing.is_empty()) {
        (false, _) => format!("no: {}{not}", failed.join("; ")),
        (true, true) => format!("yes: {}", held.join("; ")),
        (true, false) => format!("partly: {}{not}", held.join("; ")),
    }
}

/// Table 2: one row per line of Banga's (classical select, improved select, the event API),
/// each the share (%) of CPU in event notification at 50 hot, 400 req/s, judged by
/// [`TABLE2_RULE`] at one cold count for all: 750 when the event API was measured there, else
/// the most it was measured at (then without a ratio). `shares` is the lines of that share
/// (x: cold connections).
pub fn table2(setting: Setting, shares: &[Line]) -> Table2 {
    let names: [&'static str; 3] = match setting {
        Setting::Server => [
            "Banga Table 2 (server): classical select",
            "Banga Table 2 (server): improved select",
            "Banga Table 2 (server): event API",
        ],
        Setting::Proxy => [
            "Banga Table 2 (proxy): classical select",
            "Banga Table 2 (proxy): improved select",
            "Banga Table 2 (proxy): event API",
        ],
    };
    let line = |series: &str| shares.iter().find(|l| l.name == series);
    let (event_series, event_name) = if line("hintq-epoll").is_some() || line("hintq-uring").is_none() {
        ("hintq-epoll", "epoll")
    } else {
        ("hintq-uring", "uring")
    };
    // The one cold count every line is read at.
    let x = line(event_series).and_then(|l| l.at(PAPER_COLD).or(l.points.last())).map_or(PAPER_COLD, |p| p.x);
    let share = |series: &str| line(series).and_then(|l| l.median(x));
    let (c, i, e, p) = (share(CLASSICAL.0), share(IMPROVED.0), share(event_series), share(POLL.0));
    let pct = |v: f64| format!("{}%", num(v));
    let row = |figure: &'static str,
               claim: &'static str,
               words: &'static str,
               value: f64,
               name: &str,
               got: Option<f64>,
               holds: String,
               literal: String| {
        let (ours, ratio) = match got {
            Some(v) => (
                format!("{}% ({name}, {x} cold)", num(v)),
                if x == PAPER_COLD { Ok(v) } else { Err(format!("measured at {x} cold, the paper at 750")) },
            ),
            None => (format!("{name} not measured at {x} cold"), Err("not measured".into())),
        };
        FigureRow {
            figure: figure.into(),
            claim,
            paper: Some(PaperNumber { words, value }),
            ours,
            ratio,
            holds,
            rule: TABLE2_RULE.into(),
            literal,
        }
    };
    let above = |a: Option<f64>, a_name: &str, b: Option<f64>, b_name: &str| {
        Some(match (a?, b?) {
            (a, b) if a > b => (true, format!("{a_name} {} above {b_name} {}", pct(a), pct(b))),
            (a, b) => (false, format!("{a_name} {} not above {b_name} {}", pct(a), pct(b))),
        })
    };
    let missing = |lines: &[(Option<f64>, &'static str)]| -> Vec<&'static str> {
        lines.iter().filter(|l| l.0.is_none()).map(|l| l.1).collect()
    };
    let (cn, iname) = (CLASSICAL.1, IMPROVED.1);
    let classical_holds = if c.is_none() {
        format!("cannot say: {cn} not measured at {x} cold (see its section)")
    } else {
        judge(
            &[above(c, cn, i, iname), above(c, cn, e, event_name)],
            &missing(&[(i, iname), (e, event_name)]),
        )
    };
    let improved_holds = if i.is_none() {
        UNMEASURED.to_string()
    } else {
        judge(
            &[above(c, cn, i, iname), above(i, iname, e, event_name)],
            &missing(&[(c, cn), (e, event_name)]),
        )
    };
    // The event API against the smaller select share; poll stands in when neither select was.
    let scan = match (c, i) {
        (Some(c), Some(i)) if i < c => Some((i, iname)),
        (Some(c), _) => Some((c, cn)),
        (None, Some(i)) => Some((i, iname)),
        (None, None) => p.map(|p| (p, "poll (standing in for select)")),
    };
    // Banga's words: "less than 1% of the CPU", from one profile each; ours is one profile
    // per point too, so its spread is unknown.
    let n = line(event_series).and_then(|l| l.at(x)).map_or(0, |p| p.spread.n);
    let event_literal = match e {
        Some(v) if n >= verdict::MIN_LAUNCHES => {
            let f = line(event_series).and_then(|l| l.at(x)).map(|p| p.spread);
            let (lo, hi) = f.map_or((v, v), |s| (s.min, s.max));
            let word = if hi < 1.0 {
                "yes"
            } else if lo >= 1.0 {
                "no"
            } else {
                "within noise"
            };
            format!("{word} (rule: every profile's share under 1% of the CPU; ours {}–{}%)", num(lo), num(hi))
        }
        Some(v) => format!(
            "cannot say: {n} profile(s) at {x} cold, {} needed ({event_name} {}% against \"less than 1%\")",
            verdict::MIN_LAUNCHES,
            num(v)
        ),
        None => format!("cannot say: {event_name} not measured at {x} cold"),
    };
    let event_holds = match (e, scan) {
        (Some(e), Some((s, name))) => {
            let third = s / 3.0;
            let says =
                format!("{event_name} {} against a third of {name}'s {} ({})", pct(e), pct(s), pct(third));
            if e <= third {
                format!("yes: {says}")
            } else {
                format!("no: {says}")
            }
        }
        _ => UNMEASURED.into(),
    };
    let figures = vec![
        row(
            names[0],
            "Classical select spends a third of the CPU in event notification, the most of the three.",
            "34% of the CPU (33.51% in the table)",
            33.51,
            cn,
            c,
            classical_holds,
            SHARE.into(),
        ),
        row(
            names[1],
            "Improved select cuts it to 12%, between classical select and the event API.",
            "12% of the CPU (12.02% in the table)",
            12.02,
            iname,
            i,
            improved_holds,
            SHARE.into(),
        ),
        row(
            names[2],
            "The event API almost eliminates the event-notification overhead.",
            "less than 1% of the CPU (0.68% in the table)",
            0.68,
            event_name,
            e,
            event_holds,
            event_literal,
        ),
    ];
    let judged: Vec<bool> = figures
        .iter()
        .filter(|f| !f.holds.starts_with("cannot"))
        .map(|f| f.holds.starts_with("yes"))
        .collect();
    let holds = if judged.is_empty() {
        UNMEASURED.to_string()
    } else if judged.iter().all(|&y| y) {
        "yes".into()
    } else if judged.iter().any(|&y| y) {
        "partly".into()
    } else {
        "no".into()
    };
    let measured: Vec<String> = [(c, cn), (i, iname), (e, event_name), (p, "poll")]
        .iter()
        .filter_map(|(v, n)| Some(format!("{n} {}", pct((*v)?))))
        .collect();
    let ours = if measured.is_empty() {
        format!("no share measured at {x} cold")
    } else {
        format!("at {x} cold: {}", measured.join(", "))
    };
    Table2 { figures, ours, holds }
}
