//! E6, Strebelow & Prehofer Figs. 6-13: Half-Sync/Half-Async and Leader/Followers (and the
//! single-threaded reactor as a reference) x `select`, level-triggered and edge-triggered
//! `epoll` (and `uring`) x threads, 512 request/response connections, read from `hintq bench
//! patterns`, whose CSV is read by column name.
//!
//! The figure has the paper's quantities: throughput per pattern (Figs. 6, 8, 11), the two
//! patterns on edge-triggered epoll (Fig. 7), Half-Sync's time to get an event and to queue it
//! (Fig. 9), the processing time of one event split into receive, re-activate and send on
//! level-triggered epoll (Figs. 10 and 13), Leader/Followers' time to get an event on select
//! and edge-triggered epoll (Fig. 12). Each of the paper's claims gets its own verdict,
//! computed from the rows.

use super::micro::tool_points;
use super::{panel, Analysis, Experiment, FigureRow, Lab, PaperNumber, NO_NUMBER};
use crate::data::{self, num, Line, Row, Status};
use crate::plot::Panel;
use crate::runner::Point;
use crate::verdict::{self, Figure};
use std::time::Duration;

/// E6.
pub struct E6;

/// Our metrics and the patterns benchmark's columns they come from.
const METRICS: [(&str, &str); 7] = [
    ("throughput_rps", "throughput"),
    ("wait_ns_per_event", "wait_ns_per_event"),
    ("insert_ns_per_op", "insert_ns_per_op"),
    ("recv_ns_per_event", "recv_ns_per_event"),
    ("rearm_ns_per_op", "rearm_ns_per_op"),
    ("send_ns_per_op", "send_ns_per_op"),
    ("server_us_per_reply", "server_us_per_reply"),
];

/// Our rows from the patterns benchmark's CSV: every metric of [`METRICS`] against threads,
/// one series per `pattern/backend`. Columns are found by name; a missing one fails the point.
pub fn convert(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let header: Vec<&str> = lines.next().ok_or("no header")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or(format!("no column {name}"));
    let (pattern, backend, threads) = (col("pattern")?, col("backend")?, col("threads")?);
    let metrics = METRICS.iter().map(|(m, c)| Ok((*m, col(c)?))).collect::<Result<Vec<_>, String>>()?;
    let mut out = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let get = |i: usize| f.get(i).copied().ok_or_else(|| format!("short line: {line}"));
        let series = format!("{}/{}", get(pattern)?, get(backend)?);
        let x: f64 = get(threads)?.parse().map_err(|_| format!("bad threads: {line}"))?;
        for &(metric, i) in &metrics {
            // Empty where it does not apply (no re-activation on edge-triggered backends).
            let Ok(v) = get(i)?.parse::<f64>() else { continue };
            out.push(Row {
                experiment: "E6".into(),
                series: series.clone(),
                x,
                rep: 0,
                metric: metric.into(),
                value: Some(v),
                status: Status::Ok,
                note: String::new(),
            });
        }
    }
    Ok(out)
}

const HS: &str = "half-sync";
const LF: &str = "leader-followers";
const THREADS: &str = "threads (half-sync: workers beside its asynchronous thread)";

/// A panel of the paper's: `parts` are (series, metric, line name).
fn fig(rows: &[Row], title: &str, y: &str, parts: &[(&str, &str, &str)]) -> Panel {
    let sub: Vec<Row> = parts
        .iter()
        .flat_map(|&(series, metric, name)| {
            rows.iter().filter(move |r| r.series == series && r.metric == metric).map(move |r| Row {
                series: name.into(),
                metric: "v".into(),
                ..r.clone()
            })
        })
        .collect();
    panel(&sub, "v", title, THREADS, y, (false, false))
}

/// The line of `pattern/backend` for `metric`.
fn line(rows: &[Row], pattern: &str, backend: &str, metric: &str) -> Option<Line> {
    let name = format!("{pattern}/{backend}");
    data::lines(rows, metric).into_iter().find(|l| l.name == name)
}

/// The highest median of a line: (threads, value).
fn peak(l: &Line) -> (f64, f64) {
    l.points.iter().map(|p| (p.x, p.spread.median)).max_by(|a, b| a.1.total_cmp(&b.1)).unwrap_or((0.0, 0.0))
}

/// Peak throughput of `pattern/backend`, with its line.
fn peak_tp(rows: &[Row], pattern: &str, backend: &str) -> Option<(f64, f64)> {
    line(rows, pattern, backend, "throughput_rps").map(|l| peak(&l))
}

