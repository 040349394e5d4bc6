//! Plots in the style of the papers' figures: one line with markers per backend or peer,
//! axes labelled with units, min–max error bars over the repetitions; SVG and PNG.
//!
//! The ticks are chosen here, not by plotters: a log axis has a label at each decade (and at
//! 2 and 5 times it when the range spans less than two decades), labels are thinned so none
//! overlaps another and none is printed twice, and a linear x axis whose values are all whole
//! numbers (threads, members) has whole-number ticks only. An x axis with at most twelve
//! measured values is labelled at those values only. A value of 0 on a log axis is drawn
//! one decade below the least positive value, at a tick labelled 0, and the axis title says so.
//! Each series has its own colour and marker, the same in every panel and, for the mechanisms
//! and peers that recur (`KNOWN`), in every figure; a line joins a series' points only where
//! it has three or more; a y axis in percent runs from 0 to 100. The legend sits under the
//! chart, where it hides no data.

use crate::data::Line;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;
use std::path::Path;
use std::sync::Once;

/// One panel of a figure.
#[derive(Clone, Debug)]
pub struct Panel {
    /// Its caption (`(a) cost per call vs array_max`).
    pub title: String,
    /// The x axis, with its unit.
    pub x_label: String,
    /// The y axis, with its unit.
    pub y_label: String,
    /// Logarithmic x axis (a value of 0 is drawn a decade below the least positive one).
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// The lines.
    pub lines: Vec<Line>,
}

const SIZE: (u32, u32) = (900, 600);
const FONT: &str = "sans-serif";
/// The most distinct x values whose ticks are the values themselves.
const MEASURED_TICKS: usize = 12;
/// The height of a row of the legend, in pixels.
const LEGEND_ROW: u32 = 18;

fn fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// A series as legends and readings name it: the select backends and the kernel event
/// queues under Banga et al.'s names for the three lines of their Fig. 8.
pub fn label(series: &str) -> String {
    let banga = match series {
        "hintq-select-classic" => "classical select",
        "hintq-select" => "improved select",
        "hintq-uring" | "hintq-epoll" => "event API",
        _ => return series.to_string(),
    };
    format!("{series} ({banga})")
}

/// Renders `panels` side by side under `title` into `svg` and `png`.
///
/// # Errors
/// A drawing or file error, as text.
pub fn render(title: &str, panels: &[Panel], svg: &Path, png: &Path) -> Result<(), String> {
    fonts();
    let (cols, rows) = grid(panels.len());
    let width = (SIZE.0 * cols as u32 * 2 / 3 + SIZE.0 / 3).max(1200);
    // Every row of panels is as high as the one with the tallest legend.
    let legend = panels.iter().map(|p| legend_height(p, width / cols as u32)).max().unwrap_or(0);
    let size = (width, (SIZE.1 * 5 / 6 + legend) * rows as u32 + SIZE.1 / 6);
    draw(SVGBackend::new(svg, size).into_drawing_area(), title, panels)?;
    draw(BitMapBackend::new(png, size).into_drawing_area(), title, panels)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    panels: &[Panel],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    // Shrink a long title to the width (about 0.55 em per character).
    let width = root.dim_in_pixel().0 as f64;
    let size = (width / (title.chars().count() as f64 * 0.55)).clamp(12.0, 22.0);
    let root = root.titled(title, (FONT, size).into_font()).map_err(e)?;
    let (cols, rows) = grid(panels.len());
    let areas = root.split_evenly((rows, cols));
    for ((area, panel), styles) in areas.iter().zip(panels).zip(styles(panels)) {
        let (w, h) = area.dim_in_pixel();
        let (plot, below) = area.split_vertically(h - legend_height(panel, w));
        chart(&plot, panel, &styles)?;
        legend(&below, panel, &styles)?;
    }
    root.present().map_err(e)
}

/// Columns and rows for `n` panels: at most three side by side.
fn grid(n: usize) -> (usize, usize) {
    let cols = n.clamp(1, 3);
    (cols, n.max(1).div_ceil(cols))
}

/// The width of a 13-pixel label, estimated (DejaVu Sans: about 0.54 em a character).
fn text_px(text: &str) -> f64 {
    text.chars().count() as f64 * 7.0
}

/// Which way an axis runs, for how much room a tick label takes along it.
#[derive(Clone, Copy, Debug)]
enum Dir {
    X,
    Y,
}

/// The room a tick label needs along its axis, gap included, in pixels.
fn extent(dir: Dir, label: &str) -> f64 {
    match dir {
        Dir::X => text_px(label) + 12.0,
        Dir::Y => 20.0,
    }
}

/// One axis of a panel, as plotters' coordinate: values are drawn linearly, a log axis's as
/// their log10, and the ticks and their labels are chosen by [`Axis::new`].
#[derive(Clone, Debug)]
struct Axis {
    log: bool,
    /// Where a value of 0 or less is drawn (on a log axis).
    zero: f64,
    /// The drawn range.
    range: (f64, f64),
    /// The labelled ticks: drawn position, label.
    ticks: Vec<(f64, String)>,
    /// The unlabelled grid lines (drawn positions).
    light: Vec<f64>,
    /// What the axis title must add (where 0 is drawn on a log axis).
    note: Option<String>,
}

