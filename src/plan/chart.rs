//! Charts of sockets per C-LAN over virtual time, as SVG: what `rasgk plan --report-dir`
//! writes as standalone `.svg` files and inlines in its HTML page ([`super::page`]).
//!
//! The module knows nothing of the simulation: a [`Chart`] is a title, a duration, one
//! step series per C-LAN (`(virtual seconds, sockets)`, each value held until the next
//! point), the scenario's events and an optional socket cap. [`svg`] draws it:
//!
//! - one `<path class="series" data-clan="NAME">` step line per C-LAN, coloured by its group
//!   (C-LANs of one group share a family of hues), named in the legend;
//! - one `<g class="marker" data-event="LABEL">` per event: a dashed vertical line and its
//!   label;
//! - axes with ticks in seconds, minutes or hours (by the duration) and socket counts, and
//!   the cap as a dashed horizontal line.
//!
//! A day of virtual time sampled every second is 86,400 points per C-LAN: each series is
//! reduced to the pixel columns of the plot, keeping in every column the lowest and highest
//! value it held, so a one-second peak or dip stays visible and a chart of 16 such C-LANs
//! stays a few hundred kilobytes. Every text is escaped ([`escape`]) and every coordinate
//! written with one decimal, so the same chart gives the same bytes.

use std::fmt::Write as _;

/// A chart of sockets per C-LAN over virtual time.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart<'a> {
    /// Shown above the plot.
    pub title: &'a str,
    /// The virtual time the x axis spans, from 0 (seconds). When it is not a positive
    /// number, the time of the last point is used.
    pub duration_s: f64,
    /// One per C-LAN, drawn and listed in the legend in this order (grouped by
    /// [`Series::group`] in the legend).
    pub series: Vec<Series<'a>>,
    /// Scenario events (a C-LAN out of service, a gatekeeper restart).
    pub events: Vec<Marker<'a>>,
    /// The sockets a C-LAN may hold, drawn as a dashed line.
    pub cap: Option<u32>,
}

/// The sockets one C-LAN held over time.
#[derive(Debug, Clone, PartialEq)]
pub struct Series<'a> {
    /// The C-LAN's name (`data-clan` of its line, and its legend entry).
    pub name: &'a str,
    /// The group it belongs to (a region, a node): C-LANs of one group get neighbouring
    /// hues and one legend heading. May be empty.
    pub group: &'a str,
    /// `(virtual seconds, sockets)` sorted by time; each value holds until the next point,
    /// the last one until the end. Before the first point the C-LAN is not drawn.
    pub points: &'a [(f64, u32)],
}

/// A scenario event at a moment of virtual time.
#[derive(Debug, Clone, PartialEq)]
pub struct Marker<'a> {
    /// Seconds of virtual time.
    pub at_s: f64,
    /// What happened (`data-event` of the marker, and its label).
    pub label: &'a str,
}

/// Width of the whole chart (px).
const WIDTH: f64 = 960.0;
/// Left edge of the plot, after the socket axis's labels.
const PLOT_LEFT: f64 = 64.0;
/// Width of the plot: its pixel columns, the resolution series are reduced to.
const PLOT_COLUMNS: usize = 720;
/// Top edge of the plot, below the title.
const PLOT_TOP: f64 = 40.0;
/// Height of the plot.
const PLOT_HEIGHT: f64 = 300.0;
/// Below the plot: the time axis's labels and title.
const BOTTOM: f64 = 48.0;
/// Left edge of the legend.
const LEGEND_LEFT: f64 = PLOT_LEFT + PLOT_COLUMNS as f64 + 20.0;
/// Height of one legend line.
const LEGEND_ROW: f64 = 15.0;
/// Rows of event labels at the top of the plot before labels may overlap.
const LABEL_ROWS: usize = 4;

const AXIS: &str = "#444";
const GRID: &str = "#e4e4e4";
const EVENT: &str = "#666";

/// The chart as a complete standalone SVG document (XML declaration, `xmlns` set).
pub fn svg(chart: &Chart) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&svg_element(chart));
    out
}

