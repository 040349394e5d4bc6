//! The experiments, and the run that goes through them.

mod banga;
mod e1;
mod e10;
mod e11;
mod e12;
mod e2;
pub mod e3;
mod e4;
pub mod e5;
mod e6;
mod e7;
mod e8;
mod e9;
mod micro;
mod provos;
mod proxy_stats;
mod run;
mod serve;
mod strebelow;
mod table2;

pub use run::{run_lab, Outcome};

use crate::data::{self, Row};
use crate::machine::Cores;
use crate::plot::Panel;
use crate::runner::{Cmd, Point};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

/// What a run knows of its setting, shared by the experiments.
pub struct Lab {
    /// `--quick`.
    pub quick: bool,
    /// `--smoke`: one tiny point per experiment.
    pub smoke: bool,
    /// What became of the peers before the run (present, installed, missing and why).
    pub peer_setup: Vec<String>,
    /// Peer configurations used (what, the text), for SETUP.md.
    pub configs: RefCell<Vec<(String, String)>>,
    /// The `hintq` binary (this process).
    pub exe: PathBuf,
    /// The output directory.
    pub out: PathBuf,
    /// The cores.
    pub cores: Cores,
    /// Peers found (name, version), for SETUP.md.
    pub peers: RefCell<Vec<(String, String)>>,
    /// Peers missing or broken, with the command that installs them, for the report.
    pub missing: RefCell<Vec<String>>,
    subcommands: RefCell<HashMap<String, bool>>,
}

impl Lab {
    /// A lab writing to `out` (the binary `/usr/bin/hintq` until set), with what became of the
    /// peers and what is missing already said.
    pub fn new(
        quick: bool,
        smoke: bool,
        out: &std::path::Path,
        peer_setup: Vec<String>,
        missing: Vec<String>,
    ) -> Lab {
        Lab {
            quick,
            smoke,
            peer_setup,
            configs: RefCell::new(Vec::new()),
            exe: "/usr/bin/hintq".into(),
            out: out.to_path_buf(),
            cores: Cores::pick(),
            peers: RefCell::new(Vec::new()),
            missing: RefCell::new(missing),
            subcommands: RefCell::new(HashMap::new()),
        }
    }

    /// Whether `hintq <sub...> --help` succeeds: the subcommand exists in this binary.
    pub fn has(&self, sub: &[&str]) -> bool {
        let key = sub.join(" ");
        if let Some(&known) = self.subcommands.borrow().get(&key) {
            return known;
        }
        let ok = std::process::Command::new(&self.exe)
            .args(sub)
            .arg("--help")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        self.subcommands.borrow_mut().insert(key, ok);
        ok
    }

    /// `Err("needs hintq <sub>")` unless the subcommand exists.
    pub fn need(&self, sub: &[&str]) -> Result<(), String> {
        if self.has(sub) {
            Ok(())
        } else {
            Err(format!("needs `hintq {}`", sub.join(" ")))
        }
    }

    /// `hintq args...` pinned to `cpu`.
    pub fn hintq(&self, args: &[&str], cpu: usize) -> Cmd {
        Cmd::new(&self.exe, args, cpu)
    }

    /// Where experiment `id` keeps its points' own files.
    pub fn raw(&self, id: &str) -> PathBuf {
        self.out.join("raw").join(id)
    }

    /// How long each quiet window lasts; the runner waits one before and one after every
    /// point (`Runner::window`), a fixed cost per point that estimates count.
    pub fn window(&self) -> Duration {
        Duration::from_millis(self.pick(300, 200, 50))
    }

    /// Picks `full`, `quick` or `smoke` by the run's mode.
    pub fn pick<T>(&self, full: T, quick: T, smoke: T) -> T {
        if self.smoke {
            smoke
        } else if self.quick {
            quick
        } else {
            full
        }
    }
}

/// What an experiment concludes from its rows.
pub struct Analysis {
    /// The figure's panels.
    pub panels: Vec<Panel>,
    /// Our figure, with numbers, for the opening table.
    pub ours: String,
    /// Whether the paper's claim holds here: `yes`, `no`, `partly`, or why it cannot be said.
    pub holds: String,
    /// A few sentences of reading.
    pub reading: Vec<String>,
    /// The metrics tabulated in the section, with their labels.
    pub metrics: Vec<(&'static str, &'static str)>,
    /// One row per paper figure or table (or number in a paper's text) this experiment
    /// reproduces, for the report's first table.
    pub figures: Vec<FigureRow>,
}

