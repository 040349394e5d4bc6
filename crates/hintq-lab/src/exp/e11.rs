//! E11, Banga et al. §7 on their own vehicle: a non-caching proxy (`hintq proxy`, or nginx as
//! a proxy) on the measured core relaying a 1 KB file from `hintq serve` on the other core,
//! with cold connections held to the proxy. Fig. 8 (throughput of 32 hot connections against
//! cold ones), Fig. 9 (latency against offered rate at 750 cold, and at 5000 in the full run)
//! and Table 2 (share of the proxy's CPU in event notification at 750 cold, 50 hot,
//! 400 req/s, and at saturation, with E5's `perf` profile). E1, E2 and E5 measure the same on
//! the static server.
//!
//! Figs. 6 and 7 inside the proxy: the proxy runs with `--array-max N --stats stats.json`
//! under a saturating closed loop (32 hot connections) with cold connections held, and
//! writes its runtime's counters when it exits. Fig. 6 is the µs per `get_next_event` call
//! against `array_max` at 750 cold, counting only the calls that found events without
//! blocking (`--stats` makes every wait try a zero-timeout call first: Banga's proxy "never
//! blocks"); Fig. 7 the µs per declare that adds a descriptor to the interest set (an
//! accepted connection, an upstream socket) and per revoke, against cold connections. The
//! counters cover the whole run (the load's warm-up, its cold connects, the drain), not a
//! window. E3 and E4 measure the same calls in a loop, outside any server.

use super::banga::{self, Fig9Level as Level, Setting};
use super::e3::{growth, Growth};
use super::e5::{perf_ok, profile_share, profiled, Mechanism};
use super::serve::{self, servers, LOAD_CPU, REQUESTS, THROUGHPUT};
use super::{panel, Analysis, Experiment, Lab};
use crate::data::{num, Row};
use crate::runner::{Point, Ran};
use std::time::Duration;

/// The latency bound that defines the rate a proxy sustains (as in E2).
const P99_BOUND_MS: f64 = 10.0;

/// Banga's count.
const PAPER: Level = Level {
    cold: 750,
    p50: "fig9_p50_ms_750",
    p99: "fig9_p99_ms_750",
    max: "fig9_max_ms_750",
    achieved: "fig9_rps_750",
    errors: "fig9_errors_750",
};
/// A count that stresses this machine (the full run only).
const SCALED: Level = Level {
    cold: 5000,
    p50: "fig9_p50_ms_5k",
    p99: "fig9_p99_ms_5k",
    max: "fig9_max_ms_5k",
    achieved: "fig9_rps_5k",
    errors: "fig9_errors_5k",
};

/// Table 2's loads: Banga's 400 req/s, and as fast as the proxy answers.
const T2_400: &str = "table2_event_cpu_pct_400rps";
const T2_SAT: &str = "table2_event_cpu_pct_saturated";

/// What every point of E11 shares.
pub(super) struct Setup<'a> {
    pub(super) lab: &'a Lab,
    pub(super) series: &'a str,
    pub(super) secs: f64,
}

impl Setup<'_> {
    /// One point: the proxy (profiled or not) and its upstream, and `hintq load` against it.
    /// `read` turns its load report into rows (errors already there); each row gets `x`, `rep`
    /// and the proxy's configuration as its note.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn point(
        &self,
        name: String,
        x: f64,
        rep: u32,
        (hot, cold, rate): (usize, usize, Option<f64>),
        (profile, extra): (bool, &[String]),
        read: impl Fn(&Ran, &serde_json::Value) -> Result<Vec<Row>, String> + 'static,
    ) -> Option<Point> {
        let (port, up) = (serve::port(), serve::port());
        let (mut server, mut conf) = serve::proxy(self.lab, self.series, port, up).ok()?;
        if !extra.is_empty() {
            server.cmd.args.extend(extra.iter().cloned());
            conf = format!("{conf}; proxy flags {}", extra.join(" "));
        }
        let server = if profile { profiled(server) } else { server };
        let secs = self.secs;
        Some(Point {
            experiment: "E11",
            series: self.series.into(),
            x,
            name: format!("{}-{name}", self.series),
            server: Some(server),
            cmd: serve::load(self.lab, port, "1k.html", hot, cold, rate, secs),
            timeout: Duration::from_secs_f64(secs + 60.0),
            estimate: Duration::from_secs_f64(
                secs + 1.5 + cold as f64 / 5000.0 + if profile { 2.0 } else { 0.0 },
            ),
            parse: Box::new(move |ran| {
                let json = serve::load_json(ran)?;
                let mut rows = read(ran, &json)?;
                for r in rows.iter_mut() {
                    // The point's x, unless the reader set one (Figs. 6 and 7).
                    r.x = if r.x.is_nan() { x } else { r.x };
                    (r.rep, r.note) = (rep, conf.clone());
                }
                Ok(rows)
            }),
        })
    }
}

