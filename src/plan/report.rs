//! A plan's report: per C-LAN peak, final and time-averaged sockets; per region the
//! phones served at home and spilled to (or taken from) other regions; rejects by message
//! and reason; per event the phones that lost service and how long until half, 99 % and
//! all of them were back; the imbalance within each region's priority classes; times to
//! service; with routed calls, what they did ([`RoutedLine`]) and what each event did to
//! them ([`EventCalls`]). As a table and as JSON (the same inputs give the same octets).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::tally::{EventTrace, Tally};
use super::world::World;

/// The whole report of one plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The scenario file.
    pub scenario: String,
    /// The configuration it ran on.
    pub config: String,
    /// Virtual seconds planned.
    pub duration_s: f64,
    /// The scenario's seed.
    pub seed: u64,
    /// Phones in the scenario.
    pub phones: usize,
    /// Of them TTS.
    pub tts_phones: usize,
    /// Phones that had arrived by the end.
    pub arrived: usize,
    /// Registered at the end.
    pub registered: usize,
    /// With a socket in service at the end.
    pub in_service: usize,
    /// Arrived but without a socket in service at the end.
    pub without_service: usize,
    /// Every C-LAN, in configuration order (C-LANs a reload added or removed too).
    pub clans: Vec<ClanLine>,
    /// Every home region of a registered phone.
    pub regions: Vec<RegionLine>,
    /// Every region's priority classes of two C-LANs or more, at the end.
    pub imbalance: Vec<ClassLine>,
    /// Every event of the timeline.
    pub events: Vec<EventLine>,
    /// RCF to socket in service.
    pub time_to_service: ServiceTimes,
    /// Rejects the phones got, by message and reason.
    pub rejects: BTreeMap<String, u64>,
    /// Connections the gatekeeper refused, by reason.
    pub connections_refused: BTreeMap<String, u64>,
    /// Traffic.
    pub traffic: Traffic,
    /// What rebalancing did (`None`: off at the end of the plan).
    pub rebalance: Option<RebalanceLine>,
    /// Routed calls (left out when the gatekeeper never relayed calls in the plan).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routed: Option<RoutedLine>,
}

/// What the phones' routed calls did (docs/rules.md §16.2): the phones' counts, the core's
/// (over every life of the gatekeeper), and per C-LAN.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutedLine {
    /// Setups the callers sent.
    pub placed: u64,
    /// Calls to another phone placed as trunk calls are (no Setup), by why.
    pub placed_as_trunk_calls: BTreeMap<String, u64>,
    /// The core: Setups that made a call.
    pub setups: u64,
    /// The core: calls the callee answered.
    pub connected: u64,
    /// The core: calls that ended, and Setups that made none, by reason.
    pub ended: BTreeMap<String, u64>,
    /// The core: of those, before the callee answered.
    pub failed: BTreeMap<String, u64>,
    /// Calls the callers lost before hanging up.
    pub cut: u64,
    /// The core: call connections accepted or opened.
    pub call_connections: u64,
    /// Setup sent to Connect read, as the callers saw it.
    pub setup_to_connect: Latency,
    /// Every C-LAN, in the order of [`Report::clans`].
    pub clans: Vec<RoutedClanLine>,
}

/// One C-LAN's routed calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutedClanLine {
    /// Its name.
    pub name: String,
    /// The most calls in progress with a leg on it in a sample.
    pub peak_calls: u32,
    /// Calls with a leg on it at the end.
    pub final_calls: u32,
    /// The most call connections on it in a sample.
    pub peak_call_connections: u32,
    /// Answered calls with the caller's leg on it.
    pub caller_legs: u64,
    /// Answered calls with the callee's leg on it.
    pub callee_legs: u64,
}

