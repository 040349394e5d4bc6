//! Strebelow & Prehofer's claims as data (where each is made, its words, the rule it is
//! judged by) and their judges over E6's rows (`hintq bench patterns`): one row of the
//! report's first table per claim.

use super::{FigureRow, PaperNumber, NO_NUMBER};
use crate::data::{self, num, Line, Row};
use crate::verdict::{self, Figure, Verdict as V};

pub(super) const HS: &str = "half-sync";
pub(super) const LF: &str = "leader-followers";
pub(super) const TP: &str = "throughput_rps";
pub(super) const WAIT: &str = "wait_ns_per_event";
pub(super) const REARM: &str = "rearm_ns_per_op";
pub(super) const NM: &str = "not measurable here";

/// The line of `pattern/backend` for `metric`.
pub(super) fn line(rows: &[Row], pattern: &str, backend: &str, metric: &str) -> Option<Line> {
    let name = format!("{pattern}/{backend}");
    data::lines(rows, metric).into_iter().find(|l| l.name == name)
}

/// Peak throughput of `pattern/backend` by its medians: (threads, value).
pub(super) fn peak_tp(rows: &[Row], pattern: &str, backend: &str) -> Option<(f64, f64)> {
    let l = line(rows, pattern, backend, TP)?;
    l.points.iter().map(|p| (p.x, p.spread.median)).max_by(|a, b| a.1.total_cmp(&b.1))
}

pub(super) fn at(p: (f64, f64)) -> String {
    format!("{} replies/s at {} threads", num(p.1), p.0)
}

/// The launches of `pattern/backend`'s `metric` at `x` threads.
fn fig_at(rows: &[Row], pattern: &str, backend: &str, metric: &str, x: f64) -> Option<Figure> {
    verdict::launches(rows, &format!("{pattern}/{backend}"), x, metric)
}

/// The peak of `pattern/backend`'s throughput (by its medians): its threads and launches.
fn peak_fig(rows: &[Row], pattern: &str, backend: &str) -> Option<(f64, Figure)> {
    let (x, _) = peak_tp(rows, pattern, backend)?;
    Some((x, fig_at(rows, pattern, backend, TP, x)?))
}

/// "9000 replies/s at 2 threads (8900–9100, n=3)": the median first, as [`at`] says it.
fn at_fig((x, f): &(f64, Figure)) -> String {
    format!("{} ({}–{}, n={})", at((*x, f.median())), num(f.min()), num(f.max()), f.n())
}

/// Whether `a`'s launches of `metric` are above `b`'s at every thread count both were
/// measured at, in each of `patterns`.
fn above_everywhere(rows: &[Row], patterns: &[&str], a: &str, b: &str, metric: &str) -> V {
    let each: Vec<V> = patterns
        .iter()
        .filter_map(|&p| Some((p, line(rows, p, a, metric)?, line(rows, p, b, metric)?)))
        .flat_map(|(p, la, lb)| {
            la.points.into_iter().filter(move |pt| lb.median(pt.x).is_some()).map(move |pt| (p, pt.x))
        })
        .map(|(p, x)| match (fig_at(rows, p, a, metric, x), fig_at(rows, p, b, metric, x)) {
            (Some(fa), Some(fb)) => V::above(&fa, &fb),
            _ => V::CannotSay(format!("{p} at {x} threads: fewer than 3 undisturbed launches of both")),
        })
        .collect();
    V::all(&each)
}

/// The largest speed-up of edge-triggered epoll's throughput over select's at a common thread
/// count, in either pattern: (speed-up, pattern, threads).
fn largest_speedup(rows: &[Row]) -> Option<(f64, &'static str, f64)> {
    let mut best: Option<(f64, &'static str, f64)> = None;
    for p in [HS, LF] {
        let (Some(s), Some(et)) = (line(rows, p, "select", TP), line(rows, p, "epoll-et", TP)) else {
            continue;
        };
        for pt in &s.points {
            let Some(r) = et.median(pt.x).map(|e| e / pt.spread.median) else { continue };
            if best.is_none_or(|b| r > b.0) {
                best = Some((r, p, pt.x));
            }
        }
    }
    best
}

/// Leader/Followers: how much longer select's time to get an event is than edge-triggered
/// epoll's, as the ratio of the medians of their undisturbed launches averaged over the common
/// thread counts where both have [`verdict::MIN_LAUNCHES`] of them: (mean ratio, counts).
fn select_longer(rows: &[Row]) -> Option<(f64, usize)> {
    let s = line(rows, LF, "select", WAIT)?;
    let enough = |b: &str, x: f64| fig_at(rows, LF, b, WAIT, x).filter(|f| f.n() >= verdict::MIN_LAUNCHES);
    let ratios: Vec<f64> = s
        .points
        .iter()
        .filter_map(|p| Some(enough("select", p.x)?.median() / enough("epoll-et", p.x)?.median()))
        .collect();
    (!ratios.is_empty()).then(|| (ratios.iter().sum::<f64>() / ratios.len() as f64, ratios.len()))
}

/// Why [`select_longer`] has no value.
const FEW_WAIT: &str =
    "fewer than 3 undisturbed launches of select and epoll-et at every common thread count";

/// The verdict on one claim: its word and the numbers it rests on.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// `supported`, `not supported`, `within noise` or `not measurable here`.
    pub word: &'static str,
    /// The numbers, or why the rows cannot tell.
    pub numbers: String,
}

