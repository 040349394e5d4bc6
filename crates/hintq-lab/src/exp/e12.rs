//! E12, Provos & Lever Figs. 4-14 in their form: reply rate against offered request rate,
//! a new connection per request (httperf's way), the 6 KB document, at several counts of
//! inactive connections held to `hintq serve`; for poll (stock thttpd), epoll (the
//! kernel-held interest set: today's /dev/poll) and RT signals alone (`--no-hybrid`,
//! phhttpd's way). Each point is launched 3 times; the reply rate is the mean over a launch's
//! whole seconds, drawn as the median of the launches with the least and most second of any
//! launch as bars (httperf's `Reply rate: min avg max`). Fig. 10 is the share of requests
//! that ended in an error, Fig. 14 the median response time.
//!
//! The load generator opens each hot connection ahead of its request (httperf connects at
//! send time), so up to [`HOT`] connections more than the inactive count are open and quiet
//! at the server at any time.

use super::serve;
use super::{Analysis, Experiment, FigureRow, Lab, PaperNumber, UNMEASURED};
use crate::data::{self, num, Line, Pt, Row, Spread, Status};
use crate::plot::Panel;
use crate::runner::Point;
use crate::verdict::{self, launches, Verdict};
use std::time::Duration;

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

/// Provos's 1, 251 and 501, and counts at which this machine may show the effect.
static LEVELS: [Level; 6] = [
    level(1, "reply_rate_mean_1", "reply_rate_per_second_1", "error_pct_1"),
    level(251, "reply_rate_mean_251", "reply_rate_per_second_251", "error_pct_251"),
    level(501, "reply_rate_mean_501", "reply_rate_per_second_501", "error_pct_501"),
    level(2000, "reply_rate_mean_2000", "reply_rate_per_second_2000", "error_pct_2000"),
    level(5000, "reply_rate_mean_5000", "reply_rate_per_second_5000", "error_pct_5000"),
    level(15_000, "reply_rate_mean_15000", "reply_rate_per_second_15000", "error_pct_15000"),
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

/// E12: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E12",
    title: "reply rate vs offered rate, a connection per request, 6 KB, with inactive connections",
    paper: "Provos & Lever Figs. 4-14",
    claim: "As inactive connections grow, the poll server's reply rate falls below the offered \
         rate, its per-second rate swings down towards zero and up to 60% of connections end in \
         errors; with the kernel keeping the interest set (/dev/poll) it keeps up, with only \
         sporadic errors.",
    needs: super::needs_server,
    plan,
    analyse,
};

fn plan(lab: &Lab) -> Vec<Point> {
    // Provos's three mechanisms: poll, /dev/poll (here epoll, the kernel-held interest set)
    // and RT signals without the hybrid (phhttpd's). The hybrid is hintq's own, not
    // Provos's (they "were unable to directly test" one, §7): E8 measures it.
    let backends = lab.pick(&["poll", "epoll", "rtsig"][..], &["poll", "epoll", "rtsig"][..], &["epoll"][..]);
    // Provos's 1, 251 and 501 inactive, and more: this machine, some 40 times faster than
    // Provos's 400 MHz K6-2, kept pace with poll and 2000 inactive at 16,000 req/s (quick
    // run, 2026-11-28), so the full run adds 15,000 (near one process's descriptor limit
    // here), and so does the quick run: measuring 5000, the quick runs of 2026-11-28 saw no
    // poll errors and said "no" where the full run saw 80.6% at 15,000 and said "yes". The rates stay where the load generator is under its
    // 70% limit (at 16,000 new connections a second it was 85-98% busy: cannot say).
    let inactive: Vec<usize> = lab.pick(vec![1, 251, 501, 15_000], vec![1, 15_000], vec![1]);
    let rates: Vec<f64> = lab.pick(vec![4000.0, 8000.0], vec![8000.0], vec![500.0]);
    // Three launches of every point, interleaved by the runner: a verdict needs 3
    // (verdict.rs). Each whole second of a launch is one sample of the reply rate (min,
    // mean, max): ten a launch in the full run, as Provos's figures; two in the quick run.
    let (reps, secs) = (lab.pick(3, 3, 1), lab.pick(10.2, 2.2, 1.2));
    let mut points = Vec::new();
    // Provos measured their own servers' mechanisms: hintq's backends only, no nginx.
    let supported = |b: &str| b.parse::<hintq::Backend>().is_ok_and(|b| b.probe().is_ok());
    for s in backends.iter().filter(|b| supported(b)).map(|b| format!("hintq-{b}")) {
        for lvl in LEVELS.iter().filter(|l| inactive.contains(&l.inactive)) {
            for &rate in &rates {
                for launch in 0..reps {
                    let port = serve::port();
                    let Ok(server) = server(lab, &s, port) else { continue };
                    let mut cmd = serve::load(lab, port, "6k.html", HOT, lvl.inactive, Some(rate), secs);
                    cmd.args.extend(["--new-conn-per-request", "--timeout", TIMEOUT].map(String::from));
                    let name = s.clone();
                    points.push(Point {
                        experiment: "E12",
                        series: s.clone(),
                        x: rate,
                        name: format!("{s}-inactive{}-rate{rate}-rep{launch}", lvl.inactive),
                        server: Some(server),
                        cmd,
                        timeout: Duration::from_secs_f64(secs + 60.0),
                        estimate: Duration::from_secs_f64(secs + 1.5 + lvl.inactive as f64 / 5000.0),
                        parse: Box::new(move |ran| rows(&name, rate, lvl, launch, &serve::load_json(ran)?)),
                    });
                }
            }
        }
    }
    points
}