/// What one event did to routed calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventCalls {
    /// Calls in progress when it happened.
    pub in_progress: u32,
    /// Of them with a leg on each C-LAN (those with any).
    pub on: BTreeMap<String, u32>,
    /// Calls the event itself ended, by the core's reason.
    pub ended: BTreeMap<String, u64>,
    /// Calls the callers lost after it (before the next event) before hanging up.
    pub cut: u64,
    /// Of the callers that lost one, those whose next routed call was answered.
    pub called_again: u64,
    /// Calls answered after it (before the next event).
    pub answered: u64,
    /// The most calls on each C-LAN in a sample after it (before the next event), those
    /// with any.
    pub peak: BTreeMap<String, u32>,
}

impl EventCalls {
    /// `C-LAN calls, …` of its peaks, busiest first, at most `most` of them (then `…`), or
    /// `-`.
    pub(super) fn peak_text(&self, most: usize) -> String {
        if self.peak.is_empty() {
            return "-".to_string();
        }
        let mut peaks: Vec<(&String, &u32)> = self.peak.iter().collect();
        peaks.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let mut text = peaks
            .iter()
            .take(most)
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        if peaks.len() > most {
            text.push_str(&format!(", … ({} C-LANs)", peaks.len()));
        }
        text
    }

    fn of(trace: &EventTrace, names: &[String]) -> EventCalls {
        let name = |t: usize| names.get(t).cloned().unwrap_or_default();
        EventCalls {
            in_progress: trace.calls_in_progress,
            on: trace.calls_on.iter().map(|&(t, n)| (name(t), n)).collect(),
            ended: trace.calls_ended.clone(),
            cut: trace.calls_cut,
            called_again: trace.called_again,
            answered: trace.calls_answered,
            peak: trace
                .peak_calls
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(|(t, &n)| (name(t), n))
                .collect(),
        }
    }
}

/// Rebalancing's moves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RebalanceLine {
    /// `tolerance`.
    pub tolerance: u32,
    /// `moves_per_s`.
    pub moves_per_s: f64,
    /// Phones moved.
    pub moves: u64,
    /// By the C-LAN they were moved off.
    pub moves_from: BTreeMap<String, u64>,
    /// The most moves within any one second.
    pub most_in_one_second: u64,
    /// The first move, virtual seconds.
    pub first_move_s: Option<f64>,
    /// The last move.
    pub last_move_s: Option<f64>,
}

impl RebalanceLine {
    fn of(settings: &crate::config::Rebalance, moves: &[(u64, String)]) -> RebalanceLine {
        let mut moves_from = BTreeMap::new();
        for (_, from) in moves {
            *moves_from.entry(from.clone()).or_default() += 1;
        }
        // Moves are in time order: the most that any window [t, t + 1 s) holds.
        let mut most = 0;
        let mut start = 0;
        for end in 0..moves.len() {
            while moves[end].0 - moves[start].0 >= 1_000_000 {
                start += 1;
            }
            most = most.max(end - start + 1);
        }
        RebalanceLine {
            tolerance: settings.tolerance,
            moves_per_s: settings.moves_per_s,
            moves: moves.len() as u64,
            moves_from,
            most_in_one_second: most as u64,
            first_move_s: moves.first().map(|m| round(m.0 as f64 / 1e6, 6)),
            last_move_s: moves.last().map(|m| round(m.0 as f64 / 1e6, 6)),
        }
    }
}

/// One C-LAN's sockets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClanLine {
    /// Its name.
    pub name: String,
    /// Its region.
    pub region: u16,
    /// 1 is best.
    pub priority: u8,
    /// Its cap at the end.
    pub cap: u32,
    /// The most established sockets in a sample.
    pub peak: u32,
    /// Established sockets at the end.
    pub final_sockets: u32,
    /// The average of the samples, two decimals.
    pub average: f64,
}

/// Where one region's phones are served.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegionLine {
    /// The home region.
    pub region: u16,
    /// Its phones registered at the end.
    pub phones: usize,
    /// Of them with a socket on a C-LAN of their home region.
    pub at_home: usize,
    /// Of them with a socket in another region, by that region.
    pub spilled_to: BTreeMap<u16, usize>,
    /// Phones of other regions with a socket here, by their home region.
    pub taken_from: BTreeMap<u16, usize>,
    /// Of its phones without a socket (TTS phones waiting for one).
    pub without_socket: usize,
}

