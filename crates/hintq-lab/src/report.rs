//! REPORT.md and SETUP.md.

use crate::data::{self, num, Failure};
use crate::exp::{figure_rank, Experiment, Lab, Outcome};
use crate::machine;
use crate::LabArgs;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

/// `YYYYMMDD-HHMMSS` (UTC) for a default directory name.
pub fn stamp() -> String {
    hintq_bench::utc(SystemTime::now()).replace(['-', ':', 'Z'], "").replace('T', "-")
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The header of each section's table of numbers (the smoke test reads these tables).
pub const TABLE_HEADER: &str = "| series | x | metric | median | min | max | n | disturbed |";

/// The header of the report's first table: one row per paper figure (the smoke test reads it).
pub const FIGURES_HEADER: &str = "| paper figure | exp | paper's words | paper's number | ours: median \
    (min–max, n launches) | ours ÷ paper | literal verdict (against the paper's number) | shape verdict | \
    rule of the shape verdict |";

/// The cells of a row of the first table after its figure and experiment.
struct Cells {
    claim: String,
    paper: String,
    ours: String,
    ratio: String,
    literal: String,
    holds: String,
    rule: String,
}

/// The series of every experiment that ran which failed at some point, from its rows.
pub fn failures(outcomes: &[(&Experiment, Outcome)]) -> Vec<Failure> {
    outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            Outcome::Ran { rows, .. } => Some(data::failures(rows)),
            Outcome::NotRun(_) => None,
        })
        .flatten()
        .collect()
}

/// A verdict, unless a point it reads failed: then "cannot say" with each such failure, never
/// a verdict over the series that remain. `inputs` are the points (series, x) the verdict
/// reads ([`crate::exp::FigureRow::inputs`]); empty: every point, so any failure withholds it.
fn judged(holds: &str, failed: &[Failure], inputs: &[(String, f64)]) -> String {
    let read =
        |f: &&Failure| inputs.is_empty() || inputs.iter().any(|(s, x)| *s == f.series && f.xs.contains(x));
    let failed: Vec<&Failure> = failed.iter().filter(read).collect();
    // A literal verdict of a row without the paper's number judges nothing.
    if failed.is_empty() || holds.starts_with('—') {
        return holds.to_string();
    }
    let said: Vec<String> = failed.iter().map(|f| f.said()).collect();
    format!("cannot say: {}", said.join("; "))
}

/// The first table's rows, in paper order: each experiment's figure rows (an experiment that
/// did not run gives its rows, from an analysis of no rows, with why; one without figure rows
/// gives one row for itself).
fn figure_rows(outcomes: &[(&Experiment, Outcome)]) -> Vec<(String, &'static str, Cells)> {
    let mut out = Vec::new();
    for (e, o) in outcomes {
        let (figures, not_run, failed) = match o {
            Outcome::Ran { analysis, rows } => (analysis.figures.clone(), None, data::failures(rows)),
            Outcome::NotRun(why) => ((e.analyse)(&[]).figures, Some(format!("not run: {why}")), Vec::new()),
        };
        if figures.is_empty() {
            let (ours, holds) = match (o, &not_run) {
                (Outcome::Ran { analysis, .. }, _) => {
                    (analysis.ours.clone(), judged(&analysis.holds, &failed, &[]))
                }
                (_, why) => ("—".into(), why.clone().unwrap_or_default()),
            };
            let cells = Cells {
                claim: e.claim.into(),
                paper: "—".into(),
                ours,
                ratio: "—".into(),
                literal: crate::exp::NO_NUMBER.into(),
                holds,
                rule: "see its section".into(),
            };
            out.push((e.paper.to_string(), e.id, cells));
        }
        for f in figures {
            let paper = f.paper.as_ref().map_or("none printed".into(), |p| p.words.to_string());
            let cells = match &not_run {
                Some(why) => Cells {
                    claim: f.claim.into(),
                    paper,
                    ours: "—".into(),
                    ratio: "—".into(),
                    literal: if f.literal.starts_with('—') { f.literal } else { why.clone() },
                    holds: why.clone(),
                    rule: crate::verdict::with_chance(&f.rule),
                },
                None => Cells {
                    claim: f.claim.into(),
                    paper,
                    ratio: f.ratio_text(),
                    ours: f.ours,
                    literal: judged(&f.literal, &failed, &f.inputs),
                    holds: judged(&f.holds, &failed, &f.inputs),
                    rule: crate::verdict::with_chance(&f.rule),
                },
            };
            out.push((f.figure, e.id, cells));
        }
    }
    out.sort_by_key(|(figure, _, _)| figure_rank(figure));
    out
}

