//! Raw rows of `hintq bench rtsig` and `hintq bench gooch`, the CSV they are kept in, and the
//! grouping their summaries are made from (and only from: nothing here sees a clock).
//!
//! One row is one measured run of one target at one point of one repetition, or, for the
//! wake-up latency of `gooch`, one sample.

use crate::report::Spread;
use std::collections::BTreeMap;
use std::io::{self, Write};

/// One measured run: a line of the CSV.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rec {
    /// `overflow`, `scan` (rtsig); `perfd`, `split`, `wake` (gooch).
    pub experiment: String,
    /// A backend name, `rtsig-hybrid` (rtsig with the hybrid switch on) or `poll(2)` (raw).
    pub target: String,
    /// `default` or `lowered` (`RLIMIT_SIGPENDING` of the child it ran in); empty elsewhere.
    pub sigpending: String,
    /// The soft `RLIMIT_SIGPENDING` it ran under, where it matters.
    pub rlimit: Option<u64>,
    /// Repetition, from 0.
    pub rep: u32,
    /// Descriptors registered (or polled) in all.
    pub registered: usize,
    /// Descriptors made ready: the burst (rtsig) or the active set (gooch).
    pub active: usize,
    /// Operations timed: bursts, cycles, calls, or 1 for a latency sample.
    pub ops: u64,
    /// Events delivered by the timed calls.
    pub events: u64,
    /// Time measured, in nanoseconds.
    pub total_ns: u64,
    /// Wall time of the whole run, untimed parts included.
    pub wall_ns: u64,
    /// This thread's CPU time over the same span.
    pub cpu_ns: u64,
    /// Involuntary context switches over the same span.
    pub preempted: u64,
    /// `Stats::recoveries` of the queue over its life (fresh queue per run).
    pub recoveries: u64,
    /// `Stats::switches`, likewise.
    pub switches: u64,
    /// `Stats::migrations`, likewise.
    pub migrations: u64,
}

impl Rec {
    /// Nanoseconds per operation.
    pub fn ns_per_op(&self) -> f64 {
        self.total_ns as f64 / self.ops.max(1) as f64
    }

    /// Operations per second of measured time.
    pub fn per_sec(&self) -> f64 {
        self.ops as f64 * 1e9 / self.total_ns.max(1) as f64
    }

    /// Events per second of measured time.
    pub fn events_per_sec(&self) -> f64 {
        self.events as f64 * 1e9 / self.total_ns.max(1) as f64
    }

    /// Thread CPU nanoseconds per operation.
    pub fn cpu_per_op(&self) -> f64 {
        self.cpu_ns as f64 / self.ops.max(1) as f64
    }

    /// Share of the run's wall time this thread was on a CPU.
    pub fn on_cpu(&self) -> f64 {
        (self.cpu_ns as f64 / self.wall_ns.max(1) as f64).min(1.0)
    }

    /// The point this row belongs to, repetitions aside.
    pub fn key(&self) -> Key {
        Key {
            experiment: self.experiment.clone(),
            active: self.active,
            registered: self.registered,
            sigpending: self.sigpending.clone(),
            target: self.target.clone(),
        }
    }
}

/// A point: what the repetitions of one measurement share. Ordered for the tables.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    /// As in [`Rec`].
    pub experiment: String,
    /// As in [`Rec`].
    pub active: usize,
    /// As in [`Rec`].
    pub registered: usize,
    /// As in [`Rec`].
    pub sigpending: String,
    /// As in [`Rec`].
    pub target: String,
}

/// The CSV header line.
pub const COLUMNS: &str = "experiment,target,sigpending,rlimit,rep,registered,active,ops,events,total_ns,\
                           ns_per_op,wall_ns,cpu_ns,preempted,recoveries,switches,migrations";

