//! Banga et al.'s Table 2 as rows of the report's first table: the share of the CPU in event
//! notification of classical select, improved select and the event API, measured by E5 on the
//! static server and by E11 on the proxy (E5's `perf` profiles), judged by one rule.

use super::banga::{Setting, CLASSICAL, IMPROVED, PAPER_COLD, POLL};
use super::{FigureRow, PaperNumber, UNMEASURED};
use crate::data::{num, Row};
use crate::verdict::{self, Figure, Verdict};

/// Banga's Table 2 as a rule, said in E5's and E11's sections beside their verdicts.
pub const TABLE2_RULE: &str = "Each share is a flat profile as Banga's DCPI gave it: the samples of the \
    mechanism's own functions (kernel and user; the per-descriptor helpers only under them) over all the \
    time of the core the server runs on, idle included, in the load's hot phase; only the server's own \
    processes (hintq, nginx) count as event notification, any other on the core as the core's time. Table 2 is judged at one cold count (750, Banga's, when measured) for every \
    line, on each point's profiles (launches): classical select's must all be above improved select's \
    and the event API's, improved select's above the event API's, and the event API's below a third of \
    the smaller select share's (Banga: 34% > 12% > 0.68%); poll stands in for select only when neither \
    select was measured; 3 profiles or more each";

/// The literal verdict of Table 2's select rows: their shares are descriptions of Banga's
/// machine, no bound.
const SHARE: &str = "— (a share of Banga's machine, not a bound: see ours ÷ paper)";

/// The metric that holds the samples a share of `metric` rests on (one value per profile).
pub fn samples_of(metric: &str) -> String {
    format!("{metric}_samples")
}

/// A share (%) as the report prints it; under 1% of the CPU with the samples it rests on
/// beside it where the rows recorded them ("0.025% (0.025–0.075, n=3), 1–3 samples"), so a
/// reader sees how little a share near zero stands on.
fn share_text(share: &Figure, samples: Option<Figure>) -> String {
    let text = share.with_unit("%");
    match samples {
        Some(s) if share.median() < 1.0 => {
            let (a, b) = (s.min().round(), s.max().round());
            let n = if a == b { format!("{a}") } else { format!("{a}–{b}") };
            format!("{text}, {n} sample{}", if b == 1.0 { "" } else { "s" })
        }
        _ => text,
    }
}

/// Table 2's rows and their summary for a section.
pub struct Table2 {
    /// One row per line of Banga's (classical select, improved select, the event API).
    pub figures: Vec<FigureRow>,
    /// The shares at the cold count judged, for the section.
    pub ours: String,
    /// The section's verdict: the rows' verdicts together ([`Verdict::all`]).
    pub holds: String,
}

