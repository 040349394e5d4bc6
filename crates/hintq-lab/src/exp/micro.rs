//! Experiments read from `hintq bench` tools (E3 and E4 from `micro`, E6 from `patterns`, E7
//! from `gooch`, E8 from `rtsig`, E10 from `wake-one`), which write the lab's own rows: one
//! process per repetition (`--reps 1`), pinned to the measured core; the runner runs each
//! command once, so E3 and E4 both read the same `micro` file, each its own rows.

use super::Lab;
use crate::data;
use crate::runner::Point;
use std::time::Duration;

/// The points of `exp` (E3 or E4): one `hintq bench micro --reps 1` per repetition.
pub fn points(lab: &Lab, exp: &'static str) -> Vec<Point> {
    let cpu = lab.cores.bench.to_string();
    let mut extra = vec!["--cpu", cpu.as_str()];
    if lab.smoke {
        extra.extend(["--backends", "epoll"]);
    }
    let est = Duration::from_secs(lab.pick(40, 6, 2));
    tool_points(lab, exp, "micro", &extra, lab.pick(3, 3, 1), est)
}

/// What E7 (`gooch`) and E8 (`rtsig`) need: the tool, and no --smoke.
pub fn hist_needs(lab: &Lab, sub: &str) -> Result<(), String> {
    if lab.smoke {
        return Err(format!("left out of --smoke: `hintq bench {sub} --quick` alone takes about 30 s"));
    }
    lab.need(&["bench", sub])
}

/// The points of E7 or E8: one `hintq bench <sub> --reps 1` per repetition.
pub fn hist_points(lab: &Lab, exp: &'static str, sub: &'static str) -> Vec<Point> {
    let est = Duration::from_secs(lab.pick(60, 15, 15));
    let cpu = lab.cores.bench.to_string();
    tool_points(lab, exp, sub, &["--cpu", &cpu], lab.pick(3, 3, 1), est)
}

/// `reps` times `hintq bench <sub> --reps 1 --out <sub>-rep<n>.csv [--quick] <extra>`, pinned
/// to the measured core (`extra` says where its threads go); each point's rows are those of
/// `exp` in the file the tool wrote, with the repetition set to the launch's.
pub fn tool_points(
    lab: &Lab,
    exp: &'static str,
    sub: &'static str,
    extra: &[&str],
    reps: u32,
    estimate: Duration,
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
                    let rows = data::read_csv(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                    Ok(rows
                        .into_iter()
                        .filter(|r| r.experiment == exp)
                        .map(|r| data::Row { rep, ..r })
                        .collect())
                }),
            }
        })
        .collect()
}
