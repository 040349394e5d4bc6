//! Raw rows, the CSV they are kept in, and the summaries made from them (and only from them).

pub use hintq_bench::row::{read_csv, write_csv, Line, Pt, Row, Spread, Status, COLUMNS};

/// The lines of `metric` in `rows`: ok and disturbed values counted, in order of first
/// appearance of each series.
pub fn lines(rows: &[Row], metric: &str) -> Vec<Line> {
    hintq_bench::row::lines(rows, metric, |r| r.status == Status::Disturbed)
}

/// The distinct values of `xs`, ascending.
pub fn distinct(xs: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = xs.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// A number as the report prints it: three significant digits or whole units.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// How many points failed, and how many values were disturbed, in `rows`.
pub fn counts(rows: &[Row]) -> (usize, usize) {
    let failed = rows.iter().filter(|r| r.status == Status::Failed).count();
    let disturbed = rows.iter().filter(|r| r.status == Status::Disturbed).count();
    (failed, disturbed)
}

/// A series that failed at one or more points of an experiment: which points, and the
/// error of the first (as the runner recorded it, `failed: ` left off).
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// `E9`.
    pub experiment: String,
    /// The series.
    pub series: String,
    /// The swept values where it failed, ascending.
    pub xs: Vec<f64>,
    /// The first failure's error.
    pub error: String,
}

impl Failure {
    /// `mio failed at 100 and 1000: <error>`.
    pub fn said(&self) -> String {
        let xs: Vec<String> = self.xs.iter().map(|x| num(*x)).collect();
        format!("{} failed at {}: {}", self.series, xs.join(", "), self.error)
    }
}

/// The series of `rows` that failed at some point, in order of first failure.
pub fn failures(rows: &[Row]) -> Vec<Failure> {
    let mut out: Vec<Failure> = Vec::new();
    for r in rows.iter().filter(|r| r.status == Status::Failed) {
        let i = match out.iter().position(|f| f.experiment == r.experiment && f.series == r.series) {
            Some(i) => i,
            None => {
                let error = r.note.strip_prefix("failed: ").unwrap_or(&r.note).to_string();
                out.push(Failure {
                    experiment: r.experiment.clone(),
                    series: r.series.clone(),
                    xs: Vec::new(),
                    error,
                });
                out.len() - 1
            }
        };
        if !out[i].xs.contains(&r.x) {
            out[i].xs.push(r.x);
        }
    }
    for f in &mut out {
        f.xs.sort_by(f64::total_cmp);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(series: &str, x: f64, rep: u32, v: Option<f64>, status: Status) -> Row {
        Row {
            experiment: "E9".into(),
            series: series.into(),
            x,
            rep,
            metric: "us_per_run".into(),
            value: v,
            status,
            note: "quiet: busy 3%, \"other\" 0.01 cores".into(),
        }
    }

    #[test]
    fn lines_count_ok_and_disturbed_and_leave_out_repeated_and_failed() {
        let rows = vec![
            row("a", 100.0, 0, Some(1.0), Status::Ok),
            row("a", 100.0, 1, Some(3.0), Status::Disturbed),
            row("a", 100.0, 2, Some(2.0), Status::Ok),
            row("a", 100.0, 3, Some(99.0), Status::Repeated),
            row("a", 10.0, 0, Some(5.0), Status::Ok),
            row("b", 100.0, 0, None, Status::Failed),
        ];
        let l = lines(&rows, "us_per_run");
        assert_eq!(l.len(), 1, "b has no value");
        assert_eq!(l[0].points.iter().map(|p| p.x).collect::<Vec<_>>(), [10.0, 100.0]);
        let p = l[0].at(100.0).unwrap();
        assert_eq!(
            (p.spread.median, p.spread.min, p.spread.max, p.spread.n, p.disturbed),
            (2.0, 1.0, 3.0, 3, 1)
        );
    }

    #[test]
    fn failures_name_each_failed_series_once_with_its_points_and_first_error() {
        let mut bad = row("libevent-epoll", 1000.0, 0, None, Status::Failed);
        bad.note = "failed: exit status: 3: peer crashed".into();
        let mut bad2 = bad.clone();
        bad2.x = 100.0;
        bad2.note = "failed: timed out after 30 s".into();
        let rows = vec![
            row("mio", 100.0, 0, Some(1.0), Status::Ok),
            bad,
            bad2.clone(),
            bad2,
            row("mio", 1000.0, 0, Some(2.0), Status::Ok),
        ];
        let f = failures(&rows);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].said(), "libevent-epoll failed at 100, 1000: exit status: 3: peer crashed");
        assert!(failures(&rows[..1]).is_empty());
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(
            [num(1484501.0), num(49.63), num(5.968), num(0.7712), num(0.0)],
            ["1484501", "49.6", "5.97", "0.771", "0"]
        );
    }
}
