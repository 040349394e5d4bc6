//! The one row format of every `hintq bench` command the lab runs and of the lab itself
//! (`E<n>.csv`): one measured value of one repetition of one point, in long form
//! (`experiment,series,x,rep,metric,value,status,note`), with the CSV it is kept in and a
//! plain summary table made from the rows only.
//!
//! A command run by hand writes the same rows the lab keeps, its run's header (command,
//! kernel, pinning, method) as `# key: value` lines above them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// What became of a measured value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Measured on a quiet machine.
    Ok,
    /// Measured while other work ran, on the second try: kept, counted, marked.
    Disturbed,
    /// Measured while other work ran on the first try, then measured again: kept in the CSV,
    /// left out of every summary.
    Repeated,
    /// The point crashed, timed out or printed nothing readable: no value.
    Failed,
}

impl Status {
    /// The name in the CSV.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Disturbed => "disturbed",
            Status::Repeated => "repeated",
            Status::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        [Status::Ok, Status::Disturbed, Status::Repeated, Status::Failed].into_iter().find(|v| v.name() == s)
    }
}

/// One measured value of one repetition of one point: a line of `E<n>.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `E1` … `E12`: the lab's experiment the value belongs to.
    pub experiment: String,
    /// The line of the plot: a backend, a peer, `peer-backend`.
    pub series: String,
    /// The swept value (descriptors, `array_max`, offered rate...).
    pub x: f64,
    /// Repetition, from 0.
    pub rep: u32,
    /// What is measured, with its unit in the name (`ns_per_call`, `us_per_run`).
    pub metric: String,
    /// The value; `None` when the point failed.
    pub value: Option<f64>,
    /// What became of it.
    pub status: Status,
    /// The quiet check, a failure's reason, where the value came from.
    pub note: String,
}

impl Row {
    /// A measured value of repetition 0, with no note.
    pub fn ok(experiment: &str, series: &str, x: f64, metric: &str, value: f64) -> Row {
        Row {
            experiment: experiment.into(),
            series: series.into(),
            x,
            rep: 0,
            metric: metric.into(),
            value: Some(value),
            status: Status::Ok,
            note: String::new(),
        }
    }
}

/// The columns of `E<n>.csv`.
pub const COLUMNS: &str = "experiment,series,x,rep,metric,value,status,note";

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\"").replace('\n', " "))
    } else {
        s.to_string()
    }
}

/// One row as a CSV line (no newline).
pub fn line(r: &Row) -> String {
    let value = r.value.map_or(String::new(), |v| format!("{v}"));
    format!(
        "{},{},{},{},{},{value},{},{}",
        quote(&r.experiment),
        quote(&r.series),
        r.x,
        r.rep,
        quote(&r.metric),
        r.status.name(),
        quote(&r.note)
    )
}

/// The text of a CSV file holding `rows`.
pub fn write_csv(rows: &[Row]) -> String {
    let mut s = format!("{COLUMNS}\n");
    for r in rows {
        let _ = writeln!(s, "{}", line(r));
    }
    s
}

/// Writes `rows` to `path` under the run's header, one `# key: value` line each.
///
/// # Errors
/// Creating or writing the file; the error names it.
pub fn write_file(path: &Path, meta: &[(String, String)], rows: &[Row]) -> io::Result<()> {
    let mut text = String::new();
    for (k, v) in meta {
        let _ = writeln!(text, "# {k}: {}", v.replace('\n', " "));
    }
    text.push_str(&write_csv(rows));
    std::fs::write(path, text).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Splits one CSV line into fields (double quotes, `""` inside them).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Reads back the rows of a CSV written by [`write_csv`] or [`write_file`] (`#` lines, blank
/// lines and the header skipped).
///
/// # Errors
/// The line and what was wrong with it.
pub fn read_csv(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for (no, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line == COLUMNS || line.starts_with('#') {
            continue;
        }
        let bad = |what: &str| format!("line {}: bad {what}: {line}", no + 1);
        let f = fields(line);
        if f.len() != 8 {
            return Err(bad("field count"));
        }
        let value = match f[5].as_str() {
            "" => None,
            v => Some(v.parse().map_err(|_| bad("value"))?),
        };
        rows.push(Row {
            experiment: f[0].clone(),
            series: f[1].clone(),
            x: f[2].parse().map_err(|_| bad("x"))?,
            rep: f[3].parse().map_err(|_| bad("rep"))?,
            metric: f[4].clone(),
            value,
            status: Status::parse(&f[6]).ok_or_else(|| bad("status"))?,
            note: f[7].clone(),
        });
    }
    Ok(rows)
}

/// The median, minimum and maximum of the repetitions of one point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// How many repetitions.
    pub n: usize,
}

impl Spread {
    /// The spread of `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => v[n / 2],
            _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Some(Spread { median, min: v[0], max: v[n - 1], n })
    }
}