/// Table 2: one row per line of Banga's (classical select, improved select, the event API),
/// each the share (%) of CPU in event notification at 50 hot, 400 req/s, judged by
/// [`TABLE2_RULE`] at one cold count for all: 750 when the event API was measured there, else
/// the most it was measured at (then without a ratio). `metric` in `rows` is that share
/// (x: cold connections), one value per profile.
pub fn table2(setting: Setting, rows: &[Row], metric: &str) -> Table2 {
    let table = setting.figure("Table 2");
    let has =
        |series: &str| rows.iter().any(|r| r.series == series && r.metric == metric && r.value.is_some());
    let (event_series, event_name) = if has("hintq-epoll") || !has("hintq-uring") {
        ("hintq-epoll", "epoll")
    } else {
        ("hintq-uring", "uring")
    };
    // The one cold count every line is read at.
    let xs: Vec<f64> = rows
        .iter()
        .filter(|r| r.series == event_series && r.metric == metric && r.value.is_some())
        .map(|r| r.x)
        .collect();
    let x = if xs.contains(&PAPER_COLD) { PAPER_COLD } else { xs.iter().copied().fold(PAPER_COLD, f64::max) };
    let share = |series: &str| verdict::launches(rows, series, x, metric);
    let said =
        |series: &str, f: &Figure| share_text(f, verdict::launches(rows, series, x, &samples_of(metric)));
    let (c, i, e, p) = (share(CLASSICAL.0), share(IMPROVED.0), share(event_series), share(POLL.0));
    let (cn, iname) = (CLASSICAL.1, IMPROVED.1);
    let unmeasured = |what: &str| Verdict::unmeasured(&format!("{what} at {x} cold"));
    // "a above b": the verdict and both figures.
    let above = |a: &Option<Figure>, an: &str, b: &Option<Figure>, bn: &str| match (a, b) {
        (Some(a), Some(b)) => (Verdict::above(a, b), verdict::compare((an, a), (bn, b))),
        (None, _) => (unmeasured(an), format!("{an} not measured")),
        (_, None) => (unmeasured(bn), format!("{bn} not measured")),
    };
    let both = |parts: [(Verdict, String); 2]| {
        let v = Verdict::all(&[parts[0].0.clone(), parts[1].0.clone()]);
        let text = format!("{v} ({}; {})", parts[0].1, parts[1].1);
        (v, text)
    };
    let classical = match c {
        None => (unmeasured(cn), format!("cannot say: {cn} not measured at {x} cold (see its section)")),
        Some(_) => both([above(&c, cn, &i, iname), above(&c, cn, &e, event_name)]),
    };
    let improved = match i {
        None => (unmeasured(iname), UNMEASURED.to_string()),
        Some(_) => both([above(&c, cn, &i, iname), above(&i, iname, &e, event_name)]),
    };
    // The event API against a third of the smaller select share; poll stands in when neither
    // select was measured.
    let scan = match (&c, &i) {
        (Some(c), Some(i)) if i.median() < c.median() => Some((i, iname)),
        (Some(c), _) => Some((c, cn)),
        (None, Some(i)) => Some((i, iname)),
        (None, None) => p.as_ref().map(|p| (p, "poll (standing in for select)")),
    };
    let event = match (&e, scan) {
        (Some(e), Some((s, name))) => {
            let third = s.scaled(1.0 / 3.0);
            let label = format!("a third of {name}'s share of {}%", num(s.median()));
            let says = verdict::compare((event_name, e), (&label, &third));
            let v = Verdict::below(e, &third);
            let text = format!("{v} ({says})");
            (v, text)
        }
        _ => (unmeasured("the event API or a select"), UNMEASURED.into()),
    };
    let holds = Verdict::all(&[classical.0, improved.0, event.0]).to_string();
    // Banga's words: "less than 1% of the CPU".
    let event_literal = match &e {
        Some(f) => format!(
            "{} (rule: every profile's share under 1% of the CPU; ours {})",
            Verdict::under(f, 1.0),
            said(event_series, f)
        ),
        None => format!("cannot say: {event_name} not measured at {x} cold"),
    };
    let row = |line: &str,
               claim: &'static str,
               words: &'static str,
               value: f64,
               (name, series): (&str, &str),
               got: &Option<Figure>,
               holds: String,
               literal: String| {
        let (ours, ratio) = match got {
            Some(f) => (
                format!("{} ({name}, {x} cold)", said(series, f)),
                if x == PAPER_COLD {
                    Ok(f.median())
                } else {
                    Err(format!("measured at {x} cold, the paper at 750"))
                },
            ),
            None => (format!("{name} not measured at {x} cold"), Err("not measured".into())),
        };
        FigureRow {
            inputs: Vec::new(),
            figure: format!("{table}: {line}"),
            claim,
            paper: Some(PaperNumber { words, value }),
            ours,
            ratio,
            holds,
            rule: TABLE2_RULE.into(),
            literal,
        }
    };
    let figures = vec![
        row(
            "classical select",
            "Classical select spends a third of the CPU in event notification, the most of the three.",
            "34% of the CPU (33.51% in the table)",
            33.51,
            (cn, CLASSICAL.0),
            &c,
            classical.1,
            SHARE.into(),
        ),
        row(
            "improved select",
            "Improved select cuts it to 12%, between classical select and the event API.",
            "12% of the CPU (12.02% in the table)",
            12.02,
            (iname, IMPROVED.0),
            &i,
            improved.1,
            SHARE.into(),
        ),
        row(
            "event API",
            "The event API almost eliminates the event-notification overhead.",
            "less than 1% of the CPU (0.68% in the table)",
            0.68,
            (event_name, event_series),
            &e,
            event.1,
            event_literal,
        ),
    ];
    let measured: Vec<String> = [
        (&c, cn, CLASSICAL.0),
        (&i, iname, IMPROVED.0),
        (&e, event_name, event_series),
        (&p, "poll", POLL.0),
    ]
    .iter()
    .filter_map(|(v, n, series)| Some(format!("{n} {}", said(series, v.as_ref()?))))
    .collect();
    let ours = if measured.is_empty() {
        format!("no share measured at {x} cold")
    } else {
        format!("at {x} cold: {}", measured.join(", "))
    };
    Table2 { figures, ours, holds }
}

#[cfg(test)]
mod tests {
    use super::{samples_of, table2, Setting, CLASSICAL};
    use crate::exp::banga::tests::launches;
    use crate::exp::check::contains;

    #[test]
    fn a_share_near_zero_shows_the_samples_it_rests_on() {
        let m = "event_cpu_pct";
        let mut rows = launches("hintq-epoll", 750.0, m, [0.025, 0.05, 0.075]);
        rows.extend(launches("hintq-epoll", 750.0, &samples_of(m), [1.0, 2.0, 3.0]));
        rows.extend(launches(CLASSICAL.0, 750.0, m, [30.0, 31.0, 32.0]));
        rows.extend(launches(CLASSICAL.0, 750.0, &samples_of(m), [1200.0, 1240.0, 1280.0]));
        let t = table2(Setting::Server, &rows, m);
        let event = t.figures.iter().find(|f| f.figure.ends_with("event API")).unwrap();
        assert_eq!(event.ours, "0.050% (0.025–0.075, n=3), 1–3 samples (epoll, 750 cold)");
        assert!(event.literal.ends_with("ours 0.050% (0.025–0.075, n=3), 1–3 samples)"), "{}", event.literal);
        // A share well above zero is said as before; so is one whose samples were not recorded.
        let classical = t.figures.iter().find(|f| f.figure.ends_with("classical select")).unwrap();
        assert_eq!(classical.ours, "31.0% (30.0–32.0, n=3) (classical select, 750 cold)");
        contains(&t.ours, "epoll 0.050% (0.025–0.075, n=3), 1–3 samples");
        let old: Vec<_> = rows.into_iter().filter(|r| !r.metric.ends_with("_samples")).collect();
        let t = table2(Setting::Server, &old, m);
        assert_eq!(t.figures[2].ours, "0.050% (0.025–0.075, n=3) (epoll, 750 cold)");
    }
}
