//! E10, Banga et al. §9 (`SO_WAKEUP_ONE`): threads woken per readiness of a descriptor that
//! 1, 2, 4 and 8 blocked threads share, for a `Group` with `Delivery::One` on each backend,
//! plain shared epoll and `EPOLLEXCLUSIVE`; read from `hintq bench wake-one`.

use super::micro::tool_points;
use super::{panel, Analysis, Experiment, FigureRow, Lab, UNMEASURED};
use crate::data::{num, Line, Row};
use crate::runner::Point;
use crate::verdict::{self, Figure};
use hintq_bench::wake;
use std::time::Duration;

const WOKEN: &str = "wakeups_per_readiness";
const RETURNED: &str = "returns_per_readiness";

/// Each group line's worst median at 2 threads or more: its line, thread count and value.
fn worst_per_group(lines: &[Line]) -> Vec<(String, f64, f64)> {
    lines
        .iter()
        .filter(|l| l.name.starts_with("group-"))
        .filter_map(|l| {
            let worst = l
                .points
                .iter()
                .filter(|p| p.x >= 2.0)
                .max_by(|a, b| a.spread.median.total_cmp(&b.spread.median))?;
            Some((l.name.clone(), worst.x, worst.spread.median))
        })
        .collect()
}

/// Which groups' worst medians reach `most`, as the report prints them: the one group and its
/// thread count, or, where several print the same value, that they are equal (no "worst" among ties).
fn worst_named(worst: &[(String, f64, f64)], most: f64) -> String {
    let tied: Vec<&(String, f64, f64)> = worst.iter().filter(|w| num(w.2) == num(most)).collect();
    match tied[..] {
        [(name, n, _)] => format!("{name} at {n} threads"),
        _ if tied.len() == worst.len() => format!("equal on all {} group backends", worst.len()),
        _ => {
            let names: Vec<String> =
                tied.iter().map(|(name, n, _)| format!("{name} at {n} threads")).collect();
            format!("equal on {}", names.join(", "))
        }
    }
}

/// Whether one thread is woken per readiness (at most [`wake::GOAL`]) on each group backend:
/// `yes` on all, else on how many, naming those that miss with their wake-ups and returns per
/// readiness where they miss.
fn group_verdict(rows: &[Row], worst: &[(String, f64, f64)], returns: &[Line]) -> String {
    // Each group's launches at its worst point: every one at most the goal, or every one over.
    let figs: Vec<Option<Figure>> =
        worst.iter().map(|(name, n, _)| verdict::launches(rows, name, *n, WOKEN)).collect();
    let few = figs.iter().any(|f| f.as_ref().is_none_or(|f| f.n() < verdict::MIN_LAUNCHES));
    let straddle: Vec<String> = worst
        .iter()
        .zip(&figs)
        .filter_map(|((name, n, _), f)| {
            let f = f.as_ref()?;
            (f.min() <= wake::GOAL && f.max() > wake::GOAL).then(|| format!("{name} {f} at {n} threads"))
        })
        .collect();
    let said = group_text(worst, returns);
    if few {
        return format!("cannot say: fewer than {} launches ({said})", verdict::MIN_LAUNCHES);
    }
    if !straddle.is_empty() {
        return format!("within noise: launches on both sides of {} ({})", wake::GOAL, straddle.join("; "));
    }
    said
}

/// The verdict's words by the medians of each group's worst point.
fn group_text(worst: &[(String, f64, f64)], returns: &[Line]) -> String {
    let missed: Vec<String> = worst
        .iter()
        .filter(|w| w.2 > wake::GOAL)
        .map(|(name, n, v)| {
            let r = returns.iter().find(|l| &l.name == name).and_then(|l| l.median(*n));
            let r = r.map_or(String::new(), |r| format!(", {} returns", num(r)));
            format!("{name} {} wake-ups per readiness at {n} threads{r}", num(*v))
        })
        .collect();
    let (all, held) = (worst.len(), worst.len() - missed.len());
    match held {
        _ if missed.is_empty() => {
            format!(
                "yes: one thread woken per readiness (goal <= {}) on all {all} group backends",
                wake::GOAL
            )
        }
        0 => format!("no: on none of the {all} group backends ({})", missed.join("; ")),
        _ => format!("yes on {held} of {all} group backends; not on {}", missed.join("; ")),
    }
}