/// A measured run whose thread was on a CPU for less than this share of its wall time was
/// disturbed (another process took the core, or the run blocked).
pub const QUIET: f64 = 0.95;

/// The note of a value from a run of `wall_ns` on which its thread was on a CPU `cpu_ns` and
/// preempted `preempted` times: empty when quiet (at least [`QUIET`] on the CPU), else what
/// disturbed it.
pub fn quiet_note(wall_ns: u64, cpu_ns: u64, preempted: u64) -> String {
    let on_cpu = (cpu_ns as f64 / wall_ns.max(1) as f64).min(1.0);
    if on_cpu >= QUIET {
        return String::new();
    }
    format!(
        "on a CPU {:.0}% of its run ({preempted} preemptions): the machine was busy, an upper bound",
        on_cpu * 100.0
    )
}

/// One point of one line: the spread of its counted values, and how many were disturbed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pt {
    /// The swept value.
    pub x: f64,
    /// Median, min, max over the counted repetitions (ok and disturbed).
    pub spread: Spread,
    /// How many of them were disturbed.
    pub disturbed: usize,
}

/// One line of a plot: a series and its points in ascending `x`.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The series name.
    pub name: String,
    /// Its points.
    pub points: Vec<Pt>,
}

impl Line {
    /// The point at `x`, if measured.
    pub fn at(&self, x: f64) -> Option<&Pt> {
        self.points.iter().find(|p| p.x == x)
    }

    /// The median at `x`, if measured.
    pub fn median(&self, x: f64) -> Option<f64> {
        self.at(x).map(|p| p.spread.median)
    }

    /// The first and last points.
    pub fn ends(&self) -> Option<(&Pt, &Pt)> {
        Some((self.points.first()?, self.points.last()?))
    }
}

