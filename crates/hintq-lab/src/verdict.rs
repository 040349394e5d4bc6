//! Verdicts from statistics, in one place for every experiment.
//!
//! A compared figure is a [`Figure`]: one value per independent launch (a separate process),
//! shown with its spread (median, min–max, n). Two figures are ordered ([`order`]) only when
//! each has at least [`MIN_LAUNCHES`] launches and their ranges do not overlap; otherwise
//! they are "within noise", or there are too few launches to say. A claim's verdict
//! ([`Verdict`]) is made from such orders, so that a run with too few launches says "cannot
//! say" rather than guess, and a quick run's verdict is never the opposite of a full run's.

use crate::data::{num, Row, Status};
use std::collections::BTreeMap;
use std::fmt;

/// Launches a figure needs before it is compared.
pub const MIN_LAUNCHES: usize = 3;

/// What an order of ranges means, said in every rule that orders launches: with exchangeable
/// launches, all 3 of one figure fall below all 3 of the other in 1 of the C(6,3) = 20 equally
/// likely orders of the 6.
pub const APART_BY_CHANCE: &str = "3 launches against 3 from identical distributions have ranges apart \
    by chance 10% of the time (5% per direction: 1 in 20 orders of the 6 launches each way)";

/// `rule`, with [`APART_BY_CHANCE`] when it orders launches.
pub fn with_chance(rule: &str) -> String {
    if rule.contains("launch") && !rule.contains(APART_BY_CHANCE) {
        format!("{}; {APART_BY_CHANCE}", rule.trim_end_matches('.'))
    } else {
        rule.to_string()
    }
}

/// The tolerance of a claim that something does not change ("flat", "independent of", "slight
/// variation") where the paper states none: [`Verdict::same`] says yes only when every launch
/// of one figure is within 10% of every launch of the other. Printed in each such rule.
pub const FLAT_TOL: f64 = 0.10;

/// One value per independent launch, ascending, and how many disturbed rows were left out of
/// it (a row the runner marked [`Status::Disturbed`]: another process took the machine).
#[derive(Clone, Debug, PartialEq)]
pub struct Figure(Vec<f64>, usize);

impl Figure {
    /// The figure of these launches' values; `None` when there is none.
    pub fn new(mut values: Vec<f64>) -> Option<Figure> {
        values.retain(|v| v.is_finite());
        values.sort_by(f64::total_cmp);
        (!values.is_empty()).then_some(Figure(values, 0))
    }

    /// The same figure, saying that `rows` disturbed rows were left out of it.
    pub fn excluding(self, rows: usize) -> Figure {
        Figure(self.0, rows)
    }

    /// Disturbed rows left out of it.
    pub fn excluded(&self) -> usize {
        self.1
    }

    /// Launches.
    pub fn n(&self) -> usize {
        self.0.len()
    }

    /// The smallest launch's value.
    pub fn min(&self) -> f64 {
        self.0[0]
    }

    /// The largest launch's value.
    pub fn max(&self) -> f64 {
        self.0[self.0.len() - 1]
    }

    /// The median of the launches' values.
    pub fn median(&self) -> f64 {
        median(&self.0)
    }

    /// As [`Display`](fmt::Display), the median followed by `unit`: `40.0% (38.0–42.0, n=3)`.
    pub fn with_unit(&self, unit: &str) -> String {
        let s = self.to_string();
        match s.split_once(' ') {
            Some((median, rest)) => format!("{median}{unit} {rest}"),
            None => format!("{s}{unit}"),
        }
    }

    /// Every value times `k` (a change of unit; `k` > 0).
    pub fn scaled(&self, k: f64) -> Figure {
        Figure(self.0.iter().map(|v| v * k).collect(), self.1)
    }
}