/// The chart's `<svg>` element alone, to inline in an HTML page. It carries its size as
/// `width`/`height` and `viewBox`, so CSS may scale it.
pub fn svg_element(chart: &Chart) -> String {
    let frame = Frame::of(chart);
    let colours = colours(&chart.series);
    let legend = legend_lines(&chart.series);
    let legend_bottom = PLOT_TOP + LEGEND_ROW * legend.len() as f64;
    let height = (PLOT_TOP + PLOT_HEIGHT + BOTTOM).max(legend_bottom + 10.0);

    let mut out = String::with_capacity(64 * 1024);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="plan-chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="system-ui, sans-serif" font-size="11">"#,
        w = num(WIDTH),
        h = num(height),
    );
    let _ = writeln!(out, "<title>{}</title>", escape(chart.title));
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="#fff"/>"##);
    let _ = writeln!(
        out,
        r#"<text class="title" x="{}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        num(PLOT_LEFT),
        escape(chart.title)
    );
    value_axis(&mut out, &frame);
    time_axis(&mut out, &frame);
    if let Some(cap) = chart.cap {
        cap_line(&mut out, &frame, cap);
    }
    let _ = writeln!(
        out,
        r#"<g class="clans" fill="none" stroke-width="1.5" stroke-linejoin="round">"#
    );
    for (series, colour) in chart.series.iter().zip(&colours) {
        let d = step_path(
            &columns(series.points, frame.duration, PLOT_COLUMNS),
            &frame,
        );
        let _ = writeln!(
            out,
            r#"<path class="series" data-clan="{name}" stroke="{colour}" d="{d}"><title>{name}</title></path>"#,
            name = escape(series.name),
        );
    }
    out.push_str("</g>\n");
    markers(&mut out, &frame, &chart.events);
    legend_svg(&mut out, &legend, &chart.series, &colours);
    out.push_str("</svg>\n");
    out
}

pub use crate::markup::escape;

/// A file name for the chart titled `title`, without extension: lower-case ASCII letters
/// and digits, other runs as one `-` (`"Sockets per C-LAN (A)"` → `sockets-per-c-lan-a`).
pub fn file_stem(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("chart");
    }
    out
}

/// A coordinate or size: one decimal, never `-0.0`.
fn num(x: f64) -> String {
    let text = format!("{x:.1}");
    if text == "-0.0" {
        "0.0".to_string()
    } else {
        text
    }
}

/// The scales of one chart.
struct Frame {
    /// Seconds the x axis spans.
    duration: f64,
    /// Sockets at the top of the plot.
    top: u64,
    /// Sockets between two ticks.
    step: u64,
}

impl Frame {
    fn of(chart: &Chart) -> Frame {
        let duration = if chart.duration_s.is_finite() && chart.duration_s > 0.0 {
            chart.duration_s
        } else {
            chart
                .series
                .iter()
                .filter_map(|s| s.points.last())
                .map(|&(t, _)| t)
                .filter(|t| t.is_finite())
                .fold(0.0, f64::max)
        };
        let duration = if duration > 0.0 { duration } else { 1.0 };
        let highest = chart
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|&(_, v)| v))
            .chain(chart.cap)
            .max()
            .map_or(0, u64::from);
        let step = value_step(highest);
        let top = highest.div_ceil(step).max(1) * step;
        Frame {
            duration,
            top,
            step,
        }
    }

    /// x of a moment, clamped to the plot.
    fn x(&self, t: f64) -> f64 {
        PLOT_LEFT + t.clamp(0.0, self.duration) / self.duration * PLOT_COLUMNS as f64
    }

    /// y of a socket count.
    fn y(&self, v: impl Into<u64>) -> f64 {
        let v = v.into().min(self.top);
        PLOT_TOP + PLOT_HEIGHT - v as f64 / self.top as f64 * PLOT_HEIGHT
    }
}

/// Sockets between ticks: 1, 2 or 5 times a power of ten, at most six steps to `highest`.
fn value_step(highest: u64) -> u64 {
    let mut magnitude = 1u64;
    loop {
        for m in [1, 2, 5] {
            let step = m * magnitude;
            if highest <= 6 * step {
                return step;
            }
        }
        magnitude *= 10;
    }
}