fn at(p: (f64, f64)) -> String {
    format!("{} replies/s at {} threads", num(p.1), p.0)
}

/// The launches of `pattern/backend`'s `metric` at `x` threads.
fn fig_at(rows: &[Row], pattern: &str, backend: &str, metric: &str, x: f64) -> Option<Figure> {
    verdict::launches(rows, &format!("{pattern}/{backend}"), x, metric)
}

/// The peak of `pattern/backend`'s throughput (by its medians): its threads and launches.
fn peak_fig(rows: &[Row], pattern: &str, backend: &str) -> Option<(f64, Figure)> {
    let (x, _) = peak_tp(rows, pattern, backend)?;
    Some((x, fig_at(rows, pattern, backend, "throughput_rps", x)?))
}

/// "9000 replies/s at 2 threads (8900–9100, n=3)": the median first, as [`at`] says it.
fn at_fig((x, f): &(f64, Figure)) -> String {
    format!("{} ({}–{}, n={})", at((*x, f.median())), num(f.min()), num(f.max()), f.n())
}

/// A claim's verdict from [`verdict::Verdict`], with the numbers it rests on.
fn judged(v: verdict::Verdict, numbers: String) -> Verdict {
    match v {
        verdict::Verdict::Yes => Verdict::Supported(numbers),
        verdict::Verdict::No => Verdict::NotSupported(numbers),
        verdict::Verdict::WithinNoise => Verdict::WithinNoise(numbers),
        verdict::Verdict::CannotSay(why) => Verdict::NotMeasurable(format!("{why}: {numbers}")),
    }
}

/// The largest speed-up of edge-triggered epoll's throughput over select's at a common thread
/// count, in either pattern: (speed-up, pattern, threads).
fn largest_speedup(rows: &[Row]) -> Option<(f64, &'static str, f64)> {
    let mut best: Option<(f64, &'static str, f64)> = None;
    for p in [HS, LF] {
        let (Some(s), Some(et)) =
            (line(rows, p, "select", "throughput_rps"), line(rows, p, "epoll-et", "throughput_rps"))
        else {
            continue;
        };
        for pt in &s.points {
            let Some(e) = et.median(pt.x) else { continue };
            let r = e / pt.spread.median;
            if best.is_none_or(|b| r > b.0) {
                best = Some((r, p, pt.x));
            }
        }
    }
    best
}

/// Leader/Followers: how much longer select's time to get an event is than edge-triggered
/// epoll's, as their ratio averaged over the common thread counts: (mean ratio, counts).
fn select_longer(rows: &[Row]) -> Option<(f64, usize)> {
    let s = line(rows, LF, "select", "wait_ns_per_event")?;
    let et = line(rows, LF, "epoll-et", "wait_ns_per_event")?;
    let ratios: Vec<f64> = s.points.iter().filter_map(|p| Some(p.spread.median / et.median(p.x)?)).collect();
    (!ratios.is_empty()).then(|| (ratios.iter().sum::<f64>() / ratios.len() as f64, ratios.len()))
}

/// The verdict on one claim.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// The rows show it, with the numbers.
    Supported(String),
    /// The rows show otherwise, with the numbers.
    NotSupported(String),
    /// The launches' ranges overlap: neither shown, with the numbers.
    WithinNoise(String),
    /// The rows cannot tell, and why.
    NotMeasurable(String),
}

impl Verdict {
    fn word(&self) -> &'static str {
        match self {
            Verdict::Supported(_) => "supported",
            Verdict::NotSupported(_) => "not supported",
            Verdict::WithinNoise(_) => "within noise",
            Verdict::NotMeasurable(_) => "not measurable here",
        }
    }
    fn numbers(&self) -> &str {
        match self {
            Verdict::Supported(s)
            | Verdict::NotSupported(s)
            | Verdict::WithinNoise(s)
            | Verdict::NotMeasurable(s) => s,
        }
    }
}

/// One of the paper's claims: where it is made, its words, and how it is judged here.
pub struct Claim {
    /// Section and figure.
    pub place: &'static str,
    /// The paper's words (quoted, or closely paraphrased in brackets).
    pub words: &'static str,
    /// The rule its verdict is judged by, printed beside it.
    pub rule: &'static str,
    /// The verdict from the rows.
    pub judge: fn(&[Row]) -> Verdict,
}

/// A claim about threads on several cores (lock contention, pipeline stages on separate
/// cores), which a run that pins every server thread to one core cannot judge: its numbers
/// are given all the same.
fn one_core(numbers: String) -> Verdict {
    Verdict::NotMeasurable(format!(
        "not measurable with one server core (every server thread is pinned to one core here; the \
         paper's ran on 32): {numbers}"
    ))
}