impl Axis {
    /// The axis for `values`, `px` pixels long; `whole`: ticks at whole numbers only.
    fn new(values: &[f64], log: bool, whole: bool, px: f64, dir: Dir) -> Axis {
        if !log {
            let (lo, hi) = values.iter().fold((0.0, 0.0), |(lo, hi): (f64, f64), &v| (lo.min(v), hi.max(v)));
            return Axis::linear(lo * 1.1, if hi > 0.0 { hi * 1.1 } else { 1.0 }, whole, px, dir);
        }
        let positive = values.iter().copied().filter(|&v| v > 0.0);
        let least = positive.clone().fold(f64::INFINITY, f64::min);
        let (least, most) =
            if least.is_finite() { (least, positive.fold(0.0, f64::max)) } else { (1.0, 10.0) };
        // 0 cannot be on a log axis: it is drawn a decade below the least positive value, and
        // no other tick is labelled between the two.
        let zero = values.iter().any(|&v| v <= 0.0).then_some(least / 10.0);
        let (lo, hi) = (zero.unwrap_or(least) / 1.5, most * 1.5);
        let candidates = zero.map(|z| (z, "0".to_string())).into_iter().chain(
            log_ticks(lo, hi)
                .into_iter()
                .filter(|v| (!whole || v.fract() == 0.0) && (zero.is_none() || *v >= least))
                .map(|v| (v, short(v))),
        );
        let ticks = thin(candidates.map(|(v, text)| (v.log10(), text)), px / (hi / lo).log10(), dir);
        let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let light = (first..=last)
            .flat_map(|d| (1..=9).map(move |m| f64::from(m) * 10f64.powi(d)))
            .filter(|v| (lo..=hi).contains(v))
            .map(f64::log10)
            .collect();
        Axis {
            log,
            zero: zero.unwrap_or(lo).log10(),
            range: (lo.log10(), hi.log10()),
            ticks,
            light,
            note: zero
                .map(|z| format!("log scale; 0 is drawn at {}, a decade below {}", short(z), short(least))),
        }
    }

    /// A linear axis from `lo` to `hi`.
    fn linear(lo: f64, hi: f64, whole: bool, px: f64, dir: Dir) -> Axis {
        let ticks = linear_ticks(lo, hi, whole, px, dir);
        // Five grid lines to a tick.
        let light = match &ticks[..] {
            [a, b, ..] => {
                let step = (b.0 - a.0) / 5.0;
                ((lo / step).ceil() as i64..=(hi / step).floor() as i64).map(|k| k as f64 * step).collect()
            }
            _ => Vec::new(),
        };
        Axis { log: false, zero: lo, range: (lo, hi), ticks, light, note: None }
    }

    /// Labels only the values measured, when there are at most [`MEASURED_TICKS`] distinct
    /// ones (a sweep's offered rates, cold counts), thinned so that none overlaps another:
    /// no tick suggests an x that was not measured.
    fn at_measured(&mut self, values: &[f64], px: f64, dir: Dir) {
        let v = crate::data::distinct(values.iter().copied().filter(|v| v.is_finite()));
        if v.is_empty() || v.len() > MEASURED_TICKS {
            return;
        }
        let span = self.range.1 - self.range.0;
        let label = |x: f64| if self.log && x <= 0.0 { "0".to_string() } else { short(x) };
        self.ticks = thin(v.iter().map(|&x| (self.at(x), label(x))), px / span, dir);
    }

    /// Where `v` is drawn.
    fn at(&self, v: f64) -> f64 {
        match (self.log, v > 0.0) {
            (false, _) => v,
            (true, true) => v.log10(),
            (true, false) => self.zero,
        }
    }
}

impl Ranged for Axis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.range()).map(v, limit)
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.ticks.iter().map(|t| t.0).collect()
        }
    }
    fn range(&self) -> Range<f64> {
        self.range.0..self.range.1
    }
}

impl ValueFormatter<f64> for Axis {
    fn format_ext(&self, v: &f64) -> String {
        self.ticks.iter().find(|t| t.0 == *v).map_or(String::new(), |t| t.1.clone())
    }
}

/// The ticks of a log axis from `lo` to `hi` (both above 0), most wanted first: each decade;
/// also 5 and 2 times it when fewer than three decades are in the range, and every whole
/// multiple when fewer than two are.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let ticks = |multiples: &[f64]| -> Vec<f64> {
        let all = multiples.iter().flat_map(|m| (first..=last).map(move |d| m * 10f64.powi(d)));
        all.filter(|v| (lo..=hi).contains(v)).collect()
    };
    match ticks(&[1.0]).len() {
        0 | 1 => ticks(&[1.0, 5.0, 2.0, 3.0, 4.0, 6.0, 7.0, 8.0, 9.0]),
        2 => ticks(&[1.0, 5.0, 2.0]),
        _ => ticks(&[1.0]),
    }
}