/// `1114 (1054–1173, n=5)`: median, range, launches; `…, n=5; 2 disturbed rows excluded)`
/// when some were left out.
impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let excluded = match self.1 {
            0 => String::new(),
            1 => "; 1 disturbed row excluded".into(),
            k => format!("; {k} disturbed rows excluded"),
        };
        if self.n() == 1 {
            write!(f, "{} (n=1{excluded})", num(self.median()))
        } else {
            write!(
                f,
                "{} ({}–{}, n={}{excluded})",
                num(self.median()),
                num(self.min()),
                num(self.max()),
                self.n()
            )
        }
    }
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The launch a row came from: `launch k` at the start of its note (E9's launches of several
/// runs each), else its repetition (experiments that start one process per repetition).
pub fn launch_of(r: &Row) -> u32 {
    let from_note = r
        .note
        .strip_prefix("launch ")
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok());
    from_note.unwrap_or(r.rep)
}

/// The figure of `series` at `x` for `metric`: each launch's median of its ok values, one
/// value per launch; disturbed rows are left out and counted ([`Figure::excluded`]). Only for
/// experiments whose launches are told apart by [`launch_of`].
pub fn launches(rows: &[Row], series: &str, x: f64, metric: &str) -> Option<Figure> {
    let mut by: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    let mut disturbed = 0;
    for r in rows.iter().filter(|r| r.series == series && r.x == x && r.metric == metric) {
        match (r.value, r.status) {
            (Some(v), Status::Ok) => by.entry(launch_of(r)).or_default().push(v),
            (Some(_), Status::Disturbed) => disturbed += 1,
            _ => {}
        }
    }
    Figure::new(
        by.into_values()
            .map(|mut v| {
                v.sort_by(f64::total_cmp);
                median(&v)
            })
            .collect(),
    )
    .map(|f| f.excluding(disturbed))
}

/// A series at its smallest and its largest x: `(x0, figure at x0, x1, figure at x1)`.
pub type Ends = (f64, Figure, f64, Figure);

/// `series`'s figures of `metric` at the smallest and the largest x it was measured at
/// ([`launches`]); `None` unless at two x.
pub fn ends(rows: &[Row], series: &str, metric: &str) -> Option<Ends> {
    let xs =
        rows.iter().filter(|r| r.series == series && r.metric == metric && r.value.is_some()).map(|r| r.x);
    let (x0, x1) =
        xs.fold(None, |m: Option<(f64, f64)>, x| Some(m.map_or((x, x), |(a, b)| (a.min(x), b.max(x)))))?;
    (x0 != x1).then_some(())?;
    Some((x0, launches(rows, series, x0, metric)?, x1, launches(rows, series, x1, metric)?))
}

/// How a series went from its first x to its last: "epoll from 0 to 2000 idle (1.37x by
/// the medians): at 2000 137 (…) above at 0 100 (…)".
pub fn growth(series: &str, unit: &str, (x0, f0, x1, f1): &Ends) -> String {
    format!(
        "{series} from {} to {} {unit} ({}x by the medians): {}",
        num(*x0),
        num(*x1),
        num(f1.median() / f0.median()),
        compare((&format!("at {}", num(*x1)), f1), (&format!("at {}", num(*x0)), f0))
    )
}

/// How `a` stands to `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Every launch of `a` below every launch of `b`.
    Below,
    /// Every launch of `a` above every launch of `b`.
    Above,
    /// The ranges overlap.
    Within,
    /// One of them has fewer than [`MIN_LAUNCHES`] launches.
    TooFew,
}

/// `a` against `b`: apart only when both have [`MIN_LAUNCHES`] launches and the ranges do
/// not overlap.
pub fn order(a: &Figure, b: &Figure) -> Order {
    if a.n() < MIN_LAUNCHES || b.n() < MIN_LAUNCHES {
        Order::TooFew
    } else if a.max() < b.min() {
        Order::Below
    } else if a.min() > b.max() {
        Order::Above
    } else {
        Order::Within
    }
}