/// A region's priority class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassLine {
    /// The region.
    pub region: u16,
    /// The priority.
    pub priority: u8,
    /// Its in-service C-LANs.
    pub clans: Vec<String>,
    /// The largest load (established sockets) at the end.
    pub largest: u32,
    /// The smallest.
    pub smallest: u32,
    /// largest / smallest, two decimals; `None` when the smallest is 0.
    pub ratio: Option<f64>,
}

/// What one event did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventLine {
    /// When, virtual seconds.
    pub at_s: f64,
    /// What.
    pub event: String,
    /// Phones in service that lost it after the event (before the next).
    pub lost_service: u64,
    /// Of them back in service by the end.
    pub back: usize,
    /// Seconds from the event until half of them were back (`None`: never, or none lost).
    pub half_back_s: Option<f64>,
    /// Until 99 % were back.
    pub most_back_s: Option<f64>,
    /// Until all were back.
    pub all_back_s: Option<f64>,
    /// Of them still without service at the end.
    pub still_without: u64,
    /// What it did to routed calls (left out without them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<EventCalls>,
}

/// Times to service, milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceTimes {
    /// TTS phones (the gatekeeper set up the socket).
    pub tts: Latency,
    /// Non-TTS phones (the phone connected).
    pub non_tts: Latency,
}

/// A distribution, milliseconds, three decimals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latency {
    /// How many.
    pub count: usize,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// Datagrams and requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Traffic {
    /// Datagrams sent, both ways.
    pub datagrams: u64,
    /// Of them lost by the simulated loss.
    pub lost: u64,
    /// Requests sent again after a timeout.
    pub retransmissions: u64,
    /// Gatekeeper-sent URQs answered.
    pub urqs: u64,
    /// Calls admitted.
    pub calls: u64,
}

fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// The value at quantile `q` of sorted values (nearest rank).
fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

impl Latency {
    fn of(values: &[u64]) -> Latency {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let ms = |us: u64| round(us as f64 / 1000.0, 3);
        Latency {
            count: sorted.len(),
            p50_ms: ms(quantile(&sorted, 0.5)),
            p90_ms: ms(quantile(&sorted, 0.9)),
            p99_ms: ms(quantile(&sorted, 0.99)),
            max_ms: ms(sorted.last().copied().unwrap_or(0)),
        }
    }
}