fn missing(what: &str) -> Verdict {
    Verdict::NotMeasurable(format!("{what} was not measured"))
}

/// Strebelow & Prehofer's claims, in the order of their paper.
pub const CLAIMS: [Claim; 9] = [
    Claim {
        place: "§5, Figs. 6-7",
        words: "\"In the best case, i.e. using edge-triggered epoll, the Half-Sync/Half-Async pattern \
                outperforms the Leader/Followers pattern\" (and peaks highest of the six variants)",
        rule: "supported when half-sync/epoll-et's launches at its peak are all above the launches of \
               the best other variant at its peak (3 launches or more)",
        judge: |rows| {
            let (Some(hs), Some(lf)) = (peak_fig(rows, HS, "epoll-et"), peak_fig(rows, LF, "epoll-et")) else {
                return missing("half-sync or leader-followers on epoll-et");
            };
            let others = [(HS, "select"), (HS, "epoll"), (LF, "select"), (LF, "epoll"), (LF, "epoll-et")];
            let best = others
                .iter()
                .filter_map(|&(p, b)| Some((format!("{p}/{b}"), peak_fig(rows, p, b)?)))
                .max_by(|a, b| a.1 .1.median().total_cmp(&b.1 .1.median()));
            let (name, other) = best.unwrap_or_else(|| ("leader-followers/epoll-et".into(), lf.clone()));
            judged(
                verdict::Verdict::above(&hs.1, &other.1),
                format!(
                    "half-sync/epoll-et peaks at {}, leader-followers/epoll-et at {}; best of the other \
                     variants: {name}, {}",
                    at_fig(&hs),
                    at_fig(&lf),
                    at_fig(&other)
                ),
            )
        },
    },
    Claim {
        place: "§5 (Fig. 7), §7",
        words: "\"The Leader/Followers pattern has lower peak performance but does not degrade as strongly \
                as Half-Sync/Half-Async if too many cores are used\"",
        rule: "needs the server's threads on more cores than the peak uses",
        judge: |rows| {
            let drop = |p: &str| {
                let l = line(rows, p, "epoll-et", "throughput_rps")?;
                let (x, top) = peak(&l);
                let last = l.points.last()?;
                Some((100.0 * (top - last.spread.median) / top, x, last.x))
            };
            let (Some(hs), Some(lf)) = (drop(HS), drop(LF)) else {
                return missing("half-sync or leader-followers on epoll-et");
            };
            one_core(format!(
                "from its peak to the most threads measured, half-sync/epoll-et loses {}% ({} to {} \
                 threads), leader-followers/epoll-et {}% ({} to {})",
                num(hs.0),
                hs.1,
                hs.2,
                num(lf.0),
                lf.1,
                lf.2
            ))
        },
    },
    Claim {
        place: "§5.1 (Fig. 8), §7",
        words: "\"Half-Sync/Half-Async has performed better with select than with level-triggered epoll\" \
                (because \"the reactivation is performed within the critical pipeline stage\", on its own core)",
        rule: "needs the pipeline's stages on separate cores",
        judge: |rows| {
            let (Some(s), Some(lt)) = (peak_tp(rows, HS, "select"), peak_tp(rows, HS, "epoll")) else {
                return missing("half-sync on select or epoll");
            };
            one_core(format!("half-sync peaks at {} on select, {} on epoll", at(s), at(lt)))
        },
    },
    Claim {
        place: "§5.2 (Fig. 11), §7",
        words: "\"if the event notification mechanism is called within the critical path, as is the case \
                for the Leader/Followers pattern, select is outperformed by epoll\"",
        rule: "supported when leader-followers' launches at its epoll-et peak are all above its launches \
               at its select peak (3 launches or more)",
        judge: |rows| {
            let (Some(s), Some(et)) = (peak_fig(rows, LF, "select"), peak_fig(rows, LF, "epoll-et")) else {
                return missing("leader-followers on select or epoll-et");
            };
            let lt = peak_fig(rows, LF, "epoll").map_or("not measured".into(), |p| at_fig(&p));
            judged(
                verdict::Verdict::above(&et.1, &s.1),
                format!(
                    "leader-followers peaks at {} on select, {} on epoll-et, {lt} on level-triggered epoll",
                    at_fig(&s),
                    at_fig(&et)
                ),
            )
        },
    },
    Claim {
        place: "abstract, §7",
        words: "\"We observed speed-ups up to 2 just by switching from select to edge-triggered epoll\"",
        rule: "supported when, where the speed-up of the medians is largest, epoll-et's launches are all \
               above select's (3 launches or more; the literal verdict asks for 2)",
        judge: |rows| {
            let Some((r, p, x)) = largest_speedup(rows) else {
                return missing("select and epoll-et at a common thread count");
            };
            let fig = |b: &str| fig_at(rows, p, b, "throughput_rps", x);
            let (Some(et), Some(s)) = (fig("epoll-et"), fig("select")) else {
                return missing("select and epoll-et at a common thread count");
            };
            judged(
                verdict::Verdict::above(&et, &s),
                format!(
                    "largest speed-up {}x ({p}, {x} threads: {})",
                    num(r),
                    verdict::compare(("epoll-et", &et), ("select", &s))
                ),
            )
        },
    },
    Claim {
        place: "§5.2 (Fig. 12)",
        words: "\"on average a call to select needs almost 80% longer to complete than one to \
                edge-triggered epoll\" (Leader/Followers)",
        rule: "supported when select's launches of the time per event are all above epoll-et's at every \
               common thread count (3 launches or more; the literal verdict asks for almost 80% longer on \
               average: at least 75%)",
        judge: |rows| {
            let Some((mean, n)) = select_longer(rows) else {
                return missing(
                    "leader-followers' time to get an event on select and epoll-et at a common \
                                thread count",
                );
            };
            let xs: Vec<f64> = line(rows, LF, "select", "wait_ns_per_event").map_or(Vec::new(), |l| {
                l.points.iter().map(|p| p.x).collect()
            });
            let each: Vec<verdict::Verdict> = xs
                .iter()
                .filter_map(|&x| {
                    let f = |b: &str| fig_at(rows, LF, b, "wait_ns_per_event", x);
                    Some(verdict::Verdict::above(&f("select")?, &f("epoll-et")?))
                })
                .collect();
            judged(
                verdict::Verdict::all(&each),
                format!(
                    "select's time per event is {}% longer than epoll-et's on average over {} thread counts \
                     (time in get_next_event per event, blocking included)",
                    num(100.0 * (mean - 1.0)),
                    n
                ),
            )
        },
    },
    Claim {
        place: "§5.1 (Fig. 10), §5.2 (Fig. 13)",
        words: "[on level-triggered epoll the re-activation of a connection] \"increase[s] with the number \
                of threads\", in both patterns (lock contention between threads on several cores)",
        rule: "needs the server's threads on several cores",
        judge: |rows| {
            let mut parts = Vec::new();
            let mut all = true;
            for p in [HS, LF] {
                let Some(l) = line(rows, p, "epoll", "rearm_ns_per_op") else {
                    return missing("re-activation on epoll in both patterns");
                };
                let Some((a, b)) = l.ends().filter(|(a, b)| a.x < b.x) else {
                    return Verdict::NotMeasurable(format!("{p}/epoll was measured at one thread count"));
                };
                all &= b.spread.median > 1.1 * a.spread.median;
                parts.push(format!(
                    "{p}: {} ns at {} threads, {} ns at {}",
                    num(a.spread.median),
                    a.x,
                    num(b.spread.median),
                    b.x
                ));
            }
            let grew = if all { "grew by more than 10%" } else { "did not grow by 10%" };
            one_core(format!("{}; on one core it {grew}", parts.join("; ")))
        },
    },
    Claim {
        place: "§7",
        words: "\"Although epoll is generally faster, connection reactivation is slower than the \
                corresponding select implementation\"",
        rule: "supported when epoll's re-activation launches are all above select's at every thread count \
               of both patterns (3 launches or more)",
        judge: |rows| {
            let med = |b: &str| {
                let v: Vec<f64> = [HS, LF]
                    .iter()
                    .filter_map(|p| line(rows, p, b, "rearm_ns_per_op"))
                    .flat_map(|l| l.points.into_iter().map(|p| p.spread.median))
                    .collect();
                data::Spread::of(&v).map(|s| s.median)
            };
            let (Some(s), Some(e)) = (med("select"), med("epoll")) else {
                return missing("re-activation on select or epoll");
            };
            let each: Vec<verdict::Verdict> = [HS, LF]
                .iter()
                .filter_map(|p| line(rows, p, "select", "rearm_ns_per_op").map(|l| (p, l)))
                .flat_map(|(p, l)| l.points.into_iter().map(move |pt| (p, pt.x)))
                .filter_map(|(p, x)| {
                    let f = |b: &str| fig_at(rows, p, b, "rearm_ns_per_op", x);
                    Some(verdict::Verdict::above(&f("epoll")?, &f("select")?))
                })
                .collect();
            judged(
                verdict::Verdict::all(&each),
                format!(
                    "re-activation, median over both patterns and all thread counts: {} ns on epoll, {} ns \
                     on select",
                    num(e),
                    num(s)
                ),
            )
        },
    },
    Claim {
        place: "§5.1 (Fig. 9)",
        words: "[Half-Sync/Half-Async on edge-triggered epoll:] \"For small numbers of threads the \
                asynchronous service spends its time waiting on new events\"; adding threads reduces that \
                time",
        rule: "supported when half-sync/epoll-et's launches of the time to get an event at the most \
               workers are all below its launches at the fewest (3 launches or more)",
        judge: |rows| {
            let Some(l) = line(rows, HS, "epoll-et", "wait_ns_per_event") else {
                return missing("half-sync's time to get an event on epoll-et");
            };
            let Some((a, b)) = l.ends().filter(|(a, b)| a.x < b.x) else {
                return Verdict::NotMeasurable("half-sync/epoll-et was measured at one thread count".into());
            };
            let f = |x: f64| fig_at(rows, HS, "epoll-et", "wait_ns_per_event", x);
            let (Some(fa), Some(fb)) = (f(a.x), f(b.x)) else {
                return missing("half-sync's time to get an event on epoll-et");
            };
            judged(
                verdict::Verdict::below(&fb, &fa),
                format!(
                    "time to get an event: {} ns with {} workers, {} ns with {}",
                    num(a.spread.median),
                    a.x,
                    num(b.spread.median),
                    b.x
                ),
            )
        },
    },
];