/// The ticks of a linear axis: the finest step of 1, 2 or 5 times a power of ten (at least 1
/// when `whole`) that gives at most 11 ticks whose labels all differ and fit in `px` pixels.
fn linear_ticks(lo: f64, hi: f64, whole: bool, px: f64, dir: Dir) -> Vec<(f64, String)> {
    let mut power = (hi - lo).log10().floor() as i32 - 2;
    loop {
        for m in [1.0, 2.0, 5.0] {
            let step = m * 10f64.powi(power);
            if whole && step < 1.0 {
                continue;
            }
            let ticks: Vec<(f64, String)> = ((lo / step).ceil() as i64..=(hi / step).floor() as i64)
                .map(|k| (k as f64 * step, short(k as f64 * step)))
                .collect();
            let room = ticks.iter().map(|t| extent(dir, &t.1)).fold(0.0, f64::max);
            let distinct = ticks.windows(2).all(|w| w[0].1 != w[1].1);
            if ticks.len() <= 1 || (ticks.len() <= 11 && distinct && step / (hi - lo) * px >= room) {
                return ticks;
            }
        }
        power += 1;
    }
}

/// The ticks to label among `candidates` (drawn position, label), most wanted first: each is
/// kept unless its label is already there or it would overlap a kept one. In axis order.
fn thin(
    candidates: impl IntoIterator<Item = (f64, String)>,
    px_per_unit: f64,
    dir: Dir,
) -> Vec<(f64, String)> {
    let mut kept: Vec<(f64, String)> = Vec::new();
    for (at, text) in candidates {
        let room = |other: &str| (extent(dir, &text) + extent(dir, other)) / 2.0;
        if kept.iter().all(|(k, t)| *t != text && (at - k).abs() * px_per_unit >= room(t)) {
            kept.push((at, text));
        }
    }
    kept.sort_by(|a, b| a.0.total_cmp(&b.0));
    kept
}