/// A paper's own number: in its words, and its value in the unit ours is given in.
#[derive(Clone, Debug, PartialEq)]
pub struct PaperNumber {
    /// As the paper prints it, with where ("about 8.4 µs per get_next_event call (§8)").
    pub words: &'static str,
    /// Its value, in the unit of [`FigureRow::ours`].
    pub value: f64,
}

/// One paper figure or table against ours: a row of the report's first table.
#[derive(Clone, Debug, PartialEq)]
pub struct FigureRow {
    /// The paper and its figure or table, one of [`FIGURE_ORDER`]'s names first
    /// ("Banga Fig. 6", "Banga Table 2 (proxy): classical select").
    pub figure: String,
    /// The paper's claim for it.
    pub claim: &'static str,
    /// The paper's own number, where it prints one.
    pub paper: Option<PaperNumber>,
    /// Ours, from the rows: the same quantity, with units and where it was measured.
    pub ours: String,
    /// Our value of the paper's quantity where it is the same quantity, for ours ÷ paper;
    /// else why it is not comparable.
    pub ratio: Result<f64, String>,
    /// The shape verdict: whether the claim's shape (who is above whom, what grows) holds
    /// here by [`FigureRow::rule`]: `yes`, `no`, `within noise`, or why it cannot be said.
    pub holds: String,
    /// The rule the shape verdict was judged by, printed beside it.
    pub rule: String,
    /// The literal verdict: ours against the paper's number, by a rule said in it;
    /// [`NO_NUMBER`] where the paper prints none.
    pub literal: String,
    /// The points (series, x) its verdicts read: a failure at one of them withholds its
    /// verdicts ("cannot say" with the failure); a failure elsewhere does not. Empty: every
    /// point of its experiment (any failure withholds them).
    pub inputs: Vec<(String, f64)>,
}

/// The literal verdict of a row whose paper prints no number.
pub const NO_NUMBER: &str = "— (the paper prints no number)";

impl FigureRow {
    /// A row whose paper prints no number: a shape verdict only, read from every point.
    pub fn without_number(
        figure: &str,
        claim: &'static str,
        ours: String,
        holds: String,
        rule: &str,
    ) -> FigureRow {
        FigureRow {
            inputs: Vec::new(),
            figure: figure.into(),
            claim,
            paper: None,
            ours,
            ratio: Err("the paper prints no number".into()),
            holds,
            rule: rule.into(),
            literal: NO_NUMBER.into(),
        }
    }

    /// ours ÷ paper, or why there is none.
    pub fn ratio_text(&self) -> String {
        match (&self.paper, &self.ratio) {
            (None, _) => "—".into(),
            (Some(p), Ok(v)) => format!(
                "{} ({} ÷ {})",
                significant(v / p.value),
                crate::data::num(*v),
                crate::data::num(p.value)
            ),
            (Some(_), Err(why)) => format!("— ({why})"),
        }
    }
}

/// `v` with three significant digits (a ratio may be far below 1: 0.00935).
fn significant(v: f64) -> String {
    let a = v.abs();
    if a >= 1.0 || a == 0.0 || !a.is_finite() {
        return crate::data::num(v);
    }
    let decimals = (2.0 - a.log10().floor()) as usize;
    format!("{v:.decimals$}")
}

/// The papers' figures in paper order (Banga, Provos & Lever, Gooch, Strebelow & Prehofer,
/// libevent): a figure row sorts by the first of these its name starts with; rows of the
/// same place keep the experiments' order (server before proxy).
pub const FIGURE_ORDER: &[&str] = &[
    "Banga Fig. 6",
    "Banga Fig. 7",
    "Banga Fig. 8",
    "Banga Fig. 9",
    "Banga Table 2",
    "Banga §8",
    "Banga §9",
    "Provos Figs. 4-9",
    "Provos Fig. 10",
    "Provos Figs. 11-13",
    "Provos Fig. 14",
    "Provos §4-6",
    "Provos §7",
    "Gooch",
    "Strebelow",
    "libevent",
];

