//! E12, Provos & Lever Figs. 4-10 in their form: reply rate against offered request rate,
//! a new connection per request (httperf's way), the 6 KB document, at several counts of
//! inactive connections held to `hintq serve`; for poll, the kernel-held interest sets
//! (epoll, io_uring: today's /dev/poll), RT signals alone (`--no-hybrid`, phhttpd's way) and
//! the hybrid that polls under load. The reply rate is the mean over the run's whole seconds
//! with the least and most second as bars (httperf's `Reply rate: min avg max`); Fig. 10 is
//! the share of requests that ended in an error.
//!
//! The load generator opens each hot connection ahead of its request (httperf connects at
//! send time), so up to [`HOT`] connections more than the inactive count are open and quiet
//! at the server at any time.

use super::serve;
use super::{Analysis, Experiment, FigureRow, Lab, PaperNumber, UNMEASURED};
use crate::data::{self, num, Line, Pt, Row, Spread, Status};
use crate::plot::Panel;
use crate::runner::Point;
use crate::verdict::{self, Figure, Verdict};
use std::time::Duration;

/// E12.
pub struct E12;

/// Hot connection slots: requests in flight at most (a request waits for a free one, its
/// latency counted from its intended send time, and times out after [`TIMEOUT`]).
const HOT: usize = 32;
/// httperf's timeout: a request unanswered this long is an error.
const TIMEOUT: &str = "1s";
/// A rate is sustained when the mean reply rate reaches this share of it with under 1% errors.
const SUSTAINED: f64 = 0.9;

/// An inactive-connection count and the names of its metrics.
struct Level {
    inactive: usize,
    mean: &'static str,
    per_second: &'static str,
    errors: &'static str,
}

const fn level(inactive: usize, mean: &'static str, per_second: &'static str, errors: &'static str) -> Level {
    Level { inactive, mean, per_second, errors }
}

/// Provos's 1, 251 and 501, and counts at which this machine shows the effect.
static LEVELS: [Level; 5] = [
    level(1, "reply_rate_mean_1", "reply_rate_per_second_1", "error_pct_1"),
    level(251, "reply_rate_mean_251", "reply_rate_per_second_251", "error_pct_251"),
    level(501, "reply_rate_mean_501", "reply_rate_per_second_501", "error_pct_501"),
    level(2000, "reply_rate_mean_2000", "reply_rate_per_second_2000", "error_pct_2000"),
    level(5000, "reply_rate_mean_5000", "reply_rate_per_second_5000", "error_pct_5000"),
];

/// The series: a hintq backend (`hintq-rtsig` with `--no-hybrid`, `hintq-rtsig-hybrid` the
/// default rtsig), or nginx.
fn server(lab: &Lab, series: &str, port: u16) -> Result<crate::runner::Server, String> {
    let mut s = serve::server(lab, series.strip_suffix("-hybrid").unwrap_or(series), port)?;
    if series == "hintq-rtsig" {
        s.cmd.args.push("--no-hybrid".into());
    }
    Ok(s)
}