/// E6: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E6",
    title: "patterns x notification mechanisms x threads, 512 request/response connections",
    paper: "Strebelow & Prehofer, Figs. 6-13",
    claim: "Half-Sync/Half-Async on edge-triggered epoll peaks highest; it does better with select than \
         with level-triggered epoll, while Leader/Followers does better with epoll; select to \
         edge-triggered epoll gives up to 2x; a select call takes almost 80% longer; re-activation on \
         level-triggered epoll costs more than select's and grows with threads (each claim and its \
         verdict in E6's section).",
    needs: |lab| E6.needs(lab),
    plan: |lab| E6.plan(lab),
    analyse: |rows| E6.analyse(rows),
};

impl E6 {
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        lab.need(&["bench", "patterns"])
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        let (server, client) = (lab.cores.bench.to_string(), lab.cores.load.to_string());
        let full_threads = (1..=16).map(|t: usize| t.to_string()).collect::<Vec<_>>().join(",");
        let mut extra = vec!["--server-cpu", server.as_str(), "--client-cpu", client.as_str()];
        if lab.quick {
            // The paper's two patterns and three mechanisms at 1 and 2 threads: a few seconds.
            extra.extend([
                "--patterns",
                "leader-followers,half-sync",
                "--backends",
                "select,epoll,epoll-et",
                "--threads",
                "1,2",
            ]);
        } else {
            // The paper's 1 to 16 threads; the reactor as the one-thread reference; uring beside.
            extra.extend([
                "--patterns",
                "reactor,leader-followers,half-sync",
                "--backends",
                "select,epoll,epoll-et,uring",
                "--threads",
                full_threads.as_str(),
            ]);
        }
        let est = Duration::from_secs(lab.pick(200, 8, 8));
        // Three launches of the tool: a verdict needs 3 (verdict.rs).
        tool_points(lab, "E6", "patterns", &extra, lab.pick(3, 3, 1), est, |_, text| convert(text))
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        // Throughput: one panel per pattern, one line per mechanism (Figs. 6, 8, 11).
        let mut patterns: Vec<&str> = Vec::new();
        for r in rows {
            let Some((p, _)) = r.series.split_once('/') else { continue };
            if !patterns.contains(&p) {
                patterns.push(p);
            }
        }
        let mut panels: Vec<Panel> = patterns
            .iter()
            .map(|p| {
                let prefix = format!("{p}/");
                let sub: Vec<Row> = rows
                    .iter()
                    .filter_map(|r| {
                        Some(Row { series: r.series.strip_prefix(&prefix)?.to_string(), ..r.clone() })
                    })
                    .collect();
                let title = match *p {
                    HS => "Figs. 6, 8: half-sync throughput".to_string(),
                    LF => "Figs. 6, 11: leader-followers throughput".to_string(),
                    other => format!("throughput: {other}"),
                };
                panel(&sub, "throughput_rps", &title, THREADS, "replies per second", (false, false))
            })
            .collect();
        let (hs_et, lf_et, hs_lt, lf_lt, lf_sel) = (
            "half-sync/epoll-et",
            "leader-followers/epoll-et",
            "half-sync/epoll",
            "leader-followers/epoll",
            "leader-followers/select",
        );
        let split = |s| {
            [
                (s, "recv_ns_per_event", "receive"),
                (s, "rearm_ns_per_op", "re-activate"),
                (s, "send_ns_per_op", "send"),
            ]
        };
        panels.extend([
            fig(
                rows,
                "Fig. 7: scaling on epoll-et",
                "replies per second",
                &[(hs_et, "throughput_rps", HS), (lf_et, "throughput_rps", LF)],
            ),
            fig(
                rows,
                "Fig. 9: half-sync (epoll-et), per event",
                "ns",
                &[
                    (hs_et, "wait_ns_per_event", "get an event"),
                    (hs_et, "insert_ns_per_op", "insert into the queue"),
                ],
            ),
            fig(rows, "Fig. 10: half-sync (epoll), per event", "ns", &split(hs_lt)),
            fig(
                rows,
                "Fig. 12: leader-followers, get an event",
                "ns per event",
                &[(lf_sel, "wait_ns_per_event", "select"), (lf_et, "wait_ns_per_event", "epoll-et")],
            ),
            fig(rows, "Fig. 13: leader-followers (epoll), per event", "ns", &split(lf_lt)),
        ]);
        let verdicts: Vec<Verdict> = CLAIMS.iter().map(|c| (c.judge)(rows)).collect();
        let figures =
            CLAIMS.iter().zip(&verdicts).enumerate().map(|(i, (c, v))| claim_row(rows, i, c, v)).collect();
        let reading = CLAIMS
            .iter()
            .zip(&verdicts)
            .enumerate()
            .map(|(i, (c, v))| {
                format!("Claim {} ({}): {} — **{}**: {}.", i + 1, c.place, c.words, v.word(), v.numbers())
            })
            .collect();
        let count = |w: &str| verdicts.iter().filter(|v| v.word() == w).count();
        let (yes, no, cannot) = (count("supported"), count("not supported"), count("not measurable here"));
        let noise = count("within noise");
        let holds = match (yes, no) {
            (0, 0) if noise == 0 => format!("cannot say: none of the {} claims measurable here", verdicts.len()),
            (_, 0) => format!(
                "yes: {yes} claims supported, {noise} within noise, {cannot} not measurable here"
            ),
            (0, _) => format!("no: {no} claims not supported, {noise} within noise, {cannot} not measurable here"),
            _ => format!("partly: {yes} claims supported, {no} not, {noise} within noise, {cannot} not measurable here"),
        };
        let peaks: Vec<String> = [(HS, "epoll-et"), (LF, "epoll-et"), (HS, "select"), (LF, "select")]
            .iter()
            .filter_map(|&(p, b)| Some(format!("{p}/{b} {}", at(peak_tp(rows, p, b)?))))
            .collect();
        let ours = if peaks.is_empty() {
            "no throughput measured".into()
        } else {
            format!("peaks: {}", peaks.join("; "))
        };
        Analysis {
            panels,
            ours,
            holds,
            reading,
            metrics: vec![
                ("throughput_rps", "replies per second"),
                ("wait_ns_per_event", "ns in get_next_event per event"),
                ("insert_ns_per_op", "ns per queue insert"),
                ("recv_ns_per_event", "ns receiving per event"),
                ("rearm_ns_per_op", "ns per re-activation"),
                ("send_ns_per_op", "ns sending per reply"),
                ("server_us_per_reply", "server CPU µs per reply"),
            ],
            figures,
        }
    }
}