/// A row of `metric` (x, rep and note are set by [`Setup::point`]).
pub(super) fn row(series: &str, metric: &str, v: f64) -> Row {
    Row::ok("E11", series, f64::NAN, metric, v)
}

/// The load report's numbers at `wanted` and its errors, renamed `errors`; the load
/// generator's busiest thread keeps [`serve::LOAD_BUSY`] in Fig. 8's points (`errors` left as
/// it is), and is told apart by `errors` in the others, whose x is a rate or another count.
pub(super) fn read(
    series: &str,
    json: &serde_json::Value,
    wanted: &[(&str, &str, f64)],
    errors: &str,
) -> Result<Vec<Row>, String> {
    let mut rows = serve::rows("E11", series, f64::NAN, json, wanted)?;
    for r in rows.iter_mut() {
        if r.metric == "errors" {
            r.metric = errors.into();
        } else if r.metric == serve::LOAD_BUSY && errors != "errors" {
            r.metric = format!("{}_{errors}", serve::LOAD_BUSY);
        }
    }
    Ok(rows)
}

/// E11: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E11",
    title: "the proxy Banga et al. measured: throughput vs cold connections, latency vs rate, CPU profile",
    paper: "Banga et al. §7: Figs. 8, 9 and Table 2",
    claim: "On a non-caching proxy, select's throughput falls as cold connections grow while the \
         event API's stays flat; at 750 cold the event API answers faster and saturates later; \
         at 750 cold, 50 hot, 400 req/s select takes 34% of the CPU, the event API under 1%.",
    needs: |lab| lab.need(&["proxy"]).and(lab.need(&["serve"])).and(lab.need(&["load"])),
    plan,
    analyse,
};

