//! The report's rows for Banga et al.'s Figs. 8, 9 and Table 2, which the lab measures twice:
//! on the static server (E1, E2, E5) and on the proxy Banga measured (E11).

use super::{FigureRow, PaperNumber, UNMEASURED};
use crate::data::{num, Line};

/// Where a figure was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// `hintq serve` (E1, E2, E5).
    Server,
    /// `hintq proxy` (E11), Banga's own vehicle.
    Proxy,
}

/// The lines Banga drew, each with the series that stands for it here.
const CLASSICAL: (&str, &str) = ("hintq-select-classic", "classical select");
const IMPROVED: (&str, &str) = ("hintq-select", "improved select");
const POLL: (&str, &str) = ("hintq-poll", "poll");

/// Banga's cold-connection count for Fig. 8's number (§1) and for Fig. 9 and Table 2 (§7.3).
pub const FIG8_COLD: f64 = 2000.0;
/// Banga's cold-connection count for Fig. 9 and Table 2.
pub const PAPER_COLD: f64 = 750.0;

fn median(lines: &[Line], name: &str, x: f64) -> Option<f64> {
    lines.iter().find(|l| l.name == name)?.median(x)
}

/// Fig. 8: the event API's throughput (epoll) over select's at 2000 cold, against Banga's
/// +28%. Classical select, else improved select; poll stands in (no ratio) when neither was
/// measured there. `throughput` is the Fig. 8 panel's lines (x: cold connections).
pub fn fig8(setting: Setting, throughput: &[Line], holds: &str) -> FigureRow {
    let figure = match setting {
        Setting::Server => "Banga Fig. 8 (server)",
        Setting::Proxy => "Banga Fig. 8 (proxy)",
    };
    let epoll = median(throughput, "hintq-epoll", FIG8_COLD);
    let scan = [CLASSICAL, IMPROVED, POLL]
        .into_iter()
        .find_map(|(series, name)| Some((name, median(throughput, series, FIG8_COLD)?)));
    let (ours, ratio) = match (epoll, scan) {
        (Some(e), Some((name, s))) => (
            format!("{} (epoll {} ÷ {name} {} req/s at {FIG8_COLD} cold)", num(e / s), num(e), num(s)),
            if name == POLL.1 { Err("poll stands in for select".to_string()) } else { Ok(e / s) },
        ),
        _ => (
            format!("epoll and a select or poll line not both measured at {FIG8_COLD} cold"),
            Err("not measured".into()),
        ),
    };
    FigureRow {
        figure: figure.into(),
        claim: "The event API's throughput does not depend on cold connections, select's falls \
                with them.",
        paper: Some(PaperNumber {
            words: "+28% maximum throughput with 2000 connections (§1): event API ÷ select = 1.28",
            value: 1.28,
        }),
        ours,
        ratio,
        holds: holds.into(),
    }
}

/// Fig. 9: the highest rate the event API (epoll) achieved over improved select's at 750
/// cold, against Banga's 1348 ÷ 1291 at saturation. `achieved` is the achieved-throughput
/// lines at 750 cold (x: offered rate). If both achieved nearly every rate offered, neither
/// saturated and there is no ratio.
pub fn fig9(setting: Setting, achieved: &[Line], holds: &str) -> FigureRow {
    let figure = match setting {
        Setting::Server => "Banga Fig. 9 (server)",
        Setting::Proxy => "Banga Fig. 9 (proxy)",
    };
    // The highest median achieved, and whether it fell short of its offered rate.
    let top = |name: &str| {
        let l = achieved.iter().find(|l| l.name == name)?;
        let p = l.points.iter().max_by(|a, b| a.spread.median.total_cmp(&b.spread.median))?;
        let last = l.points.last()?;
        Some((p.spread.median, last.spread.median < 0.95 * last.x))
    };
    let (ours, ratio) = match (top("hintq-epoll"), top(IMPROVED.0)) {
        (Some((e, e_sat)), Some((s, s_sat))) => {
            let ours = format!(
                "{} (epoll {} ÷ improved select {} req/s, highest achieved at 750 cold)",
                num(e / s),
                num(e),
                num(s)
            );
            let ratio = if e_sat || s_sat {
                Ok(e / s)
            } else {
                Err("neither saturated within the rates offered".to_string())
            };
            (ours, ratio)
        }
        _ => ("epoll and improved select not both measured at 750 cold".into(), Err("not measured".into())),
    };
    FigureRow {
        figure: figure.into(),
        claim: "At 750 cold connections the event API has much lower latency and saturates at a \
                somewhat higher rate than improved select.",
        paper: Some(PaperNumber {
            words: "saturates at 1348 req/s vs 1291 for improved select (§7.3): ratio 1.044",
            value: 1348.0 / 1291.0,
        }),
        ours,
        ratio,
        holds: holds.into(),
    }
}

