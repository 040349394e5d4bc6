//! Plots in the style of the papers' figures: one line with markers per backend or peer,
//! axes labelled with units, min–max error bars over the repetitions; SVG and PNG. A linear x
//! axis whose values are all whole numbers (threads, members) has whole-number ticks only.

use crate::data::Line;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
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
    /// Logarithmic x axis (every x must be above 0).
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// The lines.
    pub lines: Vec<Line>,
}

const SIZE: (u32, u32) = (900, 600);
const FONT: &str = "sans-serif";

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
    let size = (width, SIZE.1 * rows as u32 * 5 / 6 + SIZE.1 / 6);
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
    for (area, panel) in areas.iter().zip(panels) {
        let (x0, x1) = bounds(panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x)), panel.log_x);
        let (y0, y1) = bounds(
            panel.lines.iter().flat_map(|l| l.points.iter().flat_map(|p| [p.spread.min, p.spread.max])),
            panel.log_y,
        );
        let ticks = x_ticks(panel, (x0, x1));
        match (panel.log_x, panel.log_y) {
            (false, false) => chart(area, panel, x0..x1, y0..y1, ticks),
            (true, false) => chart(area, panel, (x0..x1).log_scale(), y0..y1, ticks),
            (false, true) => chart(area, panel, x0..x1, (y0..y1).log_scale(), ticks),
            (true, true) => chart(area, panel, (x0..x1).log_scale(), (y0..y1).log_scale(), ticks),
        }?;
    }
    root.present().map_err(e)
}

/// The x axis's ticks: at most 12, and on a linear axis whose values are all whole numbers,
/// at most one per whole number (plotters then steps by 1, 2, 5, 10...), so no tick falls
/// between two thread counts. Returns the tick count and whether ticks must be whole.
fn x_ticks(panel: &Panel, (x0, x1): (f64, f64)) -> (usize, bool) {
    let mut xs = panel.lines.iter().flat_map(|l| l.points.iter().map(|p| p.x)).peekable();
    let whole = !panel.log_x && xs.peek().is_some() && xs.all(|x| x.fract() == 0.0);
    if whole {
        (12.min((x1.floor() - x0.ceil()).max(0.0) as usize + 1), true)
    } else {
        (12, false)
    }
}

/// Columns and rows for `n` panels: at most three side by side.
fn grid(n: usize) -> (usize, usize) {
    let cols = n.clamp(1, 3);
    (cols, n.max(1).div_ceil(cols))
}

/// The axis range of `values`, with a margin; from 0 on a linear axis.
fn bounds(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return (if log { 1.0 } else { 0.0 }, 10.0);
    }
    if log {
        let lo = if lo > 0.0 { lo } else { 1e-3 };
        (lo / 1.5, (hi * 1.5).max(lo * 2.0))
    } else {
        (lo.min(0.0), if hi > 0.0 { hi * 1.1 } else { 1.0 })
    }
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

fn chart<DB, X, Y>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    panel: &Panel,
    x: X,
    y: Y,
    (x_ticks, whole_x): (usize, bool),
) -> Result<(), String>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut c = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 17))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(e)?;
    c.configure_mesh()
        .x_desc(&panel.x_label)
        .y_desc(&panel.y_label)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .light_line_style(RGBColor(240, 240, 240))
        .x_labels(x_ticks)
        .y_labels(12)
        .x_label_formatter(&|v| if whole_x && v.fract() != 0.0 { String::new() } else { short(*v) })
        .y_label_formatter(&|v| short(*v))
        .draw()
        .map_err(e)?;
    for (i, line) in panel.lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let style = ShapeStyle::from(&color).stroke_width(2);
        let pts: Vec<(f64, f64)> = line.points.iter().map(|p| (p.x, p.spread.median)).collect();
        c.draw_series(LineSeries::new(pts.clone(), style))
            .map_err(e)?
            .label(label(&line.name))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        // Colours first, then the marker tells lines of the same colour apart.
        let marker = i / COLORS.len();
        c.draw_series(pts.iter().map(|&p| -> DynElement<DB, (f64, f64)> {
            match marker % 3 {
                0 => Circle::new(p, 4, style.filled()).into_dyn(),
                1 => TriangleMarker::new(p, 5, style.filled()).into_dyn(),
                _ => Cross::new(p, 4, style).into_dyn(),
            }
        }))
        .map_err(e)?;
        let bars = line.points.iter().filter(|p| p.spread.n > 1);
        c.draw_series(
            bars.map(|p| ErrorBar::new_vertical(p.x, p.spread.min, p.spread.median, p.spread.max, style, 8)),
        )
        .map_err(e)?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(e)?;
    Ok(())
}

/// An axis label: 1500 → 1.5k, 2e6 → 2M.
fn short(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a >= 1e6 {
        format!("{}M", trim(format!("{:.1}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        trim(format!("{v:.2}"))
    }
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
    fn thread_axes_have_whole_number_ticks() {
        let dir = tempfile::tempdir().unwrap();
        for (xs, want) in [
            (&[1.0, 2.0][..], &["0", "1", "2"][..]),
            (&[1.0, 2.0, 3.0, 4.0][..], &["0", "1", "2", "3", "4"][..]),
            (&[1.0, 8.0, 16.0][..], &["0", "2", "4", "6", "8", "10", "12", "14", "16"][..]),
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
    }
}