fn plan(lab: &Lab) -> Vec<Point> {
    let backends = lab.pick(
        &["uring", "epoll", "poll", "select", "select-classic", "rtsig"][..],
        &["epoll", "poll"][..],
        &["epoll"][..],
    );
    // Banga's 0 to 2000 cold and 5000 (3 launches each: the full run's time).
    let colds: Vec<usize> = lab.pick(vec![0, 1000, 2000, 5000], vec![0, 2000], vec![0]);
    let rates: Vec<f64> = lab.pick(vec![2000.0, 8000.0, 16000.0], vec![8000.0], vec![500.0]);
    // Fig. 9 at Banga's 750 cold; 5000 cold (SCALED) left out for the full run's time.
    let levels: Vec<&'static Level> = lab.pick(vec![&PAPER], vec![&PAPER], vec![&PAPER]);
    let t2_colds: Vec<usize> = lab.pick(vec![750], vec![750], vec![100]);
    // Table 2 at Banga's 400 req/s, 3 profiles a line (the saturated profile, drawn in
    // earlier runs, judged nothing and is left out for the full run's time; the smoke run
    // still tries its path).
    let t2_loads = lab.pick(
        &[(T2_400, Some(400.0))][..],
        &[(T2_400, Some(400.0))][..],
        &[(T2_400, Some(400.0)), (T2_SAT, None)][..],
    );
    // Three launches of Fig. 8's and Table 2's points, the quick run's too: a verdict needs
    // 3 (verdict.rs). Fig. 9's sweep runs 3 times for the lines it judges at 750 cold and
    // once for the others, to keep the full lab within the hour.
    let (reps, secs) = (lab.pick(3, 3, 1), lab.pick(3.0, 1.0, 0.5));
    let profile = match perf_ok() {
        Ok(()) => true,
        Err(why) => {
            lab.missing.borrow_mut().push(format!("E11 Table 2: {why}"));
            false
        }
    };
    let mut points = super::proxy_stats::points(lab, reps);
    for s in servers(lab, backends) {
        let set = Setup { lab, series: &s, secs };
        for &cold in &colds {
            for rep in 0..reps {
                let name = s.clone();
                points.extend(set.point(
                    format!("fig8-cold{cold}-rep{rep}"),
                    cold as f64,
                    rep,
                    (32, cold, None),
                    (false, &[]),
                    move |ran, json| {
                        let wanted =
                            [("throughput_rps", THROUGHPUT, 1.0), ("load_cpu_us_per_request", LOAD_CPU, 1.0)];
                        let mut rows = read(&name, json, &wanted, "errors")?;
                        let requests = serve::at(json, REQUESTS).ok_or("load.json has no /hot/successes")?;
                        if let (Some(cpu), true) = (ran.server_cpu, requests > 0.0) {
                            rows.push(row(&name, "proxy_cpu_us_per_request", cpu * 1e6 / requests));
                        }
                        Ok(rows)
                    },
                ));
            }
        }
        // Fig. 9: the event API against improved select, as Banga drew it, and the other
        // proxies but rtsig and classical select (Fig. 8 and Table 2 have them).
        let fig9 = s != "hintq-rtsig" && s != "hintq-select-classic";
        // The two lines Banga compared get 3 launches at his 750 cold: the verdict's.
        let judged = s == "hintq-epoll" || s == "hintq-select";
        for &level in levels.iter().filter(|_| fig9) {
            let launches = if judged && level.cold == PAPER.cold { reps } else { 1 };
            for (&rate, rep) in rates.iter().flat_map(|r| (0..launches).map(move |k| (r, k))) {
                let name = s.clone();
                points.extend(set.point(
                    format!("fig9-cold{}-rate{rate}-rep{rep}", level.cold),
                    rate,
                    rep,
                    (32, level.cold, Some(rate)),
                    (false, &[]),
                    move |_, json| {
                        let wanted = [
                            (level.p50, "/latency_us/p50", 1e-3),
                            (level.p99, "/latency_us/p99", 1e-3),
                            (level.max, "/latency_us/max", 1e-3),
                            (level.achieved, THROUGHPUT, 1.0),
                        ];
                        read(&name, json, &wanted, level.errors)
                    },
                ));
            }
        }
        // Fig. 9's saturation: the event API and improved select driven as fast as the proxy
        // answers (Banga's S-Clients) at 750 cold, where both are in the run (the full run).
        let both = backends.contains(&"epoll") && backends.contains(&"select");
        if both && (s == "hintq-epoll" || s == "hintq-select") {
            for rep in 0..reps {
                let name = s.clone();
                let wanted = [(banga::FIG9_SATURATION, THROUGHPUT, 1.0)];
                points.extend(set.point(
                    format!("fig9-saturation-cold750-rep{rep}"),
                    banga::PAPER_COLD,
                    rep,
                    (32, banga::PAPER_COLD as usize, None),
                    (false, &[]),
                    move |_, json| read(&name, json, &wanted, "fig9_saturation_errors"),
                ));
            }
        }
        let mechanism = Mechanism::of_series(&s);
        for &cold in t2_colds.iter().filter(|_| profile) {
            let Some(mechanism) = mechanism else { break };
            for (&(metric, rate), rep) in t2_loads.iter().flat_map(|l| (0..reps).map(move |k| (l, k))) {
                let name = s.clone();
                let load = if rate.is_some() { "400rps" } else { "saturated" };
                points.extend(set.point(
                    format!("table2-cold{cold}-{load}-rep{rep}"),
                    cold as f64,
                    rep,
                    (50, cold, rate),
                    (true, &[]),
                    move |ran, json| {
                        let mut rows = read(&name, json, &[], &format!("{metric}_errors"))?;
                        let window = super::e5::hot_window(ran, json)?;
                        let (share, samples) = profile_share(&ran.dir, mechanism, window)?;
                        rows.push(row(&name, metric, share));
                        rows.push(row(&name, &super::table2::samples_of(metric), samples as f64));
                        Ok(rows)
                    },
                ));
            }
        }
    }
    points
}