/// Where `figure` sorts in [`FIGURE_ORDER`] (after them all if none matches).
pub fn figure_rank(figure: &str) -> usize {
    FIGURE_ORDER.iter().position(|f| figure.starts_with(f)).unwrap_or(FIGURE_ORDER.len())
}

/// One experiment of the design's table, as data: what it reproduces, its plan, its analysis.
pub struct Experiment {
    /// `E3`.
    pub id: &'static str,
    /// What it measures.
    pub title: &'static str,
    /// The paper figure it reproduces.
    pub paper: &'static str,
    /// The paper's claim, in a sentence.
    pub claim: &'static str,
    /// `Err("needs ...")` when a tool it needs is missing.
    pub needs: fn(&Lab) -> Result<(), String>,
    /// Its points (may find peers missing and say so in [`Lab::missing`]).
    pub plan: fn(&Lab) -> Vec<Point>,
    /// Its figure and verdict, from rows read back from its CSV.
    pub analyse: fn(&[Row]) -> Analysis,
}

/// What the server experiments need: `hintq serve` and `hintq load`.
pub fn needs_server(lab: &Lab) -> Result<(), String> {
    lab.need(&["serve"]).and(lab.need(&["load"]))
}

/// Every experiment, in the design's order.
pub const ALL: [&Experiment; 12] = [
    &e1::EXPERIMENT,
    &e2::EXPERIMENT,
    &e3::EXPERIMENT,
    &e4::EXPERIMENT,
    &e5::EXPERIMENT,
    &e6::EXPERIMENT,
    &e7::EXPERIMENT,
    &e8::EXPERIMENT,
    &e9::EXPERIMENT,
    &e10::EXPERIMENT,
    &e11::EXPERIMENT,
    &e12::EXPERIMENT,
];

/// The panel of `metric` over `rows`.
pub fn panel(rows: &[Row], metric: &str, title: &str, x: &str, y: &str, log: (bool, bool)) -> Panel {
    Panel {
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        log_x: log.0,
        log_y: log.1,
        lines: data::lines(rows, metric),
    }
}

/// One sentence per line of a throughput panel (x: cold connections), its first point against
/// its last: `<name>: 20000 req/s with 0 cold, 19000 req/s with 5000 (0.950x).`, each line
/// named by `name`.
pub fn cold_growth(lines: &[data::Line], name: impl Fn(&str) -> String) -> Vec<String> {
    let said = |l: &data::Line| {
        let (x0, m0, x1, m1, g) = e3::growth(l)?;
        Some(format!(
            "{}: {} req/s with {x0} cold, {} req/s with {x1} ({}x).",
            name(&l.name),
            data::num(m0),
            data::num(m1),
            data::num(g)
        ))
    };
    lines.iter().filter_map(said).collect()
}

/// At which offered rates of `line` (x: rate, y: p99 ms) the median stayed under `bound`:
/// "at every rate of the sweep (1000 to 32000 req/s)", "at no rate of the sweep", or the rates
/// under it and those above it, so that a rate over the bound below rates under it is seen.
pub fn rates_under(line: &data::Line, bound: f64) -> String {
    let (under, over): (Vec<&data::Pt>, Vec<&data::Pt>) =
        line.points.iter().partition(|p| p.spread.median < bound);
    let list = |ps: &[&data::Pt]| ps.iter().map(|p| data::num(p.x)).collect::<Vec<_>>().join(", ");
    match (under.is_empty(), over.is_empty()) {
        (_, true) => match line.ends() {
            Some((a, b)) => {
                format!("at every rate of the sweep ({} to {} req/s)", data::num(a.x), data::num(b.x))
            }
            None => "at no rate measured".into(),
        },
        (true, false) => "at no rate of the sweep".into(),
        (false, false) => format!("at {} req/s offered, not at {}", list(&under), list(&over)),
    }
}

/// "not measured" when a verdict's inputs are missing.
pub const UNMEASURED: &str = "cannot say: a line it needs was not measured (see its section)";

