//! The HTML page of `rasgk plan --report-dir`: headings, text, tables and the charts of
//! [`super::chart`] inlined as SVG, and side by side for an A/B run (`--compare`).
//!
//! The page is one self-contained file that can be mailed or opened from disk anywhere: its
//! CSS is inline, its charts inline SVG, it has no script, and it loads nothing — no CDN, no
//! web font, no image. Its Content-Security-Policy (`default-src 'none'`) makes the browser
//! refuse any outside load should one slip in. Every text is escaped, and the same sections
//! give the same bytes.

use std::fmt::Write as _;

use super::chart::{escape, svg_element, Chart};

/// A part of the page.
#[derive(Debug, Clone, PartialEq)]
pub enum Section<'a> {
    /// A heading (`<h2>`).
    Heading(&'a str),
    /// A paragraph of plain text.
    Text(String),
    /// A table; cells that read as numbers are right-aligned.
    Table {
        caption: String,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// A chart, inlined as SVG.
    Chart(Chart<'a>),
    /// Sections in columns next to each other (A and B of `--compare`); they stack when
    /// the window is too narrow.
    SideBySide(Vec<Section<'a>>),
    /// Sections kept together, one after the other: a column of [`Section::SideBySide`]
    /// holding more than one section (a heading, a table and a chart of run A).
    Group(Vec<Section<'a>>),
}

/// The page's style: readable without any font download, charts as wide as their column.
const STYLE: &str = "\
:root { color-scheme: light; }
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 120rem; padding: 0 1rem; color: #222; background: #fff; line-height: 1.4; }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 0.5rem; }
p { margin: 0.5rem 0; max-width: 60rem; }
table { border-collapse: collapse; margin: 0.75rem 0; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: bold; padding-bottom: 0.25rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.2rem 0.6rem; text-align: left; }
th { background: #f4f4f4; }
td.num { text-align: right; }
figure.chart { margin: 0.75rem 0; }
figure.chart svg { display: block; width: 100%; height: auto; max-width: 960px; }
.side-by-side { display: grid; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); gap: 1.5rem; align-items: start; }
.side-by-side > .side { min-width: 0; }
@media print { .side-by-side { grid-template-columns: 1fr; } }
";

/// The whole page: `title` as `<title>` and `<h1>`, then `sections` in order.
pub fn html(title: &str, sections: &[Section]) -> String {
    let mut out = String::with_capacity(256 * 1024);
    let title = escape(title);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" \
         content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{title}</title>");
    let _ = writeln!(out, "<style>\n{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(out, "<h1>{title}</h1>");
    for section in sections {
        write_section(&mut out, section);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn write_section(out: &mut String, section: &Section) {
    match section {
        Section::Heading(text) => {
            let _ = writeln!(out, "<h2>{}</h2>", escape(text));
        }
        Section::Text(text) => {
            let _ = writeln!(out, "<p>{}</p>", escape(text));
        }
        Section::Table {
            caption,
            header,
            rows,
        } => table(out, caption, header, rows),
        Section::Chart(chart) => {
            out.push_str("<figure class=\"chart\">\n");
            out.push_str(&svg_element(chart));
            out.push_str("</figure>\n");
        }
        Section::SideBySide(sides) => {
            out.push_str("<div class=\"side-by-side\">\n");
            for side in sides {
                out.push_str("<div class=\"side\">\n");
                write_section(out, side);
                out.push_str("</div>\n");
            }
            out.push_str("</div>\n");
        }
        Section::Group(sections) => {
            out.push_str("<section>\n");
            for section in sections {
                write_section(out, section);
            }
            out.push_str("</section>\n");
        }
    }
}

fn table(out: &mut String, caption: &str, header: &[String], rows: &[Vec<String>]) {
    out.push_str("<table>\n");
    if !caption.is_empty() {
        let _ = writeln!(out, "<caption>{}</caption>", escape(caption));
    }
    if !header.is_empty() {
        out.push_str("<thead><tr>");
        for cell in header {
            let _ = write!(out, "<th scope=\"col\">{}</th>", escape(cell));
        }
        out.push_str("</tr></thead>\n");
    }
    out.push_str("<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            if is_number(cell) {
                let _ = write!(out, "<td class=\"num\">{}</td>", escape(cell));
            } else {
                let _ = write!(out, "<td>{}</td>", escape(cell));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Whether a cell reads as a number (`42`, `-3.5`, `97.2 %`, `12%`).
fn is_number(cell: &str) -> bool {
    let text = cell.trim().trim_end_matches('%').trim_end();
    !text.is_empty() && text.parse::<f64>().is_ok_and(f64::is_finite)
}

#[cfg(test)]
mod tests {
    use super::super::chart::{Marker, Series};
    use super::*;

    #[test]
    fn text_and_tables_are_escaped_and_numbers_aligned() {
        let page = html(
            "A & B <plan>",
            &[
                Section::Heading("<h2>"),
                Section::Text("1 < 2 & \"3\"".to_string()),
                Section::Table {
                    caption: "per <C-LAN>".to_string(),
                    header: vec!["C-LAN".to_string(), "peak".to_string()],
                    rows: vec![vec!["<a&b>".to_string(), "97.5 %".to_string()]],
                },
            ],
        );
        assert!(page.contains("<title>A &amp; B &lt;plan&gt;</title>"));
        assert!(page.contains("<h2>&lt;h2&gt;</h2>"));
        assert!(page.contains("<p>1 &lt; 2 &amp; &quot;3&quot;</p>"));
        assert!(page.contains("<caption>per &lt;C-LAN&gt;</caption>"));
        assert!(page.contains("<td>&lt;a&amp;b&gt;</td><td class=\"num\">97.5 %</td>"));
        assert!(!page.contains("<a&b>"));
    }

    #[test]
    fn charts_side_by_side_are_inlined_and_nothing_is_loaded() {
        let points = [(0.0, 3), (60.0, 5)];
        let chart = |title| Chart {
            title,
            duration_s: 120.0,
            series: vec![Series {
                name: "c1",
                group: "",
                points: &points,
            }],
            events: vec![Marker {
                at_s: 30.0,
                label: "restart",
            }],
            cap: None,
        };
        let make = || {
            html(
                "plan",
                &[Section::SideBySide(vec![
                    Section::Group(vec![Section::Heading("A"), Section::Chart(chart("A"))]),
                    Section::Group(vec![Section::Heading("B"), Section::Chart(chart("B"))]),
                ])],
            )
        };
        let page = make();
        assert_eq!(page, make());
        assert_eq!(page.matches("<figure class=\"chart\">").count(), 2);
        assert_eq!(page.matches("<div class=\"side\">").count(), 2);
        assert_eq!(page.matches("class=\"series\"").count(), 2);
        // Inlined: no XML declaration inside the HTML.
        assert!(!page.contains("<?xml"));
        assert!(!page.contains("<script"));
        let urls = page.matches("http://").count() + page.matches("https://").count();
        assert_eq!(urls, page.matches("http://www.w3.org/2000/svg").count());
    }

    #[test]
    fn numbers_are_told_from_names() {
        assert!(is_number("42"));
        assert!(is_number(" -3.5 "));
        assert!(is_number("12%"));
        assert!(!is_number("clan-1"));
        assert!(!is_number("%"));
        assert!(!is_number("NaN"));
    }
}