impl Experiment for E12 {
    fn id(&self) -> &'static str {
        "E12"
    }
    fn title(&self) -> &'static str {
        "reply rate vs offered rate, a connection per request, 6 KB, with inactive connections"
    }
    fn paper(&self) -> &'static str {
        "Provos & Lever Figs. 4-10"
    }
    fn claim(&self) -> &'static str {
        "As inactive connections grow, the poll server's reply rate falls below the offered \
         rate, its per-second rate swings down towards zero and up to 60% of connections end in \
         errors; with the kernel keeping the interest set (/dev/poll) it keeps up, with only \
         sporadic errors."
    }
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        lab.need(&["serve"]).and(lab.need(&["load"]))
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        // Provos's three mechanisms: poll, /dev/poll (here epoll, the kernel-held interest set)
        // and RT signals without the hybrid (phhttpd's); the hybrid, hintq's, in the full run
        // only (E8 measures it against the overflowing queue).
        let backends = lab.pick(
            &["poll", "epoll", "rtsig", "rtsig-hybrid"][..],
            &["poll", "epoll", "rtsig"][..],
            &["epoll"][..],
        );
        // Provos's 1, 251 and 501 inactive, and a count at which this machine shows the effect.
        let inactive: Vec<usize> = lab.pick(vec![1, 251, 501, 5000], vec![1, 2000], vec![1]);
        let rates: Vec<f64> =
            lab.pick(vec![2000.0, 4000.0, 8000.0, 16000.0], vec![4000.0, 16000.0], vec![500.0]);
        // Each whole second is one sample of the reply rate (min, mean, max): ten in the full
        // run, as Provos's figures; three in the quick run, the fewest a comparison takes.
        let secs = lab.pick(10.2, 3.2, 1.2);
        let mut points = Vec::new();
        // Provos measured their own servers' mechanisms: hintq's backends only, no nginx.
        let supported = |b: &str| {
            b.strip_suffix("-hybrid").unwrap_or(b).parse::<hintq::Backend>().is_ok_and(|b| b.probe().is_ok())
        };
        for s in backends.iter().filter(|b| supported(b)).map(|b| format!("hintq-{b}")) {
            for lvl in LEVELS.iter().filter(|l| inactive.contains(&l.inactive)) {
                for &rate in &rates {
                    let port = serve::port();
                    let Ok(server) = server(lab, &s, port) else { continue };
                    let mut cmd = serve::load(lab, port, "6k.html", HOT, lvl.inactive, Some(rate), secs);
                    cmd.args.extend(["--new-conn-per-request", "--timeout", TIMEOUT].map(String::from));
                    let name = s.clone();
                    points.push(Point {
                        experiment: "E12",
                        series: s.clone(),
                        x: rate,
                        name: format!("{s}-inactive{}-rate{rate}", lvl.inactive),
                        server: Some(server),
                        cmd,
                        timeout: Duration::from_secs_f64(secs + 60.0),
                        estimate: Duration::from_secs_f64(secs + 1.5 + lvl.inactive as f64 / 5000.0),
                        parse: Box::new(move |ran| rows(&name, rate, lvl, &serve::load_json(ran)?)),
                    });
                }
            }
        }
        points
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        let x = "offered request rate (requests per second)";
        let measured: Vec<&Level> =
            LEVELS.iter().filter(|l| rows.iter().any(|r| r.metric == l.mean)).collect();
        let mut panels: Vec<Panel> = measured
            .iter()
            .map(|l| Panel {
                title: format!("reply rate, {} inactive (mean; bars: least and most second)", l.inactive),
                x_label: x.into(),
                y_label: "replies per second".into(),
                log_x: false,
                log_y: false,
                lines: reply_lines(rows, l),
            })
            .collect();
        panels.extend(measured.iter().map(|l| Panel {
            title: format!("Fig. 10: errors, {} inactive", l.inactive),
            x_label: x.into(),
            y_label: "% of requests ended by an error".into(),
            log_x: false,
            log_y: false,
            lines: data::lines(rows, l.errors),
        }));
        let mut reading = Vec::new();
        let mut top = Vec::new();
        for l in &measured {
            let errors = data::lines(rows, l.errors);
            for line in reply_lines(rows, l) {
                let s = sustained(&line, errors.iter().find(|e| e.name == line.name));
                let last = line.points.last().expect("a line has points");
                reading.push(format!(
                    "{}, {} inactive: keeps pace {}; at {} req/s offered, {} replies/s (seconds from {} to {}).",
                    line.name,
                    l.inactive,
                    if s > 0.0 { format!("up to {} req/s offered", num(s)) } else { "at no rate of the sweep".into() },
                    last.x,
                    num(last.spread.median),
                    num(last.spread.min),
                    num(last.spread.max)
                ));
                top.push((l.inactive, line.name.clone(), s));
            }
        }
        let (ours, holds) = verdict(&top, rows);
        let mut metrics = Vec::new();
        for l in &measured {
            metrics.push((l.mean, "mean replies per second over the run"));
            metrics.push((l.per_second, "replies in each whole second (median, least, most)"));
            metrics.push((l.errors, "% of requests ended by an error"));
        }
        let figures = vec![
            FigureRow {
inputs: Vec::new(),
                figure: "Provos Figs. 4-9".into(),
                claim: "As inactive connections grow, the poll server's reply rate falls below the offered \
                        rate and swings towards zero; with /dev/poll it keeps up.",
                paper: None,
                ours: ours.clone(),
                ratio: Err("the paper prints no number".into()),
                holds: holds.clone(),
                rule: format!(
                    "at the most inactive measured for both: yes when epoll keeps pace (mean replies at least \
                     {}% of the rate offered, errors under 1%) up to a higher offered rate than poll, no when \
                     poll keeps pace higher; keeping pace to the same rate, by the replies of each whole second \
                     at the highest rate (epoll's all above poll's: yes; all below: no; else within noise; \
                     3 seconds or more; seconds of one launch, not independent launches); cannot say where the \
                     load generator's busiest thread was 70% busy or more at a point",
                    num(SUSTAINED * 100.0)
                ),
                literal: super::NO_NUMBER.into(),
            },
            fig10_row(rows),
            rtsig_row(&top, rows),
        ];
        Analysis { panels, ours, holds, reading, metrics, figures }
    }
}