/// Writes `# key: value` lines, then `notes` as `# ` lines, the header and one line per row.
pub fn write_csv(
    mut w: impl Write,
    meta: &[(String, String)],
    notes: &[String],
    rows: &[Rec],
) -> io::Result<()> {
    for (k, v) in meta {
        writeln!(w, "# {k}: {}", v.replace('\n', " "))?;
    }
    for n in notes {
        writeln!(w, "# {}", n.replace('\n', " "))?;
    }
    writeln!(w, "{COLUMNS}")?;
    rows.iter().try_for_each(|r| writeln!(w, "{}", line(r)))
}

/// One row as a CSV line (no field here can hold a comma: names are fixed words).
pub fn line(r: &Rec) -> String {
    format!(
        "{},{},{},{},{},{},{},{},{},{},{:.1},{},{},{},{},{},{}",
        r.experiment,
        r.target,
        r.sigpending,
        r.rlimit.map_or(String::new(), |v| v.to_string()),
        r.rep,
        r.registered,
        r.active,
        r.ops,
        r.events,
        r.total_ns,
        r.ns_per_op(),
        r.wall_ns,
        r.cpu_ns,
        r.preempted,
        r.recoveries,
        r.switches,
        r.migrations
    )
}

/// Reads the rows back: comment lines, blank lines and the header are skipped.
pub fn read_csv(text: &str) -> Result<Vec<Rec>, String> {
    let mut rows = Vec::new();
    for (no, l) in text.lines().enumerate() {
        if l.starts_with('#') || l.trim().is_empty() || l == COLUMNS {
            continue;
        }
        let bad = |what: &str| format!("line {}: bad {what}: {l}", no + 1);
        let f: Vec<&str> = l.split(',').collect();
        if f.len() != COLUMNS.split(',').count() {
            return Err(bad("field count"));
        }
        let num = |i: usize| f[i].parse::<u64>().map_err(|_| bad(COLUMNS.split(',').nth(i).unwrap_or("")));
        rows.push(Rec {
            experiment: f[0].into(),
            target: f[1].into(),
            sigpending: f[2].into(),
            rlimit: if f[3].is_empty() { None } else { Some(num(3)?) },
            rep: num(4)? as u32,
            registered: num(5)? as usize,
            active: num(6)? as usize,
            ops: num(7)?,
            events: num(8)?,
            total_ns: num(9)?,
            wall_ns: num(11)?,
            cpu_ns: num(12)?,
            preempted: num(13)?,
            recoveries: num(14)?,
            switches: num(15)?,
            migrations: num(16)?,
        });
    }
    Ok(rows)
}

/// The rows of `experiment`, grouped by point, in table order.
pub fn points<'a>(rows: &'a [Rec], experiment: &str) -> BTreeMap<Key, Vec<&'a Rec>> {
    let mut m: BTreeMap<Key, Vec<&Rec>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.experiment == experiment) {
        m.entry(r.key()).or_default().push(r);
    }
    m
}

/// The spread of `metric` over the rows of one point.
pub fn spread(rows: &[&Rec], metric: impl Fn(&Rec) -> f64) -> Spread {
    let v: Vec<f64> = rows.iter().map(|r| metric(r)).collect();
    Spread::of(&v).unwrap_or(Spread { median: 0.0, min: 0.0, max: 0.0, n: 0 })
}

/// The median of `metric` at the point `key` with its target replaced by `target`.
pub fn median_at(
    m: &BTreeMap<Key, Vec<&Rec>>,
    key: &Key,
    target: &str,
    metric: impl Fn(&Rec) -> f64,
) -> Option<f64> {
    let k = Key { target: target.into(), ..key.clone() };
    m.get(&k).map(|rows| spread(rows, metric).median)
}