/// `a` against `b` in words, both figures shown: "hintq-epoll 900 (…) below mio 1000 (…)",
/// "… within noise of …", "… against … : too few launches (3 needed)".
pub fn compare(a: (&str, &Figure), b: (&str, &Figure)) -> String {
    let word = match order(a.1, b.1) {
        Order::Below => "below",
        Order::Above => "above",
        Order::Within => "within noise of",
        Order::TooFew => "against",
    };
    let mut s = format!("{} {} {word} {} {}", a.0, a.1, b.0, b.1);
    if order(a.1, b.1) == Order::TooFew {
        s.push_str(&format!(": too few launches ({MIN_LAUNCHES} needed)"));
    }
    s
}

/// A claim's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The claim holds: every comparison it needs came out as it says, apart.
    Yes,
    /// A comparison came out apart, the other way.
    No,
    /// No comparison contradicts it, but one is within noise: not shown either way.
    WithinNoise,
    /// Too few launches, or a figure not measured: why.
    CannotSay(String),
}

impl Verdict {
    /// The verdict of a claim that `a` is below `b` (Below: yes, Above: no).
    pub fn below(a: &Figure, b: &Figure) -> Verdict {
        match order(a, b) {
            Order::Below => Verdict::Yes,
            Order::Above => Verdict::No,
            Order::Within => Verdict::WithinNoise,
            Order::TooFew => Verdict::CannotSay(format!("fewer than {MIN_LAUNCHES} launches")),
        }
    }

    /// The verdict of a claim that `a` is above `b`.
    pub fn above(a: &Figure, b: &Figure) -> Verdict {
        Verdict::below(b, a)
    }

    /// The verdict of a claim that `a` and `b` are the same ("flat", "does not grow"): no when
    /// their ranges are apart; yes only when they overlap and every launch of each is within
    /// `tol` of every launch of the other (`a.max() / b.min()` and `b.max() / a.min()` under
    /// `1 + tol`), so that the change the claim denies is ruled out; else within noise
    /// (overlapping ranges alone are absence of evidence, not proof of sameness).
    pub fn same(a: &Figure, b: &Figure, tol: f64) -> Verdict {
        match order(a, b) {
            Order::Within if a.max() / b.min() < 1.0 + tol && b.max() / a.min() < 1.0 + tol => Verdict::Yes,
            Order::Within => Verdict::WithinNoise,
            Order::Below | Order::Above => Verdict::No,
            Order::TooFew => Verdict::CannotSay(format!("fewer than {MIN_LAUNCHES} launches")),
        }
    }

    /// The verdict of a claim that `a` is under a number `bound` (the paper's): yes when
    /// every launch is under it, no when every launch is over it, else within noise.
    pub fn under(a: &Figure, bound: f64) -> Verdict {
        if a.n() < MIN_LAUNCHES {
            Verdict::CannotSay(format!("fewer than {MIN_LAUNCHES} launches"))
        } else if a.max() < bound {
            Verdict::Yes
        } else if a.min() > bound {
            Verdict::No
        } else {
            Verdict::WithinNoise
        }
    }

    /// The verdict of a claim that `a` is over a number `bound`: [`Verdict::under`] turned round.
    pub fn over(a: &Figure, bound: f64) -> Verdict {
        match Verdict::under(a, bound) {
            Verdict::Yes => Verdict::No,
            Verdict::No => Verdict::Yes,
            v => v,
        }
    }