/// The time axis's unit and tick step for `duration` seconds: (seconds per unit, unit
/// name, units between ticks). Seconds up to 2 min, minutes up to 2 h, hours beyond; at
/// most ten steps.
fn time_scale(duration: f64) -> (f64, &'static str, f64) {
    let (unit, name, steps): (f64, &str, &[f64]) = if duration <= 120.0 {
        (1.0, "s", &[1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0])
    } else if duration <= 7200.0 {
        (60.0, "min", &[1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 30.0, 60.0])
    } else {
        (
            3600.0,
            "h",
            &[1.0, 2.0, 3.0, 4.0, 6.0, 12.0, 24.0, 48.0, 168.0],
        )
    };
    let span = duration / unit;
    let step = steps
        .iter()
        .copied()
        .find(|step| span / step <= 10.0)
        .unwrap_or_else(|| (span / 10.0 / 168.0).ceil() * 168.0);
    (unit, name, step)
}

/// A moment of virtual time as `H:MM:SS`.
fn clock(t: f64) -> String {
    let s = if t.is_finite() {
        t.max(0.0).round() as u64
    } else {
        0
    };
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn value_axis(out: &mut String, frame: &Frame) {
    let left = num(PLOT_LEFT);
    let right = num(PLOT_LEFT + PLOT_COLUMNS as f64);
    out.push_str("<g class=\"value-axis\">\n");
    let mut v = 0;
    while v <= frame.top {
        let y = num(frame.y(v));
        let _ = writeln!(
            out,
            r#"<line x1="{left}" x2="{right}" y1="{y}" y2="{y}" stroke="{GRID}"/><text x="{}" y="{y}" dy="0.32em" text-anchor="end" fill="{AXIS}">{v}</text>"#,
            num(PLOT_LEFT - 6.0),
        );
        v += frame.step;
    }
    let _ = writeln!(
        out,
        r#"<line x1="{left}" x2="{left}" y1="{}" y2="{}" stroke="{AXIS}"/>"#,
        num(PLOT_TOP),
        num(PLOT_TOP + PLOT_HEIGHT)
    );
    let middle = PLOT_TOP + PLOT_HEIGHT / 2.0;
    let _ = writeln!(
        out,
        r#"<text x="16" y="{m}" transform="rotate(-90 16 {m})" text-anchor="middle" fill="{AXIS}">sockets</text>"#,
        m = num(middle)
    );
    out.push_str("</g>\n");
}

fn time_axis(out: &mut String, frame: &Frame) {
    let (unit, name, step) = time_scale(frame.duration);
    let bottom = PLOT_TOP + PLOT_HEIGHT;
    out.push_str("<g class=\"time-axis\">\n");
    let _ = writeln!(
        out,
        r#"<line x1="{}" x2="{}" y1="{b}" y2="{b}" stroke="{AXIS}"/>"#,
        num(PLOT_LEFT),
        num(PLOT_LEFT + PLOT_COLUMNS as f64),
        b = num(bottom)
    );
    let ticks = (frame.duration / unit / step + 1e-9).floor() as u64;
    for i in 0..=ticks {
        let value = i as f64 * step;
        let x = num(frame.x(value * unit));
        let _ = writeln!(
            out,
            r#"<line x1="{x}" x2="{x}" y1="{}" y2="{}" stroke="{AXIS}"/><text x="{x}" y="{}" text-anchor="middle" fill="{AXIS}">{value:.0}</text>"#,
            num(bottom),
            num(bottom + 5.0),
            num(bottom + 17.0),
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" fill="{AXIS}">virtual time ({name})</text>"#,
        num(PLOT_LEFT + PLOT_COLUMNS as f64 / 2.0),
        num(bottom + 36.0)
    );
    out.push_str("</g>\n");
}

fn cap_line(out: &mut String, frame: &Frame, cap: u32) {
    let y = num(frame.y(cap));
    let right = PLOT_LEFT + PLOT_COLUMNS as f64;
    let _ = writeln!(
        out,
        r##"<g class="cap" data-cap="{cap}"><line x1="{}" x2="{}" y1="{y}" y2="{y}" stroke="#c00" stroke-dasharray="6 4"/><text x="{}" y="{}" text-anchor="end" fill="#c00">cap {cap}</text></g>"##,
        num(PLOT_LEFT),
        num(right),
        num(right - 4.0),
        num(frame.y(cap) - 4.0),
    );
}

/// The events: a dashed line each, labels in rows at the top of the plot so that close
/// events do not write over each other (while there are rows left).
fn markers(out: &mut String, frame: &Frame, events: &[Marker]) {
    let right = PLOT_LEFT + PLOT_COLUMNS as f64;
    // Where each row of labels is taken up to, left to right.
    let mut rows = [f64::NEG_INFINITY; LABEL_ROWS];
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by(|&a, &b| events[a].at_s.total_cmp(&events[b].at_s));
    let mut placed = vec![(0.0, 0usize, false); events.len()];
    for i in order {
        let x = frame.x(if events[i].at_s.is_finite() {
            events[i].at_s
        } else {
            0.0
        });
        // An estimate of the label's width at 10 px.
        let width = 6.0 * events[i].label.chars().count() as f64 + 6.0;
        let flip = x + width > right;
        let (start, end) = if flip { (x - width, x) } else { (x, x + width) };
        let row = (0..LABEL_ROWS)
            .find(|&r| rows[r] < start)
            .unwrap_or_else(|| {
                (0..LABEL_ROWS)
                    .min_by(|&a, &b| rows[a].total_cmp(&rows[b]))
                    .unwrap_or(0)
            });
        rows[row] = end;
        placed[i] = (x, row, flip);
    }
    out.push_str("<g class=\"events\">\n");
    for (event, &(x, row, flip)) in events.iter().zip(&placed) {
        let label = escape(event.label);
        let (tx, anchor) = if flip {
            (x - 3.0, "end")
        } else {
            (x + 3.0, "start")
        };
        let _ = writeln!(
            out,
            r##"<g class="marker" data-event="{label}" data-at="{at}"><title>{label} at {at}</title><line x1="{x}" x2="{x}" y1="{}" y2="{}" stroke="{EVENT}" stroke-dasharray="3 3"/><text x="{}" y="{}" text-anchor="{anchor}" font-size="10" fill="#222" stroke="#fff" stroke-width="3" paint-order="stroke">{label}</text></g>"##,
            num(PLOT_TOP),
            num(PLOT_TOP + PLOT_HEIGHT),
            num(tx),
            num(PLOT_TOP + 11.0 + 12.0 * row as f64),
            at = clock(event.at_s),
            x = num(x),
        );
    }
    out.push_str("</g>\n");
}

/// One line of the legend: a group's heading, or a C-LAN (its index in the series).
#[derive(Debug, PartialEq)]
enum LegendLine<'a> {
    Group(&'a str),
    Clan(usize),
}

/// The legend's lines: groups in order of first appearance, each (when it has a name)
/// headed by it, with its C-LANs in series order.
fn legend_lines<'a>(series: &[Series<'a>]) -> Vec<LegendLine<'a>> {
    let mut lines = Vec::new();
    for (group, members) in groups(series) {
        if !group.is_empty() {
            lines.push(LegendLine::Group(group));
        }
        lines.extend(members.into_iter().map(LegendLine::Clan));
    }
    lines
}