/// A claim's verdict from [`verdict::Verdict`], with the numbers it rests on.
fn judged(v: V, numbers: String) -> Verdict {
    let (word, numbers) = match v {
        V::Yes => ("supported", numbers),
        V::No => ("not supported", numbers),
        V::WithinNoise => ("within noise", numbers),
        V::CannotSay(why) => (NM, format!("{why}: {numbers}")),
    };
    Verdict { word, numbers }
}

/// A claim about threads on several cores (lock contention, pipeline stages on separate
/// cores), which a run that pins every server thread to one core cannot judge: its numbers
/// are given all the same.
fn one_core(numbers: String) -> Verdict {
    let numbers = format!(
        "not measurable with one server core (every server thread is pinned to one core here; the \
         paper's ran on 32): {numbers}"
    );
    Verdict { word: NM, numbers }
}

fn missing(what: &str) -> Verdict {
    Verdict { word: NM, numbers: format!("{what} was not measured") }
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
            let (name, other) = others
                .iter()
                .filter_map(|&(p, b)| Some((format!("{p}/{b}"), peak_fig(rows, p, b)?)))
                .max_by(|a, b| a.1 .1.median().total_cmp(&b.1 .1.median()))
                .unwrap_or_else(|| ("leader-followers/epoll-et".into(), lf.clone()));
            let numbers = format!(
                "half-sync/epoll-et peaks at {}, leader-followers/epoll-et at {}; best of the other \
                 variants: {name}, {}",
                at_fig(&hs),
                at_fig(&lf),
                at_fig(&other)
            );
            judged(V::above(&hs.1, &other.1), numbers)
        },
    },
    Claim {
        place: "§5 (Fig. 7), §7",
        words: "\"The Leader/Followers pattern has lower peak performance but does not degrade as strongly \
                as Half-Sync/Half-Async if too many cores are used\"",
        rule: "needs the server's threads on more cores than the peak uses",
        judge: |rows| {
            let drop = |p: &str| {
                let (x, top) = peak_tp(rows, p, "epoll-et")?;
                let last = *line(rows, p, "epoll-et", TP)?.points.last()?;
                Some((num(100.0 * (top - last.spread.median) / top), x, last.x))
            };
            let (Some((h, hx, hl)), Some((l, lx, ll))) = (drop(HS), drop(LF)) else {
                return missing("half-sync or leader-followers on epoll-et");
            };
            one_core(format!(
                "from its peak to the most threads measured, half-sync/epoll-et loses {h}% ({hx} to {hl} \
                 threads), leader-followers/epoll-et {l}% ({lx} to {ll})"
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
            one_core(format!("half-sync peaks at {} on select, {} on level-triggered epoll", at(s), at(lt)))
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
            let (s_at, et_at) = (at_fig(&s), at_fig(&et));
            let numbers =
                format!("leader-followers peaks at {s_at} on select, {et_at} on epoll-et, {lt} on level-triggered epoll");
            judged(V::above(&et.1, &s.1), numbers)
        },
    },
    Claim {
        place: "abstract, §7",
        words: "\"We observed speed-ups up to 2 just by switching from select to edge-triggered epoll\"",
        rule: "supported when, where the speed-up of the medians is largest, epoll-et's launches are all \
               above select's (3 launches or more; the literal verdict asks for 2)",
        judge: |rows| {
            let both = largest_speedup(rows)
                .and_then(|(r, p, x)| Some((r, p, x, fig_at(rows, p, "epoll-et", TP, x)?, fig_at(rows, p, "select", TP, x)?)));
            let Some((r, p, x, et, s)) = both else {
                return missing("select and epoll-et at a common thread count");
            };
            let compared = verdict::compare(("epoll-et", &et), ("select", &s));
            judged(V::above(&et, &s), format!("largest speed-up {}x ({p}, {x} threads: {compared})", num(r)))
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
            let (Some(s), Some(et)) = (line(rows, LF, "select", WAIT), line(rows, LF, "epoll-et", WAIT)) else {
                return missing("leader-followers' time to get an event on select and epoll-et");
            };
            if !s.points.iter().any(|p| et.at(p.x).is_some()) {
                return missing("leader-followers' time to get an event at a thread count common to both");
            }
            let numbers = match select_longer(rows) {
                Some((mean, n)) => {
                    let longer = 100.0 * (mean - 1.0);
                    format!(
                        "select's time per event is {}% {} than epoll-et's on average over {n} thread counts \
                         (time in get_next_event per event, blocking included)",
                        num(longer.abs()),
                        if longer < 0.0 { "shorter" } else { "longer" }
                    )
                }
                None => FEW_WAIT.into(),
            };
            judged(above_everywhere(rows, &[LF], "select", "epoll-et", WAIT), numbers)
        },
    },
    Claim {
        place: "§5.1 (Fig. 10), §5.2 (Fig. 13)",
        words: "[on level-triggered epoll the re-activation of a connection] \"increase[s] with the number \
                of threads\", in both patterns (lock contention between threads on several cores)",
        rule: "needs the server's threads on several cores",
        judge: |rows| {
            let mut parts = Vec::new();
            for p in [HS, LF] {
                let Some(l) = line(rows, p, "epoll", REARM) else {
                    return missing("re-activation on epoll in both patterns");
                };
                let Some((a, b)) = l.ends().filter(|(a, b)| a.x < b.x) else {
                    return Verdict { word: NM, numbers: format!("{p}/epoll was measured at one thread count") };
                };
                let (am, bm) = (a.spread.median, b.spread.median);
                let grew = if bm > 1.1 * am { "grew" } else { "did not grow by 10%" };
                parts.push(format!("{p}: {} ns at {} threads, {} ns at {} ({grew})", num(am), a.x, num(bm), b.x));
            }
            one_core(format!("{} (medians, on one core)", parts.join("; ")))
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
                let lines = [HS, LF].into_iter().filter_map(|p| line(rows, p, b, REARM));
                let v: Vec<f64> = lines.flat_map(|l| l.points.into_iter().map(|p| p.spread.median)).collect();
                data::Spread::of(&v).map(|s| num(s.median))
            };
            let (Some(s), Some(e)) = (med("select"), med("epoll")) else {
                return missing("re-activation on select or epoll");
            };
            let numbers = format!(
                "re-activation, median over both patterns and all thread counts: {e} ns on epoll, {s} ns on select"
            );
            judged(above_everywhere(rows, &[HS, LF], "epoll", "select", REARM), numbers)
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
            let Some(l) = line(rows, HS, "epoll-et", WAIT) else {
                return missing("half-sync's time to get an event on epoll-et");
            };
            let Some((a, b)) = l.ends().filter(|(a, b)| a.x < b.x) else {
                let numbers = "half-sync/epoll-et was measured at one thread count".into();
                return Verdict { word: NM, numbers };
            };
            let f = |x: f64| fig_at(rows, HS, "epoll-et", WAIT, x);
            let (Some(fa), Some(fb)) = (f(a.x), f(b.x)) else {
                return missing("half-sync's time to get an event on epoll-et");
            };
            let (am, bm) = (num(a.spread.median), num(b.spread.median));
            let numbers = format!("time to get an event: {am} ns with {} workers, {bm} ns with {}", a.x, b.x);
            judged(V::below(&fb, &fa), numbers)
        },
    },
];

