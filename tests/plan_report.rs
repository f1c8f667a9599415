//! The report of `rasgk plan --report-dir`, from its renderers alone (no simulation): a day
//! of virtual time sampled every second for 16 C-LANs gives SVG charts that parse as XML,
//! stay under 1 MB, and hold one `series` per C-LAN and one `marker` per event; the HTML
//! page with an A/B pair of charts opens in headless Chromium, shows both charts next to
//! each other with the same series and markers, and loads nothing from anywhere.

mod support;

use rasgk::plan::chart::{self, Chart, Marker, Series};
use rasgk::plan::page::{self, Section};
use serde_json::{json, Value};
use support::browser::{require_chromium, Browser};

const DAY: f64 = 86_400.0;

/// A C-LAN's name and group (one of four regions). One name is made to break markup.
fn clan(i: usize) -> (String, &'static str) {
    let name = if i == 5 {
        "<a&b>".to_string()
    } else {
        format!("clan-{i:02}")
    };
    (name, ["east", "west", "north", "south"][i % 4])
}

/// `clans` C-LANs each sampled every second for a day: a random walk around 200 sockets
/// (a reproducible xorshift), with a one-second spike to 390 in the first.
fn day_of_points(clans: usize) -> Vec<Vec<(f64, u32)>> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..clans)
        .map(|c| {
            let mut v: i64 = 200;
            (0..86_400u32)
                .map(|t| {
                    v = (v + (next() % 5) as i64 - 2).clamp(0, 380);
                    let v = if c == 0 && t == 50_000 { 390 } else { v };
                    (f64::from(t), v as u32)
                })
                .collect()
        })
        .collect()
}

const EVENTS: &[(f64, &str)] = &[
    (600.0, "clan-03 out of service"),
    (2400.0, "clan-03 back in service"),
    (2460.0, "gatekeeper restart"),
    (43_200.0, "<noon> & \"rush\""),
];

fn chart_of<'a>(
    title: &'a str,
    names: &'a [(String, &'static str)],
    points: &'a [Vec<(f64, u32)>],
    events: &'a [(f64, &str)],
) -> Chart<'a> {
    Chart {
        title,
        duration_s: DAY,
        series: names
            .iter()
            .zip(points)
            .map(|((name, group), points)| Series {
                name,
                group,
                points,
            })
            .collect(),
        events: events
            .iter()
            .map(|&(at_s, label)| Marker { at_s, label })
            .collect(),
        cap: Some(400),
    }
}