/// The groups in order of first appearance, each with the indices of its series.
fn groups<'a>(series: &[Series<'a>]) -> Vec<(&'a str, Vec<usize>)> {
    let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, s) in series.iter().enumerate() {
        match groups.iter_mut().find(|(g, _)| *g == s.group) {
            Some((_, members)) => members.push(i),
            None => groups.push((s.group, vec![i])),
        }
    }
    groups
}

fn legend_svg(out: &mut String, lines: &[LegendLine], series: &[Series], colours: &[String]) {
    out.push_str("<g class=\"legend\">\n");
    for (n, line) in lines.iter().enumerate() {
        let y = PLOT_TOP + LEGEND_ROW * n as f64 + 8.0;
        match *line {
            LegendLine::Group(group) => {
                let _ = writeln!(
                    out,
                    r#"<text x="{}" y="{}" font-weight="bold" fill="{AXIS}">{}</text>"#,
                    num(LEGEND_LEFT),
                    num(y + 4.0),
                    escape(group)
                );
            }
            LegendLine::Clan(i) => {
                let _ = writeln!(
                    out,
                    r#"<g class="legend-item"><line x1="{}" x2="{}" y1="{y}" y2="{y}" stroke="{}" stroke-width="3"/><text x="{}" y="{}">{}</text></g>"#,
                    num(LEGEND_LEFT + 4.0),
                    num(LEGEND_LEFT + 20.0),
                    colours[i],
                    num(LEGEND_LEFT + 25.0),
                    num(y + 4.0),
                    escape(series[i].name),
                    y = num(y),
                );
            }
        }
    }
    out.push_str("</g>\n");
}