impl Report {
    /// The report of a world that has run, on the configuration named `config`.
    pub(super) fn of(world: &World<'_>, config: &str) -> Report {
        let scenario = world.scenario;
        let tally: &Tally = &world.tally;
        let clans: Vec<ClanLine> = {
            let now: Vec<(String, u32)> = world
                .gk
                .clans()
                .into_iter()
                .map(|c| (c.name, c.established))
                .collect();
            tally
                .clans
                .iter()
                .map(|trace| ClanLine {
                    name: trace.name.clone(),
                    region: trace.region,
                    priority: trace.priority,
                    cap: trace.cap,
                    peak: trace.peak,
                    final_sockets: now
                        .iter()
                        .find(|(name, _)| *name == trace.name)
                        .map_or(0, |&(_, n)| n),
                    average: if trace.samples == 0 {
                        0.0
                    } else {
                        round(trace.sum as f64 / trace.samples as f64, 2)
                    },
                })
                .collect()
        };
        let regions = regions(world);
        let imbalance = imbalance(world);
        let relayed = tally.routed.relayed;
        let names: Vec<String> = tally.clans.iter().map(|c| c.name.clone()).collect();
        let events = tally
            .events
            .iter()
            .map(|trace| {
                let mut back = trace.back_after_us.clone();
                back.sort_unstable();
                let lost = trace.lost as usize;
                let when = |share: f64| {
                    let needed = ((share * lost as f64).ceil() as usize).max(1);
                    (lost > 0 && back.len() >= needed)
                        .then(|| round(back[needed - 1] as f64 / 1e6, 3))
                };
                EventLine {
                    at_s: trace.at_s,
                    event: trace.label.clone(),
                    lost_service: trace.lost,
                    back: back.len(),
                    half_back_s: when(0.5),
                    most_back_s: when(0.99),
                    all_back_s: when(1.0),
                    still_without: trace.lost - back.len() as u64,
                    calls: relayed.then(|| EventCalls::of(trace, &names)),
                }
            })
            .collect();
        let arrived = world.phones.iter().filter(|p| p.arrived).count();
        let in_service = world.phones.iter().filter(|p| p.in_service).count();
        Report {
            scenario: scenario.origin.clone(),
            config: config.to_string(),
            duration_s: scenario.duration_s,
            seed: scenario.seed,
            phones: world.phones.len(),
            tts_phones: world.phones.iter().filter(|p| p.tts).count(),
            arrived,
            registered: world.gk.counts().registrations,
            in_service,
            without_service: arrived - in_service,
            clans,
            regions,
            imbalance,
            events,
            time_to_service: ServiceTimes {
                tts: Latency::of(&tally.service_tts_us),
                non_tts: Latency::of(&tally.service_other_us),
            },
            rejects: tally.rejects.clone(),
            connections_refused: world.refused(),
            traffic: Traffic {
                datagrams: tally.datagrams,
                lost: tally.datagrams_lost,
                retransmissions: tally.retransmissions,
                urqs: tally.urqs,
                calls: tally.calls,
            },
            rebalance: world
                .gk
                .config()
                .rebalance
                .as_ref()
                .map(|settings| RebalanceLine::of(settings, &tally.moves)),
            routed: relayed.then(|| routed(world)),
        }
    }

    /// The report as one line of JSON.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("a report is plain data")
    }

    /// The report as text tables.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "plan of {} on {}: {} phones ({} TTS) over {} s, seed {}",
            self.scenario, self.config, self.phones, self.tts_phones, self.duration_s, self.seed
        );
        let _ = writeln!(
            out,
            "at the end: {} arrived, {} registered, {} in service, {} without service",
            self.arrived, self.registered, self.in_service, self.without_service
        );
        let _ = writeln!(
            out,
            "\nC-LAN            region prio   cap   peak  final  average"
        );
        for c in &self.clans {
            let _ = writeln!(
                out,
                "{:<16} {:>6} {:>4} {:>5} {:>6} {:>6} {:>8.2}",
                c.name, c.region, c.priority, c.cap, c.peak, c.final_sockets, c.average
            );
        }
        let _ = writeln!(
            out,
            "\nregion  phones  at home  spilled to (region: phones)  taken from  without socket"
        );
        for r in &self.regions {
            let _ = writeln!(
                out,
                "{:>6} {:>7} {:>8}  {:<27} {:<11} {}",
                r.region,
                r.phones,
                r.at_home,
                pairs(&r.spilled_to),
                pairs(&r.taken_from),
                r.without_socket
            );
        }
        if !self.imbalance.is_empty() {
            let _ = writeln!(
                out,
                "\nclass (region/prio)  C-LANs  largest  smallest  ratio"
            );
            for c in &self.imbalance {
                let ratio = c.ratio.map_or("-".to_string(), |r| format!("{r:.2}"));
                let _ = writeln!(
                    out,
                    "{:>12}/{:<7} {:>6} {:>8} {:>9} {:>6}",
                    c.region,
                    c.priority,
                    c.clans.len(),
                    c.largest,
                    c.smallest,
                    ratio
                );
            }
        }
        if !self.events.is_empty() {
            let _ = writeln!(
                out,
                "\nevent                              at s  lost service  50% back s  99% back s  all back s  still without"
            );
            let s = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
            for e in &self.events {
                let _ = writeln!(
                    out,
                    "{:<32} {:>7} {:>13} {:>11} {:>11} {:>11} {:>14}",
                    e.event,
                    e.at_s,
                    e.lost_service,
                    s(e.half_back_s),
                    s(e.most_back_s),
                    s(e.all_back_s),
                    e.still_without
                );
            }
        }
        let t = &self.time_to_service;
        let line = |name: &str, l: &Latency| {
            format!(
                "{name:<8} {:>6} sockets  p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1} ms",
                l.count, l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
            )
        };
        let _ = writeln!(out, "\ntime to service (RCF to socket in service)");
        let _ = writeln!(out, "  {}", line("TTS", &t.tts));
        let _ = writeln!(out, "  {}", line("non-TTS", &t.non_tts));
        if let Some(routed) = &self.routed {
            routed.table(&mut out, &self.events);
        }
        let _ = writeln!(out, "\nrejects: {}", counts(&self.rejects));
        let _ = writeln!(
            out,
            "connections refused: {}",
            counts(&self.connections_refused)
        );
        if let Some(r) = &self.rebalance {
            let when = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3} s"));
            let _ = writeln!(
                out,
                "rebalancing (tolerance {}, at most {}/s): {} moves ({}), at most {} in one \
                 second, first at {}, last at {}",
                r.tolerance,
                r.moves_per_s,
                r.moves,
                counts(&r.moves_from),
                r.most_in_one_second,
                when(r.first_move_s),
                when(r.last_move_s)
            );
        }
        let tr = &self.traffic;
        let _ = writeln!(
            out,
            "traffic: {} datagrams, {} lost, {} retransmissions, {} gatekeeper URQs, {} calls",
            tr.datagrams, tr.lost, tr.retransmissions, tr.urqs, tr.calls
        );
        out
    }
}