/// The prefix of the lines that name a failed series (in the report's first lines and in
/// "Not measured in this run"): made from the rows, so `--reanalyse` makes them again.
const FAILED: &str = "failed: ";

/// `failed: E9: mio failed at 100: <error>`.
fn failed_line(f: &Failure) -> String {
    format!("{FAILED}{}: {}", f.experiment, f.said())
}

/// The peers' lines and the points not measured, as a report written by [`report`] lists
/// them (for `--reanalyse`), the failures left out (they come from the rows).
pub fn notes_of(report: &str) -> (Vec<String>, Vec<String>) {
    let item = |l: &str| l.strip_prefix("- ").filter(|i| !i.starts_with(FAILED)).map(String::from);
    let peers = report.lines().skip(1).take_while(|l| !l.starts_with('|')).filter_map(item).collect();
    let missing = report
        .lines()
        .skip_while(|l| !l.starts_with("## Not measured in this run"))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(item)
        .collect();
    (peers, missing)
}

/// REPORT.md.
pub fn report(outcomes: &[(&Experiment, Outcome)], lab: &Lab) -> String {
    let mut s = String::from("# hintq lab report\n\n");
    let mode = lab.pick("full", "quick", "smoke");
    let _ = writeln!(
        s,
        "A {mode} run on this machine (see [SETUP.md](SETUP.md) for the machine, pinning, versions \
         and exact commands). Every number below is computed from the raw rows in `E<n>.csv`.\n"
    );
    for line in &lab.peer_setup {
        let _ = writeln!(s, "- {line}");
    }
    let failed = failures(outcomes);
    for f in &failed {
        let _ = writeln!(s, "- {}", failed_line(f));
    }
    // A blank line first: Markdown starts no table right after a list item.
    s.push('\n');
    s.push_str(FIGURES_HEADER);
    s.push_str("\n|---|---|---|---|---|---|---|---|---|\n");
    for (figure, id, row) in figure_rows(outcomes) {
        let _ = writeln!(
            s,
            "| {} | {id} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&figure),
            cell(&row.claim),
            cell(&row.paper),
            cell(&row.ours),
            cell(&row.ratio),
            cell(&row.literal),
            cell(&row.holds),
            cell(&row.rule)
        );
    }
    let missing = lab.missing.borrow();
    if !missing.is_empty() || !failed.is_empty() {
        s.push_str("\n## Not measured in this run\n\n");
        for f in &failed {
            let _ = writeln!(s, "- {}", failed_line(f));
        }
        for m in missing.iter() {
            let _ = writeln!(s, "- {m}");
        }
    }
    for (e, o) in outcomes {
        let _ = writeln!(s, "\n## {}: {}\n\nReproduces {}. Paper: {}\n", e.id, e.title, e.paper, e.claim);
        match o {
            Outcome::NotRun(why) => {
                let _ = writeln!(s, "Not run: {why}.");
            }
            Outcome::Ran { rows, analysis } => section(&mut s, e.id, rows, analysis),
        }
    }
    s
}