    /// The verdict of a claim made of parts that must all hold: no if one is contradicted (one
    /// established no suffices for a conjunction), else cannot say if one cannot be said (each
    /// reason once), yes if all hold, else within noise.
    pub fn all(parts: &[Verdict]) -> Verdict {
        if parts.is_empty() {
            // Nothing compared is no evidence: a "yes" over an empty list would be vacuous.
            return Verdict::CannotSay("nothing to compare (every figure missing or disturbed)".into());
        }
        if parts.contains(&Verdict::No) {
            return Verdict::No;
        }
        let why: std::collections::BTreeSet<&str> = parts
            .iter()
            .filter_map(|v| match v {
                Verdict::CannotSay(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        if !why.is_empty() {
            Verdict::CannotSay(why.into_iter().collect::<Vec<_>>().join("; "))
        } else if parts.iter().all(|v| *v == Verdict::Yes) {
            Verdict::Yes
        } else {
            Verdict::WithinNoise
        }
    }

    /// The verdict when a figure it needs is missing.
    pub fn unmeasured(what: &str) -> Verdict {
        Verdict::CannotSay(format!("{what} not measured"))
    }
}

/// `yes`, `no`, `within noise`, `cannot say: why`.
impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Yes => f.write_str("yes"),
            Verdict::No => f.write_str("no"),
            Verdict::WithinNoise => f.write_str("within noise"),
            Verdict::CannotSay(why) => write!(f, "cannot say: {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(v: &[f64]) -> Figure {
        Figure::new(v.to_vec()).unwrap()
    }

    #[test]
    fn a_rule_on_launches_says_how_often_ranges_are_apart_by_chance() {
        let rule = with_chance("yes when a's launches are all below b's, 3 launches or more.");
        assert!(rule.ends_with("apart by chance 10% of the time (5% per direction: 1 in 20 orders of the 6 launches each way)"), "{rule}");
        assert_eq!(with_chance(&rule), rule, "said once");
        assert_eq!(with_chance("Gooch's arithmetic"), "Gooch's arithmetic");
        // The 1 in 20: of the orders of 6 exchangeable values, those with a given 3 lowest.
        let orders = (0u32..64).filter(|m| m.count_ones() == 3).count();
        assert_eq!(orders, 20);
    }

    #[test]
    fn a_figure_shows_median_range_and_launches() {
        assert_eq!(fig(&[1173.0, 1054.0, 1114.0]).to_string(), "1114 (1054–1173, n=3)");
        assert_eq!(fig(&[5.0]).to_string(), "5.00 (n=1)");
        assert_eq!(fig(&[40.0, 38.0, 42.0]).with_unit("%"), "40.0% (38.0–42.0, n=3)");
        assert_eq!(fig(&[1.0, 2.0, 3.0, 10.0]).median(), 2.5);
        assert!(Figure::new(vec![]).is_none());
    }

    #[test]
    fn apart_only_with_three_launches_each_and_ranges_that_do_not_overlap() {
        // Issue 26's E8: 1114 (1054–1173) against 1127 (1097–1157) is no order.
        let hybrid = fig(&[1054.0, 1114.0, 1173.0]);
        let rtsig = fig(&[1097.0, 1127.0, 1157.0]);
        assert_eq!(order(&hybrid, &rtsig), Order::Within);
        assert_eq!(Verdict::below(&hybrid, &rtsig), Verdict::WithinNoise);
        assert_eq!(
            compare(("hybrid", &hybrid), ("rtsig", &rtsig)),
            "hybrid 1114 (1054–1173, n=3) within noise of rtsig 1127 (1097–1157, n=3)"
        );
        let fast = fig(&[900.0, 950.0, 1000.0]);
        assert_eq!(order(&fast, &rtsig), Order::Below);
        assert_eq!(order(&rtsig, &fast), Order::Above);
        assert_eq!(Verdict::below(&fast, &rtsig), Verdict::Yes);
        assert_eq!(Verdict::above(&fast, &rtsig), Verdict::No);
        // Two launches, however far apart, are too few.
        let two = fig(&[1.0, 2.0]);
        assert_eq!(order(&two, &rtsig), Order::TooFew);
        assert_eq!(Verdict::below(&two, &rtsig).to_string(), "cannot say: fewer than 3 launches");
        assert!(compare(("a", &two), ("b", &rtsig)).ends_with("too few launches (3 needed)"));
    }

    #[test]
    fn the_same_is_overlap_and_a_claim_of_parts_needs_them_all() {
        let a = fig(&[100.0, 110.0, 120.0]);
        let b = fig(&[115.0, 130.0, 140.0]);
        let c = fig(&[137.0, 150.0, 160.0]);
        assert_eq!(Verdict::same(&a, &b, 0.5), Verdict::Yes, "140 / 100 is under 1.5");
        assert_eq!(Verdict::same(&a, &b, FLAT_TOL), Verdict::WithinNoise, "overlap alone is no proof");
        assert_eq!(Verdict::same(&a, &c, FLAT_TOL), Verdict::No, "1.37x apart is not flat");
        // The reviewer's case: 500-2000 against 600-2100 overlaps but rules out no growth.
        let wide0 = fig(&[500.0, 1000.0, 2000.0]);
        let wide1 = fig(&[600.0, 1100.0, 2100.0]);
        assert_eq!(Verdict::same(&wide1, &wide0, FLAT_TOL), Verdict::WithinNoise);
        let tight0 = fig(&[1000.0, 1010.0, 1020.0]);
        let tight1 = fig(&[1015.0, 1030.0, 1050.0]);
        assert_eq!(Verdict::same(&tight1, &tight0, FLAT_TOL), Verdict::Yes);
        assert_eq!(
            Verdict::same(&tight1, &fig(&[1.0, 2.0]), FLAT_TOL).to_string(),
            "cannot say: fewer than 3 launches"
        );
        assert_eq!(Verdict::under(&a, 121.0), Verdict::Yes);
        assert_eq!(Verdict::under(&a, 99.0), Verdict::No);
        assert_eq!(Verdict::under(&a, 110.0), Verdict::WithinNoise);
        assert_eq!((Verdict::over(&a, 99.0), Verdict::over(&a, 121.0)), (Verdict::Yes, Verdict::No));
        assert_eq!(Verdict::all(&[Verdict::Yes, Verdict::Yes]), Verdict::Yes);
        assert!(matches!(Verdict::all(&[]), Verdict::CannotSay(_)), "an empty comparison judges nothing");
        assert_eq!(Verdict::all(&[Verdict::Yes, Verdict::WithinNoise]), Verdict::WithinNoise);
        assert_eq!(Verdict::all(&[Verdict::WithinNoise, Verdict::No]), Verdict::No);
        // One established no decides a conjunction, whatever else cannot be said.
        assert_eq!(Verdict::all(&[Verdict::unmeasured("poll"), Verdict::No]), Verdict::No);
        // Each reason once, even when not adjacent.
        let (p, e) = (Verdict::unmeasured("poll"), Verdict::unmeasured("epoll"));
        assert_eq!(
            Verdict::all(&[p.clone(), Verdict::Yes, e, p]).to_string(),
            "cannot say: epoll not measured; poll not measured"
        );
    }

    #[test]
    fn a_launch_is_its_note_s_launch_or_its_repetition_and_its_value_the_median_of_its_runs() {
        let row = |rep: u32, note: &str, v: f64| Row {
            note: note.into(),
            rep,
            ..Row::ok("E9", "mio", 100.0, "us_per_run", v)
        };
        let rows = [
            row(0, "launch 0; quiet", 10.0),
            row(1, "launch 0; quiet", 12.0),
            row(2, "launch 1", 20.0),
            row(3, "launch 1", 30.0),
            row(4, "launch 2", 5.0),
            Row { status: Status::Repeated, ..row(5, "launch 3", 1000.0) },
            Row { status: Status::Disturbed, ..row(6, "launch 2", 9000.0) },
            Row { status: Status::Disturbed, ..row(7, "launch 4", 9000.0) },
        ];
        let f = launches(&rows, "mio", 100.0, "us_per_run").unwrap();
        assert_eq!(f, fig(&[5.0, 11.0, 25.0]).excluding(2), "disturbed rows out of the figure");
        assert_eq!(f.to_string(), "11.0 (5.00–25.0, n=3; 2 disturbed rows excluded)");
        let by_rep = [row(0, "quiet", 1.0), row(1, "quiet", 2.0)];
        assert_eq!(launches(&by_rep, "mio", 100.0, "us_per_run").map(|f| f.n()), Some(2));
        assert_eq!(launches(&by_rep, "epoll", 100.0, "us_per_run"), None);
    }
}
