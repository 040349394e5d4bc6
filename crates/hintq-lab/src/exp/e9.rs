//! E9, libevent's `test/bench.c` method: µs per run (1 active pair, 1000 writes passed round
//! a ring of N socket pairs) against N, for hintq on every backend, mio, and libevent, libev
//! and libuv where their -dev packages are installed.
//!
//! Why every loop but libev's slows down from 100 to 9,000 pairs ([`GROWTH`]): not per-event
//! work in the loop (hintq's timed loop makes the same system calls and, by callgrind, the
//! same user-space instructions per event at every pair count) but the memory the kernel
//! touches.

use super::e3::growth;
use super::{panel, Analysis, Experiment, FigureRow, Lab, UNMEASURED};
use crate::data::{num, Row, Status};
use crate::peers::{self, C_PEERS};
use crate::runner::{Cmd, Point};
use hintq::Backend;
use std::time::Duration;

/// E9.
pub struct E9;

const METRIC: &str = "us_per_run";

/// The cause of the growth with pairs, for the report (measured for issue 11: `strace -c`
/// and callgrind of the timed loop at 100 and 9,000 pairs).
const GROWTH: &str = "Growth with pairs: per event the timed loop makes the same system calls \
    (recv, send and epoll_wait; on hintq-uring recv and send only, completions are reaped from \
    the ring) and the same user-space instructions at every pair count. What grows is the \
    kernel memory touched: from 1000 pairs on, the 1000 writes of a run visit 1000 distinct \
    pairs' sockets, files and watches (at 100 pairs, the same 100 ten times), and the untimed \
    re-registration of all N watchers before each run (epoll_ctl DEL and ADD, or an io_uring \
    poll cancel and arm, per pair) walks every pair's kernel state and evicts the first \
    pairs' from the caches. libev's ev_io_stop/ev_io_start with an unchanged mask make no \
    system call, so its re-registration touches no kernel memory; hintq revokes in the kernel \
    at once, so that a revoked descriptor closed while a dup lives on is not left in the set.";

/// The most socket pairs whose descriptors all stay below FD_SETSIZE (libevent's select).
const SELECT_PAIRS: usize = (libc::FD_SETSIZE - 64) / 2;

/// One line of the plot: how to run it.
struct Series {
    name: String,
    program: std::path::PathBuf,
    /// Arguments before the method's own.
    args: Vec<String>,
    /// State-based: cost grows with the pairs (for the estimate only).
    scans: bool,
    /// The largest pair count it can take (libevent's select: descriptors below FD_SETSIZE).
    max_pairs: usize,
}

fn series(lab: &Lab) -> Vec<Series> {
    let exe = lab.exe.clone();
    let mut out = Vec::new();
    let backends: Vec<Backend> = if lab.smoke { vec![Backend::Epoll] } else { Backend::ALL.to_vec() };
    for b in backends {
        if b == Backend::Gooch {
            // Measured: 50 s for 5 runs of 1000 writes at 1000 pairs, then killed.
            lab.missing.borrow_mut().push(
                "E9: hintq-gooch left out: the method passes each write to a pair idle since the last run, which \
                 the gooch policy only polls every 10 ms (about 10 s per run of 1000 writes); E7 measures gooch"
                    .into(),
            );
            continue;
        }
        if b == Backend::SelectClassic {
            lab.missing.borrow_mut().push(
                "E9: hintq-select-classic left out: the method compares loops with libevent's, libev's and \
                 libuv's, whose select is the improved kind (hintq-select); E1, E2 and E5 measure the classical one"
                    .into(),
            );
            continue;
        }
        if let Err(why) = b.probe() {
            lab.missing.borrow_mut().push(format!("E9: hintq-{} not run: {why}", b.name()));
            continue;
        }
        out.push(Series {
            name: format!("hintq-{}", b.name()),
            program: exe.clone(),
            args: vec![
                "lab".into(),
                "peer-bench".into(),
                "--lib".into(),
                "hintq".into(),
                "--backend".into(),
                b.name().into(),
            ],
            scans: matches!(b, Backend::Poll | Backend::Select),
            // hintq's select sizes its sets at run time: no FD_SETSIZE limit.
            max_pairs: usize::MAX,
        });
    }
    out.push(Series {
        name: "mio".into(),
        program: exe,
        args: vec!["lab".into(), "peer-bench".into(), "--lib".into(), "mio".into()],
        scans: false,
        max_pairs: usize::MAX,
    });
    let bin = lab.raw("E9").join("bin");
    for p in &C_PEERS {
        match peers::build_c(p, &bin) {
            Ok((path, version)) => {
                lab.peers.borrow_mut().push((p.name.into(), version));
                let methods = if lab.smoke { &p.methods[..1] } else { p.methods };
                for m in methods {
                    out.push(Series {
                        name: format!("{}-{m}", p.name),
                        program: path.clone(),
                        args: vec!["-m".into(), m.to_string()],
                        scans: *m != "epoll",
                        // Debian builds libevent with _FORTIFY_SOURCE: its FD_SET aborts the
                        // program at descriptors >= FD_SETSIZE (seen: SIGABRT at 1000 pairs).
                        max_pairs: if p.name == "libevent" && *m == "select" {
                            SELECT_PAIRS
                        } else {
                            usize::MAX
                        },
                    });
                }
            }
            Err(why) => lab.missing.borrow_mut().push(format!("E9: {why}")),
        }
    }
    out
}