/// The lines of `metric` in `rows`: ok and disturbed values counted, in order of first
/// appearance of each series, each point's values that are `marked` counted as disturbed.
pub fn lines<'a>(
    rows: impl IntoIterator<Item = &'a Row>,
    metric: &str,
    marked: impl Fn(&Row) -> bool,
) -> Vec<Line> {
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<(usize, u64), (f64, Vec<f64>, usize)> = BTreeMap::new();
    for r in rows.into_iter().filter(|r| r.metric == metric) {
        let (Some(v), Status::Ok | Status::Disturbed) = (r.value, r.status) else { continue };
        let i = order.iter().position(|s| *s == r.series).unwrap_or_else(|| {
            order.push(r.series.clone());
            order.len() - 1
        });
        let e = by.entry((i, r.x.to_bits())).or_insert((r.x, Vec::new(), 0));
        e.1.push(v);
        e.2 += usize::from(marked(r));
    }
    let mut lines: Vec<Line> = order.into_iter().map(|name| Line { name, points: Vec::new() }).collect();
    for ((i, _), (x, values, disturbed)) in by {
        if let Some(spread) = Spread::of(&values) {
            lines[i].points.push(Pt { x, spread, disturbed });
        }
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    lines.retain(|l| !l.points.is_empty());
    lines
}

/// The summary a command prints: per experiment and metric, each series' median (min–max,
/// repetitions) at each swept value, from the rows only; repeated and failed rows left out,
/// disturbed ones counted.
pub fn summary(rows: &[Row]) -> String {
    let counted = |r: &Row| r.value.is_some() && matches!(r.status, Status::Ok | Status::Disturbed);
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for g in rows.iter().filter(|r| counted(r)).map(|r| (r.experiment.as_str(), r.metric.as_str())) {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut s = String::new();
    for (exp, metric) in groups {
        let noted = |r: &Row| r.status == Status::Disturbed || !r.note.is_empty();
        let mut lines = lines(rows.iter().filter(|r| r.experiment == exp), metric, noted);
        lines.sort_by_key(|l| rows.iter().position(|r| counted(r) && r.series == l.name));
        let _ = writeln!(s, "\n{exp} {metric}");
        let _ = writeln!(
            s,
            "  {:<30} {:>10} {:>14} {:>14} {:>14} {:>4}",
            "series", "x", "median", "min", "max", "n"
        );
        for (l, p) in lines.iter().flat_map(|l| l.points.iter().map(move |p| (l, p))) {
            let (sp, noted) = (p.spread, p.disturbed);
            let mark = if noted > 0 { format!("  ({noted} disturbed)") } else { String::new() };
            let _ = writeln!(
                s,
                "  {:<30} {:>10} {:>14.1} {:>14.1} {:>14.1} {:>4}{mark}",
                l.name, p.x, sp.median, sp.min, sp.max, sp.n
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of E9 with a note that needs quoting.
    fn row(series: &str, x: f64, rep: u32, value: Option<f64>, status: Status) -> Row {
        let note = "quiet: busy 3%, \"other\" 0.01 cores".into();
        Row { rep, value, status, note, ..Row::ok("E9", series, x, "us_per_run", 0.0) }
    }

    #[test]
    fn csv_round_trips_rows_with_quotes_and_missing_values_under_a_header() {
        let rows = vec![
            row("hintq-epoll", 100.0, 0, Some(932.5), Status::Ok),
            row("libevent-poll", 9000.0, 1, None, Status::Failed),
            row("mio", 0.5, 2, Some(1e-3), Status::Disturbed),
        ];
        assert_eq!(read_csv(&write_csv(&rows)).unwrap(), rows);
        let dir = std::env::temp_dir().join(format!("hintq-row-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rows.csv");
        write_file(&path, &[("command".into(), "hintq bench x,\ny".into())], &rows).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(text.starts_with("# command: hintq bench x, y\nexperiment,series,"), "{text}");
        assert_eq!(read_csv(&text).unwrap(), rows);
    }

    #[test]
    fn read_csv_names_the_bad_line() {
        let err =
            read_csv("experiment,series,x,rep,metric,value,status,note\nE9,a,x,0,m,1,ok,\n").unwrap_err();
        assert!(err.contains("line 2") && err.contains("bad x"), "{err}");
    }

    #[test]
    fn spread_takes_median_min_max() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        assert_eq!(Spread::of(&[1.0, 4.0]).unwrap().median, 2.5);
        assert!(Spread::of(&[]).is_none());
    }

    #[test]
    fn a_run_off_the_cpu_is_noted_and_a_quiet_one_is_not() {
        assert_eq!(quiet_note(1000, 990, 0), "");
        assert!(quiet_note(1000, 500, 7).starts_with("on a CPU 50% of its run (7 preemptions)"));
    }

    #[test]
    fn summary_gives_each_point_s_median_and_range_without_repeated_or_failed_rows() {
        let mut rows: Vec<Row> = [(0, 10.0), (1, 30.0), (2, 20.0)]
            .into_iter()
            .map(|(rep, v)| Row { note: String::new(), ..row("epoll", 100.0, rep, Some(v), Status::Ok) })
            .collect();
        rows.push(row("epoll", 100.0, 3, Some(999.0), Status::Repeated));
        rows.push(row("poll", 100.0, 0, None, Status::Failed));
        let s = summary(&rows);
        assert!(s.contains("\nE9 us_per_run\n"), "{s}");
        let line = s.lines().find(|l| l.trim_start().starts_with("epoll")).unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols, ["epoll", "100", "20.0", "10.0", "30.0", "3"]);
        assert!(!s.lines().any(|l| l.trim_start().starts_with("poll")), "{s}");
    }
}