fn section(s: &mut String, id: &str, rows: &[data::Row], a: &crate::exp::Analysis) {
    let (failed, disturbed) = data::counts(rows);
    let repeated = rows.iter().filter(|r| r.status == data::Status::Repeated).count();
    let _ = writeln!(s, "![{id}]({id}.svg)\n\n([PNG]({id}.png), raw rows: [{id}.csv]({id}.csv))\n");
    let failures = data::failures(rows);
    if a.figures.is_empty() {
        let _ = writeln!(s, "**Holds here?** {}. {}\n", judged(&a.holds, &failures, &[]), a.ours);
    } else {
        // The rows' own verdicts, as the first table gives them: a section never says more
        // than its rows.
        let _ = writeln!(s, "**Verdicts (the first table's rows):**\n");
        for f in &a.figures {
            let _ = writeln!(
                s,
                "- {}: shape {}; literal {}.",
                f.figure,
                judged(&f.holds, &failures, &f.inputs),
                judged(&f.literal, &failures, &f.inputs)
            );
        }
        let _ = writeln!(s, "\nOurs: {}\n", a.ours);
    }
    for r in &a.reading {
        let _ = writeln!(s, "- {r}");
    }
    let _ = writeln!(
        s,
        "\n{} values; {failed} failed points; {disturbed} values measured while the machine was \
         busy (kept, marked); {repeated} values from first tries that were disturbed and repeated \
         (kept in the CSV, left out below).\n",
        rows.len()
    );
    for r in rows.iter().filter(|r| r.status == data::Status::Failed) {
        let _ = writeln!(s, "- failed: {} at {}: {}", r.series, r.x, cell(&r.note));
    }
    let _ = writeln!(s, "\n{TABLE_HEADER}\n|---|---|---|---|---|---|---|---|");
    for (metric, label) in &a.metrics {
        for l in data::lines(rows, metric) {
            for p in &l.points {
                let sp = p.spread;
                let _ = writeln!(
                    s,
                    "| {} | {} | {metric} ({label}) | {} | {} | {} | {} | {} |",
                    l.name,
                    p.x,
                    num(sp.median),
                    num(sp.min),
                    num(sp.max),
                    sp.n,
                    p.disturbed
                );
            }
        }
    }
}

/// The peers found, one line each: every experiment that finds a peer records it, so the same
/// (name, version) is said once; a peer whose series (`libevent`, `libevent-epoll`...) failed
/// is said to have failed, with the error, not listed as if measured.
fn peer_lines(peers: &[(String, String)], failed: &[Failure]) -> String {
    let mut said: Vec<&(String, String)> = Vec::new();
    for peer in peers {
        if !said.contains(&peer) {
            said.push(peer);
        }
    }
    let mut s = String::new();
    for (name, version) in said {
        let prefix = format!("{name}-");
        let its: Vec<String> = failed
            .iter()
            .filter(|f| f.series == *name || f.series.starts_with(&prefix))
            .map(|f| format!("{}: {}", f.experiment, f.said()))
            .collect();
        if its.is_empty() {
            let _ = writeln!(s, "- {name}: {version}");
        } else {
            let _ = writeln!(s, "- {name}: {version}, NOT MEASURED where it failed: {}", its.join("; "));
        }
    }
    s
}

/// SETUP.md.
pub fn setup(
    lab: &Lab,
    commands: &[String],
    nofile: (u64, u64),
    args: &LabArgs,
    took: Duration,
    failed: &[Failure],
) -> String {
    let mut s = String::from("# Setup of this lab run\n\n| what | value |\n|---|---|\n");
    let rows: Vec<(&str, String)> = vec![
        ("command", std::env::args().collect::<Vec<_>>().join(" ")),
        ("mode", lab.pick("full", "quick", "smoke").into()),
        ("date (UTC)", stamp()),
        ("duration", format!("{:.0} s", took.as_secs_f64())),
        ("hintq commit", machine::commit()),
        ("hintq version", env!("CARGO_PKG_VERSION").into()),
        ("rustc", machine::command_line("rustc", &["--version"])),
        ("cc", machine::command_line("cc", &["--version"])),
        ("kernel", machine::command_line("uname", &["-srvm"])),
        ("CPU", machine::cpu_model()),
        ("CPUs allowed at the start", format!("{:?}", lab.cores.allowed)),
        (
            "core pinning",
            format!(
                "measured process and servers on CPU {}; load generator and the lab itself on CPU {} \
                 (sched_setaffinity before exec; the commands below show it as taskset)",
                lab.cores.bench, lab.cores.load
            ),
        ),
        ("RLIMIT_NOFILE", format!("soft {}, hard {} (soft raised to hard)", nofile.0, nofile.1)),
        ("load average at the end", machine::loadavg()),
        (
            "quiet check",
            format!(
                "before and after each point, the share of all CPUs busy over a short window while the lab \
                 waits must stay under {:.0}%; during it, other processes may use at most {:.2} cores. A \
                 disturbed point is run once more (while the repeats have used less than half the run's \
                 estimated time); a second disturbed try is kept and marked.",
                machine::BUSY_LIMIT * 100.0,
                machine::FOREIGN_LIMIT
            ),
        ),
        ("--only", args.only.as_ref().map_or("all".into(), |o| o.join(","))),
    ];
    for (k, v) in rows {
        let _ = writeln!(s, "| {k} | {} |", cell(&v));
    }
    s.push_str("\n## Peers\n\n");
    let peers = lab.peers.borrow();
    if peers.is_empty() {
        s.push_str("None found.\n");
    }
    s.push_str(&peer_lines(&peers, failed));
    for line in &lab.peer_setup {
        let _ = writeln!(s, "- before the run: {line}");
    }
    for f in failed {
        let _ = writeln!(s, "- {}", failed_line(f));
    }
    let missing = lab.missing.borrow();
    for m in missing.iter() {
        let _ = writeln!(s, "- missing: {m}");
    }
    for (what, text) in lab.configs.borrow().iter() {
        let _ = writeln!(s, "\n### {what}\n\n```nginx\n{}\n```", text.trim_end());
    }
    s.push_str("\n## Exact commands, in order\n\nEach ran in its own directory under `raw/E<n>/<point>/`.\n\n```sh\n");
    for c in commands {
        let _ = writeln!(s, "{c}");
    }
    s.push_str("```\n");
    s
}

