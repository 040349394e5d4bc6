//! E6, Strebelow & Prehofer Figs. 6-13: Half-Sync/Half-Async and Leader/Followers (and the
//! single-threaded reactor as a reference) x `select`, level-triggered and edge-triggered
//! `epoll` (and `uring`) x threads, 512 request/response connections, read from `hintq bench
//! patterns`.
//!
//! The figure has the paper's quantities: throughput per pattern (Figs. 6, 8, 11), the two
//! patterns on edge-triggered epoll (Fig. 7), Half-Sync's time to get an event and to queue it
//! (Fig. 9), the processing time of one event split into receive, re-activate and send on
//! level-triggered epoll (Figs. 10 and 13), Leader/Followers' time to get an event on select
//! and edge-triggered epoll (Fig. 12). Each of the paper's claims gets its own verdict,
//! computed from the rows. The claims about threads on several cores are "not measurable with
//! one server core": `hintq bench patterns` pins every server thread to one core.

use super::micro::tool_points;
use super::strebelow::{at, claim_row, peak_tp, Verdict, CLAIMS, HS, LF, NM, REARM, TP, WAIT};
use super::{panel, Analysis, Experiment, Lab};
use crate::data::Row;
use crate::plot::Panel;
use crate::runner::Point;
use std::time::Duration;

const THREADS: &str = "threads (half-sync: workers beside its asynchronous thread)";

/// The lines of a panel: (series, metric, line name).
type Parts<'a> = &'a [(&'a str, &'a str, &'a str)];

/// A panel of the paper's from its `parts`.
fn fig(rows: &[Row], title: &str, y: &str, parts: Parts) -> Panel {
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
    needs: |lab| lab.need(&["bench", "patterns"]),
    plan,
    analyse,
};

fn plan(lab: &Lab) -> Vec<Point> {
    let (server, client) = (lab.cores.bench.to_string(), lab.cores.load.to_string());
    // Quick: the paper's two patterns and three mechanisms at 1 and 2 threads, a few
    // seconds; else the paper's 1 to 16 threads at eight counts (all sixteen took 8.8 of
    // the full run's 62.7 minutes on 2026-11-28, over its hour), the reactor as the one-thread reference,
    // uring beside.
    let (patterns, backends, threads) = if lab.quick {
        ("leader-followers,half-sync", "select,epoll,epoll-et", "1,2")
    } else {
        ("reactor,leader-followers,half-sync", "select,epoll,epoll-et,uring", "1,2,3,4,6,8,12,16")
    };
    let extra = ["--server-cpu", server.as_str(), "--client-cpu", client.as_str(), "--patterns", patterns];
    let extra = [&extra[..], &["--backends", backends, "--threads", threads]].concat();
    let est = Duration::from_secs(lab.pick(95, 8, 8));
    // Three launches of the tool: a verdict needs 3 (verdict.rs).
    tool_points(lab, "E6", "patterns", &extra, lab.pick(3, 3, 1), est)
}

fn analyse(rows: &[Row]) -> Analysis {
    // Throughput: one panel per pattern, one line per mechanism (Figs. 6, 8, 11).
    let (mut patterns, mut series): (Vec<&str>, Vec<(&str, &str)>) = (Vec::new(), Vec::new());
    for (r, s) in rows.iter().filter_map(|r| Some((r, r.series.split_once('/')?))) {
        if !patterns.contains(&s.0) {
            patterns.push(s.0);
        }
        if r.metric == TP && !series.contains(&s) {
            series.push(s);
        }
    }
    let mut panels: Vec<Panel> = patterns
        .iter()
        .map(|&p| {
            let title = match p {
                HS => "Figs. 6, 8: half-sync throughput".to_string(),
                LF => "Figs. 6, 11: leader-followers throughput".to_string(),
                other => format!("throughput: {other}"),
            };
            let names: Vec<(String, &str)> =
                series.iter().filter(|s| s.0 == p).map(|&(_, b)| (format!("{p}/{b}"), b)).collect();
            let parts: Vec<(&str, &str, &str)> = names.iter().map(|(s, b)| (s.as_str(), TP, *b)).collect();
            fig(rows, &title, "replies per second", &parts)
        })
        .collect();
    let (hs_et, lf_et) = ("half-sync/epoll-et", "leader-followers/epoll-et");
    let split =
        |s| [(s, "recv_ns_per_event", "receive"), (s, REARM, "re-activate"), (s, "send_ns_per_op", "send")];
    let figs: [(&str, &str, Parts); 5] = [
        ("Fig. 7: scaling on epoll-et", "replies per second", &[(hs_et, TP, HS), (lf_et, TP, LF)]),
        (
            "Fig. 9: half-sync (epoll-et), per event",
            "ns",
            &[(hs_et, WAIT, "get an event"), (hs_et, "insert_ns_per_op", "insert into the queue")],
        ),
        ("Fig. 10: half-sync (epoll), per event", "ns", &split("half-sync/epoll")),
        (
            "Fig. 12: leader-followers, get an event",
            "ns per event",
            &[("leader-followers/select", WAIT, "select"), (lf_et, WAIT, "epoll-et")],
        ),
        ("Fig. 13: leader-followers (epoll), per event", "ns", &split("leader-followers/epoll")),
    ];
    panels.extend(figs.iter().map(|(title, y, parts)| fig(rows, title, y, parts)));
    let verdicts: Vec<Verdict> = CLAIMS.iter().map(|c| (c.judge)(rows)).collect();
    let claims = CLAIMS.iter().zip(&verdicts).enumerate();
    let figures = claims.clone().map(|(i, (c, v))| claim_row(rows, i, c, v)).collect();
    let reading = claims
        .map(|(i, (c, v))| {
            format!("Claim {} ({}): {} — **{}**: {}.", i + 1, c.place, c.words, v.word, v.numbers)
        })
        .collect();
    let count = |w: &str| verdicts.iter().filter(|v| v.word == w).count();
    let (yes, no, noise) = (count("supported"), count("not supported"), count("within noise"));
    let rest = format!("{noise} within noise, {} not measurable here", count(NM));
    let holds = match (yes, no) {
        (0, 0) if noise == 0 => {
            format!("cannot say: none of the {} claims measurable here", verdicts.len())
        }
        (_, 0) => format!("yes: {yes} claims supported, {rest}"),
        (0, _) => format!("no: {no} claims not supported, {rest}"),
        _ => format!("partly: {yes} claims supported, {no} not, {rest}"),
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
            (TP, "replies per second"),
            (WAIT, "ns in get_next_event per event"),
            ("insert_ns_per_op", "ns per queue insert"),
            ("recv_ns_per_event", "ns receiving per event"),
            (REARM, "ns per re-activation"),
            ("send_ns_per_op", "ns sending per reply"),
            ("server_us_per_reply", "server CPU µs per reply"),
        ],
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Status;
    use crate::exp::check::starts;
    use crate::exp::strebelow::tests::{paper_like, row};

    #[test]
    fn panels_show_the_papers_figures_and_the_verdicts_are_counted() {
        let mut rows = paper_like();
        rows.push(Row { status: Status::Failed, value: None, ..row("hintq bench patterns", 0.0, "", 0.0) });
        let a = analyse(&rows);
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
        starts(&a.reading[0], "Claim 1 (§5, Figs. 6-7): \"In the best case");
    }
}
