//! What `rasgk plan --report-dir DIR` writes: `report.json` (what `--json` prints),
//! `report.html` (self-contained: the report's tables, routed calls' among them, and a chart
//! of sockets per C-LAN over time with the events marked, A and B side by side with `--compare`) and the same charts
//! as standalone SVG files (`sockets.svg`, or `sockets-a.svg` and `sockets-b.svg`).

use std::path::{Path, PathBuf};

use super::chart::{self, Chart, Marker, Series};
use super::page::{self, Section};
use super::report::{counts, Report, RoutedLine};
use super::Planned;

/// Writes the directory's files; the paths written.
pub fn write(dir: &Path, json: &str, planned: &[Planned]) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    let mut put = |name: &str, text: &str| -> std::io::Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, text)?;
        written.push(path);
        Ok(())
    };
    put("report.json", &format!("{json}\n"))?;
    let names: Vec<String> = match planned.len() {
        1 => vec!["sockets".to_string()],
        _ => vec!["sockets-a".to_string(), "sockets-b".to_string()],
    };
    let titles: Vec<String> = planned
        .iter()
        .zip(["A", "B"])
        .map(|(p, side)| match planned.len() {
            1 => format!("Sockets per C-LAN on {}", p.report.config),
            _ => format!("{side}: sockets per C-LAN on {}", p.report.config),
        })
        .collect();
    let regions: Vec<Vec<String>> = planned
        .iter()
        .map(|p| {
            p.tally
                .clans
                .iter()
                .map(|c| format!("region {}", c.region))
                .collect()
        })
        .collect();
    let charts: Vec<Chart> = planned
        .iter()
        .zip(&titles)
        .zip(&regions)
        .map(|((p, title), regions)| sockets_chart(p, title, regions))
        .collect();
    for (chart, name) in charts.iter().zip(&names) {
        put(&format!("{name}.svg"), &chart::svg(chart))?;
    }
    let columns: Vec<Section> = planned
        .iter()
        .zip(charts)
        .zip(["A", "B"])
        .map(|((p, chart), side)| {
            let mut sections = Vec::new();
            if planned.len() > 1 {
                sections.push(Section::Text(format!("{side}: {}", p.report.config)));
            }
            sections.push(Section::Chart(chart));
            sections.extend(tables(&p.report));
            Section::Group(sections)
        })
        .collect();
    let first = &planned[0].report;
    let mut sections = vec![Section::Text(format!(
        "{} phones ({} TTS) over {} virtual seconds, seed {}. Sockets are sampled every \
         sample_s; peaks and averages are those of the samples, final loads exact.",
        first.phones, first.tts_phones, first.duration_s, first.seed
    ))];
    match columns.len() {
        1 => sections.extend(columns),
        _ => sections.push(Section::SideBySide(columns)),
    }
    let title = format!("rasgk plan: {}", first.scenario);
    put("report.html", &page::html(&title, &sections))?;
    Ok(written)
}

/// The chart of one plan: a series per C-LAN, grouped by region, a marker per event.
fn sockets_chart<'a>(planned: &'a Planned, title: &'a str, regions: &'a [String]) -> Chart<'a> {
    let caps: Vec<u32> = planned.tally.clans.iter().map(|c| c.cap).collect();
    let cap = caps
        .first()
        .copied()
        .filter(|first| caps.iter().all(|c| c == first));
    Chart {
        title,
        duration_s: planned.report.duration_s,
        series: planned
            .tally
            .clans
            .iter()
            .zip(regions)
            .map(|(clan, region)| Series {
                name: &clan.name,
                group: region,
                points: &clan.points,
            })
            .collect(),
        events: planned
            .tally
            .events
            .iter()
            .map(|e| Marker {
                at_s: e.at_s,
                label: &e.label,
            })
            .collect(),
        cap,
    }
}