#[cfg(test)]
mod tests {
    use super::{judged, notes_of, peer_lines};

    #[test]
    fn a_failure_withholds_only_the_verdicts_that_read_its_point() {
        // E1's poll collapsing at 5000 cold says nothing about Fig. 8 at 0 and 2000 cold.
        let failed = [crate::data::Failure {
            experiment: "E1".into(),
            series: "hintq-poll".into(),
            xs: vec![5000.0],
            error: "server died".into(),
        }];
        let at = |s: &str, x: f64| (s.to_string(), x);
        let fig8 = [at("hintq-epoll", 0.0), at("hintq-epoll", 2000.0), at("hintq-poll", 2000.0)];
        assert_eq!(judged("yes", &failed, &fig8), "yes");
        let reads = [at("hintq-epoll", 5000.0), at("hintq-poll", 5000.0)];
        assert_eq!(judged("yes", &failed, &reads), "cannot say: hintq-poll failed at 5000: server died");
        // A verdict whose inputs are not given reads every point.
        assert_eq!(judged("no", &failed, &[]), "cannot say: hintq-poll failed at 5000: server died");
        assert_eq!(judged("— (the paper prints no number)", &failed, &[]), "— (the paper prints no number)");
    }

    #[test]
    fn setup_names_each_peer_once() {
        let nginx = ("nginx".to_string(), "nginx version: nginx/1.22.1".to_string());
        let libev = ("libev".to_string(), "4.33".to_string());
        let peers = [nginx.clone(), nginx.clone(), libev, nginx];
        assert_eq!(peer_lines(&peers, &[]), "- nginx: nginx version: nginx/1.22.1\n- libev: 4.33\n");
        let failed = crate::data::Failure {
            experiment: "E9".into(),
            series: "libev-poll".into(),
            xs: vec![100.0],
            error: "No such file or directory".into(),
        };
        assert_eq!(
            peer_lines(&peers, &[failed]),
            "- nginx: nginx version: nginx/1.22.1\n- libev: 4.33, NOT MEASURED where it failed: E9: \
             libev-poll failed at 100: No such file or directory\n"
        );
    }

    /// `--reanalyse` keeps what the run said of its peers and of the points it could not
    /// measure, which only the run itself knew.
    #[test]
    fn notes_come_back_from_a_written_report() {
        let text = "# hintq lab report\n\nA full run on this machine.\n\n- peers present: nginx\n- libuv: \
                    not installed\n- failed: E9: mio failed at 100: gone\n\n| paper figure | exp |\n|---|---|\n| Banga Fig. 6 | E3 |\n\n## Not \
                    measured in this run\n\n- failed: E9: mio failed at 100: gone\n- E9: mio missing\n\n## E1: \
                    throughput\n\n- a bullet of E1\n";
        let (peers, missing) = notes_of(text);
        assert_eq!(peers, ["peers present: nginx", "libuv: not installed"]);
        assert_eq!(missing, ["E9: mio missing"]);
    }
}
