//! Experiments read from `hintq bench` tools (E3 and E4 from `micro`, E7 from `gooch`, E8
//! from `rtsig`): one process per repetition (`--reps 1`), pinned to the measured core; the
//! runner runs each command once, so E3 and E4 both read the same `micro` CSV.

use super::Lab;
use crate::data::{Row, Status};
use crate::runner::Point;
use hintq_bench::report::{self as micro, Experiment as Fig};
use std::time::Duration;

/// The points of `exp`: one `hintq bench micro --reps 1` per repetition, read by `figs`.
pub fn points(lab: &Lab, exp: &'static str, figs: &'static [Fig]) -> Vec<Point> {
    let cpu = lab.cores.bench.to_string();
    let mut extra = vec!["--cpu", cpu.as_str()];
    if lab.smoke {
        extra.extend(["--backends", "epoll"]);
    }
    let est = Duration::from_secs(lab.pick(40, 6, 2));
    tool_points(lab, exp, "micro", &extra, lab.pick(3, 3, 1), est, move |rep, text| {
        Ok(convert(exp, rep, &micro::read_csv(text)?, figs))
    })
}

/// `reps` times `hintq bench <sub> --reps 1 --out <sub>-rep<n>.csv [--quick] <extra>`, pinned
/// to the measured core (`extra` says where its threads go); `read(rep, csv text)` gives our
/// rows.
pub fn tool_points(
    lab: &Lab,
    exp: &'static str,
    sub: &'static str,
    extra: &[&str],
    reps: u32,
    estimate: Duration,
    read: impl Fn(u32, &str) -> Result<Vec<Row>, String> + Clone + 'static,
) -> Vec<Point> {
    (0..reps)
        .map(|rep| {
            // The repetition in the file name keeps the repetitions' commands apart: the
            // runner runs one command line once, so identical ones would be one run read twice.
            let file = format!("{sub}-rep{rep}.csv");
            let mut args = vec!["bench", sub, "--reps", "1", "--out", &file];
            if lab.quick {
                args.push("--quick");
            }
            args.extend(extra);
            let read = read.clone();
            Point {
                experiment: exp,
                series: format!("hintq bench {sub}"),
                x: rep as f64,
                name: format!("{sub}-rep{rep}"),
                server: None,
                cmd: lab.hintq(&args, lab.cores.bench),
                timeout: estimate * 5 + Duration::from_secs(30),
                estimate,
                parse: Box::new(move |ran| {
                    let path = ran.dir.join(&file);
                    let text =
                        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                    let mut rows = read(rep, &text)?;
                    rows.iter_mut().for_each(|r| r.rep = rep);
                    Ok(rows)
                }),
            }
        })
        .collect()
}

/// Our rows from the micro-benchmark's: per figure, ns per op (and per event in fig6a).
pub fn convert(exp: &str, rep: u32, rows: &[micro::Row], figs: &[Fig]) -> Vec<Row> {
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| figs.contains(&r.experiment)) {
        let mut push = |metric: String, value: f64| {
            out.push(Row {
                experiment: exp.into(),
                series: r.backend.clone(),
                x: r.x() as f64,
                rep,
                metric,
                value: Some(value),
                status: Status::Ok,
                note: String::new(),
            })
        };
        push(format!("{}_ns_per_{}", r.experiment.name(), r.phase), r.ns_per_op());
        if let (Fig::Fig6a, Some(v)) = (r.experiment, r.ns_per_event()) {
            push("fig6a_ns_per_event".into(), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "# command: x\n\
experiment,backend,rep,array_max,idle,batch,phase,iterations,ops,events,total_ns,ns_per_op,ns_per_event,wall_ns,cpu_ns,preempted\n\
fig6a,raw-epoll,0,4,0,,call,100,100,400,50000,500.0,125.0,1,1,0\n\
fig6b,epoll,0,64,5000,,cycle,10,10,0,9000,900.0,,1,1,0\n\
fig7,poll,0,,1000,256,revoke,1,256,0,25600,100.0,,1,1,0\n";

    #[test]
    fn micro_rows_become_ours_with_their_swept_value() {
        let rows = micro::read_csv(CSV).unwrap();
        let e3 = convert("E3", 2, &rows, &[Fig::Fig6a, Fig::Fig6b]);
        let got: Vec<(&str, &str, f64, f64)> =
            e3.iter().map(|r| (r.series.as_str(), r.metric.as_str(), r.x, r.value.unwrap())).collect();
        assert_eq!(
            got,
            [
                ("raw-epoll", "fig6a_ns_per_call", 4.0, 500.0),
                ("raw-epoll", "fig6a_ns_per_event", 4.0, 125.0),
                ("epoll", "fig6b_ns_per_cycle", 5000.0, 900.0),
            ]
        );
        assert!(e3.iter().all(|r| r.rep == 2 && r.experiment == "E3"));
        let e4 = convert("E4", 0, &rows, &[Fig::Fig7]);
        assert_eq!(
            (e4.len(), e4[0].metric.as_str(), e4[0].x, e4[0].value),
            (1, "fig7_ns_per_revoke", 1000.0, Some(100.0))
        );
    }
}