impl RoutedLine {
    /// Its counts in a paragraph: placed, set up, connected, cut, as trunk calls, endings,
    /// failures, Setup to Connect and call connections.
    pub(super) fn summary(&self) -> String {
        let s = &self.setup_to_connect;
        format!(
            "{} placed, {} set up, {} connected, {} cut (lost before their hold ended); \
             placed as trunk calls: {}; ended: {}; failed before the answer: {}; Setup to \
             Connect ({} calls, as the callers saw it) p50 {:.1}, p90 {:.1}, p99 {:.1}, max \
             {:.1} ms; {} call connections",
            self.placed,
            self.setups,
            self.connected,
            self.cut,
            counts(&self.placed_as_trunk_calls),
            counts(&self.ended),
            counts(&self.failed),
            s.count,
            s.p50_ms,
            s.p90_ms,
            s.p99_ms,
            s.max_ms,
            self.call_connections
        )
    }

    /// Its part of the text report, with what `events` did to the calls.
    fn table(&self, out: &mut String, events: &[EventLine]) {
        let _ = writeln!(out, "\nrouted calls: {}", self.summary());
        let _ = writeln!(
            out,
            "\nC-LAN            peak calls  final  peak call conns  caller legs  callee legs"
        );
        for c in &self.clans {
            let _ = writeln!(
                out,
                "{:<16} {:>10} {:>6} {:>16} {:>12} {:>12}",
                c.name,
                c.peak_calls,
                c.final_calls,
                c.peak_call_connections,
                c.caller_legs,
                c.callee_legs
            );
        }
        if events.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "\nevent                              at s  calls  ended by it               cut  \
             again  answered after  peak calls after (busiest)"
        );
        for e in events {
            let Some(c) = &e.calls else {
                continue;
            };
            let _ = writeln!(
                out,
                "{:<32} {:>7} {:>6}  {:<24} {:>4} {:>6} {:>15}  {}",
                e.event,
                e.at_s,
                c.in_progress,
                counts(&c.ended),
                c.cut,
                c.called_again,
                c.answered,
                c.peak_text(4)
            );
        }
    }
}