pub(super) fn analyse(rows: &[Row]) -> Analysis {
    const COLD: &str = "cold connections to the proxy";
    const RATE: &str = "offered rate (requests per second)";
    const SHARE: (&str, &str) = ("cold connections", "% of proxy CPU samples");
    let linear = |metric, title, x, y| panel(rows, metric, title, x, y, (false, false));
    let fig8 = linear(
        "throughput_rps",
        "(a) Fig. 8: proxy throughput, 32 hot connections, 1 KB file",
        COLD,
        "requests per second",
    );
    let cpu_y = "µs CPU per request";
    let cpu =
        panel(rows, "proxy_cpu_us_per_request", "(b) proxy CPU per request", COLD, cpu_y, (false, true));
    let p99 = |metric, title| panel(rows, metric, title, RATE, "ms from intended send", (true, true));
    let fig9 = p99(PAPER.p99, "(c) Fig. 9: p99 response time, 750 cold");
    let fig9s = p99(SCALED.p99, "(d) p99 response time, 5000 cold");
    let t2 = linear(T2_400, "(e) Table 2: 50 hot, 400 req/s", SHARE.0, SHARE.1);
    let t2s = linear(T2_SAT, "(f) the same, saturated (closed loop)", SHARE.0, SHARE.1);
    let mut reading = Vec::new();
    let throughput_growth = |n: &str| fig8.lines.iter().find(|l| l.name == n).and_then(growth);
    reading.extend(super::cold_growth(&fig8.lines, |n| format!("Fig. 8, {n}")));
    if let (Some(n), Some(h)) = (throughput_growth("nginx"), throughput_growth("hintq-epoll")) {
        let (first, last) = (num(h.1 / n.1), num(h.3 / n.3));
        reading.push(format!(
            "hintq proxy (epoll) against nginx as a proxy: {first}x nginx's throughput with {} cold, {last}x \
             with {}.",
            h.0, h.2
        ));
    }
    for (level, p) in [(&PAPER, &fig9), (&SCALED, &fig9s)] {
        for l in &p.lines {
            reading.push(format!(
                "Fig. 9, {}, {} cold: p99 under {P99_BOUND_MS} ms {}.",
                l.name,
                level.cold,
                super::rates_under(l, P99_BOUND_MS)
            ));
        }
    }
    for (what, p) in [("400 req/s", &t2), ("saturated", &t2s)] {
        for l in &p.lines {
            for pt in &l.points {
                let (name, x, share) = (&l.name, pt.x, num(pt.spread.median));
                reading.push(format!(
                    "Table 2, {name}, {what}, {x} cold: {share}% of the proxy core's time (flat, idle included) \
                     in event notification."
                ));
            }
        }
    }
    // Table 2 by E5's rule; the event API's row speaks for the section's verdict.
    let table2 = super::table2::table2(Setting::Proxy, rows, T2_400);
    reading.push(format!("{}.", super::table2::TABLE2_RULE));
    reading.extend(table2.figures.iter().map(|f| format!("{}: {}.", f.figure, f.holds)));
    reading.extend(what_was_measured(rows));
    let ours = figures(throughput_growth("hintq-epoll"), throughput_growth("hintq-poll"), &table2.ours);
    let holds = "see the first table's rows".to_string();
    let (stats_panels, stats_figures) = super::proxy_stats::analyse(rows, &mut reading);
    let mut figures = stats_figures;
    figures.extend([
        banga::fig8(Setting::Proxy, rows, "throughput_rps", &fig8.lines),
        banga::fig9(Setting::Proxy, rows, PAPER.achieved, PAPER.p99),
    ]);
    figures.extend(table2.figures);
    Analysis {
        // A panel this run measured nothing for is left out and named in the title (from_csv).
        panels: [vec![fig8, cpu, fig9, fig9s, t2, t2s], stats_panels].concat(),
        ours,
        holds,
        reading,
        metrics: vec![
            ("throughput_rps", "Fig. 8 requests per second"),
            ("errors", "Fig. 8 errors"),
            ("proxy_cpu_us_per_request", "proxy µs CPU per request"),
            ("load_cpu_us_per_request", "load generator µs CPU per request"),
            (serve::LOAD_BUSY, "Fig. 8 load generator's busiest hot thread, % of the hot phase"),
            (banga::FIG9_SATURATION, "Fig. 9 saturation req/s (driven as fast as it answers), 750 cold"),
            (PAPER.p50, "Fig. 9 p50 ms, 750 cold"),
            (PAPER.p99, "Fig. 9 p99 ms, 750 cold"),
            (PAPER.max, "Fig. 9 max ms, 750 cold"),
            (PAPER.achieved, "Fig. 9 achieved req/s, 750 cold"),
            (PAPER.errors, "Fig. 9 errors, 750 cold"),
            (SCALED.p50, "Fig. 9 p50 ms, 5000 cold"),
            (SCALED.p99, "Fig. 9 p99 ms, 5000 cold"),
            (SCALED.max, "Fig. 9 max ms, 5000 cold"),
            (SCALED.achieved, "Fig. 9 achieved req/s, 5000 cold"),
            (SCALED.errors, "Fig. 9 errors, 5000 cold"),
            (T2_400, "Table 2 % CPU in event notification, 400 req/s"),
            (T2_SAT, "Table 2 % CPU in event notification, saturated"),
        ]
        .into_iter()
        .chain(super::proxy_stats::METRICS)
        .collect(),
        figures,
    }
}