/// A colour per series (`#rrggbb`). Hues go round the circle in legend order, with a gap
/// of one step after each group, so a group's C-LANs share a family of neighbouring hues
/// and groups stand apart; lightness alternates within a group so neighbours differ.
fn colours(series: &[Series]) -> Vec<String> {
    let groups = groups(series);
    let slots = series.len() + groups.len();
    let mut out = vec![String::new(); series.len()];
    let mut slot = 0;
    for (_, members) in &groups {
        for (j, &i) in members.iter().enumerate() {
            let hue = 210.0 + 360.0 * slot as f64 / slots as f64;
            let lightness = if j % 2 == 0 { 0.38 } else { 0.55 };
            out[i] = hex(hsl(hue % 360.0, 0.75, lightness));
            slot += 1;
        }
        slot += 1;
    }
    out
}

/// HSL (hue in degrees, saturation and lightness in 0..=1) to RGB.
fn hsl(hue: f64, saturation: f64, lightness: f64) -> [u8; 3] {
    let chroma = (1.0 - (2.0 * lightness - 1.0).abs()) * saturation;
    let h = hue / 60.0;
    let x = chroma * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (chroma, x, 0.0),
        1 => (x, chroma, 0.0),
        2 => (0.0, chroma, x),
        3 => (0.0, x, chroma),
        4 => (x, 0.0, chroma),
        _ => (chroma, 0.0, x),
    };
    let m = lightness - chroma / 2.0;
    let byte = |c: f64| ((c + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    [byte(r), byte(g), byte(b)]
}

fn hex([r, g, b]: [u8; 3]) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// What one pixel column of a step line shows: every value the series held in it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Column {
    /// The column (0 at the plot's left).
    index: usize,
    /// Where its first change falls, px from the plot's left.
    x: f64,
    /// The value held when the column starts (`None` before the series' first point).
    enter: Option<u32>,
    /// The first value set in the column.
    first: u32,
    /// The lowest and highest values held in the column, `enter` included.
    min: u32,
    max: u32,
    /// The value held when the column ends.
    last: u32,
}

/// `points` reduced to the `width` pixel columns spanning `duration` seconds: only
/// columns where the value changes, each with what it held. Points after `duration` are
/// left out, points before 0 count at 0, and a point earlier than the one before it counts
/// at that one's time.
fn columns(points: &[(f64, u32)], duration: f64, width: usize) -> Vec<Column> {
    let mut out: Vec<Column> = Vec::new();
    let mut held: Option<u32> = None;
    let mut latest = 0.0f64;
    for &(t, v) in points {
        if t.is_nan() || t > duration {
            continue;
        }
        latest = latest.max(t);
        let x = latest / duration * width as f64;
        let index = (x.floor() as usize).min(width - 1);
        match out.last_mut() {
            Some(c) if c.index == index => {
                c.min = c.min.min(v);
                c.max = c.max.max(v);
                c.last = v;
            }
            _ => {
                if held != Some(v) {
                    out.push(Column {
                        index,
                        x,
                        enter: held,
                        first: v,
                        min: held.map_or(v, |h| h.min(v)),
                        max: held.map_or(v, |h| h.max(v)),
                        last: v,
                    });
                }
            }
        }
        held = Some(v);
    }
    out
}