fn pairs(map: &BTreeMap<u16, usize>) -> String {
    if map.is_empty() {
        return "-".to_string();
    }
    map.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `reason count, …`, or `none`.
pub(super) fn counts(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".to_string();
    }
    map.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The routed calls' line of a plan whose gatekeeper relayed calls.
fn routed(world: &World<'_>) -> RoutedLine {
    let tally = &world.tally;
    let counts = world.routed_counts();
    let now: BTreeMap<&str, u32> = world
        .gk
        .config()
        .clans
        .iter()
        .map(|c| c.name.as_str())
        .zip(world.gk.routed_calls_per_clan())
        .collect();
    RoutedLine {
        placed: tally.routed.placed,
        placed_as_trunk_calls: tally.routed.as_today.clone(),
        setups: counts.setups,
        connected: counts.connected,
        ended: counts.ended,
        failed: counts.failed,
        cut: tally.routed.cut,
        call_connections: counts.call_connections,
        setup_to_connect: Latency::of(&tally.routed.setup_to_connect_us),
        clans: tally
            .clans
            .iter()
            .map(|c| RoutedClanLine {
                name: c.name.clone(),
                peak_calls: c.peak_calls,
                final_calls: now.get(c.name.as_str()).copied().unwrap_or(0),
                peak_call_connections: c.peak_call_connections,
                caller_legs: c.caller_legs,
                callee_legs: c.callee_legs,
            })
            .collect(),
    }
}

/// Where each home region's registered phones hold their sockets.
fn regions(world: &World<'_>) -> Vec<RegionLine> {
    let region_of: BTreeMap<String, u16> = world
        .gk
        .config()
        .clans
        .iter()
        .map(|c| (c.name.clone(), c.region))
        .collect();
    let mut lines: BTreeMap<u16, RegionLine> = BTreeMap::new();
    let line = |lines: &mut BTreeMap<u16, RegionLine>, region: u16| {
        lines.entry(region).or_insert_with(|| RegionLine {
            region,
            phones: 0,
            at_home: 0,
            spilled_to: BTreeMap::new(),
            taken_from: BTreeMap::new(),
            without_socket: 0,
        });
    };
    for registration in world.gk.registrations() {
        let home = registration.region;
        line(&mut lines, home);
        let served = registration
            .clan
            .as_ref()
            .and_then(|name| region_of.get(name).copied());
        let entry = lines.get_mut(&home).expect("just made");
        entry.phones += 1;
        match served {
            None => entry.without_socket += 1,
            Some(region) if region == home => entry.at_home += 1,
            Some(region) => {
                *entry.spilled_to.entry(region).or_default() += 1;
                line(&mut lines, region);
                *lines
                    .get_mut(&region)
                    .expect("just made")
                    .taken_from
                    .entry(home)
                    .or_default() += 1;
            }
        }
    }
    lines.into_values().collect()
}

/// Largest and smallest load of each region's priority classes, at the end.
fn imbalance(world: &World<'_>) -> Vec<ClassLine> {
    let mut classes: BTreeMap<(u16, u8), Vec<(String, u32)>> = BTreeMap::new();
    for clan in world.gk.clans() {
        if clan.in_service {
            classes
                .entry((clan.region, clan.priority))
                .or_default()
                .push((clan.name, clan.established));
        }
    }
    classes
        .into_iter()
        .filter(|(_, clans)| clans.len() >= 2)
        .map(|((region, priority), clans)| {
            let largest = clans.iter().map(|c| c.1).max().unwrap_or(0);
            let smallest = clans.iter().map(|c| c.1).min().unwrap_or(0);
            ClassLine {
                region,
                priority,
                clans: clans.into_iter().map(|c| c.0).collect(),
                largest,
                smallest,
                ratio: (smallest > 0).then(|| round(f64::from(largest) / f64::from(smallest), 2)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let values: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&values, 0.5), 50);
        assert_eq!(quantile(&values, 0.99), 99);
        assert_eq!(quantile(&values, 1.0), 100);
        assert_eq!(quantile(&[], 0.5), 0);
        assert_eq!(quantile(&[7], 0.01), 7);
    }
}