fn analyse(rows: &[Row]) -> Analysis {
    let measured: Vec<&Level> = LEVELS.iter().filter(|l| rows.iter().any(|r| r.metric == l.mean)).collect();
    let panel = |title: String, y: &str, lines| Panel {
        title,
        x_label: "offered request rate (requests per second)".into(),
        y_label: y.into(),
        log_x: false,
        log_y: false,
        lines,
    };
    let at = |l: &Level| format!("{} inactive", l.inactive);
    let mut panels: Vec<Panel> = measured
        .iter()
        .map(|l| {
            let title = format!("reply rate, {} (mean; bars: least and most second)", at(l));
            panel(title, "replies per second", with_offered(reply_lines(rows, l)))
        })
        .collect();
    panels.extend(measured.iter().map(|l| {
        panel(
            format!("Fig. 10: errors, {}", at(l)),
            "% of requests ended by an error",
            data::lines(rows, l.errors),
        )
    }));
    panels.extend(measured.iter().map(|l| {
        let title = format!("Fig. 14: median response time, {} (bars: least and most launch)", at(l));
        panel(title, "median response time (ms)", data::lines(rows, &median_metric(l)))
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
                if s > 0.0 {
                    format!("up to {} req/s offered", num(s))
                } else {
                    "at no rate of the sweep".into()
                },
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
        FigureRow::without_number(
            "Provos Figs. 4-9",
            "As inactive connections grow, the poll server's reply rate falls below the offered rate and swings \
             towards zero; with /dev/poll it keeps up.",
            ours.clone(),
            holds.clone(),
            &format!(
                "at the most inactive measured for both, epoll against poll, {BEATS_RULE}; cannot say where \
                 the load generator's busiest thread was {}% busy or more at a point",
                serve::LOAD_BUSY_LIMIT_PCT
            ),
        ),
        fig10_row(rows),
        figs11_13_row(&top, rows),
        fig14_row(rows),
        rtsig_row(&top, rows),
    ];
    Analysis { panels, ours, holds, reading, metrics, figures }
}

/// Provos's inactive counts of Fig. 10's 60%: the literal verdict is judged there only.
const PROVOS_FIG10: [usize; 2] = [251, 501];

/// Fig. 10's rule: the poll server's errors "climb" if they reach this share (%) of requests
/// at some point; the kernel-held set's are "sporadic" if they stay under 1%.
const FIG10_CLIMB_PCT: f64 = 10.0;

/// Provos Fig. 10: the most requests ended by errors, poll against epoll (the kernel-held set,
/// today's /dev/poll), over every inactive count and rate measured, each with where it was.
fn fig10_row(rows: &[Row]) -> FigureRow {
    let measured: Vec<&Level> = LEVELS.iter().filter(|l| rows.iter().any(|r| r.metric == l.errors)).collect();
    // (error %, inactive, offered rate) of the worst point of `name` over the levels `keep` keeps.
    // Other work on the machine can only add errors, never hide them: poll's errors "climb"
    // only on points of 3 undisturbed launches (their median), while epoll's "sporadic" errors
    // are read from every launch kept, disturbed ones included.
    let poll_points = |keep: &dyn Fn(usize) -> bool| -> Vec<(Option<f64>, usize, f64)> {
        measured
            .iter()
            .filter(|l| keep(l.inactive))
            .flat_map(|lvl| {
                let l = data::lines(rows, lvl.errors).into_iter().find(|l| l.name == "hintq-poll");
                l.into_iter().flat_map(|l| l.points).map(|p| {
                    let f = launches(rows, "hintq-poll", p.x, lvl.errors)
                        .filter(|f| f.n() >= verdict::MIN_LAUNCHES);
                    (f.map(|f| f.median()), lvl.inactive, p.x)
                })
            })
            .collect()
    };
    // (error %, inactive, offered rate) of the worst judged poll point over the levels `keep`
    // keeps, the first of the largest in the levels' and rates' order; and the points unjudged.
    let poll_worst = |keep: &dyn Fn(usize) -> bool| {
        let pts = poll_points(keep);
        let unjudged: Vec<String> = pts
            .iter()
            .filter(|p| p.0.is_none())
            .map(|p| format!("{} inactive, {} req/s", p.1, num(p.2)))
            .collect();
        let worst =
            pts.iter().filter_map(|p| Some((p.0?, p.1, p.2))).reduce(|a, b| if b.0 > a.0 { b } else { a });
        (worst, unjudged)
    };
    let epoll_worst = || {
        let all = measured.iter().flat_map(|lvl| {
            let l = data::lines(rows, lvl.errors).into_iter().find(|l| l.name == "hintq-epoll");
            l.into_iter().flat_map(|l| l.points).map(|p| (p.spread.median, lvl.inactive, p.x))
        });
        all.reduce(|a, b| if b.0 > a.0 { b } else { a })
    };
    let short = |unjudged: &[String]| {
        format!(
            "cannot say: poll's errors stay under the rule where judged, and {} had fewer than {} undisturbed launches",
            unjudged.join("; "),
            verdict::MIN_LAUNCHES
        )
    };
    // The literal verdict is Provos's set-up: the 60% was at 251 and 501 inactive.
    let (provos, provos_unjudged) = poll_worst(&|n| PROVOS_FIG10.contains(&n));
    let (poll, unjudged) = poll_worst(&|_| true);
    let counts: Vec<String> = measured.iter().map(|l| l.inactive.to_string()).collect();
    let mut literal = "cannot say: poll and epoll not both measured".to_string();
    let (ours, ratio, holds) = match (poll, epoll_worst()) {
        (Some(p), Some(e)) => {
            literal = match provos {
                Some(w) if w.0 < 60.0 && !provos_unjudged.is_empty() => short(&provos_unjudged),
                Some(w) => format!(
                    "{} (rule: poll's worst point at Provos's 251 or 501 inactive reaches 60% of requests ended \
                     by errors; ours {}%)",
                    if w.0 >= 60.0 { "yes" } else { "no" },
                    num(w.0)
                ),
                None if !provos_unjudged.is_empty() => short(&provos_unjudged),
                None => "cannot say: Provos's 251 and 501 inactive not measured (the 60% was there)".into(),
            };
            let at = |w: (f64, usize, f64)| match w.0 {
                0.0 => "no errors at any point".to_string(),
                _ => format!("{}% at {} inactive, {} req/s offered", num(w.0), w.1, num(w.2)),
            };
            let holds = match (p.0 >= FIG10_CLIMB_PCT, e.0 < 1.0) {
                (true, true) => format!("yes: poll's errors reach {}%, epoll's stay under 1%", num(p.0)),
                (true, false) => {
                    let lvl = LEVELS.iter().find(|l| l.inactive == e.1);
                    let disturbed = lvl.is_some_and(|l| {
                        rows.iter().any(|r| {
                            r.series == "hintq-epoll"
                                && r.x == e.2
                                && r.metric == l.errors
                                && r.status == Status::Disturbed
                        })
                    });
                    match lvl.and_then(|l| load_bound(rows, l, "hintq-epoll")) {
                        Some(why) => format!("cannot say: {why}"),
                        None if disturbed => "cannot say: epoll's worst point was measured while other work \
                                              ran (it can only add errors)"
                            .into(),
                        None => format!(
                            "no: poll's errors reach {}%, but epoll's {}% are more than sporadic",
                            num(p.0),
                            num(e.0)
                        ),
                    }
                }
                (false, _) if !unjudged.is_empty() => short(&unjudged),
                // Absence within a bounded sweep refutes nothing: how many inactive connections
                // make poll's errors climb depends on the machine (none at Provos's 251 and 501
                // here, 80.6% at 15,000 in the full run of 2026-11-28); the literal verdict
                // judges Provos's counts.
                (false, _) => format!(
                    "cannot say: poll's errors stay under {FIG10_CLIMB_PCT}% ({}% at most) up to {} inactive, the \
                     most measured; more may show them",
                    num(p.0),
                    measured.iter().map(|l| l.inactive).max().unwrap_or(0)
                ),
            };
            (
                format!("most errors over {} inactive: poll {}; epoll {}", counts.join(", "), at(p), at(e)),
                provos.map(|w| w.0).ok_or_else(|| "not measured at Provos's 251 or 501 inactive".to_string()),
                holds,
            )
        }
        (None, Some(_)) if !unjudged.is_empty() => {
            literal = short(&unjudged);
            (
                format!("poll's errors not judged: {}", unjudged.join("; ")),
                Err("disturbed".into()),
                short(&unjudged),
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
             epoll's stays under 1%; no when epoll's errors are more than sporadic; cannot say when poll's stay \
             under {FIG10_CLIMB_PCT}% at every count measured (more inactive connections may show them), or \
             where epoll's worst point had the load generator's busiest thread {}% busy or more or other work \
             running; poll's points judged on 3 undisturbed launches, epoll's on every launch (other work only \
             adds errors)",
            serve::LOAD_BUSY_LIMIT_PCT
        ),
        literal,
    }
}

/// The rows of one launch of a point: the mean reply rate, each whole second's replies (rep =
/// launch x [`SECONDS`] + the second, so that the seconds of every launch make the bars), the
/// error percentage and the median response time (rep = the launch).
fn rows(
    series: &str,
    rate: f64,
    lvl: &Level,
    launch: u32,
    json: &serde_json::Value,
) -> Result<Vec<Row>, String> {
    let row = |metric: &str, rep: u32, v: f64| Row { rep, ..Row::ok("E12", series, rate, metric, v) };
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
    let mut out = vec![row(lvl.mean, launch, mean)];
    for (k, n) in seconds.iter().enumerate().take(SECONDS as usize) {
        let n = n.as_f64().ok_or("a per-second count is not a number")?;
        out.push(row(lvl.per_second, launch * SECONDS + k as u32, n));
    }
    out.push(row(lvl.errors, launch, if attempts > 0.0 { errors * 100.0 / attempts } else { 0.0 }));
    if let Some(p50) = serve::at(json, "/latency_us/p50") {
        out.push(row(&median_metric(lvl), launch, p50 / 1000.0));
    }
    if let Some(busy) = serve::at(json, serve::LOAD_HOT_BUSY) {
        out.push(row(&busy_metric(lvl), launch, busy));
    }
    Ok(out)
}

/// Whole seconds of one launch kept as samples (the rows' `rep` numbers them launch by launch).
const SECONDS: u32 = 1000;

/// The median response time (ms) at a level's points (Provos Fig. 14).
fn median_metric(lvl: &Level) -> String {
    format!("median_ms_{}", lvl.inactive)
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
    data::distinct(rows.iter().filter(|r| r.series == series && r.metric == metric).map(|r| r.x))
        .into_iter()
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

/// The highest rate `series` kept pace up to at `n` inactive ([`sustained`]), if measured.
fn pace(top: &[(usize, String, f64)], n: usize, series: &str) -> Option<f64> {
    top.iter().find(|t| t.0 == n && t.1 == series).map(|t| t.2)
}

/// Our figure and whether the claim holds: at the largest inactive count measured for both,
/// the epoll server keeps up to a higher offered rate than the poll server.
fn verdict(top: &[(usize, String, f64)], rows: &[Row]) -> (String, String) {
    let at = |n: usize, s: &str| pace(top, n, s);
    let most =
        top.iter().map(|t| t.0).filter(|&n| at(n, "hintq-epoll").and(at(n, "hintq-poll")).is_some()).max();
    let Some(n) = most else {
        return ("epoll and poll not both measured".into(), UNMEASURED.into());
    };
    let (e, p) = (at(n, "hintq-epoll").unwrap_or(0.0), at(n, "hintq-poll").unwrap_or(0.0));
    let upto = |r: f64| {
        if r > 0.0 {
            format!("up to {} req/s offered", num(r))
        } else {
            "at no rate offered".into()
        }
    };
    let few = at(1, "hintq-poll").map_or(String::new(), |f| format!(" (poll with 1 inactive: {})", upto(f)));
    let ours = format!(
        "with {n} inactive, epoll keeps pace {}, poll {}{few}; a new connection per request, 6 KB",
        upto(e),
        upto(p)
    );
    let holds = beats(top, rows, n, "hintq-epoll", "hintq-poll").map_or(UNMEASURED.into(), |b| b.1);
    (ours, holds)
}

/// The rule of [`beats`], in words.
const BEATS_RULE: &str = "at each offered rate past the highest both keep pace with (mean replies at least 90% \
    of the rate offered, errors under 1%, by the medians of the launches), the mean reply rates of 3 launches \
    each: yes when the first series' are all above the second's at one such rate and below at none, no when \
    below at one, within noise when the ranges overlap at every one (and when both keep pace at every rate)";

/// Whether series `a` keeps pace better than `b` at `n` inactive, by [`BEATS_RULE`]; `None`
/// unless both were measured there.
fn beats(
    top: &[(usize, String, f64)],
    rows: &[Row],
    n: usize,
    a: &str,
    b: &str,
) -> Option<(Verdict, String)> {
    let (ra, rb) = (pace(top, n, a)?, pace(top, n, b)?);
    let (an, bn) = (a.trim_start_matches("hintq-"), b.trim_start_matches("hintq-"));
    let lvl = LEVELS.iter().find(|l| l.inactive == n)?;
    // A point whose load generator was near its limit judges nothing.
    if let Some(why) = load_bound(rows, lvl, a).or_else(|| load_bound(rows, lvl, b)) {
        return Some((Verdict::CannotSay(why.clone()), format!("cannot say: {why}")));
    }
    let pace = format!("{an} keeps pace up to {} req/s offered, {bn} to {}", num(ra), num(rb));
    let xs = data::distinct(rows.iter().filter(|r| r.metric == lvl.mean && r.series == a).map(|r| r.x));
    let judged: Vec<(Verdict, String)> = xs
        .into_iter()
        .filter(|&x| x > ra.min(rb))
        .filter_map(|x| {
            let (fa, fb) = (launches(rows, a, x, lvl.mean)?, launches(rows, b, x, lvl.mean)?);
            Some((
                Verdict::above(&fa, &fb),
                format!("at {} req/s, {}", num(x), verdict::compare((an, &fa), (bn, &fb))),
            ))
        })
        .collect();
    if judged.is_empty() {
        return Some((Verdict::WithinNoise, format!("within noise: {pace}, every rate offered to both")));
    }
    let has = |v: &Verdict| judged.iter().any(|j| &j.0 == v);
    let v = if has(&Verdict::No) {
        Verdict::No
    } else if let Some(why) =
        judged.iter().find_map(|j| matches!(j.0, Verdict::CannotSay(_)).then(|| j.0.clone()))
    {
        why
    } else if has(&Verdict::Yes) {
        Verdict::Yes
    } else {
        Verdict::WithinNoise
    };
    let each: Vec<&str> = judged.iter().map(|j| j.1.as_str()).collect();
    Some((v.clone(), format!("{v}, at {n} inactive: {pace}; mean replies/s: {}", each.join("; "))))
}

/// [`beats`] of `a` against `b` at every inactive count measured for both.
fn at_every_count(
    top: &[(usize, String, f64)],
    rows: &[Row],
    a: &str,
    b: &str,
) -> Vec<(usize, Verdict, String)> {
    let mut counts: Vec<usize> = top.iter().map(|t| t.0).collect();
    counts.sort_unstable();
    counts.dedup();
    counts.into_iter().filter_map(|n| beats(top, rows, n, a, b).map(|(v, t)| (n, v, t))).collect()
}

/// Every count's verdict together ([`Verdict::all`]), each said: `yes (1 inactive: …; …)`.
fn together(judged: &[(usize, Verdict, String)]) -> String {
    let v = Verdict::all(&judged.iter().map(|j| j.1.clone()).collect::<Vec<_>>());
    let each: Vec<String> = judged.iter().map(|(n, _, t)| format!("{n} inactive: {t}")).collect();
    format!("{v} ({})", each.join("; "))
}

/// Provos §7: thttpd on /dev/poll (here epoll, the kernel-held interest set) scales better
/// than phhttpd on RT signals (here `hintq-rtsig`, no hybrid) "at both low and high inactive
/// connection loads": [`beats`] at every inactive count both were measured at, two or more.
fn rtsig_row(top: &[(usize, String, f64)], rows: &[Row]) -> FigureRow {
    let judged = at_every_count(top, rows, "hintq-epoll", "hintq-rtsig");
    let each: Vec<String> = judged
        .iter()
        .map(|(n, _, _)| {
            let (e, r) = (pace(top, *n, "hintq-epoll"), pace(top, *n, "hintq-rtsig"));
            let (e, r) = (num(e.unwrap_or(0.0)), num(r.unwrap_or(0.0)));
            format!("{n} inactive: epoll keeps pace up to {e}, rtsig {r} req/s offered")
        })
        .collect();
    let (ours, holds) = match judged.len() {
        0 => ("epoll and rtsig (no hybrid) not both measured".to_string(), UNMEASURED.to_string()),
        1 => (each.join("; "), format!("cannot say: one inactive count measured ({})", judged[0].2)),
        _ => (each.join("; "), together(&judged)),
    };
    FigureRow::without_number(
        "Provos §7 (RT signals against /dev/poll)",
        "\"thttpd using /dev/poll scales better than single-threaded phhttpd using RT signals at both low and \
         high inactive connection loads\" (§7; Figs. 11-13 against Figs. 4-9)",
        ours,
        holds,
        &format!(
            "at every inactive count measured for both (two or more), epoll against rtsig without the hybrid, \
             {BEATS_RULE}; an inactive count where the load generator's busiest thread was {}% busy or more at \
             a point cannot say",
            serve::LOAD_BUSY_LIMIT_PCT
        ),
    )
}

/// The reply-rate lines with the line where replies equal the offered rate, Provos's
/// reference: a server on it keeps pace.
fn with_offered(mut lines: Vec<Line>) -> Vec<Line> {
    let xs = data::distinct(lines.iter().flat_map(|l| l.points.iter().map(|p| p.x)));
    if !xs.is_empty() {
        let points = xs
            .into_iter()
            .map(|x| Pt { x, spread: Spread { median: x, min: x, max: x, n: 1 }, disturbed: 0 })
            .collect();
        lines.push(Line { name: crate::plot::OFFERED.into(), points });
    }
    lines
}

/// Provos Figs. 11-13 against Figs. 4, 6 and 8: RT signals without the hybrid (phhttpd)
/// against poll (stock thttpd), by [`beats`] at every inactive count measured for both.
fn figs11_13_row(top: &[(usize, String, f64)], rows: &[Row]) -> FigureRow {
    let judged = at_every_count(top, rows, "hintq-rtsig", "hintq-poll");
    let (ours, holds) = if judged.is_empty() {
        ("rtsig (no hybrid) and poll not both measured".to_string(), UNMEASURED.to_string())
    } else {
        let counts: Vec<String> = judged.iter().map(|j| j.0.to_string()).collect();
        (format!("rtsig against poll at {} inactive", counts.join(", ")), together(&judged))
    };
    FigureRow::without_number(
        "Provos Figs. 11-13 (RT signals against poll)",
        "\"Comparing FIGS. 11 through 13 with FIGS. 4, 6, and 8, clearly phhttpd outperforms the stock version \
         of thttpd\" (§5: RT signals against poll, with 1, 251 and 501 inactive)",
        ours,
        holds,
        &format!(
            "at every inactive count measured for both, rtsig without the hybrid against poll, {BEATS_RULE}; \
             one no decides; an inactive count where the load generator's busiest thread was {}% busy or more \
             at a point cannot say",
            serve::LOAD_BUSY_LIMIT_PCT
        ),
    )
}

/// Provos's inactive count of Fig. 14.
const FIG14_INACTIVE: usize = 251;
/// Provos Fig. 14: phhttpd's median "leaps to over 120ms" after sufficiently high load.
const FIG14_LEAP_MS: f64 = 120.0;

/// Provos Fig. 14 at 251 inactive: the median response time of RT signals without the hybrid
/// (phhttpd) below the kernel-held set's (epoll, /dev/poll) at the lowest offered rate, and
/// above it at the highest, each by 3 launches a side.
fn fig14_row(rows: &[Row]) -> FigureRow {
    let lvl = LEVELS.iter().find(|l| l.inactive == FIG14_INACTIVE).expect("251 is a level");
    let metric = median_metric(lvl);
    let xs = data::distinct(rows.iter().filter(|r| r.metric == metric).map(|r| r.x));
    let fig = |s: &str, x: f64| launches(rows, s, x, &metric);
    let ends = xs.first().zip(xs.last()).filter(|(lo, hi)| lo < hi).map(|(lo, hi)| (*lo, *hi));
    let figs = ends.and_then(|(lo, hi)| {
        Some((
            lo,
            hi,
            fig("hintq-rtsig", lo)?,
            fig("hintq-epoll", lo)?,
            fig("hintq-rtsig", hi)?,
            fig("hintq-epoll", hi)?,
        ))
    });
    let paper = Some(PaperNumber {
        words: "phhttpd 1-3 ms faster than thttpd on /dev/poll over a wide range of load, then over 120 ms \
                while thttpd's rises slightly (251 inactive)",
        value: FIG14_LEAP_MS,
    });
    let (ours, ratio, holds, literal) = match figs {
        None => (
            format!("rtsig and epoll not both measured at two offered rates with {FIG14_INACTIVE} inactive"),
            Err("not measured".into()),
            format!("cannot say: {FIG14_INACTIVE} inactive (Provos's) not measured at two rates for rtsig and epoll"),
            format!("cannot say: not measured at {FIG14_INACTIVE} inactive"),
        ),
        Some((lo, hi, rlo, elo, rhi, ehi)) => {
            let low = Verdict::below(&rlo, &elo);
            let high = Verdict::above(&rhi, &ehi);
            let v = Verdict::all(&[low, high]);
            let kept_pace = data::lines(rows, lvl.mean)
                .into_iter()
                .find(|l| l.name == "hintq-rtsig")
                .is_some_and(|l| sustained(&l, None) >= hi);
            let leap = match Verdict::over(&rhi, FIG14_LEAP_MS) {
                Verdict::No if kept_pace => Verdict::CannotSay(format!(
                    "rtsig kept pace up to {} req/s, the highest rate offered: not driven to Provos's \
                     \"sufficiently high load\"",
                    num(hi)
                )),
                v => v,
            };
            (
                format!(
                    "median ms at {} req/s: {}; at {} req/s: {}",
                    num(lo),
                    verdict::compare(("rtsig", &rlo), ("epoll", &elo)),
                    num(hi),
                    verdict::compare(("rtsig", &rhi), ("epoll", &ehi))
                ),
                Ok(rhi.median()),
                format!("{v}"),
                format!(
                    "{leap} (rule: every launch of rtsig's median at the highest rate over {FIG14_LEAP_MS} ms; ours {})",
                    rhi
                ),
            )
        }
    };
    FigureRow {
        inputs: Vec::new(),
        figure: "Provos Fig. 14 (median response time)".into(),
        claim: "phhttpd (RT signals) \"serves requests with a median latency 1-3 milliseconds faster than the \
                /dev/poll-based thttpd server across a wide range of offered load. After sufficiently high load, \
                however, phhttpd's median response latency leaps to over 120ms per request, while thttpd's \
                response increases only slightly\" (§5, 251 inactive)",
        paper,
        ours,
        ratio,
        holds,
        rule: format!(
            "at {FIG14_INACTIVE} inactive, rtsig without the hybrid against epoll (the kernel-held set): yes when \
             rtsig's median response time is below epoll's at the lowest offered rate and above it at the \
             highest, 3 launches each, ranges apart; no when either comes out the other way; else within noise \
             (poll's medians are drawn, not judged)"
        ),
        literal,
    }
}

#[cfg(test)]
mod tests {
    use super::{analyse, rows, Row, LEVELS};

    fn json(mean: f64, seconds: &[u64], successes: u64, timeouts: u64, p50_us: f64) -> serde_json::Value {
        serde_json::json!({
            "reply_rate": {"mean": mean, "per_second": seconds, "min": 0, "max": 0},
            "hot": {"successes": successes, "errors": {"timeout": timeouts, "reset": 0}},
            "latency_us": {"p50": p50_us},
        })
    }

    /// Three launches of a point, their means `means`, each with the seconds `secs`.
    fn point(
        series: &str,
        inactive: usize,
        rate: f64,
        means: [f64; 3],
        secs: &[u64],
        errors: u64,
    ) -> Vec<Row> {
        let lvl = LEVELS.iter().find(|l| l.inactive == inactive).unwrap();
        (0..3u32)
            .flat_map(|k| {
                let m = means[k as usize];
                rows(series, rate, lvl, k, &json(m, secs, (m * 2.0) as u64, errors, 2000.0)).unwrap()
            })
            .collect()
    }

    #[test]
    fn a_launch_gives_its_mean_each_second_the_error_share_and_the_median() {
        let j = json(7000.0, &[6000, 8000], 14000, 6000, 2500.0);
        let r = rows("hintq-poll", 8000.0, &LEVELS[2], 1, &j).unwrap();
        let got: Vec<(&str, u32, f64)> =
            r.iter().map(|r| (r.metric.as_str(), r.rep, r.value.unwrap())).collect();
        assert_eq!(
            got,
            [
                ("reply_rate_mean_501", 1, 7000.0),
                ("reply_rate_per_second_501", 1000, 6000.0),
                ("reply_rate_per_second_501", 1001, 8000.0),
                ("error_pct_501", 1, 30.0),
                ("median_ms_501", 1, 2.5),
            ]
        );
        assert!(rows("x", 1.0, &LEVELS[0], 0, &json(1.0, &[], 1, 0, 1.0))
            .unwrap_err()
            .contains("whole second"));
    }

    #[test]
    fn the_plot_shows_the_launches_with_the_seconds_as_bars_and_the_verdict_compares_launches() {
        let mut all = Vec::new();
        // epoll keeps up at both rates with 5000 inactive; poll at 4000 only with 1 inactive
        // and at no rate with 5000 (its mean falls short, its seconds swing).
        all.extend(point("hintq-epoll", 1, 4000.0, [4000.0, 3990.0, 4010.0], &[3990, 4010], 0));
        all.extend(point("hintq-epoll", 1, 16000.0, [15900.0, 15800.0, 15950.0], &[15800, 16000], 0));
        all.extend(point("hintq-poll", 1, 4000.0, [4000.0, 4000.0, 3990.0], &[4000, 4000], 0));
        all.extend(point("hintq-poll", 1, 16000.0, [9000.0, 9500.0, 8800.0], &[8000, 10000], 0));
        all.extend(point("hintq-epoll", 5000, 4000.0, [3990.0, 3995.0, 3980.0], &[3980, 4000], 0));
        all.extend(point("hintq-epoll", 5000, 16000.0, [15000.0, 15200.0, 14900.0], &[14000, 16000], 0));
        all.extend(point("hintq-poll", 5000, 4000.0, [2000.0, 2100.0, 1900.0], &[100, 3900], 2000));
        all.extend(point("hintq-poll", 5000, 16000.0, [1500.0, 1400.0, 1600.0], &[0, 3000], 9000));
        let a = analyse(&all);
        assert!(
            a.holds
                .starts_with("yes, at 5000 inactive: epoll keeps pace up to 16000 req/s offered, poll to 0"),
            "{}",
            a.holds
        );
        assert_eq!(
            a.ours,
            "with 5000 inactive, epoll keeps pace up to 16000 req/s offered, poll at no rate offered (poll with 1 inactive: up to 4000 req/s offered); \
             a new connection per request, 6 KB"
        );
        // 2 levels: 2 reply-rate panels, 2 error panels, 2 median panels.
        assert_eq!(a.panels.len(), 6);
        let poll = a.panels[1].lines.iter().find(|l| l.name == "hintq-poll").unwrap();
        let p = poll.at(4000.0).unwrap().spread;
        assert_eq!(
            (p.median, p.min, p.max),
            (2000.0, 100.0, 3900.0),
            "launches' median, least and most second"
        );
        // Provos's reference: the line where replies equal the offered rate.
        let offered = a.panels[1].lines.iter().find(|l| l.name == "replies = offered").unwrap();
        assert_eq!(
            offered.points.iter().map(|p| (p.x, p.spread.median)).collect::<Vec<_>>(),
            [(4000.0, 4000.0), (16000.0, 16000.0)]
        );
        let errors = a.panels[3].lines.iter().find(|l| l.name == "hintq-poll").unwrap();
        // 2000 timeouts beside 4000 replies: a third of the requests.
        assert!((errors.median(4000.0).unwrap() - 100.0 / 3.0).abs() < 1e-9);
        // One launch a point: cannot say.
        let one: Vec<Row> =
            all.iter().filter(|r| r.rep == 0 || r.rep == 1000 || r.rep == 1001).cloned().collect();
        let h = analyse(&one).holds;
        assert!(h.starts_with("cannot say: fewer than 3 launches"), "{h}");
    }

    #[test]
    fn poll_answering_more_than_epoll_is_no_and_overlapping_launches_within_noise() {
        // Issue 26: at 16,000 req/s with 2000 inactive poll answered 13,657 replies/s and epoll
        // 12,222; the opposite of the claim is no, never "partly".
        let mut more = Vec::new();
        more.extend(point("hintq-epoll", 2000, 8000.0, [8000.0; 3], &[8000, 8000], 0));
        more.extend(point("hintq-poll", 2000, 8000.0, [8000.0; 3], &[8000, 8000], 0));
        more.extend(point("hintq-epoll", 2000, 16000.0, [12222.0, 12100.0, 12300.0], &[12100, 12300], 0));
        more.extend(point("hintq-poll", 2000, 16000.0, [13657.0, 13500.0, 13700.0], &[13500, 13700], 0));
        let h = analyse(&more).holds;
        assert!(
            h.starts_with("no, at 2000 inactive: epoll keeps pace up to 8000 req/s offered, poll to 8000"),
            "{h}"
        );
        assert!(h.contains("at 16000 req/s, epoll 12222 (12100–12300, n=3) below poll"), "{h}");
        let mut close = Vec::new();
        close.extend(point("hintq-epoll", 2000, 16000.0, [12222.0, 12100.0, 13600.0], &[12100], 0));
        close.extend(point("hintq-poll", 2000, 16000.0, [13657.0, 12000.0, 13700.0], &[13500], 0));
        let h = analyse(&close).holds;
        assert!(h.starts_with("within noise"), "{h}");
    }

    #[test]
    fn fig10_takes_the_worst_errors_over_every_inactive_count() {
        let mut all = Vec::new();
        for (series, inactive, rate, mean, err) in [
            ("hintq-epoll", 501, 8000.0, 8000.0, 0),
            ("hintq-poll", 501, 8000.0, 8000.0, 0),
            ("hintq-epoll", 5000, 16000.0, 12000.0, 0),
            ("hintq-poll", 5000, 16000.0, 3600.0, 12800),
        ] {
            all.extend(point(series, inactive, rate, [mean; 3], &[mean as u64], err));
        }
        let f10 =
            |rows: &[Row]| analyse(rows).figures.into_iter().find(|f| f.figure == "Provos Fig. 10").unwrap();
        let f = f10(&all);
        assert_eq!(
            f.ours,
            "most errors over 501, 5000 inactive: poll 64.0% at 5000 inactive, 16000 req/s offered; epoll no \
             errors at any point"
        );
        // The literal verdict and the ratio are Provos's set-up's: 501 inactive, where poll made
        // no errors here; the shape verdict takes the worst point anywhere.
        assert_eq!(f.ratio, Ok(0.0));
        assert_eq!(f.holds, "yes: poll's errors reach 64.0%, epoll's stay under 1%");
        assert!(
            f.literal.starts_with("no (rule: poll's worst point at Provos's 251 or 501 inactive"),
            "{}",
            f.literal
        );
        let beyond: Vec<_> = all.iter().filter(|r| r.metric != "error_pct_501").cloned().collect();
        assert!(
            f10(&beyond).literal.starts_with("cannot say: Provos's 251 and 501"),
            "{}",
            f10(&beyond).literal
        );
        // Other work can only add errors: poll's 64% measured while it ran proves no climb, while
        // epoll's disturbed launches without errors still show them sporadic.
        let busy = |series: &str| -> Vec<Row> {
            all.iter()
                .cloned()
                .map(|r| match r.series == series && r.x == 16000.0 {
                    true => Row { status: crate::data::Status::Disturbed, ..r },
                    false => r,
                })
                .collect()
        };
        assert!(f10(&busy("hintq-poll")).holds.starts_with("cannot say: poll's errors stay under the rule where judged, and 5000 inactive, 16000 req/s had fewer than 3"), "{}", f10(&busy("hintq-poll")).holds);
        assert_eq!(f10(&busy("hintq-epoll")).holds, "yes: poll's errors reach 64.0%, epoll's stay under 1%");
        let calm: Vec<_> =
            all.into_iter().filter(|r| !(r.series == "hintq-poll" && r.x == 16000.0)).collect();
        assert!(f10(&calm)
            .holds
            .starts_with("cannot say: poll's errors stay under 10% (0% at most) up to 5000 inactive"));
    }

    #[test]
    fn rt_signals_rows_judge_rtsig_against_poll_and_epoll_at_every_count() {
        let mut all = Vec::new();
        for inactive in [1, 2000] {
            all.extend(point("hintq-epoll", inactive, 4000.0, [4000.0; 3], &[4000], 0));
            all.extend(point("hintq-epoll", inactive, 16000.0, [16000.0, 15900.0, 15950.0], &[16000], 0));
            all.extend(point("hintq-rtsig", inactive, 4000.0, [4000.0; 3], &[4000], 0));
            all.extend(point("hintq-rtsig", inactive, 16000.0, [9000.0, 9100.0, 8900.0], &[9000], 0));
            all.extend(point("hintq-poll", inactive, 4000.0, [4000.0; 3], &[4000], 0));
            all.extend(point("hintq-poll", inactive, 16000.0, [5000.0, 5100.0, 4900.0], &[5000], 0));
        }
        let row = |rows: &[Row], name: &str| {
            analyse(rows).figures.into_iter().find(|f| f.figure.starts_with(name)).unwrap()
        };
        let r = row(&all, "Provos §7");
        assert!(
            r.holds.starts_with("yes (1 inactive: yes, at 1 inactive: epoll keeps pace up to 16000"),
            "{}",
            r.holds
        );
        let f = row(&all, "Provos Figs. 11-13");
        assert!(f.holds.starts_with("yes (1 inactive: yes"), "{}", f.holds);
        // The load generator 85% busy at one of rtsig's points with 2000 inactive: unjudged there.
        let mut busy = all.clone();
        busy.push(Row::ok("E12", "hintq-rtsig", 16000.0, "load_hot_busy_pct_2000", 85.0));
        let h = row(&busy, "Provos §7").holds;
        assert!(
            h.contains("2000 inactive: cannot say: the load generator's busiest hot thread was 85.0% busy"),
            "{h}"
        );
        assert!(h.starts_with("cannot say"), "{h}");
        let low: Vec<Row> = all.iter().filter(|r| r.metric.ends_with("_1")).cloned().collect();
        assert!(row(&low, "Provos §7").holds.starts_with("cannot say: one inactive count measured"));
        // rtsig below poll at 2000 inactive: one no decides Figs. 11-13.
        let mut worse = all.clone();
        worse.retain(|r| !(r.series == "hintq-rtsig" && r.x == 16000.0 && r.metric.ends_with("_2000")));
        worse.extend(point("hintq-rtsig", 2000, 16000.0, [3000.0, 3100.0, 2900.0], &[3000], 0));
        assert!(
            row(&worse, "Provos Figs. 11-13").holds.starts_with("no ("),
            "{}",
            row(&worse, "Provos Figs. 11-13").holds
        );
    }

    #[test]
    fn fig14_compares_medians_at_251_inactive_at_the_lowest_and_highest_rate() {
        let lvl = LEVELS.iter().find(|l| l.inactive == 251).unwrap();
        let mut all = Vec::new();
        for (series, rate, p50_ms) in [
            ("hintq-rtsig", 4000.0, [1.0, 1.1, 1.2]),
            ("hintq-epoll", 4000.0, [3.0, 3.2, 3.1]),
            ("hintq-rtsig", 16000.0, [130.0, 140.0, 125.0]),
            ("hintq-epoll", 16000.0, [5.0, 6.0, 5.5]),
        ] {
            for (k, ms) in p50_ms.iter().enumerate() {
                all.extend(
                    rows(series, rate, lvl, k as u32, &json(rate, &[rate as u64], 10, 0, ms * 1000.0))
                        .unwrap(),
                );
            }
        }
        let row = |rows: &[Row]| {
            analyse(rows).figures.into_iter().find(|f| f.figure.starts_with("Provos Fig. 14")).unwrap()
        };
        let f = row(&all);
        assert_eq!(f.holds, "yes");
        assert!(
            f.literal
                .starts_with("yes (rule: every launch of rtsig's median at the highest rate over 120 ms"),
            "{}",
            f.literal
        );
        assert_eq!(f.ratio, Ok(130.0));
        // Not measured at 251 inactive (the quick run): cannot say.
        let other: Vec<Row> =
            all.iter().map(|r| Row { metric: r.metric.replace("_251", "_2000"), ..r.clone() }).collect();
        assert!(row(&other).holds.starts_with("cannot say: 251 inactive"), "{}", row(&other).holds);
    }
}