/// E10: what it reproduces, its plan and its analysis.
pub const EXPERIMENT: Experiment = Experiment {
    id: "E10",
    title: "threads woken per readiness of a descriptor shared by N blocked threads",
    paper: "Banga et al. §9 (SO_WAKEUP_ONE)",
    claim: "with process-wide interest and SO_WAKEUP_ONE, a readiness wakes one of the threads \
         waiting on a shared descriptor instead of all of them (the thundering herd).",
    needs: |lab| lab.need(&["bench", "wake-one"]),
    plan,
    analyse,
};

fn plan(lab: &Lab) -> Vec<Point> {
    let est = Duration::from_secs(lab.pick(15, 5, 2));
    let cpu = lab.cores.bench.to_string();
    let mut extra = vec!["--cpu", cpu.as_str()];
    if lab.smoke {
        extra.extend(["--backends", "epoll", "--rounds", "20"]);
    }
    tool_points(lab, "E10", "wake-one", &extra, lab.pick(3, 3, 1), est)
}

fn analyse(rows: &[Row]) -> Analysis {
    let x = "threads blocked on the descriptor";
    let a = panel(
        rows,
        WOKEN,
        "(a) wake-ups (voluntary context switches) per readiness",
        x,
        "wake-ups per readiness",
        (true, false),
    );
    let b = panel(
        rows,
        RETURNED,
        "(b) returns from the wait per readiness",
        x,
        "returns per readiness",
        (true, false),
    );
    let at = |name: &str, n: f64| a.lines.iter().find(|l| l.name == name).and_then(|l| l.median(n));
    let reading: Vec<String> = a
        .lines
        .iter()
        .filter_map(|l| {
            let (first, last) = l.ends()?;
            Some(format!(
                "{}: {} wake-ups per readiness with {} thread(s), {} with {}.",
                l.name,
                num(first.spread.median),
                first.x,
                num(last.spread.median),
                last.x
            ))
        })
        .collect();
    let worst = worst_per_group(&a.lines);
    let most = worst.iter().max_by(|x, y| x.2.total_cmp(&y.2));
    let (ours, holds) = match (most, at("epoll-shared", 8.0), at("epoll-exclusive", 8.0)) {
        (Some(&(_, _, most)), Some(shared), Some(excl)) => (
            format!(
                "Delivery::One: at most {} wake-ups per readiness ({}); at 8 threads shared epoll {}, \
                 EPOLLEXCLUSIVE {}",
                num(most),
                worst_named(&worst, most),
                num(shared),
                num(excl)
            ),
            group_verdict(rows, &worst, &b.lines),
        ),
        _ => ("a group line or a raw epoll line missing from the rows".into(), UNMEASURED.into()),
    };
    let figures = vec![FigureRow::without_number(
        "Banga §9 (wake-one)",
        "With SO_WAKEUP_ONE, a readiness wakes one of the threads waiting on a shared \
                descriptor instead of all of them.",
        ours.clone(),
        holds.clone(),
        &format!(
            "yes when, on every group backend, every launch's wake-ups per readiness at its worst thread \
             count (2 or more) is at most {}; no on a backend whose launches are all over it; within \
             noise when they straddle it; 3 launches or more",
            wake::GOAL
        ),
    )];
    Analysis {
        panels: vec![a, b],
        ours,
        holds,
        reading,
        metrics: vec![(WOKEN, "wake-ups per readiness"), (RETURNED, "returns from the wait per readiness")],
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exp::check::{contains, starts};

    const CSV: &str = "# command: x\n\
experiment,series,x,rep,metric,value,status,note\n\
E10,group-epoll,8,0,wakeups_per_readiness,1.01,ok,\nE10,group-epoll,8,0,returns_per_readiness,1,ok,\n\
E10,group-rtsig,8,0,wakeups_per_readiness,1,ok,\nE10,group-rtsig,8,0,returns_per_readiness,1,ok,\n\
E10,epoll-shared,8,0,wakeups_per_readiness,2,ok,\nE10,epoll-shared,8,0,returns_per_readiness,1,ok,\n\
E10,epoll-exclusive,8,0,wakeups_per_readiness,1,ok,\nE10,epoll-exclusive,8,0,returns_per_readiness,1,ok,\n";

    fn convert(text: &str) -> Vec<Row> {
        crate::data::read_csv(text).unwrap()
    }

    /// Every data line of `csv` three times, as launches 0, 1 and 2.
    fn three(csv: &str) -> String {
        let mut out = String::new();
        for l in csv.lines() {
            out.push_str(l);
            out.push('\n');
            if let Some((head, rest)) = l.split_once(",8,0,") {
                for rep in 1..3 {
                    out.push_str(&format!("{head},8,{rep},{rest}\n"));
                }
            }
        }
        out
    }

    #[test]
    fn rows_become_per_readiness_and_the_worst_group_is_judged() {
        let one = convert(CSV);
        assert_eq!(one.len(), 8);
        assert!(analyse(&one).holds.starts_with("cannot say: fewer than 3 launches"));
        let rows = convert(&three(CSV));
        let r = &rows[0];
        assert_eq!(
            (r.series.as_str(), r.x, r.metric.as_str(), r.value),
            ("group-epoll", 8.0, WOKEN, Some(1.01))
        );
        let an = analyse(&rows);
        assert_eq!(an.holds, "yes: one thread woken per readiness (goal <= 1.1) on all 2 group backends");
        contains(&an.ours, "1.01 wake-ups per readiness (group-epoll at 8 threads)");
        contains(&an.ours, "shared epoll 2.00, EPOLLEXCLUSIVE 1.00");
    }

    #[test]
    fn no_group_is_named_worst_among_equals() {
        let tied = three(CSV).replace("wakeups_per_readiness,1.01,", "wakeups_per_readiness,1,");
        let an = analyse(&convert(&tied));
        assert!(
            an.ours.starts_with(
                "Delivery::One: at most 1.00 wake-ups per readiness (equal on all 2 group backends);"
            ),
            "{}",
            an.ours
        );
        let three_groups = format!("{tied}E10,group-gooch,4,0,wakeups_per_readiness,0.9,ok,\n");
        let an = analyse(&convert(&three_groups));
        contains(&an.ours, "(equal on group-epoll at 8 threads, group-rtsig at 8 threads)");
    }

    #[test]
    fn launches_on_both_sides_of_the_goal_are_within_noise() {
        let mixed = three(CSV).replace(
            "group-epoll,8,1,wakeups_per_readiness,1.01,",
            "group-epoll,8,1,wakeups_per_readiness,2,",
        );
        let an = analyse(&convert(&mixed));
        starts(&an.holds, "within noise: launches on both sides of 1.1 (group-epoll 1.01");
    }

    #[test]
    fn a_herd_is_judged_no() {
        let herd = CSV.replace(
            "group-epoll,8,0,wakeups_per_readiness,1.01,",
            "group-epoll,8,0,wakeups_per_readiness,8,",
        );
        let an = analyse(&convert(&three(&herd)));
        assert_eq!(
            an.holds,
            "yes on 1 of 2 group backends; not on group-epoll 8.00 wake-ups per readiness at 8 threads, 1.00 returns"
        );
        // rtsig is judged like every other backend (its members used to be left out).
        let herd = CSV.replace(
            "group-rtsig,8,0,wakeups_per_readiness,1,",
            "group-rtsig,8,0,wakeups_per_readiness,7.5,",
        );
        let an = analyse(&convert(&three(&herd)));
        assert_eq!(
            an.holds,
            "yes on 1 of 2 group backends; not on group-rtsig 7.50 wake-ups per readiness at 8 threads, 1.00 returns"
        );
        let both = herd.replace(
            "group-epoll,8,0,wakeups_per_readiness,1.01,",
            "group-epoll,8,0,wakeups_per_readiness,2,",
        );
        let an = analyse(&convert(&three(&both)));
        starts(&an.holds, "no: on none of the 2 group backends (group-epoll 2.00");
    }
}