/// A closing line on how disturbed the runs were (rows below [`crate::report::QUIET`]).
pub fn noise_line(rows: &[Rec]) -> String {
    let noisy = rows.iter().filter(|r| r.on_cpu() < crate::report::QUIET).count();
    let preempted: u64 = rows.iter().map(|r| r.preempted).sum();
    format!(
        "{noisy} of {} rows ran less than {:.0}% of their wall time on the CPU ({preempted} preemptions in \
         all){}",
        rows.len(),
        crate::report::QUIET * 100.0,
        if noisy > 0 {
            ": the machine was busy (or the run blocked), treat their times as upper bounds"
        } else {
            ""
        }
    )
}

/// `1234567.8` as `1.23M`, `12345` as `12.3k`: rates in a table column.
pub fn si(v: f64) -> String {
    match v.abs() {
        a if a >= 1e6 => format!("{:.2}M", v / 1e6),
        a if a >= 1e4 => format!("{:.1}k", v / 1e3),
        a if a >= 1e3 => format!("{:.2}k", v / 1e3),
        _ => format!("{v:.0}"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A row with the given point and measurements; the rest plausible.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rec(
        exp: &str,
        target: &str,
        sig: &str,
        rep: u32,
        n: usize,
        k: usize,
        ops: u64,
        ns: u64,
    ) -> Rec {
        Rec {
            experiment: exp.into(),
            target: target.into(),
            sigpending: sig.into(),
            rlimit: (!sig.is_empty()).then_some(if sig == "lowered" { 64 } else { 96365 }),
            rep,
            registered: n,
            active: k,
            ops,
            events: ops * k as u64,
            total_ns: ns,
            wall_ns: ns,
            cpu_ns: ns,
            ..Rec::default()
        }
    }

    #[test]
    fn csv_round_trips() {
        let mut rows = vec![rec("overflow", "rtsig", "lowered", 0, 1256, 256, 1000, 50_000_000)];
        rows[0].recoveries = 999;
        rows.push(rec("perfd", "poll(2)", "", 2, 100, 0, 10, 20_000));
        let mut buf = Vec::new();
        write_csv(
            &mut buf,
            &[("command".into(), "hintq bench rtsig".into())],
            &["note, with comma".into()],
            &rows,
        )
        .unwrap();
        let text = String::from_utf8(buf).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("# command: hintq bench rtsig"));
        assert_eq!(lines.next(), Some("# note, with comma"));
        assert_eq!(lines.next(), Some(COLUMNS));
        assert_eq!(
            lines.next(),
            Some("overflow,rtsig,lowered,64,0,1256,256,1000,256000,50000000,50000.0,50000000,50000000,0,999,0,0")
        );
        assert_eq!(read_csv(&text).unwrap(), rows);
        assert!(read_csv("a,b\n").unwrap_err().contains("field count"));
    }

    #[test]
    fn rates_and_groups() {
        let r = rec("split", "gooch", "", 0, 1000, 10, 2000, 1_000_000_000);
        assert_eq!((r.per_sec(), r.events_per_sec(), r.cpu_per_op()), (2000.0, 20000.0, 500_000.0));
        let rows = [
            rec("split", "gooch", "", 0, 1000, 10, 1, 3),
            rec("split", "gooch", "", 1, 1000, 10, 1, 1),
            rec("split", "poll", "", 0, 1000, 10, 1, 9),
            rec("wake", "poll", "", 0, 1000, 10, 1, 9),
        ];
        let m = points(&rows, "split");
        assert_eq!(m.len(), 2);
        let key = m.keys().next().unwrap().clone();
        assert_eq!(key.target, "gooch");
        assert_eq!(spread(&m[&key], Rec::ns_per_op).median, 2.0);
        assert_eq!(median_at(&m, &key, "poll", Rec::ns_per_op), Some(9.0));
        assert_eq!(median_at(&m, &key, "epoll", Rec::ns_per_op), None);
        assert_eq!(
            (si(1_234_567.0), si(12_345.0), si(1234.0), si(12.0)),
            ("1.23M".into(), "12.3k".into(), "1.23k".into(), "12".into())
        );
    }
}
