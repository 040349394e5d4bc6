//! E5, Banga Table 2: the share of the server's CPU spent in event-notification functions
//! (select/poll/epoll/io_uring in the kernel, get_next_event/declare_interest in hintq) at a
//! fixed load with many cold connections, sampled with `perf record` (software clock).

use super::e1::servers;
use super::serve::{self};
use super::{panel, Analysis, Experiment, Lab, UNMEASURED};
use crate::data::{num, Row, Status};
use crate::runner::{Cmd, Point, Server};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// E5.
pub struct E5;

/// Symbols counted as event notification.
const EVENT_SYMBOLS: &[&str] = &[
    "select",
    "poll",
    "epoll",
    "io_uring",
    "get_next_event",
    "declare_interest",
    "fget",
    "fdget",
    "fput",
    "sock_poll",
    "tcp_poll",
    "unix_poll",
    "pollwake",
    "ep_",
    "sys_ppoll",
    "rt_sig",
    "sigtimedwait",
];

/// `Err("needs perf ...")` unless `perf` runs.
pub fn perf_ok() -> Result<(), String> {
    match Command::new("perf").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => Err("needs `perf` (apt-get install -y linux-perf)".into()),
    }
}

/// The share (%) of samples in event-notification symbols, from `perf report --stdio`.
pub fn event_share(report: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut seen = false;
    for line in report.lines().filter(|l| !l.trim_start().starts_with('#')) {
        let mut f = line.split_whitespace();
        let Some(pct) = f.next().and_then(|p| p.strip_suffix('%')).and_then(|p| p.parse::<f64>().ok()) else {
            continue;
        };
        seen = true;
        // `[k] name  -  -`: the symbol (which may hold spaces) follows the `[k]`/`[.]` column.
        let symbol = line.split_once("] ").map_or("", |(_, rest)| rest.trim_end_matches([' ', '-']));
        if EVENT_SYMBOLS.iter().any(|s| symbol.contains(s)) {
            total += pct;
        }
    }
    seen.then_some(total)
}

/// `server` run under `perf record` (software clock, 999 Hz), writing `perf.data` into the
/// point's directory; E5's and E11's profiles.
pub fn profiled(mut server: Server) -> Server {
    let mut args: Vec<String> =
        ["record", "-F", "999", "-o", "perf.data", "--"].into_iter().map(String::from).collect();
    args.push(server.cmd.program.to_string_lossy().into());
    args.extend(server.cmd.args.clone());
    server.cmd = Cmd { program: "perf".into(), args, cpu: server.cmd.cpu };
    server
}

/// The [`event_share`] of the `perf.data` a [`profiled`] server left in `dir` (its report is
/// kept there as `perf-report.txt`).
pub fn profile_share(dir: &Path) -> Result<f64, String> {
    let out = Command::new("perf")
        .args(["report", "-i", "perf.data", "--stdio", "--no-children", "--sort", "symbol"])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("perf report: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::write(dir.join("perf-report.txt"), text.as_bytes());
    event_share(&text).ok_or_else(|| "perf report gave no samples".into())
}

impl Experiment for E5 {
    fn id(&self) -> &'static str {
        "E5"
    }
    fn title(&self) -> &'static str {
        "share of server CPU in event notification, fixed load, many cold connections"
    }
    fn paper(&self) -> &'static str {
        "Banga et al. Table 2"
    }
    fn claim(&self) -> &'static str {
        "Classical select took 34% of the server's CPU (750 cold, 50 hot, 400 req/s); the event \
         API took under 1%."
    }
    fn needs(&self, lab: &Lab) -> Result<(), String> {
        lab.need(&["serve"]).and(lab.need(&["load"])).and(perf_ok())
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        let colds: Vec<usize> = lab.pick(vec![750, 5000], vec![5000], vec![100]);
        let backends =
            lab.pick(&["uring", "epoll", "poll", "select"][..], &["epoll", "poll"][..], &["epoll"][..]);
        let secs = lab.pick(4.0, 2.0, 0.5);
        let mut points = Vec::new();
        for s in servers(lab, backends) {
            for &cold in &colds {
                if s == "hintq-select" && cold > 900 {
                    continue;
                }
                let port = serve::port();
                let Ok(server) = serve::server(lab, &s, port) else { continue };
                let name = s.clone();
                points.push(Point {
                    experiment: "E5",
                    series: s.clone(),
                    x: cold as f64,
                    name: format!("{s}-cold{cold}"),
                    server: Some(profiled(server)),
                    cmd: serve::load(lab, port, "1k.html", 50, cold, Some(400.0), secs),
                    timeout: Duration::from_secs_f64(secs + 60.0),
                    estimate: Duration::from_secs_f64(secs + 3.0),
                    parse: Box::new(move |ran| {
                        let share = profile_share(&ran.dir)?;
                        Ok(vec![Row {
                            experiment: "E5".into(),
                            series: name.clone(),
                            x: cold as f64,
                            rep: 0,
                            metric: "event_cpu_pct".into(),
                            value: Some(share),
                            status: Status::Ok,
                            note: String::new(),
                        }])
                    }),
                });
            }
        }
        points
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        let p = panel(
            rows,
            "event_cpu_pct",
            "400 req/s, 50 hot",
            "cold connections",
            "% of server CPU samples",
            (false, false),
        );
        let top = |n: &str| {
            p.lines
                .iter()
                .find(|l| l.name == n)
                .and_then(|l| l.points.last())
                .map(|pt| (pt.x, pt.spread.median))
        };
        let reading = p
            .lines
            .iter()
            .filter_map(|l| {
                l.points.last().map(|pt| format!("{}: {}% at {} cold.", l.name, num(pt.spread.median), pt.x))
            })
            .collect();
        let (ours, holds) = match (top("hintq-epoll"), top("hintq-poll")) {
            (Some(e), Some(s)) => (
                format!("epoll {}%, poll {}% of server CPU at {} cold", num(e.1), num(s.1), e.0),
                if e.1 < s.1 / 3.0 { "yes" } else { "no" }.into(),
            ),
            _ => ("epoll or poll not measured".into(), UNMEASURED.into()),
        };
        Analysis {
            panels: vec![p],
            ours,
            holds,
            reading,
            metrics: vec![("event_cpu_pct", "% CPU in event notification")],
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sums_event_symbols_of_a_perf_report() {
        // As perf 6 prints it here: trailing columns after the symbol.
        let report = "# Overhead  Symbol\n    30.00%  [k] do_sys_poll      -      -\n    10.50%  [k] tcp_sendmsg  -  -\n\
                      4.00%  [.] <hintq::backend::poll::Poll as hintq::Backend>::get_next_event  -  -\n\
                      1.50%  [k] fdget  -  -\n";
        assert_eq!(super::event_share(report), Some(35.5));
        assert_eq!(super::event_share("# nothing\n"), None);
    }
}
