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

impl Setting {
    /// `Banga <what> (server)` or `(proxy)`: the name of a row of the first table.
    pub(super) fn figure(self, what: &str) -> String {
        let on = if self == Setting::Server { "server" } else { "proxy" };
        format!("Banga {what} ({on})")
    }
}

/// The lines Banga drew, each with the series that stands for it here.
pub(super) const CLASSICAL: (&str, &str) = ("hintq-select-classic", "classical select");
pub(super) const IMPROVED: (&str, &str) = ("hintq-select", "improved select");
pub(super) const POLL: (&str, &str) = ("hintq-poll", "poll");

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
    with every launch within 10% of every other (does not depend on cold connections; overlap with a wider \
    spread is within noise) and select's (classical, else improved; poll stands in) at N \
    cold are all below its at 0 (falls), 3 launches or more each";

/// Banga Fig. 8's rule between 0 cold and `x` cold, on the launches of `metric` (a
/// throughput): the verdict and our figures.
pub fn fig8_verdict(rows: &[Row], metric: &str, x: f64) -> (Verdict, String) {
    let epoll = |at: f64| verdict::launches(rows, "hintq-epoll", at, metric);
    match (epoll(0.0), epoll(x), fig8_scan(rows, metric, x)) {
        (Some(e0), Some(ex), Some((name, s0, sx))) => {
            let series = [CLASSICAL, IMPROVED, POLL].into_iter().find(|s| s.1 == name).map_or("", |s| s.0);
            // A point whose load generator was near its limit judges nothing.
            let bound: Vec<String> = ["hintq-epoll", series]
                .iter()
                .flat_map(|s| [0.0, x].map(|at| super::serve::load_bound(rows, s, at)))
                .flatten()
                .collect();
            let v = if bound.is_empty() {
                Verdict::all(&[Verdict::same(&ex, &e0, verdict::FLAT_TOL), Verdict::below(&sx, &s0)])
            } else {
                Verdict::CannotSay(bound.join("; "))
            };
            (v, format!("req/s at 0 and {} cold: epoll {e0}, {ex}; {name} {s0}, {sx}", num(x)))
        }
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
    let epoll = median(throughput, "hintq-epoll", FIG8_COLD);
    let scan = [CLASSICAL, IMPROVED, POLL]
        .into_iter()
        .find_map(|(series, name)| Some((name, median(throughput, series, FIG8_COLD)?)));
    let measured = epoll.is_some() && scan.is_some();
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
    // A figure not measured judges nothing, whatever the launches' rows say.
    let holds = if measured {
        holds
    } else {
        Verdict::unmeasured(&format!("epoll and a select or poll line at {FIG8_COLD} cold"))
    };
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
        figure: setting.figure("Fig. 8"),
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
        // epoll and every select or poll line it may be compared with, at 0 and 2000 cold.
        inputs: ["hintq-epoll", CLASSICAL.0, IMPROVED.0, POLL.0]
            .iter()
            .flat_map(|s| [(s.to_string(), 0.0), (s.to_string(), FIG8_COLD)])
            .collect(),
    }
}

/// A cold-connection count of a Fig. 9 sweep (E2's, E11's) and the names of its metrics: the
/// median, 99th percentile and largest latency (ms), requests answered per second, errors.
pub struct Fig9Level {
    pub cold: usize,
    pub p50: &'static str,
    pub p99: &'static str,
    pub max: &'static str,
    pub achieved: &'static str,
    pub errors: &'static str,
}

/// The rule of Fig. 9's shape verdict.
const FIG9_RULE: &str = "at 750 cold: yes when epoll's p99 launches are all below improved select's at the \
    highest rate both were offered (much lower latency) and epoll saturates higher: where the proxy was \
    driven to saturation (its hot clients sending as fast as it answers, Banga's S-Clients), epoll's \
    launches all above improved select's; else, one of them having saturated in the sweep (its median \
    achieved under 95% of the rate offered), epoll's launches at its highest achieved rate all above \
    improved select's at its own; cannot say when neither saturated, when the load generator's busiest \
    thread was 70% busy or more at a saturation point, or with fewer than 3 launches";