impl Experiment for E9 {
    fn id(&self) -> &'static str {
        "E9"
    }
    fn title(&self) -> &'static str {
        "libevent bench.c method: time per run vs socket pairs, ours vs libevent, libev, libuv, mio"
    }
    fn paper(&self) -> &'static str {
        "libevent test/bench.c; Kerrisk 2006"
    }
    fn claim(&self) -> &'static str {
        "With 1 active pair, epoll-based loops take the same time whatever the number of idle \
         pairs, while poll and select grow with it (PERF.md anchor: epoll 932-1258 µs, poll \
         4943 µs at 100 pairs to 1653500 µs at 9000)."
    }
    fn needs(&self, _: &Lab) -> Result<(), String> {
        Ok(())
    }
    fn plan(&self, lab: &Lab) -> Vec<Point> {
        let soft = match hintq_sys::nofile() {
            Ok((soft, _)) => soft, // raised to the hard limit by `run_lab`
            Err(e) => {
                lab.missing.borrow_mut().push(format!("E9: not run, RLIMIT_NOFILE unknown: {e}"));
                return Vec::new();
            }
        };
        let pairs: Vec<usize> = lab.pick(vec![100, 1000, 5000, 9000], vec![100, 1000, 5000], vec![100]);
        let writes = lab.pick(1000, 1000, 100);
        let runs = lab.pick(15, 3, 2);
        let mut points = Vec::new();
        for s in series(lab) {
            for &n in &pairs {
                if 2 * n as u64 + 64 > soft {
                    lab.missing
                        .borrow_mut()
                        .push(format!("E9: {} pairs need more descriptors than RLIMIT_NOFILE {soft}", n));
                    continue;
                }
                if n > s.max_pairs {
                    lab.missing.borrow_mut().push(format!(
                        "E9: {} not run at {n} pairs: its select(2) cannot watch descriptors at or above FD_SETSIZE ({})",
                        s.name,
                        libc::FD_SETSIZE
                    ));
                    continue;
                }
                let mut args: Vec<String> = s.args.clone();
                args.extend(
                    ["-n", &n.to_string(), "-a", "1", "-w", &writes.to_string(), "-r", &runs.to_string()]
                        .map(String::from),
                );
                let per_run_us =
                    (writes + 1) as f64 * (1.0 + if s.scans { n as f64 * 0.3 } else { 0.0 }) + n as f64;
                let estimate = Duration::from_secs_f64(runs as f64 * per_run_us / 1e6 + 0.5);
                let (name, x) = (s.name.clone(), n as f64);
                points.push(Point {
                    experiment: "E9",
                    series: s.name.clone(),
                    x,
                    name: format!("{}-n{n}", s.name),
                    server: None,
                    cmd: Cmd { program: s.program.clone(), args, cpu: lab.cores.bench },
                    timeout: estimate * 10 + Duration::from_secs(30),
                    estimate,
                    parse: Box::new(move |ran| parse(&ran.stdout, &name, x)),
                });
            }
        }
        points
    }
    fn analyse(&self, rows: &[Row]) -> Analysis {
        let p = panel(
            rows,
            METRIC,
            "1 active, writes passed round N pairs",
            "socket pairs",
            "µs per run",
            (true, true),
        );
        let mut reading = Vec::new();
        for l in &p.lines {
            if let Some((x0, m0, x1, m1, g)) = growth(l) {
                reading.push(format!(
                    "{}: {} µs at {x0} pairs, {} µs at {x1} ({}x).",
                    l.name,
                    num(m0),
                    num(m1),
                    num(g)
                ));
            }
        }
        reading.push(GROWTH.into());
        let get = |name: &str| p.lines.iter().find(|l| l.name == name).and_then(growth);
        let flat = get("hintq-epoll");
        let scan = get("hintq-poll").or_else(|| get("libevent-poll"));
        let (ours, holds) = match (flat, scan) {
            (Some(f), Some(s)) => {
                let mut ours = format!(
                    "hintq-epoll {} µs at {} pairs, {} at {} ({}x); poll {}x",
                    num(f.1),
                    f.0,
                    num(f.3),
                    f.2,
                    num(f.4),
                    num(s.4)
                );
                if let Some(le) = get("libevent-epoll").filter(|le| le.2 == f.2) {
                    ours.push_str(&format!("; libevent-epoll {} µs at {} pairs", num(le.3), le.2));
                }
                let holds = match (f.4 < 1.5, s.4 > 5.0) {
                    (true, true) => "yes",
                    (false, false) => "no",
                    _ => "partly",
                };
                (ours, holds.to_string())
            }
            (Some(f), None) => (
                format!(
                    "hintq-epoll {} µs at {} pairs, {} at {} (poll not measured)",
                    num(f.1),
                    f.0,
                    num(f.3),
                    f.2
                ),
                "partly measured: epoll only".into(),
            ),
            _ => ("hintq-epoll not measured at two pair counts".into(), UNMEASURED.into()),
        };
        let figures = vec![FigureRow {
            figure: "libevent test/bench.c".into(),
            claim: "With 1 active pair, epoll-based loops take the same time whatever the number of idle \
                    pairs, while poll and select grow with it.",
            paper: None,
            ours: ours.clone(),
            ratio: Err("libevent publishes no number".into()),
            holds: holds.clone(),
        }];
        Analysis { panels: vec![p], ours, holds, reading, metrics: vec![(METRIC, "µs per run")], figures }
    }
}

/// One row per line of µs the benchmark printed.
fn parse(stdout: &str, series: &str, x: f64) -> Result<Vec<Row>, String> {
    let rows: Vec<Row> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(rep, l)| {
            let v: f64 = l.trim().parse().map_err(|_| format!("not a number of µs: {l:?}"))?;
            Ok(Row {
                experiment: "E9".into(),
                series: series.into(),
                x,
                rep: rep as u32,
                metric: METRIC.into(),
                value: Some(v),
                status: Status::Ok,
                note: String::new(),
            })
        })
        .collect::<Result<_, String>>()?;
    if rows.is_empty() {
        return Err("the benchmark printed no run".into());
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_one_row_per_run_and_refuses_garbage() {
        let rows = super::parse("932.5\n1195.0\n", "libevent-epoll", 100.0).unwrap();
        assert_eq!(
            rows.iter().map(|r| (r.rep, r.value.unwrap())).collect::<Vec<_>>(),
            [(0, 932.5), (1, 1195.0)]
        );
        assert!(super::parse("", "x", 1.0).is_err());
        assert!(super::parse("12\nXcount\n", "x", 1.0).is_err());
    }
}