/// The `data-NAME` values of the elements of class `class`, in document order.
fn data_of(document: &roxmltree::Document, class: &str, name: &str) -> Vec<String> {
    document
        .descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.split(' ').any(|c| c == class))
        })
        .map(|n| n.attribute(name).unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_day_of_sixteen_clans_is_a_small_svg_with_a_line_per_clan_and_a_marker_per_event() {
    let names: Vec<_> = (0..16).map(clan).collect();
    let points = day_of_points(16);
    let chart = chart_of("Sockets per C-LAN, 24 h", &names, &points, EVENTS);
    let svg = chart::svg(&chart);
    eprintln!(
        "16 C-LANs x 86,400 points, {} events: SVG of {} bytes",
        EVENTS.len(),
        svg.len()
    );
    assert!(svg.len() < 1_000_000, "{} bytes", svg.len());
    assert_eq!(
        svg,
        chart::svg(&chart),
        "the same chart gives the same bytes"
    );

    let document = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let clans: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(data_of(&document, "series", "data-clan"), clans);
    let events: Vec<&str> = EVENTS.iter().map(|&(_, label)| label).collect();
    assert_eq!(data_of(&document, "marker", "data-event"), events);
    // The one-second spike survives the reduction to pixel columns: the first C-LAN's line
    // reaches higher than any other.
    // (y grows downwards: the highest point is the least y of its vertical strokes.)
    let top = |d: &str| {
        d.split('V')
            .skip(1)
            .filter_map(|rest| {
                let end = rest.find(|c: char| c != '.' && !c.is_ascii_digit());
                rest[..end.unwrap_or(rest.len())].parse::<f64>().ok()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let ds: Vec<&str> = document
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .map(|n| n.attribute("d").expect("a path"))
        .collect();
    let highest_other = ds[1..].iter().map(|d| top(d)).fold(f64::INFINITY, f64::min);
    assert!(
        top(ds[0]) < highest_other,
        "{} vs {highest_other}",
        top(ds[0])
    );
}

#[test]
fn the_ab_page_opens_in_chromium_with_both_charts_and_loads_nothing() {
    let names_a: Vec<_> = (0..16).map(clan).collect();
    let names_b: Vec<_> = (0..12).map(clan).collect();
    let points = day_of_points(16);
    let events_b = &EVENTS[..3];
    let a = chart_of("A: sixteen C-LANs", &names_a, &points, EVENTS);
    let b = chart_of("B: twelve C-LANs", &names_b, &points[..12], events_b);
    let html = page::html(
        "rasgk plan: A/B",
        &[
            Section::Text("A day of virtual time, two configurations.".to_string()),
            Section::SideBySide(vec![
                Section::Group(vec![Section::Heading("A <a.toml>"), Section::Chart(a)]),
                Section::Group(vec![Section::Heading("B <b.toml>"), Section::Chart(b)]),
            ]),
        ],
    );
    // No address in the page but the SVG namespace (which names, and loads, nothing).
    let addresses = html.matches("http://").count() + html.matches("https://").count();
    let namespaces = html.matches("\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(addresses, namespaces, "outside addresses in the page");
    assert_eq!(namespaces, 2);

    let Some(chromium) =
        require_chromium("the_ab_page_opens_in_chromium_with_both_charts_and_loads_nothing")
    else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("rasgk-plan-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the report folder");
    let file = dir.join("report.html");
    std::fs::write(&file, &html).expect("write the page");
    let url = format!("file://{}", file.display());

    let mut browser = Browser::open(&chromium, &url);
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": 1600, "height": 1000, "deviceScaleFactor": 1, "mobile": false }),
    );
    // readyState alone may still be that of the blank page before the navigation.
    browser.wait_until(
        "the page is loaded",
        "document.readyState === 'complete' && document.title === 'rasgk plan: A/B'",
    );
    let charts = browser.evaluate(
        "[...document.querySelectorAll('figure.chart svg')].map(svg => {
            const r = svg.getBoundingClientRect();
            return {
                clans: [...svg.querySelectorAll('.series')].map(e => e.getAttribute('data-clan')),
                events: [...svg.querySelectorAll('.marker')].map(e => e.getAttribute('data-event')),
                drawn: [...svg.querySelectorAll('.series')].every(e => e.getBBox().width > 0),
                left: r.left, top: r.top, width: r.width, height: r.height,
            };
        })",
    );
    let resources = browser.evaluate("performance.getEntriesByType('resource').length");
    let heading = browser.evaluate("document.querySelector('.side h2').textContent");
    drop(browser);
    let _ = std::fs::remove_dir_all(&dir);

    let charts = charts.as_array().expect("a list of charts");
    assert_eq!(charts.len(), 2, "{charts:?}");
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("a list")
            .iter()
            .map(|s| s.as_str().expect("a string").to_string())
            .collect()
    };
    for (chart, (names, events)) in charts
        .iter()
        .zip([(&names_a, EVENTS), (&names_b, events_b)])
    {
        let clans: Vec<String> = names.iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(strings(&chart["clans"]), clans);
        let labels: Vec<&str> = events.iter().map(|&(_, label)| label).collect();
        assert_eq!(strings(&chart["events"]), labels);
        assert_eq!(chart["drawn"], true, "a series without a line: {chart}");
        assert!(chart["width"].as_f64().unwrap() > 300.0, "{chart}");
    }
    // Side by side: same row, B to the right of A.
    let at = |c: &Value, k: &str| c[k].as_f64().unwrap();
    assert!(
        (at(&charts[0], "top") - at(&charts[1], "top")).abs() < 1.0,
        "{charts:?}"
    );
    assert!(
        at(&charts[1], "left") >= at(&charts[0], "left") + at(&charts[0], "width"),
        "{charts:?}"
    );
    assert_eq!(resources, 0, "the page loaded outside resources");
    assert_eq!(heading, "A <a.toml>");
}

/// `rasgk plan --report-dir` on the drill, A/B: report.json as --json prints it, two SVGs
/// that parse with a series per C-LAN and a marker per event, and report.html with the
/// same in headless Chromium.
#[test]
fn a_planned_drill_writes_its_report_folder_and_the_page_opens_in_chromium() {
    let dir = std::env::temp_dir().join(format!("rasgk-plan-drill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args([
            "plan",
            "--config",
            "fixtures/plan/drill-lab.toml",
            "fixtures/plan/drill.toml",
            "--compare",
            "fixtures/plan/drill-lab-rebalance.toml",
            "--json",
            "--report-dir",
        ])
        .arg(&dir)
        .output()
        .expect("rasgk plan runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = std::fs::read(dir.join("report.json")).expect("report.json");
    assert_eq!(json, out.stdout, "report.json is what --json printed");
    let clans: Vec<String> = (1..=3)
        .flat_map(|r| "abcdefghij".chars().map(move |c| format!("clan-{r}{c}")))
        .collect();
    let events = ["clan-1a out of service", "clan-1a back in service"];
    for name in ["sockets-a.svg", "sockets-b.svg"] {
        let text = std::fs::read_to_string(dir.join(name)).expect("the SVG");
        let document = roxmltree::Document::parse(&text).expect("the SVG parses");
        assert_eq!(data_of(&document, "series", "data-clan"), clans, "{name}");
        assert_eq!(data_of(&document, "marker", "data-event"), events, "{name}");
    }
    let Some(chromium) =
        require_chromium("a_planned_drill_writes_its_report_folder_and_the_page_opens_in_chromium")
    else {
        return;
    };
    let url = format!("file://{}", dir.join("report.html").display());
    let mut browser = Browser::open(&chromium, &url);
    // readyState alone may still be that of the blank page before the navigation.
    browser.wait_until(
        "the report is loaded",
        "document.readyState === 'complete' && document.title.startsWith('rasgk plan')",
    );
    let charts = browser.evaluate(
        "[...document.querySelectorAll('figure.chart svg')].map(svg => ({
            clans: svg.querySelectorAll('.series').length,
            events: [...svg.querySelectorAll('.marker')].map(e => e.getAttribute('data-event')),
        }))",
    );
    let resources = browser.evaluate("performance.getEntriesByType('resource').length");
    let tables = browser.evaluate("document.querySelectorAll('table').length");
    drop(browser);
    let _ = std::fs::remove_dir_all(&dir);
    let charts = charts.as_array().expect("a list of charts");
    assert_eq!(charts.len(), 2, "{charts:?}");
    for chart in charts {
        assert_eq!(chart["clans"], clans.len(), "{chart}");
        assert_eq!(chart["events"], json!(events), "{chart}");
    }
    assert_eq!(resources, 0, "the page loaded something");
    assert!(tables.as_u64().is_some_and(|n| n >= 8), "{tables}");
}