/// Fig. 10's rule: the poll server's errors "climb" if they reach this share (%) of requests
/// at some point; the kernel-held set's are "sporadic" if they stay under 1%.
const FIG10_CLIMB_PCT: f64 = 10.0;

/// Provos Fig. 10: the most requests ended by errors, poll against epoll (the kernel-held set,
/// today's /dev/poll), over every inactive count and rate measured, each with where it was.
fn fig10_row(rows: &[Row]) -> FigureRow {
    let measured: Vec<&Level> = LEVELS.iter().filter(|l| rows.iter().any(|r| r.metric == l.errors)).collect();
    // (error %, inactive, offered rate) of the worst point of `name`.
    let worst = |name: &str| {
        measured
            .iter()
            .filter_map(|lvl| {
                let l = data::lines(rows, lvl.errors).into_iter().find(|l| l.name == name)?;
                l.points.iter().map(|p| (p.spread.median, lvl.inactive, p.x)).reduce(|a, b| {
                    if b.0 > a.0 {
                        b
                    } else {
                        a
                    }
                })
            })
            .reduce(|a, b| if b.0 > a.0 { b } else { a })
    };
    let counts: Vec<String> = measured.iter().map(|l| l.inactive.to_string()).collect();
    let mut literal = "cannot say: poll and epoll not both measured".to_string();
    let (ours, ratio, holds) = match (worst("hintq-poll"), worst("hintq-epoll")) {
        (Some(p), Some(e)) => {
            literal = format!(
                "{} (rule: poll's worst point reaches 60% of requests ended by errors; ours {}%)",
                if p.0 >= 60.0 { "yes" } else { "no" },
                num(p.0)
            );
            let at = |w: (f64, usize, f64)| match w.0 {
                0.0 => "no errors at any point".to_string(),
                _ => format!("{}% at {} inactive, {} req/s offered", num(w.0), w.1, num(w.2)),
            };
            let holds = match (p.0 >= FIG10_CLIMB_PCT, e.0 < 1.0) {
                (true, true) => format!("yes: poll's errors reach {}%, epoll's stay under 1%", num(p.0)),
                (true, false) => {
                    let lvl = LEVELS.iter().find(|l| l.inactive == e.1);
                    match lvl.and_then(|l| load_bound(rows, l, "hintq-epoll")) {
                        Some(why) => format!("cannot say: {why}"),
                        None => format!(
                            "no: poll's errors reach {}%, but epoll's {}% are more than sporadic",
                            num(p.0),
                            num(e.0)
                        ),
                    }
                }
                (false, _) => {
                    format!("no: poll's errors stay under {FIG10_CLIMB_PCT}% ({}% at most)", num(p.0))
                }
            };
            (
                format!("most errors over {} inactive: poll {}; epoll {}", counts.join(", "), at(p), at(e)),
                Ok(p.0),
                holds,
            )
        }
        _ => ("poll and epoll not both measured".into(), Err("not measured".into()), UNMEASURED.into()),
    };
    FigureRow {
        inputs: Vec::new(),
        figure: "Provos Fig. 10".into(),
        claim: "The poll server's errors climb to 60% of connections; with /dev/poll errors are only \
                sporadic.",
        paper: Some(PaperNumber {
            words:
                "errors rise to 60% of connections for stock poll (251 and 501 inactive); /dev/poll: sporadic",
            value: 60.0,
        }),
        ours,
        ratio,
        holds,
        rule: format!(
            "yes when poll's worst point (median) reaches {FIG10_CLIMB_PCT}% of requests ended by errors and \
             epoll's stays under 1%, no otherwise; cannot say where epoll's worst point had the load \
             generator's busiest thread {}% busy or more; one launch per point: spread not judged",
            serve::LOAD_BUSY_LIMIT_PCT
        ),
        literal,
    }
}