/// The metric of the saturation points of Fig. 9 (req/s, x: cold connections), and the
/// metric its load generator's busiest thread is kept under.
pub const FIG9_SATURATION: &str = "fig9_saturation_rps";
/// See [`FIG9_SATURATION`].
pub const FIG9_SATURATION_BUSY: &str = "load_hot_busy_pct_fig9_saturation_errors";

/// Fig. 9's claim.
const FIG9_CLAIM: &str = "At 750 cold connections the event API has much lower latency and saturates at a \
    somewhat higher rate than improved select.";

/// Banga's saturation rates (§7.3).
fn fig9_paper() -> PaperNumber {
    PaperNumber {
        words: "saturates at 1348 req/s vs 1291 for improved select (§7.3): ratio 1.044",
        value: 1348.0 / 1291.0,
    }
}

/// Fig. 9 at 750 cold: the highest rate the event API (epoll) achieved over improved select's,
/// against Banga's 1348 ÷ 1291 at saturation (no ratio if neither fell short of the rate
/// offered: neither saturated), and their p99 latency at the highest rate both were offered,
/// judged by [`FIG9_RULE`] on the launches of `achieved` (req/s) and `p99` (ms) in `rows`
/// (x: offered rate).
pub fn fig9(setting: Setting, rows: &[Row], achieved: &str, p99: &str) -> FigureRow {
    let lines = crate::data::lines(rows, achieved);
    // The highest achieved (by the medians): its rate offered and launches, and whether the
    // last rate offered fell short (saturated).
    let top = |name: &str| {
        let l = lines.iter().find(|l| l.name == name)?;
        let p = l.points.iter().max_by(|a, b| a.spread.median.total_cmp(&b.spread.median))?;
        let last = l.points.last()?;
        let f = verdict::launches(rows, name, p.x, achieved)?;
        Some((f, last.x, last.spread.median < 0.95 * last.x))
    };
    // p99 of both at the highest rate both were offered.
    let p99_lines = crate::data::lines(rows, p99);
    let latency = || {
        let (e, s) = (
            p99_lines.iter().find(|l| l.name == "hintq-epoll")?,
            p99_lines.iter().find(|l| l.name == IMPROVED.0)?,
        );
        let rate = e.points.iter().rev().map(|p| p.x).find(|&x| s.at(x).is_some())?;
        let f = |name: &str| verdict::launches(rows, name, rate, p99);
        Some((rate, f("hintq-epoll")?, f(IMPROVED.0)?))
    };
    // epoll's p99 below improved select's at the highest rate both were offered, said in `ours`.
    let lower = |ours: &mut String| match latency() {
        Some((rate, el, sl)) => {
            *ours += &format!("; p99 ms at {} req/s offered: epoll {el}, improved select {sl}", num(rate));
            Verdict::below(&el, &sl)
        }
        None => Verdict::unmeasured("p99 of both at one rate"),
    };
    // Banga's 1348 ÷ 1291 at saturation, every launch against every launch.
    let literal = |e: &Figure, s: &Figure| {
        format!(
            "{} (rule: every epoll launch at least 1.044 times every improved select launch, at saturation)",
            Verdict::above(e, &s.scaled(1348.0 / 1291.0))
        )
    };
    // Driven to saturation (the proxy's E11): both lines' launches at 750 cold.
    let driven = |name: &str| verdict::launches(rows, name, PAPER_COLD, FIG9_SATURATION);
    let driven = driven("hintq-epoll").zip(driven(IMPROVED.0));
    let (ours, ratio, holds, literal) = match (driven, top("hintq-epoll"), top(IMPROVED.0)) {
        (Some((e, s)), _, _) => {
            let bound = ["hintq-epoll", IMPROVED.0]
                .iter()
                .find_map(|n| super::serve::load_bound_in(rows, FIG9_SATURATION_BUSY, n, PAPER_COLD));
            let mut ours = format!(
                "at 750 cold, driven to saturation: {} (epoll {e} ÷ improved select {s} req/s)",
                num(e.median() / s.median())
            );
            let (higher, literal) = match &bound {
                Some(why) => (Verdict::CannotSay(why.clone()), format!("cannot say: {why}")),
                None => (Verdict::above(&e, &s), literal(&e, &s)),
            };
            let holds = Verdict::all(&[lower(&mut ours), higher]).to_string();
            (ours, Ok(e.median() / s.median()), holds, literal)
        }
        (None, Some((e, offered, e_sat)), Some((s, _, s_sat))) => {
            let mut ours = format!(
                "at 750 cold: {} (epoll {e} ÷ improved select {s} req/s, the highest each achieved)",
                num(e.median() / s.median())
            );
            let (ratio, higher, literal) = if e_sat || s_sat {
                (Ok(e.median() / s.median()), Verdict::above(&e, &s), literal(&e, &s))
            } else {
                let why = format!("neither saturated up to {} req/s offered", num(offered));
                (Err(why.clone()), Verdict::CannotSay(why.clone()), format!("cannot say: {why}"))
            };
            let holds = Verdict::all(&[lower(&mut ours), higher]).to_string();
            (ours, ratio, holds, literal)
        }
        _ => (
            "epoll and improved select not both measured at 750 cold".into(),
            Err("not measured".into()),
            UNMEASURED.into(),
            "cannot say: not measured".into(),
        ),
    };
    FigureRow {
        inputs: Vec::new(),
        figure: setting.figure("Fig. 9"),
        claim: FIG9_CLAIM,
        paper: Some(fig9_paper()),
        literal,
        ours,
        ratio,
        holds,
        rule: FIG9_RULE.into(),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::{fig9, Setting, FIG9_SATURATION, FIG9_SATURATION_BUSY, IMPROVED};
    use crate::data::Row;
    use crate::exp::check::starts;

    /// Launches of `metric` for `series` at `x`.
    pub(crate) fn launches(series: &str, x: f64, metric: &str, vs: [f64; 3]) -> Vec<Row> {
        vs.iter()
            .enumerate()
            .map(|(k, &v)| Row { rep: k as u32, ..Row::ok("E11", series, x, metric, v) })
            .collect()
    }

    #[test]
    fn fig9_reads_the_saturation_the_proxy_was_driven_to() {
        let mut rows = Vec::new();
        // The sweep: both keep pace at 8000 req/s, epoll's p99 below improved select's.
        rows.extend(launches("hintq-epoll", 8000.0, "p99", [1.0, 1.1, 1.2]));
        rows.extend(launches(IMPROVED.0, 8000.0, "p99", [3.0, 3.1, 3.3]));
        rows.extend(launches("hintq-epoll", 8000.0, "rps", [8000.0; 3]));
        rows.extend(launches(IMPROVED.0, 8000.0, "rps", [8000.0; 3]));
        // Driven to saturation at 750 cold: epoll 30,000 req/s, improved select 20,000.
        rows.extend(launches("hintq-epoll", 750.0, FIG9_SATURATION, [30_000.0, 29_500.0, 30_200.0]));
        rows.extend(launches(IMPROVED.0, 750.0, FIG9_SATURATION, [20_000.0, 20_300.0, 19_800.0]));
        let f = fig9(Setting::Proxy, &rows, "rps", "p99");
        assert_eq!(f.holds, "yes", "{}", f.ours);
        starts(&f.ours, "at 750 cold, driven to saturation: 1.50");
        starts(&f.literal, "yes (rule: every epoll launch at least 1.044 times");
        // Without the saturation points the sweep never saturated: cannot say.
        let sweep: Vec<Row> = rows.iter().filter(|r| r.metric != FIG9_SATURATION).cloned().collect();
        assert!(fig9(Setting::Proxy, &sweep, "rps", "p99")
            .holds
            .starts_with("cannot say: neither saturated"));
        // The load generator at its limit at a saturation point: cannot say.
        let mut busy = rows.clone();
        busy.push(Row::ok("E11", IMPROVED.0, 750.0, FIG9_SATURATION_BUSY, 90.0));
        let f = fig9(Setting::Proxy, &busy, "rps", "p99");
        starts(&f.holds, "cannot say: the load generator's busiest hot thread was 90.0% busy");
        // Improved select saturating higher: no.
        let mut worse = sweep.clone();
        worse.extend(launches("hintq-epoll", 750.0, FIG9_SATURATION, [20_000.0, 20_300.0, 19_800.0]));
        worse.extend(launches(IMPROVED.0, 750.0, FIG9_SATURATION, [30_000.0, 29_500.0, 30_200.0]));
        assert_eq!(fig9(Setting::Proxy, &worse, "rps", "p99").holds, "no");
    }
}