/// The report's row for claim `i` of [`CLAIMS`]: its verdict, and for the two claims that
/// print a number (the speed-up up to 2, select's call almost 80% longer) ours beside it.
fn claim_row(rows: &[Row], i: usize, c: &Claim, v: &Verdict) -> FigureRow {
    let (paper, ratio) = match i {
        4 => (
            Some(PaperNumber { words: "speed-ups up to 2 (abstract, §7)", value: 2.0 }),
            // The ratio only where the verdict had both figures (a point whose launches were
            // all disturbed has a median line but no launches to judge).
            largest_speedup(rows)
                .filter(|&(_, p, x)| {
                    ["epoll-et", "select"].iter().all(|b| fig_at(rows, p, b, "throughput_rps", x).is_some())
                })
                .map(|s| s.0),
        ),
        5 => (
            Some(PaperNumber { words: "almost 80% longer (§5.2)", value: 80.0 }),
            select_longer(rows).map(|(mean, _)| 100.0 * (mean - 1.0)),
        ),
        _ => (None, None),
    };
    let literal = match (i, ratio) {
        (4, Some(r)) => {
            format!("{} (rule: the largest speed-up at least 1.95, \"up to 2\")", yes_no(r >= 1.95))
        }
        (5, Some(r)) => format!("{} (rule: at least 75% longer, \"almost 80%\")", yes_no(r >= 75.0)),
        (4 | 5, None) => "cannot say: not measured".into(),
        _ => NO_NUMBER.into(),
    };
    FigureRow {
        inputs: Vec::new(),
        figure: format!("Strebelow {}", c.place),
        claim: c.words,
        paper,
        ours: v.numbers().into(),
        ratio: ratio.ok_or_else(|| "not measured".into()),
        holds: v.word().into(),
        rule: c.rule.into(),
        literal,
    }
}