/// What E11 measured of Banga's select lines, which its plan leaves out or bounds.
fn what_was_measured(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    let has = |series: &str| rows.iter().any(|r| r.series == series);
    if !has("hintq-select-classic") {
        out.push(
            "Classical select was not measured on the proxy in this run (a quick run leaves it out; \
             E1, E2 and E5 measure it on the static server)."
                .into(),
        );
    }
    for (series, name) in [("hintq-select", "Improved select"), ("hintq-select-classic", "Classical select")]
    {
        let lines = crate::data::lines(rows, "throughput_rps");
        let fig8: Vec<String> = lines
            .iter()
            .filter(|l| l.name == series)
            .flat_map(|l| l.points.iter().map(|p| p.x.to_string()))
            .collect();
        if !fig8.is_empty() {
            out.push(format!(
                "{name} ran the proxy at {} cold connections (Fig. 8): the select backend sizes its sets \
                 at run time, so descriptors above FD_SETSIZE (1024) are watched too.",
                fig8.join(", ")
            ));
        }
    }
    out
}

/// Our figures for the section: the proxy's throughput kept from the first cold count to the
/// last, and the CPU shares of Table 2. Its verdicts are the first table's rows'.
fn figures(epoll: Option<Growth>, poll: Option<Growth>, shares: &str) -> String {
    let (Some(e), Some(p)) = (epoll, poll) else {
        return format!("the epoll or poll proxy was not measured at two cold counts; CPU in event notification at 400 req/s, {shares}");
    };
    format!(
        "proxy throughput: epoll keeps {}% at {} cold, poll {}% (medians); CPU in event notification at 400 req/s, {shares}",
        num(e.4 * 100.0),
        e.2,
        num(p.4 * 100.0)
    )
}

#[cfg(test)]
mod tests {
    use super::{analyse, PAPER, T2_400, T2_SAT};
    use crate::data::Row;
    use crate::exp::check::{contains, starts};

    fn row(series: &str, metric: &str, x: f64, v: f64) -> Row {
        Row::ok("E11", series, x, metric, v)
    }

