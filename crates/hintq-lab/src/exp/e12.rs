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

use super::provos::{beats, fig10_row, fig14_row, figs11_13_row, rtsig_row, BEATS_RULE};
use super::serve;
use super::{Analysis, Experiment, FigureRow, Lab, UNMEASURED};
use crate::data::{self, num, Line, Pt, Row, Spread};
use crate::plot::Panel;
use crate::runner::Point;
use std::time::Duration;

/// Hot connection slots: requests in flight at most (a request waits for a free one, its
/// latency counted from its intended send time, and times out after [`TIMEOUT`]).
const HOT: usize = 32;
/// httperf's timeout: a request unanswered this long is an error.
const TIMEOUT: &str = "1s";
/// A rate is sustained when the mean reply rate reaches this share of it with under 1% errors.
const SUSTAINED: f64 = 0.9;

/// An inactive-connection count and the names of its metrics.
pub(super) struct Level {
    pub(super) inactive: usize,
    pub(super) mean: &'static str,
    pub(super) per_second: &'static str,
    pub(super) errors: &'static str,
}

const fn level(inactive: usize, mean: &'static str, per_second: &'static str, errors: &'static str) -> Level {
    Level { inactive, mean, per_second, errors }
}

/// Provos's 1, 251 and 501, and counts at which this machine may show the effect.
pub(super) static LEVELS: [Level; 6] = [
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

pub(super) fn analyse(rows: &[Row]) -> Analysis {
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

/// The rows of one launch of a point: the mean reply rate, each whole second's replies (rep =
/// launch x [`SECONDS`] + the second, so that the seconds of every launch make the bars), the
/// error percentage and the median response time (rep = the launch).
pub(super) fn rows(
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
pub(super) fn median_metric(lvl: &Level) -> String {
    format!("median_ms_{}", lvl.inactive)
}

/// The load generator's busiest hot thread at a level's points (its own name per level: the
/// levels share their x, the offered rates).
fn busy_metric(lvl: &Level) -> String {
    format!("{}_{}", serve::LOAD_BUSY, lvl.inactive)
}

/// Why `series`'s points at `lvl` judge nothing, if at one of them the load generator's busiest
/// hot thread was over [`serve::LOAD_BUSY_LIMIT_PCT`] busy.
pub(super) fn load_bound(rows: &[Row], lvl: &Level, series: &str) -> Option<String> {
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
pub(super) fn sustained(replies: &Line, errors: Option<&Line>) -> f64 {
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

/// Each inactive count and series measured, with the highest rate it kept pace up to
/// ([`sustained`]).
pub(super) type Top = [(usize, String, f64)];

/// The highest rate `series` kept pace up to at `n` inactive ([`sustained`]), if measured.
pub(super) fn pace(top: &Top, n: usize, series: &str) -> Option<f64> {
    top.iter().find(|t| t.0 == n && t.1 == series).map(|t| t.2)
}

/// Our figure and whether the claim holds: at the largest inactive count measured for both,
/// the epoll server keeps up to a higher offered rate than the poll server.
fn verdict(top: &Top, rows: &[Row]) -> (String, String) {
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

#[cfg(test)]
pub(super) mod tests {
    use super::{analyse, rows, Row, LEVELS};
    use crate::exp::check::{contains, starts};

    pub(crate) fn json(
        mean: f64,
        seconds: &[u64],
        successes: u64,
        timeouts: u64,
        p50_us: f64,
    ) -> serde_json::Value {
        serde_json::json!({
            "reply_rate": {"mean": mean, "per_second": seconds, "min": 0, "max": 0},
            "hot": {"successes": successes, "errors": {"timeout": timeouts, "reset": 0}},
            "latency_us": {"p50": p50_us},
        })
    }

    /// Three launches of a point, their means `means`, each with the seconds `secs`.
    pub(crate) fn point(
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
        starts(&a.holds, "yes, at 5000 inactive: epoll keeps pace up to 16000 req/s offered, poll to 0");
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
        starts(&h, "cannot say: fewer than 3 launches");
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
        starts(&h, "no, at 2000 inactive: epoll keeps pace up to 8000 req/s offered, poll to 8000");
        contains(&h, "at 16000 req/s, epoll 12222 (12100–12300, n=3) below poll");
        let mut close = Vec::new();
        close.extend(point("hintq-epoll", 2000, 16000.0, [12222.0, 12100.0, 13600.0], &[12100], 0));
        close.extend(point("hintq-poll", 2000, 16000.0, [13657.0, 12000.0, 13700.0], &[13500], 0));
        let h = analyse(&close).holds;
        starts(&h, "within noise");
    }
}