const COLORS: [RGBColor; 10] = [
    RGBColor(0, 0, 0),
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(23, 190, 207),
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Style {
    color: RGBColor,
    marker: Marker,
    /// A dashed line and hollow markers.
    dashed: bool,
}

const MARKERS: [Marker; 4] = [Marker::Circle, Marker::Triangle, Marker::Square, Marker::Diamond];

/// How many series [`style`] tells apart.
const STYLES: usize = COLORS.len() * MARKERS.len();

/// The style of the `i`th series: ten colours, each with four markers (solid, dashed, solid,
/// dashed lines), so that two series of the same colour differ in marker.
fn style(i: usize) -> Style {
    let (i, round) = (i % STYLES, i % STYLES / COLORS.len());
    Style {
        color: COLORS[i % COLORS.len()],
        marker: MARKERS[(i + round) % MARKERS.len()],
        dashed: round % 2 == 1,
    }
}

/// The fewest points drawn joined by a line: two are two measurements, not a series.
const SERIES: usize = 3;

/// The name of a reference line (replies equal to the rate offered): drawn thin, grey and
/// dashed, without markers or bars.
pub const OFFERED: &str = "replies = offered";

/// The colour of [`OFFERED`].
const REFERENCE: RGBColor = RGBColor(150, 150, 150);

impl Style {
    fn line(self) -> ShapeStyle {
        ShapeStyle::from(&self.color).stroke_width(2)
    }
}

/// The mechanisms and peers that recur across the figures, each with its own style in every
/// figure (`hintq-` left off: E3's `epoll` and E1's `hintq-epoll` look the same).
const KNOWN: &str = "epoll poll select select-classic uring rtsig rtsig-hybrid nginx mio gooch epoll-et \
    epoll-oneshot raw-epoll raw-uring gooch-p2 libevent-epoll libevent-poll libevent-select libev-epoll \
    libev-poll libev-select libuv-epoll";

/// The series of [`KNOWN`] that `name` is, or is a variant of, with `hintq-` and `group-`
/// left off and a configuration in brackets or after a dash added: E8's `rtsig (lowered
/// limit)` and E10's `group-epoll` and `epoll-shared` are `rtsig` and `epoll`. The second
/// value says whether `name` is the series itself (no dash suffix).
fn known(name: &str) -> Option<(usize, bool)> {
    let n = name.trim_start_matches("hintq-");
    let n = n.strip_prefix("group-").unwrap_or(n);
    let n = n.split(" (").next().unwrap_or(n);
    let list = || KNOWN.split(' ').enumerate();
    if let Some((i, _)) = list().find(|(_, k)| *k == n) {
        return Some((i, true));
    }
    let variant = list().filter(|(_, k)| n.strip_prefix(k).is_some_and(|rest| rest.starts_with('-')));
    variant.max_by_key(|(_, k)| k.len()).map(|(i, _)| (i, false))
}

/// The style of each line of each panel: a series of [`KNOWN`] (or a variant of one, see
/// [`known`]) by its place there, in every figure alike; the others by their place among the
/// figure's other series, after them, so that a series looks the same in every panel; when a
/// figure has more series than there are styles, by its place in its panel. Variants of one
/// known series in a figure keep its colour and marker; the second is dashed with hollow
/// markers, a third and later also take the next marker, so that none looks like another.
fn styles(panels: &[Panel]) -> Vec<Vec<Style>> {
    let known_len = KNOWN.split(' ').count();
    let mut names: Vec<&str> = Vec::new();
    let mut variants: Vec<&str> = Vec::new();
    for l in panels.iter().flat_map(|p| &p.lines) {
        let list = if known(&l.name).is_some() { &mut variants } else { &mut names };
        if !list.contains(&l.name.as_str()) {
            list.push(&l.name);
        }
    }
    // The series itself before its dash-suffixed variants, otherwise in order of appearance.
    variants.sort_by_key(|n| !known(n).is_some_and(|k| k.1));
    let fits = known_len + names.len() <= STYLES;
    let of = |name: &str| -> Option<Style> {
        if let Some((k, _)) = known(name) {
            let same = variants.iter().filter(|v| known(v).map(|v| v.0) == Some(k));
            let v = same.clone().position(|n| *n == name).unwrap_or(0);
            let s = style(k);
            let marker =
                MARKERS[(MARKERS.iter().position(|m| *m == s.marker).unwrap_or(0) + v / 2) % MARKERS.len()];
            return Some(Style { marker, dashed: s.dashed != (v % 2 == 1), ..s });
        }
        fits.then(|| Some(style(known_len + names.iter().position(|n| *n == name)?))).flatten()
    };
    panels
        .iter()
        .map(|p| p.lines.iter().enumerate().map(|(i, l)| of(&l.name).unwrap_or_else(|| style(i))).collect())
        .collect()
}

/// Draws the marker of `s` at pixel `at` of `area`.
fn marker<DB>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    (x, y): (i32, i32),
    s: Style,
) -> Result<(), String>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let fill = if s.dashed { s.line() } else { s.line().filled() };
    let corners: &[(i32, i32)] = match s.marker {
        Marker::Circle => return area.draw(&Circle::new((x, y), 4, fill)).map_err(e),
        Marker::Triangle => &[(0, -5), (5, 4), (-5, 4)],
        Marker::Square => &[(-4, -4), (4, -4), (4, 4), (-4, 4)],
        Marker::Diamond => &[(0, -6), (5, 0), (0, 6), (-5, 0)],
    };
    let at: Vec<(i32, i32)> = corners.iter().map(|(dx, dy)| (x + dx, y + dy)).collect();
    if s.dashed {
        let closed = at.iter().chain(at.first()).copied().collect::<Vec<_>>();
        area.draw(&PathElement::new(closed, s.line())).map_err(e)
    } else {
        area.draw(&Polygon::new(at, fill)).map_err(e)
    }
}

/// How far each line is moved sideways (in drawn x): lines of a single point at the same x
/// are spread 2.5% of the axis apart, so that none hides another.
fn dodges(lines: &[Line], x: &Axis) -> Vec<f64> {
    let keys: Vec<Option<u64>> = lines
        .iter()
        .map(|l| (l.points.len() == 1 && l.name != OFFERED).then(|| l.points[0].x.to_bits()))
        .collect();
    let step = 0.025 * (x.range.1 - x.range.0);
    keys.iter()
        .enumerate()
        .map(|(i, key)| {
            let (before, all) =
                (keys[..i].iter().filter(|k| *k == key).count(), keys.iter().filter(|k| *k == key).count());
            if key.is_none() {
                0.0
            } else {
                (before as f64 - (all - 1) as f64 / 2.0) * step
            }
        })
        .collect()
}

/// An axis title with `notes` in brackets.
fn titled(title: &str, notes: &[String]) -> String {
    if notes.is_empty() {
        title.to_string()
    } else {
        format!("{title} ({})", notes.join("; "))
    }
}