/// The report's row for claim `i` of [`CLAIMS`]: its verdict, and for the two claims that
/// print a number (the speed-up up to 2, select's call almost 80% longer) ours beside it.
pub(super) fn claim_row(rows: &[Row], i: usize, c: &Claim, v: &Verdict) -> FigureRow {
    let (paper, ratio, rule, bound, why) = match i {
        4 => (
            Some(PaperNumber { words: "speed-ups up to 2 (abstract, §7)", value: 2.0 }),
            // The ratio only where the verdict had both figures (a point whose launches were
            // all disturbed has a median line but no launches to judge).
            largest_speedup(rows)
                .filter(|&(_, p, x)| {
                    ["epoll-et", "select"].iter().all(|b| fig_at(rows, p, b, TP, x).is_some())
                })
                .map(|s| s.0),
            "the largest speed-up at least 1.95, \"up to 2\"",
            1.95,
            "not measured",
        ),
        5 => (
            Some(PaperNumber { words: "almost 80% longer (§5.2)", value: 80.0 }),
            select_longer(rows).map(|(mean, _)| 100.0 * (mean - 1.0)),
            "at least 75% longer, \"almost 80%\", by the medians of 3 undisturbed launches or more",
            75.0,
            FEW_WAIT,
        ),
        _ => (None, None, "", 0.0, ""),
    };
    let literal = match (&paper, ratio) {
        (Some(_), Some(r)) => format!("{} (rule: {rule})", if r >= bound { "yes" } else { "no" }),
        (Some(_), None) => format!("cannot say: {why}"),
        (None, _) => NO_NUMBER.into(),
    };
    FigureRow {
        inputs: Vec::new(),
        figure: format!("Strebelow {}", c.place),
        claim: c.words,
        paper,
        ours: v.numbers.clone(),
        ratio: ratio.ok_or_else(|| why.into()),
        holds: v.word.into(),
        rule: c.rule.into(),
        literal,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::data::Status;
    use crate::exp::check::{contains, starts};

    pub(crate) fn row(series: &str, x: f64, metric: &str, v: f64) -> Row {
        Row::ok("E6", series, x, metric, v)
    }

    /// The paper's picture: half-sync on epoll-et peaks highest, select beats level-triggered
    /// epoll for half-sync, epoll-et beats select 2x for leader-followers.
    pub(crate) fn paper_like() -> Vec<Row> {
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
        let words: Vec<&str> = CLAIMS.iter().map(|c| (c.judge)(&rows).word).collect();
        let (yes, nm) = ("supported", "not measurable here");
        assert_eq!(words, [yes, nm, nm, yes, yes, yes, nm, yes, yes]);
        let first = (CLAIMS[0].judge)(&rows);
        assert!(first.numbers.contains("200 replies/s at 2 threads"), "{first:?}");
        assert!((CLAIMS[4].judge)(&rows).numbers.contains("2.00x"));
        assert!((CLAIMS[5].judge)(&rows).numbers.contains("80.0% longer"));

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
        assert_eq!((CLAIMS[0].judge)(&turned).word, "not supported");
        // Claim 3 is about the pipeline's stages on separate cores: one core cannot judge it.
        let third = (CLAIMS[2].judge)(&turned);
        assert_eq!(third.word, "not measurable here");
        starts(&third.numbers, "not measurable with one server core");

        // Launches that overlap: leader-followers' epoll-et peak within noise of its select peak.
        let mut close = rows.clone();
        for r in close.iter_mut().filter(|r| r.metric == "throughput_rps" && r.x == 2.0) {
            match r.series.as_str() {
                "leader-followers/epoll-et" => r.value = Some([100.0, 110.0, 120.0][r.rep as usize]),
                "leader-followers/select" => r.value = Some([105.0, 115.0, 125.0][r.rep as usize]),
                _ => {}
            }
        }
        assert_eq!((CLAIMS[3].judge)(&close).word, "within noise");
        // One launch: cannot say.
        let one: Vec<Row> = rows.iter().filter(|r| r.rep == 0).cloned().collect();
        assert!((CLAIMS[0].judge)(&one).numbers.starts_with("fewer than 3 launches"));

        // Nothing of half-sync measured: its claims cannot be judged.
        let lf: Vec<Row> = rows.into_iter().filter(|r| r.series.starts_with("leader")).collect();
        assert_eq!((CLAIMS[0].judge)(&lf).word, "not measurable here");
        assert_eq!((CLAIMS[2].judge)(&lf).word, "not measurable here");
    }

    #[test]
    fn fig12_s_literal_verdict_reads_undisturbed_launches_only() {
        let mut rows = paper_like();
        // Two disturbed launches of select, far slower: they must not move the mean ratio.
        rows.extend((3..5).map(|rep| Row {
            rep,
            status: Status::Disturbed,
            ..row("leader-followers/select", 1.0, WAIT, 10000.0)
        }));
        let (c, v) = (&CLAIMS[5], (CLAIMS[5].judge)(&rows));
        let r = claim_row(&rows, 5, c, &v);
        contains(&v.numbers, "80.0% longer");
        assert!((r.ratio.clone().unwrap() - 80.0).abs() < 1e-9, "{:?}", r.ratio);
        starts(&r.literal, "yes (rule: at least 75% longer");
        // Two undisturbed launches left of select: the literal verdict cannot say.
        rows.retain(|r| !(r.series == "leader-followers/select" && r.metric == WAIT && r.rep == 0));
        let v = (CLAIMS[5].judge)(&rows);
        let r = claim_row(&rows, 5, &CLAIMS[5], &v);
        assert_eq!(r.literal, format!("cannot say: {FEW_WAIT}"));
        assert_eq!(r.ratio, Err(FEW_WAIT.to_string()));
    }
}