/// The step line through `columns` (SVG path data): in each column a vertical stroke from
/// the value it entered with through its nearer and farther extremes to the value it left
/// with, horizontal strokes between, to the end of the plot.
fn step_path(columns: &[Column], frame: &Frame) -> String {
    let mut d = String::with_capacity(columns.len() * 24);
    let mut at = None;
    for c in columns {
        let x = num(PLOT_LEFT + c.x);
        let start = match c.enter {
            None => {
                let _ = write!(d, "M{x},{}", num(frame.y(c.first)));
                c.first
            }
            Some(e) => {
                let _ = write!(d, "H{x}");
                e
            }
        };
        let (near, far) = if start - c.min <= c.max - start {
            (c.min, c.max)
        } else {
            (c.max, c.min)
        };
        let mut current = start;
        for v in [near, far, c.last] {
            if v != current {
                let _ = write!(d, "V{}", num(frame.y(v)));
                current = v;
            }
        }
        at = Some(current);
    }
    if at.is_some() {
        let _ = write!(d, "H{}", num(PLOT_LEFT + PLOT_COLUMNS as f64));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart<'a>(series: Vec<Series<'a>>, events: Vec<Marker<'a>>) -> Chart<'a> {
        Chart {
            title: "Sockets per C-LAN",
            duration_s: 3600.0,
            series,
            events,
            cap: Some(400),
        }
    }

    #[test]
    fn a_one_second_peak_and_dip_in_a_day_stay_in_their_column() {
        let mut points: Vec<(f64, u32)> = (0..86_400).map(|t| (f64::from(t), 100)).collect();
        points[40_000].1 = 350;
        points[50_000].1 = 3;
        let columns = columns(&points, 86_400.0, PLOT_COLUMNS);
        // Only the columns where something changes.
        assert_eq!(columns.len(), 3, "{columns:?}");
        assert_eq!(columns[1].max, 350);
        assert_eq!(columns[1].last, 100);
        assert_eq!(columns[2].min, 3);
        assert_eq!(columns[2].last, 100);
        let frame = Frame {
            duration: 86_400.0,
            top: 400,
            step: 100,
        };
        let d = step_path(&columns, &frame);
        assert!(d.contains(&format!("V{}", num(frame.y(350u32)))), "{d}");
        assert!(d.contains(&format!("V{}", num(frame.y(3u32)))), "{d}");
    }

    #[test]
    fn a_step_line_holds_each_value_until_the_next_point() {
        let points = [(0.0, 10), (1800.0, 20), (2700.0, 0)];
        let frame = Frame {
            duration: 3600.0,
            top: 20,
            step: 5,
        };
        let d = step_path(&columns(&points, 3600.0, PLOT_COLUMNS), &frame);
        assert_eq!(d, "M64.0,190.0H424.0V40.0H604.0V340.0H784.0");
    }

    #[test]
    fn a_column_with_many_changes_draws_its_extremes_once() {
        // 10 → 12 → 4 → 8 in one column: up to 12, down to 4, back to 8.
        let points = [(0.0, 10), (1000.0, 12), (1001.0, 4), (1002.0, 8)];
        let c = columns(&points, 86_400.0, PLOT_COLUMNS);
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[1].enter, c[1].min, c[1].max, c[1].last),
            (Some(10), 4, 12, 8)
        );
        let frame = Frame {
            duration: 86_400.0,
            top: 20,
            step: 5,
        };
        let d = step_path(&c, &frame);
        let verticals = d.matches('V').count();
        assert_eq!(verticals, 3, "{d}");
    }

    #[test]
    fn points_out_of_the_run_are_kept_in_bounds() {
        let points = [(-5.0, 3), (f64::NAN, 9), (10.0, 4), (5.0, 6), (4000.0, 50)];
        let c = columns(&points, 3600.0, PLOT_COLUMNS);
        assert_eq!(c.iter().map(|c| c.index).collect::<Vec<_>>(), [0, 2]);
        // 5 s after 10 s counts at 10 s.
        assert_eq!(
            (c[1].enter, c[1].min, c[1].max, c[1].last),
            (Some(3), 3, 6, 6)
        );
    }

    #[test]
    fn one_series_and_one_marker_per_clan_and_event_with_names_escaped() {
        let a = [(0.0, 1), (600.0, 5)];
        let b = [(0.0, 2)];
        let svg = svg(&chart(
            vec![
                Series {
                    name: "<a&b>",
                    group: "r\"1\"",
                    points: &a,
                },
                Series {
                    name: "clan-2",
                    group: "r1",
                    points: &b,
                },
            ],
            vec![Marker {
                at_s: 600.0,
                label: "x<y> & 'z'",
            }],
        ));
        assert_eq!(svg.matches(r#"class="series""#).count(), 2);
        assert_eq!(svg.matches(r#"class="marker""#).count(), 1);
        assert!(svg.contains(r#"data-clan="&lt;a&amp;b&gt;""#), "{svg}");
        assert!(svg.contains(r#"data-event="x&lt;y&gt; &amp; &#39;z&#39;""#));
        assert!(svg.contains(">r&quot;1&quot;</text>"));
        assert!(!svg.contains("<a&b>"));
        assert!(svg.contains(r#"data-at="0:10:00""#));
        assert!(svg.contains(r#"class="cap" data-cap="400""#));
    }

    #[test]
    fn control_characters_do_not_reach_the_document() {
        assert_eq!(escape("a\u{1}b\tc"), "a\u{fffd}b\tc");
    }

    #[test]
    fn time_ticks_are_in_a_unit_fitting_the_run() {
        assert_eq!(time_scale(90.0), (1.0, "s", 10.0));
        assert_eq!(time_scale(3600.0), (60.0, "min", 10.0));
        assert_eq!(time_scale(86_400.0), (3600.0, "h", 3.0));
        assert_eq!(time_scale(30.0 * 86_400.0), (3600.0, "h", 168.0));
        assert_eq!(time_scale(200.0 * 86_400.0).2, 504.0);
    }

    #[test]
    fn socket_ticks_are_round_numbers() {
        assert_eq!(value_step(0), 1);
        assert_eq!(value_step(6), 1);
        assert_eq!(value_step(7), 2);
        assert_eq!(value_step(400), 100);
        assert_eq!(value_step(1_000_000), 200_000);
    }

    #[test]
    fn sixteen_clans_get_sixteen_colours() {
        let points = [(0.0, 1)];
        let names: Vec<String> = (0..16).map(|i| format!("clan-{i}")).collect();
        let series: Vec<Series> = names
            .iter()
            .enumerate()
            .map(|(i, name)| Series {
                name,
                group: ["east", "west", "north", "south"][i % 4],
                points: &points,
            })
            .collect();
        let mut colours = colours(&series);
        assert!(colours.iter().all(|c| c.len() == 7 && c.starts_with('#')));
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), 16);
        let lines = legend_lines(&series);
        assert_eq!(lines.len(), 20);
        assert_eq!(lines[0], LegendLine::Group("east"));
        assert_eq!(lines[1], LegendLine::Clan(0));
        assert_eq!(lines[2], LegendLine::Clan(4));
    }

    #[test]
    fn file_stems_are_plain() {
        assert_eq!(file_stem("Sockets per C-LAN (A)"), "sockets-per-c-lan-a");
        assert_eq!(file_stem("<>"), "chart");
    }

    #[test]
    fn the_same_chart_gives_the_same_bytes() {
        let a: Vec<(f64, u32)> = (0..5000).map(|t| (f64::from(t) * 0.7, t % 37)).collect();
        let make = || {
            svg(&chart(
                vec![Series {
                    name: "a",
                    group: "",
                    points: &a,
                }],
                vec![Marker {
                    at_s: 1.0 / 3.0,
                    label: "restart",
                }],
            ))
        };
        assert_eq!(make(), make());
    }
}