/// The rows of one point: the mean reply rate, each whole second's replies (rep = the
/// second), and the error percentage.
fn rows(series: &str, rate: f64, lvl: &Level, json: &serde_json::Value) -> Result<Vec<Row>, String> {
    let row = |metric: &str, rep: u32, v: f64| Row {
        experiment: "E12".into(),
        series: series.into(),
        x: rate,
        rep,
        metric: metric.into(),
        value: Some(v),
        status: Status::Ok,
        note: String::new(),
    };
    let mean = serve::at(json, "/reply_rate/mean").ok_or("load.json has no /reply_rate/mean")?;
    let seconds = json.pointer("/reply_rate/per_second").and_then(|v| v.as_array());
    let seconds = seconds.filter(|s| !s.is_empty()).ok_or("load.json has no whole second of replies")?;
    let successes = serve::at(json, serve::REQUESTS).ok_or("load.json has no /hot/successes")?;
    let errors: f64 = json
        .pointer("/hot/errors")
        .and_then(|e| e.as_object())
        .ok_or("load.json has no /hot/errors")?
        .values()
        .filter_map(|c| c.as_f64())
        .sum();
    let attempts = successes + errors;
    let mut out = vec![row(lvl.mean, 0, mean)];
    for (k, n) in seconds.iter().enumerate() {
        out.push(row(lvl.per_second, k as u32, n.as_f64().ok_or("a per-second count is not a number")?));
    }
    out.push(row(lvl.errors, 0, if attempts > 0.0 { errors * 100.0 / attempts } else { 0.0 }));
    if let Some(busy) = serve::at(json, serve::LOAD_HOT_BUSY) {
        out.push(row(&busy_metric(lvl), 0, busy));
    }
    Ok(out)
}

/// The load generator's busiest hot thread at a level's points (its own name per level: the
/// levels share their x, the offered rates).
fn busy_metric(lvl: &Level) -> String {
    format!("{}_{}", serve::LOAD_BUSY, lvl.inactive)
}