/// Checks shared by the experiments' tests.
#[cfg(test)]
pub mod check {
    /// Asserts that `text` starts with `prefix`, showing all of `text` when it does not.
    #[track_caller]
    pub fn starts(text: &str, prefix: &str) {
        assert!(text.starts_with(prefix), "{text:?} does not start with {prefix:?}");
    }

    /// Asserts that `text` contains `part`, showing all of `text` when it does not.
    #[track_caller]
    pub fn contains(text: &str, part: &str) {
        assert!(text.contains(part), "{text:?} does not contain {part:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_the_issue_names_has_a_row_in_paper_order_even_without_rows() {
        let mut names: Vec<(String, &str)> = Vec::new();
        for e in ALL {
            let a = (e.analyse)(&[]);
            for f in a.figures {
                assert!(
                    figure_rank(&f.figure) < FIGURE_ORDER.len(),
                    "{} is in no place of FIGURE_ORDER",
                    f.figure
                );
                assert!(f.ratio.is_err(), "{}: a ratio without rows", f.figure);
                names.push((f.figure, e.id));
            }
        }
        let has = |figure: &str, id: &str| names.iter().any(|(f, i)| f == figure && *i == id);
        for (figure, id) in [
            ("Banga Fig. 6", "E3"),
            ("Banga Fig. 7", "E4"),
            ("Banga Fig. 8 (server)", "E1"),
            ("Banga Fig. 6 (proxy)", "E11"),
            ("Banga Fig. 7 (proxy)", "E11"),
            ("Banga Fig. 8 (proxy)", "E11"),
            ("Banga Fig. 9 (server)", "E2"),
            ("Banga Fig. 9 (proxy)", "E11"),
            ("Banga Table 2 (server): event API", "E5"),
            ("Banga Table 2 (proxy): classical select", "E11"),
            ("Banga §8 (SIGIO)", "E8"),
            ("Banga §9 (wake-one)", "E10"),
            ("Provos Figs. 4-9", "E12"),
            ("Provos Fig. 10", "E12"),
            ("Provos Figs. 11-13 (RT signals against poll)", "E12"),
            ("Provos Fig. 14 (median response time)", "E12"),
            ("Provos §4-6 (RT signals)", "E8"),
            ("Provos §7 (RT signals against /dev/poll)", "E12"),
            ("Gooch: poll(2) per descriptor", "E7"),
            ("libevent test/bench.c", "E9"),
        ] {
            assert!(has(figure, id), "no {figure} row from {id}: {names:?}");
        }
        assert_eq!(names.iter().filter(|(_, id)| *id == "E6").count(), 9, "one row per Strebelow claim");
        assert_eq!(names.iter().filter(|(f, _)| f.starts_with("Banga Table 2")).count(), 6);
    }

    #[test]
    fn the_ratio_is_ours_over_the_paper_s_with_three_digits_or_says_why_not() {
        let mut r = FigureRow {
            inputs: Vec::new(),
            figure: "Banga §8 (SIGIO)".into(),
            claim: "",
            paper: Some(PaperNumber { words: "10.7 µs", value: 10.7 }),
            ours: String::new(),
            ratio: Ok(0.1),
            holds: String::new(),
            rule: String::new(),
            literal: String::new(),
        };
        assert_eq!(r.ratio_text(), "0.00935 (0.100 ÷ 10.7)");
        r.ratio = Ok(21.4);
        assert_eq!(r.ratio_text(), "2.00 (21.4 ÷ 10.7)");
        r.ratio = Err("measured at 100 cold, the paper at 750".into());
        assert_eq!(r.ratio_text(), "— (measured at 100 cold, the paper at 750)");
        r.paper = None;
        assert_eq!(r.ratio_text(), "—");
    }

    #[test]
    fn figures_sort_in_paper_order() {
        let mut v = [
            "libevent test/bench.c",
            "Provos Fig. 10",
            "Banga §9 (wake-one)",
            "Provos Figs. 4-9",
            "Banga Fig. 6",
        ];
        v.sort_by_key(|f| figure_rank(f));
        assert_eq!(
            v,
            [
                "Banga Fig. 6",
                "Banga §9 (wake-one)",
                "Provos Figs. 4-9",
                "Provos Fig. 10",
                "libevent test/bench.c"
            ]
        );
    }
}