fn chart<DB>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    styles: &[Style],
) -> Result<(), String>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let xs: Vec<f64> = panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x)).collect();
    let ys: Vec<f64> = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().flat_map(|p| [p.spread.min, p.spread.median, p.spread.max]))
        .collect();
    // Thread and member counts: no tick between two whole numbers.
    let whole = !xs.is_empty() && xs.iter().all(|x| x.fract() == 0.0);
    let (w, h) = area.dim_in_pixel();
    let mut x = Axis::new(&xs, panel.log_x, whole, f64::from(w) - 95.0, Dir::X);
    x.at_measured(&xs, f64::from(w) - 95.0, Dir::X);
    // A share in percent runs from 0 to 100, whatever its values: 2% reads as 2% of the whole.
    let y = if panel.y_label.starts_with('%') && !panel.log_y {
        Axis::linear(0.0, 100.0, false, f64::from(h) - 100.0, Dir::Y)
    } else {
        Axis::new(&ys, panel.log_y, false, f64::from(h) - 100.0, Dir::Y)
    };
    let dx = dodges(&panel.lines, &x);
    let mut x_notes: Vec<String> = x.note.iter().cloned().collect();
    if dx.iter().any(|&d| d != 0.0) {
        x_notes.push("points at the same x drawn side by side".into());
    }
    let mut c = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 17))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x.clone(), y.clone())
        .map_err(e)?;
    c.configure_mesh()
        .x_desc(titled(&panel.x_label, &x_notes))
        .y_desc(titled(&panel.y_label, &y.note.iter().cloned().collect::<Vec<_>>()))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(e)?;
    if panel.lines.is_empty() {
        // An empty panel says so, rather than look like a measurement of nothing.
        let text = "not measured in this run (see the report's section)";
        let at = ((f64::from(w) / 2.0 - text_px(text) / 2.0) as i32, (h / 2) as i32);
        area.draw(&Text::new(text, at, (FONT, 16))).map_err(e)?;
    }
    for ((line, &s), dx) in panel.lines.iter().zip(styles).zip(dx) {
        if line.name == OFFERED {
            let pts = line.points.iter().map(|p| (x.at(p.x), y.at(p.spread.median)));
            c.draw_series(DashedLineSeries::new(pts, 6, 4, REFERENCE.stroke_width(1))).map_err(e)?;
            continue;
        }
        let bars = line.points.iter().filter(|p| p.spread.n > 1).map(|p| {
            let (min, median, max) = (y.at(p.spread.min), y.at(p.spread.median), y.at(p.spread.max));
            ErrorBar::new_vertical(x.at(p.x) + dx, min, median, max, s.line(), 8)
        });
        c.draw_series(bars).map_err(e)?;
        let pts: Vec<(f64, f64)> =
            line.points.iter().map(|p| (x.at(p.x) + dx, y.at(p.spread.median))).collect();
        // Two points are two measurements, not a series: a line between them would claim
        // what lies between.
        if pts.len() >= SERIES && s.dashed {
            c.draw_series(DashedLineSeries::new(pts.clone(), 10, 6, s.line())).map_err(e)?;
        } else if pts.len() >= SERIES {
            c.draw_series(LineSeries::new(pts.clone(), s.line())).map_err(e)?;
        }
        // Markers in pixels of the panel, so that their shapes do not depend on the axes.
        let base = area.get_base_pixel();
        for p in pts {
            let (px, py) = c.backend_coord(&p);
            marker(area, (px - base.0, py - base.1), s)?;
        }
    }
    Ok(())
}

/// Where the legend of `panel` puts its entries in `width` pixels: columns, column width, rows.
fn legend_layout(panel: &Panel, width: u32) -> (usize, u32, usize) {
    let n = panel.lines.len();
    let column = panel.lines.iter().map(|l| text_px(&label(&l.name))).fold(0.0, f64::max) as u32 + 50;
    let cols = ((width.saturating_sub(20) / column) as usize).clamp(1, n.max(1));
    (cols, column, n.div_ceil(cols))
}

/// The height of the legend under `panel`, `width` pixels wide.
fn legend_height(panel: &Panel, width: u32) -> u32 {
    match legend_layout(panel, width).2 as u32 {
        0 => 0,
        rows => rows * LEGEND_ROW + 12,
    }
}

/// The legend under a chart: a sample of each line with its marker and the series' name.
fn legend<DB>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    styles: &[Style],
) -> Result<(), String>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let width = area.dim_in_pixel().0;
    let (cols, column, _) = legend_layout(panel, width);
    let left = (width.saturating_sub(cols as u32 * column) / 2) as i32;
    let text = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (line, &s)) in panel.lines.iter().zip(styles).enumerate() {
        let x = left + (i % cols) as i32 * column as i32;
        let y = (i / cols) as i32 * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2 + 4;
        let sample = vec![(x, y), (x + 30, y)];
        if line.name == OFFERED {
            let grey = REFERENCE.stroke_width(1);
            area.draw(&plotters::element::DashedPathElement::new(sample, 6, 4, grey)).map_err(e)?;
            area.draw_text(&line.name, &text, (x + 38, y)).map_err(e)?;
            continue;
        }
        if s.dashed {
            area.draw(&plotters::element::DashedPathElement::new(sample, 7, 4, s.line())).map_err(e)?;
        } else {
            area.draw(&PathElement::new(sample, s.line())).map_err(e)?;
        }
        marker(area, (x + 15, y), s)?;
        area.draw_text(&label(&line.name), &text, (x + 38, y)).map_err(e)?;
    }
    Ok(())
}