    #[test]
    fn the_section_gives_fig8_and_table2_figures_and_leaves_verdicts_to_the_rows() {
        let rows = vec![
            row("hintq-epoll", "throughput_rps", 0.0, 20000.0),
            row("hintq-epoll", "throughput_rps", 5000.0, 19000.0),
            row("hintq-poll", "throughput_rps", 0.0, 20000.0),
            row("hintq-poll", "throughput_rps", 5000.0, 4000.0),
            row("hintq-epoll", T2_400, 750.0, 2.0),
            row("hintq-poll", T2_400, 750.0, 30.0),
            row("hintq-epoll", PAPER.p99, 2000.0, 1.0),
            row("hintq-epoll", PAPER.p99, 8000.0, 50.0),
        ];
        let a = analyse(&rows);
        assert_eq!(a.holds, "see the first table's rows");
        contains(&a.ours, "epoll keeps 95.0% at 5000 cold, poll 20.0%");
        contains(
            &a.ours,
            "CPU in event notification at 400 req/s, at 750 cold: epoll 2.00% (n=1), poll 30.0% (n=1)",
        );
        // Classical select did not run: the section says so.
        assert!(a.reading.iter().any(|r| r.starts_with("Classical select was not measured on the proxy")));
        let mut both = rows.clone();
        both.push(row("hintq-select-classic", "throughput_rps", 2000.0, 900.0));
        let b = analyse(&both);
        assert!(!b.reading.iter().any(|r| r.starts_with("Classical select was not measured")));
        let ran = "Classical select ran the proxy at 2000 cold connections";
        assert!(b.reading.iter().any(|r| r.starts_with(ran)));
        assert!(a.reading.iter().any(
            |r| r == "Fig. 9, hintq-epoll, 750 cold: p99 under 10 ms at 2000 req/s offered, not at 8000."
        ));
    }

    #[test]
    fn table2_rows_take_the_750_cold_400_rps_shares_and_fig8_the_2000_cold_throughput() {
        let rows = vec![
            row("hintq-epoll", T2_400, 5000.0, 9.0),
            row("hintq-epoll", T2_400, 750.0, 2.0),
            row("hintq-epoll", T2_SAT, 750.0, 5.0),
            row("hintq-select", T2_400, 750.0, 24.0),
            row("hintq-poll", T2_400, 750.0, 30.0),
            row("hintq-epoll", "throughput_rps", 0.0, 20000.0),
            row("hintq-epoll", "throughput_rps", 2000.0, 19200.0),
            row("hintq-poll", "throughput_rps", 0.0, 20000.0),
            row("hintq-poll", "throughput_rps", 2000.0, 16000.0),
        ];
        let a = analyse(&rows);
        let fig = |name: &str| a.figures.iter().find(|f| f.figure == name).unwrap();
        let event = fig("Banga Table 2 (proxy): event API");
        assert_eq!(event.ours, "2.00% (n=1) (epoll, 750 cold)");
        assert_eq!(event.ratio, Ok(2.0));
        // One profile a point (E11 profiles each point once): no verdict either way.
        assert_eq!(
            event.holds,
            "cannot say: fewer than 3 launches (epoll 2.00 (n=1) against a third of improved select's share of 24.0% 8.00 \
             (n=1): too few launches (3 needed))"
        );
        let improved = fig("Banga Table 2 (proxy): improved select");
        assert_eq!(
            (improved.ours.as_str(), improved.ratio.clone()),
            ("24.0% (n=1) (improved select, 750 cold)", Ok(24.0))
        );
        // The same rule as the server's: without classical select, it cannot be said.
        starts(&improved.holds, "cannot say: classical select at 750 cold not measured");
        let classical = fig("Banga Table 2 (proxy): classical select");
        assert!(classical.ratio.is_err() && classical.ours == "classical select not measured at 750 cold");
        assert_eq!(
            classical.holds,
            "cannot say: classical select not measured at 750 cold (see its section)"
        );
        // Fig. 8: 19200 ÷ 16000 at 2000 cold, but poll only stands in for select: no ratio.
        let f8 = fig("Banga Fig. 8 (proxy)");
        starts(&f8.ours, "1.20 (epoll 19200 ÷ poll 16000 req/s at 2000 cold); ");
        starts(&f8.holds, "cannot say: fewer than 3 launches");
        assert!(f8.ratio.is_err());
    }
}