/// Table 2: one row per line of Banga's (classical select, improved select, the event API),
/// each the share (%) of CPU in event notification at 750 cold, 50 hot, 400 req/s. `shares`
/// is the lines of that share (x: cold connections); a line measured only at another cold
/// count is shown there, without a ratio.
pub fn table2(setting: Setting, shares: &[Line]) -> Vec<FigureRow> {
    let names: [&'static str; 3] = match setting {
        Setting::Server => [
            "Banga Table 2 (server): classical select",
            "Banga Table 2 (server): improved select",
            "Banga Table 2 (server): event API",
        ],
        Setting::Proxy => [
            "Banga Table 2 (proxy): classical select",
            "Banga Table 2 (proxy): improved select",
            "Banga Table 2 (proxy): event API",
        ],
    };
    // (x, share) at 750 cold, else at the most cold connections measured.
    let share = |series: &str| {
        let l = shares.iter().find(|l| l.name == series)?;
        l.at(PAPER_COLD).or(l.points.last()).map(|p| (p.x, p.spread.median))
    };
    let event =
        share("hintq-epoll").map(|s| ("epoll", s)).or_else(|| share("hintq-uring").map(|s| ("uring", s)));
    let (classical, improved, poll) = (share(CLASSICAL.0), share(IMPROVED.0), share(POLL.0));
    let pct = |v: Option<(f64, f64)>| v.map(|s| s.1);
    let judge = |holds: Option<bool>| match holds {
        Some(true) => "yes".to_string(),
        Some(false) => "no".to_string(),
        None => UNMEASURED.to_string(),
    };
    let row = |figure: &'static str,
               claim: &'static str,
               words: &'static str,
               value: f64,
               name: &str,
               got: Option<(f64, f64)>,
               holds: Option<bool>| {
        let (ours, ratio) = match got {
            Some((x, v)) => (
                format!("{}% ({name}, {x} cold)", num(v)),
                if x == PAPER_COLD { Ok(v) } else { Err(format!("measured at {x} cold, the paper at 750")) },
            ),
            None => (format!("{name} not measured"), Err("not measured".into())),
        };
        FigureRow {
            figure: figure.into(),
            claim,
            paper: Some(PaperNumber { words, value }),
            ours,
            ratio,
            holds: judge(holds),
        }
    };
    let (e, c, i) = (pct(event.map(|e| e.1)), pct(classical), pct(improved));
    // The largest scanning share measured, for the event API's verdict.
    let scan = [c, i, pct(poll)]
        .into_iter()
        .flatten()
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    vec![
        row(
            names[0],
            "Classical select spends a third of the CPU in event notification, the most of the three.",
            "34% of the CPU (33.51% in the table)",
            33.51,
            CLASSICAL.1,
            classical,
            c.map(|c| i.is_none_or(|i| c > i) && e.is_none_or(|e| c > e)),
        ),
        row(
            names[1],
            "Improved select cuts it to 12%, between classical select and the event API.",
            "12% of the CPU (12.02% in the table)",
            12.02,
            IMPROVED.1,
            improved,
            i.map(|i| c.is_none_or(|c| i < c) && e.is_none_or(|e| i > e)),
        ),
        row(
            names[2],
            "The event API almost eliminates the event-notification overhead.",
            "less than 1% of the CPU (0.68% in the table)",
            0.68,
            event.map_or("the event API (epoll)", |e| e.0),
            event.map(|e| e.1),
            e.zip(scan).map(|(e, s)| e < s / 3.0),
        ),
    ]
}