fn yes_no(holds: bool) -> &'static str {
    if holds {
        "yes"
    } else {
        "no"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(series: &str, x: f64, metric: &str, v: f64) -> Row {
        Row::ok("E6", series, x, metric, v)
    }

    #[test]
    fn reads_patterns_rows_by_column_name_and_skips_empty_cells() {
        let csv = "# x: y\npattern,backend,threads,throughput,wait_ns_per_event,insert_ns_per_op,\
                   recv_ns_per_event,rearm_ns_per_op,send_ns_per_op,server_us_per_reply,spread\n\
                   leader-followers,epoll-et,2,120000.5,800.0,,900.0,,1500.0,7.5,256/256\n";
        let rows = convert(csv).unwrap();
        let got: Vec<(&str, &str, f64, f64)> =
            rows.iter().map(|r| (r.series.as_str(), r.metric.as_str(), r.x, r.value.unwrap())).collect();
        assert_eq!(
            got,
            [
                ("leader-followers/epoll-et", "throughput_rps", 2.0, 120000.5),
                ("leader-followers/epoll-et", "wait_ns_per_event", 2.0, 800.0),
                ("leader-followers/epoll-et", "recv_ns_per_event", 2.0, 900.0),
                ("leader-followers/epoll-et", "send_ns_per_op", 2.0, 1500.0),
                ("leader-followers/epoll-et", "server_us_per_reply", 2.0, 7.5),
            ]
        );
        assert!(convert("pattern,backend,threads,throughput\n").unwrap_err().contains("wait_ns_per_event"));
    }

    /// The paper's picture: half-sync on epoll-et peaks highest, select beats level-triggered
    /// epoll for half-sync, epoll-et beats select 2x for leader-followers.
    fn paper_like() -> Vec<Row> {
        let mut rows = Vec::new();
        for (series, tp1, tp2) in [
            ("half-sync/epoll-et", 100.0, 200.0),
            ("half-sync/select", 90.0, 150.0),
            ("half-sync/epoll", 80.0, 120.0),
            ("leader-followers/epoll-et", 100.0, 180.0),
            ("leader-followers/select", 60.0, 90.0),
            ("leader-followers/epoll", 70.0, 100.0),
        ] {
            rows.push(row(series, 1.0, "throughput_rps", tp1));
            rows.push(row(series, 2.0, "throughput_rps", tp2));
        }
        rows.extend([
            row("leader-followers/select", 1.0, "wait_ns_per_event", 1800.0),
            row("leader-followers/epoll-et", 1.0, "wait_ns_per_event", 1000.0),
            row("half-sync/epoll-et", 1.0, "wait_ns_per_event", 5000.0),
            row("half-sync/epoll-et", 2.0, "wait_ns_per_event", 3000.0),
            row("half-sync/epoll-et", 2.0, "insert_ns_per_op", 100.0),
            row("half-sync/epoll", 2.0, "recv_ns_per_event", 900.0),
            row("half-sync/epoll", 2.0, "send_ns_per_op", 1900.0),
        ]);
        for p in ["half-sync", "leader-followers"] {
            rows.push(row(&format!("{p}/epoll"), 1.0, "rearm_ns_per_op", 200.0));
            rows.push(row(&format!("{p}/epoll"), 2.0, "rearm_ns_per_op", 400.0));
            rows.push(row(&format!("{p}/select"), 1.0, "rearm_ns_per_op", 50.0));
        }
        // Three launches of each point, 1% apart.
        rows.into_iter()
            .flat_map(|r| {
                (0..3u32).map(move |rep| Row {
                    rep,
                    value: r.value.map(|v| v * [1.0, 1.01, 0.99][rep as usize]),
                    ..r.clone()
                })
            })
            .collect()
    }

    #[test]
    fn each_claim_is_judged_from_the_rows() {
        let rows = paper_like();
        let words: Vec<&str> = CLAIMS.iter().map(|c| (c.judge)(&rows).word()).collect();
        assert_eq!(
            words,
            [
                "supported",
                "not measurable here",
                "not measurable here",
                "supported",
                "supported",
                "supported",
                "not measurable here",
                "supported",
                "supported"
            ]
        );
        let first = (CLAIMS[0].judge)(&rows);
        assert!(first.numbers().contains("200 replies/s at 2 threads"), "{first:?}");
        assert!((CLAIMS[4].judge)(&rows).numbers().contains("2.00x"));
        assert!((CLAIMS[5].judge)(&rows).numbers().contains("80.0% longer"));

        // Leader/Followers ahead on epoll-et, level-triggered epoll ahead of select for
        // half-sync: claims 1 and 3 turn.
        let mut turned = rows.clone();
        for r in &mut turned {
            match (r.series.as_str(), r.metric.as_str()) {
                ("leader-followers/epoll-et", "throughput_rps") => r.value = Some(500.0),
                ("half-sync/epoll", "throughput_rps") => r.value = Some(160.0),
                _ => {}
            }
        }
        assert_eq!((CLAIMS[0].judge)(&turned).word(), "not supported");
        // Claim 3 is about the pipeline's stages on separate cores: one core cannot judge it.
        let third = (CLAIMS[2].judge)(&turned);
        assert_eq!(third.word(), "not measurable here");
        assert!(third.numbers().starts_with("not measurable with one server core"), "{}", third.numbers());

        // Launches that overlap: leader-followers' epoll-et peak within noise of its select peak.
        let mut close = rows.clone();
        for r in close.iter_mut().filter(|r| r.metric == "throughput_rps" && r.x == 2.0) {
            match r.series.as_str() {
                "leader-followers/epoll-et" => r.value = Some([100.0, 110.0, 120.0][r.rep as usize]),
                "leader-followers/select" => r.value = Some([105.0, 115.0, 125.0][r.rep as usize]),
                _ => {}
            }
        }
        assert_eq!((CLAIMS[3].judge)(&close).word(), "within noise");
        // One launch: cannot say.
        let one: Vec<Row> = rows.iter().filter(|r| r.rep == 0).cloned().collect();
        assert!((CLAIMS[0].judge)(&one).numbers().starts_with("fewer than 3 launches"));

        // Nothing of half-sync measured: its claims cannot be judged.
        let lf: Vec<Row> = rows.into_iter().filter(|r| r.series.starts_with("leader")).collect();
        assert_eq!((CLAIMS[0].judge)(&lf).word(), "not measurable here");
        assert_eq!((CLAIMS[2].judge)(&lf).word(), "not measurable here");
    }

    #[test]
    fn panels_show_the_papers_figures_and_the_verdicts_are_counted() {
        let mut rows = paper_like();
        rows.push(Row { status: Status::Failed, value: None, ..row("hintq bench patterns", 0.0, "", 0.0) });
        let a = E6.analyse(&rows);
        let titles: Vec<&str> = a.panels.iter().map(|p| p.title.as_str()).collect();
        assert_eq!(
            titles,
            [
                "Figs. 6, 8: half-sync throughput",
                "Figs. 6, 11: leader-followers throughput",
                "Fig. 7: scaling on epoll-et",
                "Fig. 9: half-sync (epoll-et), per event",
                "Fig. 10: half-sync (epoll), per event",
                "Fig. 12: leader-followers, get an event",
                "Fig. 13: leader-followers (epoll), per event",
            ]
        );
        let names = |i: usize| a.panels[i].lines.iter().map(|l| l.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(0), ["epoll-et", "select", "epoll"]);
        assert_eq!(names(3), ["get an event", "insert into the queue"]);
        assert_eq!(names(4), ["receive", "re-activate", "send"]);
        assert_eq!(names(5), ["select", "epoll-et"]);
        assert_eq!(a.holds, "yes: 6 claims supported, 0 within noise, 3 not measurable here");
        assert_eq!(a.reading.len(), CLAIMS.len());
        assert!(a.reading[0].starts_with("Claim 1 (§5, Figs. 6-7): \"In the best case"), "{}", a.reading[0]);
    }
}