/// Why `series`'s points at `lvl` judge nothing, if at one of them the load generator's busiest
/// hot thread was over [`serve::LOAD_BUSY_LIMIT_PCT`] busy.
fn load_bound(rows: &[Row], lvl: &Level, series: &str) -> Option<String> {
    let metric = busy_metric(lvl);
    let mut xs: Vec<f64> =
        rows.iter().filter(|r| r.series == series && r.metric == metric).map(|r| r.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.into_iter()
        .find_map(|x| serve::load_bound_in(rows, &metric, series, x))
        .map(|why| format!("{why} req/s, {} inactive", lvl.inactive))
}

/// The reply-rate lines of a level: at each rate the mean over the run, with the least and
/// the most second (from the per-second rows) as its bars.
fn reply_lines(rows: &[Row], lvl: &Level) -> Vec<Line> {
    let seconds = data::lines(rows, lvl.per_second);
    data::lines(rows, lvl.mean)
        .into_iter()
        .map(|mean| {
            let per = seconds.iter().find(|s| s.name == mean.name);
            let points = mean
                .points
                .iter()
                .map(|p| {
                    let (min, max, n) =
                        per.and_then(|s| s.at(p.x)).map_or((p.spread.min, p.spread.max, p.spread.n), |s| {
                            (s.spread.min, s.spread.max, s.spread.n)
                        });
                    Pt {
                        x: p.x,
                        spread: Spread { median: p.spread.median, min, max, n },
                        disturbed: p.disturbed,
                    }
                })
                .collect();
            Line { name: mean.name, points }
        })
        .collect()
}

/// The highest offered rate up to which every rate of the sweep was answered at
/// [`SUSTAINED`] of it on average with under 1% errors (0 if none).
fn sustained(replies: &Line, errors: Option<&Line>) -> f64 {
    replies
        .points
        .iter()
        .take_while(|p| {
            let err = errors.and_then(|e| e.median(p.x)).unwrap_or(0.0);
            p.spread.median >= SUSTAINED * p.x && err < 1.0
        })
        .map(|p| p.x)
        .fold(0.0, f64::max)
}

/// Our figure and whether the claim holds: at the largest inactive count measured for both,
/// the epoll server keeps up to a higher offered rate than the poll server.
fn verdict(top: &[(usize, String, f64)], rows: &[Row]) -> (String, String) {
    let at = |n: usize, s: &str| top.iter().find(|t| t.0 == n && t.1 == s).map(|t| t.2);
    let most =
        top.iter().map(|t| t.0).filter(|&n| at(n, "hintq-epoll").and(at(n, "hintq-poll")).is_some()).max();
    let Some(n) = most else {
        return ("epoll and poll not both measured".into(), UNMEASURED.into());
    };
    let (e, p) = (at(n, "hintq-epoll").unwrap_or(0.0), at(n, "hintq-poll").unwrap_or(0.0));
    let few = at(1, "hintq-poll").map_or(String::new(), |f| format!(" (poll with 1 inactive: {})", num(f)));
    let ours = format!(
        "with {n} inactive, epoll keeps up to {} req/s offered, poll to {}{few}; a new connection per request, 6 KB",
        num(e),
        num(p)
    );
    let holds = beats(top, rows, n, "hintq-epoll", "hintq-poll").map_or(UNMEASURED.into(), |b| b.1);
    (ours, holds)
}

/// Whether series `a` keeps pace better than `b` at `n` inactive: the higher sustained rate
/// (`top`) wins; at the same, the replies of each whole second at the highest rate offered to
/// both (3 seconds or more each, all above or all below; else within noise). `None` unless
/// both were measured there.
fn beats(
    top: &[(usize, String, f64)],
    rows: &[Row],
    n: usize,
    a: &str,
    b: &str,
) -> Option<(Verdict, String)> {
    let at = |s: &str| top.iter().find(|t| t.0 == n && t.1 == s).map(|t| t.2);
    let (ra, rb) = (at(a)?, at(b)?);
    let (an, bn) = (a.trim_start_matches("hintq-"), b.trim_start_matches("hintq-"));
    // A point whose load generator was near its limit judges nothing.
    let lvl = LEVELS.iter().find(|l| l.inactive == n)?;
    if let Some(why) = load_bound(rows, lvl, a).or_else(|| load_bound(rows, lvl, b)) {
        return Some((Verdict::CannotSay(why.clone()), format!("cannot say: {why}")));
    }
    if ra != rb {
        let v = if ra > rb { Verdict::Yes } else { Verdict::No };
        return Some((v.clone(), format!("{v}, at {n} inactive")));
    }
    // Past the rate both keep pace with: the replies at the highest rate offered to both.
    let mean = |s: &str| {
        let l = data::lines(rows, lvl.mean).into_iter().find(|l| l.name == s)?;
        l.points.last().map(|p| (p.x, p.spread.median))
    };
    // Each whole second's replies there: a spread within the one launch of each point.
    let seconds = |s: &str, x: f64| {
        let v = rows.iter().filter(|r| r.series == s && r.x == x && r.metric == lvl.per_second);
        let disturbed = v.clone().filter(|r| r.status == Status::Disturbed && r.value.is_some()).count();
        Figure::new(v.filter(|r| r.status == Status::Ok).filter_map(|r| r.value).collect())
            .map(|f| f.excluding(disturbed))
    };
    match (mean(a), mean(b)) {
        (Some((x, ma)), Some((xb, mb))) if x == xb && x > ra => {
            let (fa, fb) = (seconds(a, x), seconds(b, x));
            let (v, said) = match (&fa, &fb) {
                (Some(fa), Some(fb)) if fa.n().min(fb.n()) < verdict::MIN_LAUNCHES => (
                    Verdict::CannotSay(format!("fewer than {} whole seconds", verdict::MIN_LAUNCHES)),
                    verdict::compare((an, fa), (bn, fb)),
                ),
                (Some(fa), Some(fb)) => (Verdict::above(fa, fb), verdict::compare((an, fa), (bn, fb))),
                _ => (Verdict::CannotSay("no whole second measured".into()), "none".into()),
            };
            let text = format!(
                "{v}: both keep pace up to {} req/s offered; at {} req/s, {bn} answers {} replies/s ({}%), \
                 {an} {} ({}%); replies in each whole second: {said}",
                num(ra),
                num(x),
                num(mb),
                num(mb / x * 100.0),
                num(ma),
                num(ma / x * 100.0)
            );
            Some((v, text))
        }
        _ => Some((Verdict::WithinNoise, "within noise: the same in this sweep".into())),
    }
}

/// Provos §7: thttpd on /dev/poll (here epoll, the kernel-held interest set) scales better
/// than phhttpd on RT signals (here `hintq-rtsig`, no hybrid) "at both low and high inactive
/// connection loads": [`beats`] at every inactive count both were measured at, two or more.
fn rtsig_row(top: &[(usize, String, f64)], rows: &[Row]) -> FigureRow {
    let mut counts: Vec<usize> = top.iter().map(|t| t.0).collect();
    counts.sort_unstable();
    counts.dedup();
    let judged: Vec<(usize, Verdict, String)> = counts
        .iter()
        .filter_map(|&n| beats(top, rows, n, "hintq-epoll", "hintq-rtsig").map(|(v, t)| (n, v, t)))
        .collect();
    let sustained = |n: usize, s: &str| top.iter().find(|t| t.0 == n && t.1 == s).map_or(0.0, |t| t.2);
    let ours = if judged.is_empty() {
        "epoll and rtsig (no hybrid) not both measured".to_string()
    } else {
        let each: Vec<String> = judged
            .iter()
            .map(|(n, _, _)| {
                format!(
                    "{n} inactive: epoll keeps pace up to {}, rtsig {} req/s offered",
                    num(sustained(*n, "hintq-epoll")),
                    num(sustained(*n, "hintq-rtsig"))
                )
            })
            .collect();
        each.join("; ")
    };
    let holds = match judged.len() {
        0 => UNMEASURED.to_string(),
        1 => format!("cannot say: one inactive count measured ({})", judged[0].2),
        _ => {
            let v = Verdict::all(&judged.iter().map(|j| j.1.clone()).collect::<Vec<_>>());
            let each: Vec<String> = judged.iter().map(|(n, _, t)| format!("{n} inactive: {t}")).collect();
            format!("{v} ({})", each.join("; "))
        }
    };
    FigureRow {
        inputs: Vec::new(),
        figure: "Provos §7 (RT signals against /dev/poll)".into(),
        claim:
            "\"thttpd using /dev/poll scales better than single-threaded phhttpd using RT signals at both \
                low and high inactive connection loads\" (§7; Figs. 11-13 against Figs. 4-9)",
        paper: None,
        ours,
        ratio: Err("the paper prints no number".into()),
        holds,
        rule: format!(
            "at every inactive count measured for both (two or more): epoll keeps pace up to a higher \
             offered rate than rtsig without the hybrid or, keeping pace to the same rate, its replies in \
             each whole second at the highest rate are all above rtsig's (3 seconds or more); an inactive \
             count where the load generator's busiest thread was {}% busy or more at a point cannot say",
            serve::LOAD_BUSY_LIMIT_PCT
        ),
        literal: super::NO_NUMBER.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::{rows, Experiment, E12, LEVELS};

    fn json(mean: f64, seconds: &[u64], successes: u64, timeouts: u64) -> serde_json::Value {
        serde_json::json!({
            "reply_rate": {"mean": mean, "per_second": seconds, "min": 0, "max": 0},
            "hot": {"successes": successes, "errors": {"timeout": timeouts, "reset": 0}},
        })
    }

    #[test]
    fn a_point_gives_the_mean_each_second_and_the_error_share() {
        let r = rows("hintq-poll", 8000.0, &LEVELS[2], &json(7000.0, &[6000, 8000], 14000, 6000)).unwrap();
        let got: Vec<(&str, u32, f64)> =
            r.iter().map(|r| (r.metric.as_str(), r.rep, r.value.unwrap())).collect();
        assert_eq!(
            got,
            [
                ("reply_rate_mean_501", 0, 7000.0),
                ("reply_rate_per_second_501", 0, 6000.0),
                ("reply_rate_per_second_501", 1, 8000.0),
                ("error_pct_501", 0, 30.0)
            ]
        );
        assert!(rows("x", 1.0, &LEVELS[0], &json(1.0, &[], 1, 0)).unwrap_err().contains("whole second"));
    }

    #[test]
    fn the_plot_shows_the_mean_with_the_seconds_as_bars_and_the_verdict_compares_sustained_rates() {
        let mut all = Vec::new();
        // epoll keeps up at both rates with 5000 inactive; poll at 4000 only with 1 inactive
        // and at no rate with 5000 (its mean falls short, its seconds swing).
        for (series, inactive, rate, mean, secs, err) in [
            ("hintq-epoll", 1, 4000.0, 4000.0, [3990, 4010], 0),
            ("hintq-epoll", 1, 16000.0, 15900.0, [15800, 16000], 0),
            ("hintq-poll", 1, 4000.0, 4000.0, [4000, 4000], 0),
            ("hintq-poll", 1, 16000.0, 9000.0, [8000, 10000], 0),
            ("hintq-epoll", 5000, 4000.0, 3990.0, [3980, 4000], 0),
            ("hintq-epoll", 5000, 16000.0, 15000.0, [14000, 16000], 0),
            ("hintq-poll", 5000, 4000.0, 2000.0, [100, 3900], 2000),
            ("hintq-poll", 5000, 16000.0, 1500.0, [0, 3000], 9000),
        ] {
            let lvl = LEVELS.iter().find(|l| l.inactive == inactive).unwrap();
            let j = json(mean, &secs, (mean * 2.0) as u64, err);
            all.extend(rows(series, rate, lvl, &j).unwrap());
        }
        let a = E12.analyse(&all);
        assert_eq!(a.holds, "yes, at 5000 inactive");
        assert_eq!(
            a.ours,
            "with 5000 inactive, epoll keeps up to 16000 req/s offered, poll to 0 (poll with 1 inactive: 4000); \
             a new connection per request, 6 KB"
        );
        // 2 levels: 2 reply-rate panels, 2 error panels.
        assert_eq!(a.panels.len(), 4);
        let poll = a.panels[1].lines.iter().find(|l| l.name == "hintq-poll").unwrap();
        let p = poll.at(4000.0).unwrap().spread;
        assert_eq!((p.median, p.min, p.max), (2000.0, 100.0, 3900.0), "mean, least and most second");
        let errors = a.panels[3].lines.iter().find(|l| l.name == "hintq-poll").unwrap();
        // 2000 timeouts beside 4000 replies: a third of the requests.
        assert!((errors.median(4000.0).unwrap() - 100.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn fig10_takes_the_worst_errors_over_every_inactive_count_and_a_tie_looks_past_it() {
        let mut all = Vec::new();
        // Both keep pace at 8000; at 16000 with 5000 inactive poll collapses with 64% errors.
        for (series, inactive, rate, mean, ok, err) in [
            ("hintq-epoll", 501, 8000.0, 8000.0, 100, 0),
            ("hintq-epoll", 501, 16000.0, 16000.0, 100, 0),
            ("hintq-poll", 501, 8000.0, 8000.0, 100, 0),
            ("hintq-poll", 501, 16000.0, 16000.0, 100, 0),
            ("hintq-epoll", 5000, 8000.0, 8000.0, 100, 0),
            ("hintq-epoll", 5000, 16000.0, 12000.0, 100, 0),
            ("hintq-poll", 5000, 8000.0, 8000.0, 100, 0),
            ("hintq-poll", 5000, 16000.0, 4000.0, 36, 64),
        ] {
            let lvl = LEVELS.iter().find(|l| l.inactive == inactive).unwrap();
            all.extend(rows(series, rate, lvl, &json(mean, &[mean as u64], ok, err)).unwrap());
        }
        let a = E12.analyse(&all);
        assert!(
            a.holds.starts_with(
                "cannot say: fewer than 3 whole seconds: both keep pace up to 8000 req/s offered; at 16000 \
                 req/s, poll answers 4000 replies/s (25.0%), epoll 12000 (75.0%)"
            ),
            "{}",
            a.holds
        );
        // Issue 26: poll answering more than epoll past the rate both keep pace with is no.
        let mut more = Vec::new();
        for (series, rate, mean, seconds) in [
            ("hintq-epoll", 8000.0, 8000.0, [8000, 8000, 8000]),
            ("hintq-poll", 8000.0, 8000.0, [8000, 8000, 8000]),
            ("hintq-epoll", 16000.0, 12222.0, [12100, 12200, 12300]),
            ("hintq-poll", 16000.0, 13657.0, [13500, 13600, 13700]),
        ] {
            let lvl = LEVELS.iter().find(|l| l.inactive == 2000).unwrap();
            more.extend(rows(series, rate, lvl, &json(mean, &seconds, 100, 0)).unwrap());
        }
        let h = E12.analyse(&more).holds;
        assert!(h.starts_with("no: both keep pace up to 8000 req/s"), "{h}");
        let f10 = a.figures.iter().find(|f| f.figure == "Provos Fig. 10").unwrap();
        assert_eq!(
            f10.ours,
            "most errors over 501, 5000 inactive: poll 64.0% at 5000 inactive, 16000 req/s offered; epoll no \
             errors at any point"
        );
        assert_eq!(f10.ratio, Ok(64.0));
        assert_eq!(f10.holds, "yes: poll's errors reach 64.0%, epoll's stay under 1%");
        // Without the collapse poll's errors stay at 0: the claim fails.
        let calm: Vec<_> =
            all.into_iter().filter(|r| !(r.series == "hintq-poll" && r.x == 16000.0)).collect();
        let f10 = E12.analyse(&calm).figures.into_iter().find(|f| f.figure == "Provos Fig. 10").unwrap();
        assert_eq!(f10.holds, "no: poll's errors stay under 10% (0% at most)");
    }

    #[test]
    fn provos_s_conclusion_needs_epoll_ahead_of_rtsig_at_a_low_and_a_high_inactive_count() {
        let point = |series: &str, inactive: usize, rate: f64, mean: f64| {
            let lvl = LEVELS.iter().find(|l| l.inactive == inactive).unwrap();
            rows(series, rate, lvl, &json(mean, &[mean as u64; 3], 100, 0)).unwrap()
        };
        let mut all = Vec::new();
        for inactive in [1, 2000] {
            all.extend(point("hintq-epoll", inactive, 4000.0, 4000.0));
            all.extend(point("hintq-epoll", inactive, 16000.0, 16000.0));
            all.extend(point("hintq-rtsig", inactive, 4000.0, 4000.0));
            all.extend(point("hintq-rtsig", inactive, 16000.0, 9000.0));
        }
        let row = |rows: &[super::Row]| {
            E12.analyse(rows).figures.into_iter().find(|f| f.figure.starts_with("Provos §7")).unwrap()
        };
        let r = row(&all);
        assert!(
            r.holds.starts_with("yes (1 inactive: yes, at 1 inactive; 2000 inactive: yes"),
            "{}",
            r.holds
        );
        assert!(
            r.ours.contains("2000 inactive: epoll keeps pace up to 16000, rtsig 4000 req/s offered"),
            "{}",
            r.ours
        );
        // The load generator 85% busy at one of rtsig's points with 2000 inactive: unjudged there.
        let mut busy = all.clone();
        busy.push(super::Row::ok("E12", "hintq-rtsig", 16000.0, "load_hot_busy_pct_2000", 85.0));
        let h = row(&busy).holds;
        assert!(
            h.contains("2000 inactive: cannot say: the load generator's busiest hot thread was 85.0% busy"),
            "{h}"
        );
        assert!(h.starts_with("cannot say"), "{h}");
        let low: Vec<super::Row> = all.iter().filter(|r| r.metric.ends_with("_1")).cloned().collect();
        assert!(
            row(&low).holds.starts_with("cannot say: one inactive count measured"),
            "{}",
            row(&low).holds
        );
    }
}