/// A tick label: 1500 → 1500, 15000 → 15k, 2e6 → 2M, 0.05 → 0.05, with as many decimals as
/// the value needs (up to 6), so that two ticks never share a label.
fn short(v: f64) -> String {
    let (div, unit) = match v.abs() {
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e4 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let x = v / div;
    let exact = |s: &String| s.parse::<f64>().is_ok_and(|p| (p - x).abs() <= 1e-9 * x.abs());
    let text = (0..=6).map(|d| format!("{x:.d$}")).find(exact).unwrap_or_else(|| format!("{x:.3}"));
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Pt, Spread};

    fn line(name: &str, pts: &[(f64, f64, f64, f64)]) -> Line {
        let points = pts
            .iter()
            .map(|&(x, median, min, max)| Pt { x, spread: Spread { median, min, max, n: 3 }, disturbed: 0 })
            .collect();
        Line { name: name.into(), points }
    }

    #[test]
    fn renders_svg_and_png_with_labels_legend_and_log_axes() {
        let dir = tempfile::tempdir().unwrap();
        let panels = [
            Panel {
                title: "(a) linear".into(),
                x_label: "idle descriptors".into(),
                y_label: "ns per call".into(),
                log_x: false,
                log_y: false,
                lines: vec![line("epoll", &[(0.0, 800.0, 780.0, 820.0), (5000.0, 810.0, 790.0, 900.0)])],
            },
            Panel {
                title: "(b) log-log".into(),
                x_label: "socket pairs".into(),
                y_label: "µs per run".into(),
                log_x: true,
                log_y: true,
                lines: vec![
                    line("poll", &[(100.0, 4943.0, 4900.0, 5000.0), (9000.0, 1653500.0, 1.6e6, 1.7e6)]),
                    line("libevent-epoll", &[(100.0, 932.0, 900.0, 950.0)]),
                ],
            },
        ];
        let (svg, png) = (dir.path().join("f.svg"), dir.path().join("f.png"));
        render("E9 test", &panels, &svg, &png).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        for want in ["E9 test", "idle descriptors", "µs per run", "libevent-epoll", "M\n</text>"] {
            assert!(text.contains(want), "{want} missing from the SVG");
        }
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        assert!(bytes.len() > 10_000, "a PNG with text and lines, {} bytes", bytes.len());
        assert!(!text.contains("not measured in this run"), "no panel is empty");
        // An empty panel says it was not measured.
        let empty = [Panel { title: "(b) 5000 cold".into(), lines: Vec::new(), ..panels[0].clone() }];
        render("E2 test", &empty, &svg, &png).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("not measured in this run"), "the empty panel says nothing");
    }

    /// The x tick labels of a rendered SVG: the texts on the line of the lowest labels.
    fn x_tick_labels(svg: &str) -> Vec<String> {
        let texts: Vec<(f64, String)> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| {
                let y = t.split("y=\"").nth(1)?.split('"').next()?.parse().ok()?;
                let text = t.split('>').nth(1)?.split('<').next()?.trim().to_string();
                Some((y, text))
            })
            .collect();
        // The x labels sit on one line below the plot; the axis title is further down.
        let mut ys: Vec<f64> = texts.iter().map(|t| t.0).collect();
        ys.sort_by(f64::total_cmp);
        ys.dedup();
        let line = ys.iter().rev().find(|&&y| texts.iter().filter(|t| t.0 == y).count() > 1).unwrap();
        texts.into_iter().filter(|t| t.0 == *line).map(|t| t.1).collect()
    }

    #[test]
    fn x_ticks_are_the_measured_values_and_thread_axes_whole_numbers() {
        let dir = tempfile::tempdir().unwrap();
        // At most twelve measured values: those values only (issue 26: no tick suggests an x
        // that was not measured; one rate is one tick).
        let many: Vec<f64> = (1..=13).map(f64::from).collect();
        for (xs, want) in [
            (&[1.0, 2.0][..], &["1", "2"][..]),
            (&[1.0, 2.0, 3.0, 4.0][..], &["1", "2", "3", "4"][..]),
            (&[1.0, 8.0, 16.0][..], &["1", "8", "16"][..]),
            // More than twelve: whole-number ticks of the axis.
            (&many[..], &["0", "2", "4", "6", "8", "10", "12", "14"][..]),
        ] {
            let pts: Vec<(f64, f64, f64, f64)> =
                xs.iter().map(|&x| (x, 50_000.0, 49_000.0, 51_000.0)).collect();
            let p = Panel {
                title: "throughput".into(),
                x_label: "threads".into(),
                y_label: "replies per second".into(),
                log_x: false,
                log_y: false,
                lines: vec![line("half-sync", &pts)],
            };
            let svg = dir.path().join("t.svg");
            render("ticks", &[p], &svg, &dir.path().join("t.png")).unwrap();
            assert_eq!(x_tick_labels(&std::fs::read_to_string(&svg).unwrap()), want, "threads {xs:?}");
        }
        // One rate measured: one tick, on a log axis too, and 0 where a cold count was 0.
        for (xs, log, want) in
            [(&[8000.0][..], true, &["8000"][..]), (&[0.0, 2000.0][..], true, &["0", "2000"][..])]
        {
            let mut axis = Axis::new(xs, log, true, 600.0, Dir::X);
            axis.at_measured(xs, 600.0, Dir::X);
            assert_eq!(axis.ticks.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(), want, "{xs:?}");
        }
    }

    #[test]
    fn two_points_are_not_joined_and_a_share_in_percent_runs_to_100() {
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("p.svg");
        let p = |pts: &[(f64, f64, f64, f64)]| Panel {
            title: "errors".into(),
            x_label: "offered rate".into(),
            y_label: "% of requests ended by an error".into(),
            log_x: false,
            log_y: false,
            lines: vec![line("hintq-poll", pts)],
        };
        let drawn = |panel: Panel| {
            render("t", &[panel], &svg, &dir.path().join("p.png")).unwrap();
            std::fs::read_to_string(&svg).unwrap()
        };
        let two = drawn(p(&[(1.0, 0.0, 0.0, 0.0), (10.0, 0.0, 0.0, 0.0)]));
        let three = drawn(p(&[(1.0, 0.0, 0.0, 0.0), (5.0, 0.0, 0.0, 0.0), (10.0, 0.0, 0.0, 0.0)]));
        // A line through points: a polyline of three points or more (error bars and the
        // legend's sample are two-point segments).
        let lines = |svg: &str| {
            let points = svg.split("<polyline").skip(1).filter_map(|p| p.split("points=\"").nth(1));
            points.filter(|p| p.split('"').next().unwrap_or("").split_whitespace().count() >= 3).count()
        };
        assert_eq!((lines(&two), lines(&three)), (0, 1), "the three points joined, the two not");
        // No error at all: the axis still reads 0 to 100 (not 0 to 1 under a "%" label).
        let y_ticks: Vec<&str> = ["0", "20", "40", "60", "80", "100"]
            .into_iter()
            .filter(|t| two.contains(&format!(">\n{t}\n</text>")) || two.contains(&format!(">{t}</text>")))
            .collect();
        assert!(y_ticks.contains(&"100") && !two.contains(">\n0.2\n</text>"), "{y_ticks:?}");
    }

    #[test]
    fn empty_panel_still_renders() {
        let dir = tempfile::tempdir().unwrap();
        let p = Panel {
            title: "nothing".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x: true,
            log_y: true,
            lines: vec![],
        };
        render("empty", &[p], &dir.path().join("e.svg"), &dir.path().join("e.png")).unwrap();
    }

    #[test]
    fn short_labels() {
        assert_eq!(
            [short(1500.0), short(15000.0), short(2e6), short(0.5), short(0.0)],
            ["1500", "15k", "2M", "0.5", "0"]
        );
        assert_eq!(
            [short(12250.0), short(0.05), short(0.1 * 3.0), short(2.5e6)],
            ["12.25k", "0.05", "0.3", "2.5M"]
        );
    }

    fn labels(axis: &Axis) -> Vec<&str> {
        axis.ticks.iter().map(|t| t.1.as_str()).collect()
    }

    /// No two labels of `axis`, `px` pixels long, are the same or overlap.
    fn assert_readable(axis: &Axis, px: f64, dir: Dir) {
        let per_unit = px / (axis.range.1 - axis.range.0);
        for (i, a) in axis.ticks.iter().enumerate() {
            assert!((axis.range.0..=axis.range.1).contains(&a.0), "{a:?} outside {:?}", axis.range);
            for b in &axis.ticks[i + 1..] {
                assert_ne!(a.1, b.1, "a label twice: {:?}", labels(axis));
                let room = (extent(dir, &a.1) + extent(dir, &b.1)) / 2.0;
                assert!((b.0 - a.0) * per_unit >= room, "{} and {} overlap: {:?}", a.1, b.1, labels(axis));
            }
        }
    }

    #[test]
    fn log_axes_label_each_decade_and_2_and_5_within_two_decades() {
        // Four decades: each decade, nothing between.
        let wide = Axis::new(&[3.0, 50_000.0], true, false, 400.0, Dir::Y);
        assert_eq!(labels(&wide), ["10", "100", "1000", "10k"]);
        // Under two decades (E2's offered rates): 2 and 5 between them.
        let rates = Axis::new(&[1000.0, 32_000.0], true, false, 600.0, Dir::X);
        assert_eq!(labels(&rates), ["1000", "2000", "5000", "10k", "20k"]);
        // E10's threads: whole numbers, and 10 once.
        let threads = Axis::new(&[1.0, 2.0, 4.0, 8.0], true, true, 600.0, Dir::X);
        assert_eq!(labels(&threads), ["1", "2", "5", "10"]);
        // Within a decade (E4's declares): the data's decade and its neighbours' multiples.
        let declares = Axis::new(&[300.0, 2200.0], true, false, 450.0, Dir::Y);
        assert!(labels(&declares).starts_with(&["200", "300"]), "{:?}", labels(&declares));
        assert!(labels(&declares).contains(&"1000"), "{:?}", labels(&declares));
    }

    #[test]
    fn tick_labels_never_overlap_or_repeat() {
        for (lo, hi) in
            [(0.01, 0.05), (3.0, 9.0), (700.0, 1100.0), (8000.0, 10_500.0), (0.5, 3e7), (1.0, 1e12)]
        {
            for px in [120.0, 300.0, 700.0] {
                for dir in [Dir::X, Dir::Y] {
                    for log in [false, true] {
                        assert_readable(&Axis::new(&[lo, hi], log, false, px, dir), px, dir);
                    }
                }
            }
        }
    }

    #[test]
    fn zero_on_a_log_axis_is_drawn_a_decade_below_the_least_value_and_labelled_0() {
        let cold = Axis::new(&[0.0, 1000.0, 2000.0, 100_000.0], true, true, 600.0, Dir::X);
        assert_eq!(cold.ticks[0], (2.0, "0".to_string()));
        assert!(!labels(&cold).contains(&"100"), "{:?}", labels(&cold));
        assert!(labels(&cold).ends_with(&["1000", "10k", "100k"]), "{:?}", labels(&cold));
        assert_eq!(cold.at(0.0), 2.0);
        assert!(cold.note.as_deref().unwrap().contains("0 is drawn at 100"));
        assert!(Axis::new(&[1000.0, 100_000.0], true, true, 600.0, Dir::X).note.is_none());
    }

    #[test]
    fn every_known_series_and_as_many_others_have_different_styles() {
        let all: Vec<Style> = (0..STYLES).map(style).collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                // The same colour: a different marker.
                assert!(a.color != b.color || a.marker != b.marker, "{a:?} and {b:?}");
            }
        }
        // E10's eleven and E6's twelve series of their own fit after the known ones.
        assert!(STYLES >= KNOWN.split(' ').count() + 12);
    }

    /// A panel holding one point of each named series: what the style tests look at.
    fn p(names: &[&str]) -> Panel {
        Panel {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            log_x: false,
            log_y: false,
            lines: names.iter().map(|n| line(n, &[(1.0, 1.0, 1.0, 1.0)])).collect(),
        }
    }

    #[test]
    fn a_series_looks_the_same_in_every_panel_of_a_figure() {
        let s = styles(&[p(&["epoll", "poll", "nginx"]), p(&["epoll", "nginx"])]);
        assert_eq!(s[1], [s[0][0], s[0][2]]);
        // And in every figure: epoll (E3) is hintq-epoll (E1, E12) wherever it comes.
        let other = styles(&[p(&["libev-epoll", "hintq-nginx-like", "hintq-poll", "hintq-epoll"])]);
        assert_eq!((other[0][3], other[0][2]), (s[0][0], s[0][1]));
        assert_ne!(other[0][0], other[0][1]);
    }

    #[test]
    fn a_series_with_a_configuration_suffix_looks_like_its_base_series() {
        // E1's and E3's series, E8's (a limit in brackets) and E10's (group-, -shared).
        let base = styles(&[p(&["hintq-epoll", "hintq-rtsig", "poll", "uring"])]);
        let e8 = styles(&[p(&["epoll (default limit)", "rtsig (default limit)", "rtsig (lowered limit)"])]);
        let e10 = styles(&[
            p(&["group-epoll", "group-poll", "group-uring"]),
            p(&["epoll-shared", "epoll-exclusive"]),
        ]);
        assert_eq!((e8[0][0], e8[0][1]), (base[0][0], base[0][1]), "E8 against E1");
        assert_eq!(e10[0], [base[0][0], base[0][2], base[0][3]], "E10 against E1 and E3");
        // A second variant in the figure: the base's colour, told apart by its line.
        for (v, b) in [(e8[0][2], base[0][1]), (e10[1][0], base[0][0]), (e10[1][1], base[0][0])] {
            assert_eq!(v.color, b.color);
        }
        assert_ne!(e8[0][2], e8[0][1]);
        assert_ne!(e10[1][0], e10[1][1]);
        assert_ne!(e10[1][0], e10[0][0]);
        // A series that is known by itself (epoll-et) is not a variant of epoll.
        assert_eq!(
            styles(&[p(&["epoll-et"])])[0][0],
            style(KNOWN.split(' ').position(|k| k == "epoll-et").unwrap())
        );
    }

    #[test]
    fn single_points_at_one_x_are_drawn_side_by_side() {
        let lines = [
            line("a", &[(750.0, 20.0, 20.0, 20.0)]),
            line("b", &[(750.0, 20.0, 20.0, 20.0)]),
            line("c", &[(0.0, 5.0, 5.0, 5.0), (750.0, 20.0, 20.0, 20.0)]),
        ];
        let x = Axis::new(&[0.0, 750.0], false, true, 600.0, Dir::X);
        let d = dodges(&lines, &x);
        assert!(d[0] < 0.0 && d[1] > 0.0 && d[2] == 0.0, "{d:?}");
        // Far enough apart for two markers (10 pixels).
        assert!((d[1] - d[0]) * 600.0 / (x.range.1 - x.range.0) >= 10.0, "{d:?}");
    }
}
