//! The run that goes through the experiments: `hintq lab` (measure, then analyse what was
//! written) and `hintq lab --reanalyse` (analyse again what a run wrote).

use super::{Analysis, Experiment, Lab, ALL};
use crate::data::{self, Row};
use crate::machine::{self, Cores};
use crate::plot::{self, Panel};
use crate::progress::Progress;
use crate::report;
use crate::runner::{Point, Runner};
use crate::LabArgs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What became of one experiment.
pub enum Outcome {
    /// Not run, and why.
    NotRun(String),
    /// Ran: its rows (read back from its CSV) and analysis.
    Ran {
        /// The rows.
        rows: Vec<Row>,
        /// The analysis.
        analysis: Analysis,
    },
}

/// `hintq lab`.
///
/// # Errors
/// The output directory cannot be written, or `--only` names an unknown experiment.
pub fn run_lab(args: &LabArgs) -> Result<(), String> {
    if let Some(dir) = &args.reanalyse {
        return reanalyse(dir);
    }
    let started = Instant::now();
    let exps = ALL;
    let only: Option<Vec<String>> =
        args.only.as_ref().map(|v| v.iter().map(|s| s.trim().to_uppercase()).collect());
    if let Some(bad) = only.iter().flatten().find(|o| !exps.iter().any(|e| e.id == o.as_str())) {
        return Err(format!("--only: no experiment {bad} (E1 to E12)"));
    }
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from(format!("lab-{}", report::stamp())));
    std::fs::create_dir_all(out.join("raw")).map_err(|e| format!("{}: {e}", out.display()))?;
    // Absolute from here on: each point's processes start in their own directory, where a
    // path relative to the lab's (a peer's binary under `raw/E9/bin`) names nothing.
    let out = std::fs::canonicalize(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let cores = Cores::pick();
    // The lab waits on the load core so it never shares the measured one.
    let _ = machine::pin_self(cores.load);
    let nofile = hintq_sys::raise_nofile().map_err(|e| format!("raising RLIMIT_NOFILE: {e}"))?;
    let setup = crate::peers::install_missing(
        args.no_install || args.smoke || args.plan,
        &out.join("raw/install.log"),
    );
    let lab = Lab {
        cores,
        exe: std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?,
        ..Lab::new(args.quick || args.smoke, args.smoke, &out, setup, Vec::new())
    };
    for line in &lab.peer_setup {
        eprintln!("hintq lab: {line}");
    }
    let window = lab.window();

    let mut plans = Vec::new();
    for e in exps.into_iter().filter(|e| only.as_ref().is_none_or(|o| o.iter().any(|id| id == e.id))) {
        let plan = match (e.needs)(&lab) {
            Err(why) => Err(why),
            Ok(()) => match (e.plan)(&lab) {
                p if p.is_empty() => Err("no point could be planned (see the missing peers)".into()),
                p => Ok(p),
            },
        };
        plans.push((e, plan));
    }
    let total: Duration =
        plans.iter().filter_map(|(_, p)| p.as_ref().ok()).flatten().map(|p| p.estimate).sum();
    if args.plan {
        for (e, plan) in &plans {
            match plan {
                Ok(points) => {
                    let est: Duration = points.iter().map(|p| p.estimate).sum();
                    eprintln!("{}: {} points, estimated {:.0} s", e.id, points.len(), est.as_secs_f64());
                }
                Err(why) => eprintln!("{}: not run: {why}", e.id),
            }
        }
        eprintln!("hintq lab: estimated {:.0} s in all; nothing measured (--plan)", total.as_secs_f64());
        return Ok(());
    }
    eprintln!("hintq lab: writing {} (estimated {:.0} s)", out.display(), total.as_secs_f64());
    // Repeats of disturbed points may add up to half the estimate, no more: a busy machine
    // cannot stretch a run without bound.
    let mut runner = Runner::new(out.join("raw"), window, total / 2);
    let progress = Progress::new(total);
    let mut outcomes = Vec::new();
    for (e, plan) in plans {
        let outcome = match plan {
            Err(why) => {
                progress.println(&format!("{}: not run: {why}", e.id));
                Outcome::NotRun(why)
            }
            Ok(points) => {
                let points = crate::runner::interleave(points);
                run_experiment(e, &points, &lab, &mut runner, &progress)?
            }
        };
        outcomes.push((e, outcome));
    }
    progress.finish();
    let failed = report::failures(&outcomes);
    for f in &failed {
        eprintln!("hintq lab: FAILED: {}: {} (its comparisons: cannot say)", f.experiment, f.said());
    }
    let setup = report::setup(&lab, &runner.commands, nofile, args, started.elapsed(), &failed);
    std::fs::write(out.join("SETUP.md"), setup).map_err(|e| e.to_string())?;
    let text = report::report(&outcomes, &lab);
    std::fs::write(out.join("REPORT.md"), text).map_err(|e| e.to_string())?;
    eprintln!(
        "hintq lab: {} written in {:.0} s",
        out.join("REPORT.md").display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `--reanalyse DIR`: the analyses, plots and REPORT.md of a finished run, from its CSV files.
fn reanalyse(dir: &std::path::Path) -> Result<(), String> {
    let old = std::fs::read_to_string(dir.join("REPORT.md"))
        .map_err(|e| format!("{}: {e}", dir.join("REPORT.md").display()))?;
    let (peer_setup, missing) = report::notes_of(&old);
    let mode = |m: &str| old.lines().take(3).any(|l| l.starts_with(&format!("A {m} run")));
    let lab = Lab {
        exe: std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?,
        ..Lab::new(mode("quick") || mode("smoke"), mode("smoke"), dir, peer_setup, missing)
    };
    let mut outcomes = Vec::new();
    for e in ALL {
        let csv = dir.join(format!("{}.csv", e.id));
        let outcome = if csv.exists() {
            from_csv(e, dir, |m| eprintln!("hintq lab: {m}"))?
        } else {
            Outcome::NotRun(format!("no {} in {}", csv.display(), dir.display()))
        };
        outcomes.push((e, outcome));
    }
    std::fs::write(dir.join("REPORT.md"), report::report(&outcomes, &lab)).map_err(|e| e.to_string())?;
    eprintln!("hintq lab: {} written again from its CSV files", dir.join("REPORT.md").display());
    Ok(())
}

fn run_experiment(
    e: &Experiment,
    points: &[Point],
    lab: &Lab,
    runner: &mut Runner,
    progress: &Progress,
) -> Result<Outcome, String> {
    let mut rows = Vec::new();
    for p in points {
        rows.extend(runner.run(p, progress));
        progress.done(p.estimate);
    }
    let csv = lab.out.join(format!("{}.csv", e.id));
    std::fs::write(&csv, data::write_csv(&rows)).map_err(|err| format!("{}: {err}", csv.display()))?;
    // Everything below is made from the file, read back.
    from_csv(e, &lab.out, |m| progress.println(m))
}

/// `e`'s rows read back from `dir/E<n>.csv`, its analysis, and its plot drawn beside them; a
/// plot that fails is told through `say` (the report is written all the same).
fn from_csv(e: &Experiment, dir: &std::path::Path, say: impl Fn(&str)) -> Result<Outcome, String> {
    let csv = dir.join(format!("{}.csv", e.id));
    let text = std::fs::read_to_string(&csv).map_err(|err| format!("{}: {err}", csv.display()))?;
    let rows = data::read_csv(&text)?;
    let analysis = (e.analyse)(&rows);
    let mut title = format!("{}: {} (after {})", e.id, e.title, e.paper);
    let failed: Vec<String> = data::failures(&rows).into_iter().map(|f| f.series).collect();
    if !failed.is_empty() {
        title.push_str(&format!("; FAILED, not drawn: {}", failed.join(", ")));
    }
    // A panel with nothing measured is left out and named in the title, not drawn empty.
    let (drawn, empty): (Vec<Panel>, Vec<Panel>) =
        analysis.panels.iter().cloned().partition(|p| p.lines.iter().any(|l| !l.points.is_empty()));
    let drawn = if drawn.is_empty() { analysis.panels.clone() } else { drawn };
    if !empty.is_empty() && drawn.len() < analysis.panels.len() {
        let names: Vec<&str> = empty.iter().map(|p| p.title.as_str()).collect();
        title.push_str(&format!("; not measured in this run, not drawn: {}", names.join("; ")));
    }
    let (svg, png) = (dir.join(format!("{}.svg", e.id)), dir.join(format!("{}.png", e.id)));
    if let Err(err) = plot::render(&title, &drawn, &svg, &png) {
        say(&format!("{}: plot failed: {err}", e.id));
    }
    Ok(Outcome::Ran { rows, analysis })
}