/// The report's tables.
fn tables(report: &Report) -> Vec<Section<'static>> {
    let strings = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    let optional = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    let mut sections = vec![Section::Text(format!(
        "At the end: {} arrived, {} registered, {} in service, {} without service.",
        report.arrived, report.registered, report.in_service, report.without_service
    ))];
    sections.push(Section::Table {
        caption: "Sockets per C-LAN".into(),
        header: strings(&[
            "C-LAN", "region", "priority", "cap", "peak", "final", "average",
        ]),
        rows: report
            .clans
            .iter()
            .map(|c| {
                vec![
                    c.name.clone(),
                    c.region.to_string(),
                    c.priority.to_string(),
                    c.cap.to_string(),
                    c.peak.to_string(),
                    c.final_sockets.to_string(),
                    format!("{:.2}", c.average),
                ]
            })
            .collect(),
    });
    let pairs = |map: &std::collections::BTreeMap<u16, usize>| {
        if map.is_empty() {
            "-".to_string()
        } else {
            map.iter()
                .map(|(r, n)| format!("region {r}: {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    sections.push(Section::Table {
        caption: "Where each region's phones are served".into(),
        header: strings(&[
            "region",
            "phones",
            "at home",
            "spilled to",
            "taken from",
            "without socket",
        ]),
        rows: report
            .regions
            .iter()
            .map(|r| {
                vec![
                    r.region.to_string(),
                    r.phones.to_string(),
                    r.at_home.to_string(),
                    pairs(&r.spilled_to),
                    pairs(&r.taken_from),
                    r.without_socket.to_string(),
                ]
            })
            .collect(),
    });
    if !report.events.is_empty() {
        sections.push(Section::Table {
            caption: "Events: phones that lost service, and seconds until they were back".into(),
            header: strings(&[
                "event",
                "at s",
                "lost service",
                "50 % back",
                "99 % back",
                "all back",
                "still without",
            ]),
            rows: report
                .events
                .iter()
                .map(|e| {
                    vec![
                        e.event.clone(),
                        e.at_s.to_string(),
                        e.lost_service.to_string(),
                        optional(e.half_back_s),
                        optional(e.most_back_s),
                        optional(e.all_back_s),
                        e.still_without.to_string(),
                    ]
                })
                .collect(),
        });
    }
    if !report.imbalance.is_empty() {
        sections.push(Section::Table {
            caption: "Imbalance within each region's priority classes (at the end)".into(),
            header: strings(&[
                "region", "priority", "C-LANs", "largest", "smallest", "ratio",
            ]),
            rows: report
                .imbalance
                .iter()
                .map(|c| {
                    vec![
                        c.region.to_string(),
                        c.priority.to_string(),
                        c.clans.join(", "),
                        c.largest.to_string(),
                        c.smallest.to_string(),
                        c.ratio.map_or("-".to_string(), |r| format!("{r:.2}")),
                    ]
                })
                .collect(),
        });
    }
    let t = &report.time_to_service;
    sections.push(Section::Table {
        caption: "Time to service (RCF to socket in service), ms".into(),
        header: strings(&["phones", "sockets", "p50", "p90", "p99", "max"]),
        rows: [("TTS", &t.tts), ("non-TTS", &t.non_tts)]
            .into_iter()
            .map(|(name, l)| {
                vec![
                    name.to_string(),
                    l.count.to_string(),
                    format!("{:.1}", l.p50_ms),
                    format!("{:.1}", l.p90_ms),
                    format!("{:.1}", l.p99_ms),
                    format!("{:.1}", l.max_ms),
                ]
            })
            .collect(),
    });
    if let Some(routed) = &report.routed {
        sections.extend(routed_tables(routed, report));
    }
    if let Some(r) = &report.rebalance {
        sections.push(Section::Text(format!(
            "Rebalancing (tolerance {}, at most {} moves a second): {} moves, at most {} in \
             one second.",
            r.tolerance, r.moves_per_s, r.moves, r.most_in_one_second
        )));
    }
    sections.push(Section::Text(format!(
        "Rejects: {}. Connections refused: {}.",
        counts(&report.rejects),
        counts(&report.connections_refused)
    )));
    sections
}

/// The routed calls' tables: the counts, per C-LAN, and what each event did to them.
fn routed_tables(routed: &RoutedLine, report: &Report) -> Vec<Section<'static>> {
    let strings = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    let mut sections = vec![Section::Text(format!(
        "Routed calls: {}.",
        routed.summary()
    ))];
    sections.push(Section::Table {
        caption: "Routed calls per C-LAN".into(),
        header: strings(&[
            "C-LAN",
            "peak calls",
            "final",
            "peak call connections",
            "caller legs",
            "callee legs",
        ]),
        rows: routed
            .clans
            .iter()
            .map(|c| {
                vec![
                    c.name.clone(),
                    c.peak_calls.to_string(),
                    c.final_calls.to_string(),
                    c.peak_call_connections.to_string(),
                    c.caller_legs.to_string(),
                    c.callee_legs.to_string(),
                ]
            })
            .collect(),
    });
    let rows: Vec<Vec<String>> = report
        .events
        .iter()
        .filter_map(|e| {
            let c = e.calls.as_ref()?;
            Some(vec![
                e.event.clone(),
                e.at_s.to_string(),
                c.in_progress.to_string(),
                counts(&c.ended),
                c.cut.to_string(),
                c.called_again.to_string(),
                c.answered.to_string(),
                c.peak_text(usize::MAX),
            ])
        })
        .collect();
    if !rows.is_empty() {
        sections.push(Section::Table {
            caption: "Events: routed calls in progress, ended by the event, cut after it and \
                      placed again"
                .into(),
            header: strings(&[
                "event",
                "at s",
                "in progress",
                "ended by it",
                "cut",
                "answered again",
                "answered after",
                "peak calls after",
            ]),
            rows,
        });
    }
    sections
}
