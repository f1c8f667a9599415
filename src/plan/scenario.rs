//! A plan's scenario file: the phones (groups with a home region or an IP range, how they
//! arrive, the TTL they ask for, their calls), a timeline of events at virtual times (a
//! C-LAN out of or back into service, a cap changed, a gatekeeper restart, a reload), a
//! duration and a seed. Read from TOML; every mistake is named with its file and field, as
//! `FILE: FIELD: REASON` with the configuration's key paths (`group[0].count`: arrays of
//! tables count from 0, in file order). What can only be checked against a lab is checked
//! by [`super::check()`] before the plan runs. fixtures/plan/bad/ holds a file per check.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::roster;

/// A whole scenario, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Where it was read from (for errors and the report).
    pub origin: String,
    /// Virtual seconds the plan covers.
    pub duration_s: f64,
    /// Seed of everything random: loss, back-offs, call times.
    pub seed: u64,
    /// Probability that a datagram is lost, each way.
    pub loss: f64,
    /// One-way delay of every datagram and connection step, milliseconds.
    pub latency_ms: f64,
    /// How often loads are sampled for the report's averages, peaks and charts, seconds.
    pub sample_s: f64,
    /// The phones' RAS timer: a request is sent again after this long (doubling, at most
    /// 8 s), milliseconds.
    pub timeout_ms: u64,
    /// Retransmissions of a request before the phone moves on (next AGL entry, or GRQ).
    pub retries: u32,
    /// The phone groups, in file order.
    pub groups: Vec<Group>,
    /// The timeline, in time order (file order for equal times).
    pub events: Vec<TimedEvent>,
}

/// Phones alike.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Its name in the report.
    pub name: String,
    /// How many.
    pub count: usize,
    /// Where their addresses come from.
    pub addresses: Addresses,
    /// Which of them are TTS, and their extensions.
    pub tts_share: f64,
    /// First extension of its non-TTS phones.
    pub extensions_from: u32,
    /// First extension of its TTS phones.
    pub tts_extensions_from: u32,
    /// How they arrive.
    pub arrival: Arrival,
    /// The `timeToLive` their RRQs ask for, seconds (`None`: they ask for none and take
    /// what the gatekeeper grants).
    pub ttl_s: Option<u32>,
    /// Calls: each phone places this many an hour on average (seeded, at random times).
    pub calls_per_hour: f64,
    /// How long each call lasts, seconds.
    pub call_hold_s: f64,
    /// Digits each call dials (the phone's extension appended).
    pub dial: String,
    /// The key its addresses were given by (`region`, `regions` or `network`), for errors.
    pub(crate) addresses_key: &'static str,
}

/// Where a group's phones take their addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addresses {
    /// Round robin over these regions, each phone the next address of its region's block,
    /// as `rasgk storm --regions R,R,…` gives them ([`roster`]): the default topology's
    /// network map puts 127.R.0.0/16 in region R.
    Regions(Vec<u8>),
    /// Consecutive addresses of a network, from its first host address.
    Network(Ipv4Addr, u8),
}

/// How a group's phones arrive, from `start_s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arrival {
    /// When the first phone sends its GRQ, virtual seconds.
    pub start_s: f64,
    /// Seconds between two arrivals (0: all at once).
    pub gap_s: f64,
}

/// An event of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedEvent {
    /// Its place among the file's `[[event]]`s, from 0 (`event[N]` in errors).
    pub index: usize,
    /// When, virtual seconds.
    pub at_s: f64,
    /// What.
    pub event: Event,
}

/// What happens at a point of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A C-LAN is taken out of service (its phones get URQs and go through their AGLs).
    OutOfService(String),
    /// A C-LAN is put back into service.
    InService(String),
    /// A C-LAN's cap changes.
    Cap {
        /// Which C-LAN.
        clan: String,
        /// Its new `max_sockets`.
        max_sockets: u32,
    },
    /// The gatekeeper restarts: every registration and socket is lost.
    Restart,
    /// The gatekeeper reloads another configuration (a C-LAN added or removed).
    Reload(PathBuf),
}

impl Event {
    /// The key of its `[[event]]` that says what it does (what an error about it names).
    pub fn key(&self) -> &'static str {
        match self {
            Event::OutOfService(_) => "out_of_service",
            Event::InService(_) => "in_service",
            Event::Cap { .. } => "cap.clan",
            Event::Restart => "restart",
            Event::Reload(_) => "reload",
        }
    }

    /// The C-LAN it names, if it names one.
    pub fn clan(&self) -> Option<&str> {
        match self {
            Event::OutOfService(clan) | Event::InService(clan) | Event::Cap { clan, .. } => {
                Some(clan)
            }
            Event::Restart | Event::Reload(_) => None,
        }
    }

    /// How the report names it.
    pub fn label(&self) -> String {
        match self {
            Event::OutOfService(clan) => format!("{clan} out of service"),
            Event::InService(clan) => format!("{clan} back in service"),
            Event::Cap { clan, max_sockets } => format!("{clan} cap {max_sockets}"),
            Event::Restart => "gatekeeper restart".to_string(),
            Event::Reload(path) => format!(
                "reload {}",
                path.file_name().map_or_else(
                    || path.display().to_string(),
                    |n| n.to_string_lossy().into()
                )
            ),
        }
    }
}

/// What is wrong with a scenario.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file cannot be read.
    #[error("{path}: cannot read: {error}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// The TOML does not parse, at no key in particular (a key's wrong type, an unknown or
    /// missing key is a [`ScenarioError::Field`]).
    #[error("{origin}: {message}")]
    Toml {
        /// The file.
        origin: String,
        /// toml's words, with line and column.
        message: String,
    },
    /// A value is out of range or inconsistent.
    #[error("{origin}: {field}: {message}")]
    Field {
        /// The file.
        origin: String,
        /// The field, as a key path into the file (`group[2].count`, the third group's).
        field: String,
        /// What is wrong.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    duration_s: f64,
    #[serde(default = "default_seed")]
    seed: u64,
    #[serde(default)]
    loss: f64,
    #[serde(default = "default_latency_ms")]
    latency_ms: f64,
    #[serde(default = "default_sample_s")]
    sample_s: f64,
    #[serde(default = "default_timeout_ms")]
    timeout_ms: u64,
    #[serde(default = "default_retries")]
    retries: u32,
    #[serde(default, rename = "group")]
    groups: Vec<GroupFile>,
    #[serde(default, rename = "event")]
    events: Vec<EventFile>,
}

fn default_seed() -> u64 {
    1
}
fn default_latency_ms() -> f64 {
    1.0
}
fn default_sample_s() -> f64 {
    1.0
}
fn default_timeout_ms() -> u64 {
    1000
}
fn default_retries() -> u32 {
    3
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupFile {
    name: Option<String>,
    count: usize,
    region: Option<u8>,
    regions: Option<Vec<u8>>,
    network: Option<String>,
    #[serde(default)]
    tts_share: f64,
    #[serde(default = "default_from")]
    extensions_from: u32,
    #[serde(default = "default_tts_from")]
    tts_extensions_from: u32,
    #[serde(default)]
    start_s: f64,
    rate_per_s: Option<f64>,
    over_s: Option<f64>,
    ttl_s: Option<u32>,
    #[serde(default)]
    calls_per_hour: f64,
    #[serde(default = "default_call_hold_s")]
    call_hold_s: f64,
    #[serde(default = "default_dial")]
    dial: String,
}

fn default_from() -> u32 {
    60_000
}
fn default_tts_from() -> u32 {
    50_000
}
fn default_call_hold_s() -> f64 {
    120.0
}
fn default_dial() -> String {
    "9".to_string()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventFile {
    at_s: f64,
    out_of_service: Option<String>,
    in_service: Option<String>,
    cap: Option<CapFile>,
    #[serde(default)]
    restart: bool,
    reload: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CapFile {
    clan: String,
    max_sockets: u32,
}

/// The most phones a plan takes (all groups together).
pub const MAX_PHONES: usize = 1_000_000;

/// The longest plan, virtual seconds (a week).
pub const MAX_DURATION_S: f64 = 7.0 * 86_400.0;

/// The most entries of a group's `regions` (a region may be listed more than once to take
/// more of the turns).
pub const MAX_REGION_ENTRIES: usize = 255;

impl Scenario {
    /// Reads and checks a scenario file; a reload's path is taken relative to the file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError::Read {
            path: path.display().to_string(),
            error,
        })?;
        let folder = path.parent().unwrap_or(Path::new("."));
        Scenario::from_toml(&text, &path.display().to_string(), folder)
    }

    /// Parses and checks a scenario; `origin` names it in errors, `folder` is where
    /// reload paths are relative to.
    pub fn from_toml(text: &str, origin: &str, folder: &Path) -> Result<Scenario, ScenarioError> {
        let file: File = toml::from_str(text).map_err(|e| {
            let e = crate::config::toml_error::from_toml_error(&e, text, origin);
            if e.field.is_empty() {
                ScenarioError::Toml {
                    origin: e.origin,
                    message: e.reason,
                }
            } else {
                ScenarioError::Field {
                    origin: e.origin,
                    field: e.field,
                    message: e.reason,
                }
            }
        })?;
        let field = |field: String, message: String| ScenarioError::Field {
            origin: origin.to_string(),
            field,
            message,
        };
        let positive = |name: &str, value: f64, most: f64| {
            if value.is_finite() && value > 0.0 && value <= most {
                Ok(value)
            } else {
                Err(field(
                    name.to_string(),
                    format!("{value} is not a number of seconds above 0 and at most {most}"),
                ))
            }
        };
        let duration_s = positive("duration_s", file.duration_s, MAX_DURATION_S)?;
        if !(0.0..=1.0).contains(&file.loss) {
            return Err(field(
                "loss".into(),
                format!("{} is not within 0 to 1", file.loss),
            ));
        }
        if !(file.latency_ms.is_finite() && (0.0..=10_000.0).contains(&file.latency_ms)) {
            return Err(field(
                "latency_ms".into(),
                format!("{} is not within 0 to 10000", file.latency_ms),
            ));
        }
        let sample_s = positive("sample_s", file.sample_s, 3600.0)?;
        if duration_s / sample_s > 10_000_000.0 {
            return Err(field(
                "sample_s".into(),
                format!("{sample_s} s gives more than 10,000,000 samples over {duration_s} s"),
            ));
        }
        if !(10..=60_000).contains(&file.timeout_ms) {
            return Err(field(
                "timeout_ms".into(),
                format!("{} is not within 10 to 60000", file.timeout_ms),
            ));
        }
        if file.retries > 10 {
            return Err(field(
                "retries".into(),
                format!("{} is above 10", file.retries),
            ));
        }
        if file.groups.is_empty() {
            return Err(field(
                "group".into(),
                "a scenario needs at least one [[group]] of phones".into(),
            ));
        }
        let mut groups = Vec::new();
        let mut total = 0usize;
        for (i, group) in file.groups.into_iter().enumerate() {
            let at = |name: &str| format!("group[{i}].{name}");
            let checked = check_group(group, i, &at, duration_s).map_err(|(f, m)| field(f, m))?;
            if let Some(j) = groups.iter().position(|g: &Group| g.name == checked.name) {
                return Err(field(
                    at("name"),
                    format!(
                        "{:?} is group[{j}]'s name too; the report tells groups apart by name",
                        checked.name
                    ),
                ));
            }
            total = total.saturating_add(checked.count);
            groups.push(checked);
        }
        if total > MAX_PHONES {
            return Err(field(
                "group".into(),
                format!("{total} phones in all; a plan takes at most {MAX_PHONES}"),
            ));
        }
        check_addresses(&groups).map_err(|(f, m)| field(f, m))?;
        check_extensions(&groups).map_err(|(f, m)| field(f, m))?;
        let mut events = Vec::new();
        for (i, event) in file.events.into_iter().enumerate() {
            let at = |name: &str| format!("event[{i}].{name}");
            events.push(
                check_event(event, i, &at, duration_s, folder).map_err(|(f, m)| field(f, m))?,
            );
        }
        // Stable: events at one instant keep their file order.
        events.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        Ok(Scenario {
            origin: origin.to_string(),
            duration_s,
            seed: file.seed,
            loss: file.loss,
            latency_ms: file.latency_ms,
            sample_s,
            timeout_ms: file.timeout_ms,
            retries: file.retries,
            groups,
            events,
        })
    }

    /// Phones in all groups.
    pub fn phones(&self) -> usize {
        self.groups.iter().map(|g| g.count).sum()
    }
}

type FieldError = (String, String);

fn check_group(
    group: GroupFile,
    index: usize,
    at: &dyn Fn(&str) -> String,
    duration_s: f64,
) -> Result<Group, FieldError> {
    if group.count == 0 {
        return Err((at("count"), "a group needs at least one phone".into()));
    }
    if group.name.as_ref().is_some_and(|n| n.trim().is_empty()) {
        return Err((
            at("name"),
            "a group's name may not be empty: the report names the group by it (leave it out \
             for \"group N\")"
                .into(),
        ));
    }
    let addresses_key = match (&group.region, &group.regions, &group.network) {
        (_, _, Some(_)) => "network",
        (_, Some(_), None) => "regions",
        _ => "region",
    };
    let regions = match (group.region, group.regions) {
        (Some(_), Some(_)) => {
            return Err((
                at("regions"),
                "give either region or regions, not both".into(),
            ))
        }
        (Some(region), None) => Some(vec![region]),
        (None, regions) => regions,
    };
    let addresses = match (regions, &group.network) {
        (Some(_), Some(_)) => {
            return Err((
                at("network"),
                "give either a region (or regions) or a network, not both".into(),
            ))
        }
        (None, None) => {
            return Err((
                at("region"),
                "give the phones' home region (region = 1: addresses 127.1.x.y, or regions = \
                 [1, 2, 3] round robin) or their network (network = \"10.1.0.0/16\")"
                    .into(),
            ))
        }
        (Some(regions), None) => {
            if regions.is_empty() || regions.contains(&0) {
                return Err((
                    at(addresses_key),
                    "regions are 1 to 255 (the phones of region R take 127.R.x.y), at least one"
                        .into(),
                ));
            }
            if regions.len() > MAX_REGION_ENTRIES {
                return Err((
                    at("regions"),
                    format!(
                        "{} entries; at most {MAX_REGION_ENTRIES} (list a region twice to give \
                         it two turns in each round)",
                        regions.len()
                    ),
                ));
            }
            let most = roster::MOST_PER_REGION;
            if let Some((region, _)) =
                roster::fullest_region(&regions, group.count).filter(|&(_, phones)| phones > most)
            {
                return Err((
                    at("count"),
                    format!("region {region}'s block 127.{region}.x.y holds at most {most} phones"),
                ));
            }
            Addresses::Regions(regions)
        }
        (None, Some(network)) => {
            let (ip, prefix) = parse_network(network).map_err(|m| (at("network"), m))?;
            let hosts = if prefix >= 31 {
                1u64 << (32 - prefix)
            } else {
                (1u64 << (32 - prefix)) - 2
            };
            if group.count as u64 > hosts {
                return Err((
                    at("count"),
                    format!(
                        "{} phones do not fit in {network} ({hosts} host addresses)",
                        group.count
                    ),
                ));
            }
            Addresses::Network(ip, prefix)
        }
    };
    if !(0.0..=1.0).contains(&group.tts_share) {
        return Err((
            at("tts_share"),
            format!("{} is not within 0 to 1", group.tts_share),
        ));
    }
    let in_time = |name: &str, value: f64| {
        if value.is_finite() && value >= 0.0 && value <= duration_s {
            Ok(value)
        } else {
            Err((
                at(name),
                format!("{value} is not within 0 and duration_s ({duration_s})"),
            ))
        }
    };
    let start_s = in_time("start_s", group.start_s)?;
    let gap_s = match (group.rate_per_s, group.over_s) {
        (Some(_), Some(_)) => {
            return Err((
                at("over_s"),
                "give either rate_per_s or over_s, not both".into(),
            ))
        }
        (Some(rate), None) => {
            if !(rate.is_finite() && rate > 0.0) {
                return Err((at("rate_per_s"), format!("{rate} is not a rate above 0")));
            }
            let gap_s = 1.0 / rate;
            let last_s = start_s + (group.count - 1) as f64 * gap_s;
            if last_s > duration_s {
                return Err((
                    at("rate_per_s"),
                    format!(
                        "at {rate} a second from start_s ({start_s}), its last phone would \
                         arrive at {last_s} s, after duration_s ({duration_s}), and never be \
                         planned"
                    ),
                ));
            }
            gap_s
        }
        (None, Some(over)) => {
            in_time("over_s", over)?;
            if start_s + over > duration_s {
                return Err((
                    at("over_s"),
                    format!(
                        "start_s ({start_s}) and over_s ({over}) end after duration_s \
                         ({duration_s}): its last phones would arrive too late to be planned"
                    ),
                ));
            }
            if group.count > 1 {
                over / (group.count - 1) as f64
            } else {
                0.0
            }
        }
        (None, None) => 0.0,
    };
    if group.ttl_s == Some(0) {
        return Err((
            at("ttl_s"),
            "a time to live of 0 s asks for nothing: leave it out".into(),
        ));
    }
    if !(group.calls_per_hour.is_finite() && (0.0..=3600.0).contains(&group.calls_per_hour)) {
        return Err((
            at("calls_per_hour"),
            format!("{} is not within 0 to 3600", group.calls_per_hour),
        ));
    }
    if !(group.call_hold_s.is_finite() && group.call_hold_s > 0.0 && group.call_hold_s <= 86_400.0)
    {
        return Err((
            at("call_hold_s"),
            format!(
                "{} is not a number of seconds above 0 and at most 86400",
                group.call_hold_s
            ),
        ));
    }
    if group.dial.is_empty()
        || group.dial.len() > 16
        || !group.dial.bytes().all(|b| b.is_ascii_digit())
    {
        return Err((
            at("dial"),
            format!("{:?} is not 1 to 16 digits", group.dial),
        ));
    }
    let tts = tts_phones(group.count, group.tts_share);
    for (key, from, phones) in [
        (
            "extensions_from",
            group.extensions_from,
            group.count as u64 - tts,
        ),
        ("tts_extensions_from", group.tts_extensions_from, tts),
    ] {
        if phones > 0 && u64::from(from) + phones - 1 > u64::from(u32::MAX) {
            return Err((
                at(key),
                format!(
                    "{phones} extensions from {from} run past {}, the largest extension",
                    u32::MAX
                ),
            ));
        }
    }
    Ok(Group {
        name: group.name.unwrap_or_else(|| format!("group {}", index + 1)),
        count: group.count,
        addresses,
        tts_share: group.tts_share,
        extensions_from: group.extensions_from,
        tts_extensions_from: group.tts_extensions_from,
        arrival: Arrival { start_s, gap_s },
        ttl_s: group.ttl_s,
        calls_per_hour: group.calls_per_hour,
        call_hold_s: group.call_hold_s,
        dial: group.dial,
        addresses_key,
    })
}

/// How many of `count` phones a share of `tts_share` makes TTS.
fn tts_phones(count: usize, tts_share: f64) -> u64 {
    (count as f64 * tts_share).floor() as u64
}

/// `a.b.c.d/p`, IPv4.
fn parse_network(text: &str) -> Result<(Ipv4Addr, u8), String> {
    let (ip, prefix) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not a network a.b.c.d/prefix"))?;
    let ip: Ipv4Addr = ip
        .parse()
        .map_err(|_| format!("{ip:?} is not an IPv4 address"))?;
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| *p <= 32)
        .ok_or_else(|| format!("{prefix:?} is not a prefix length 0 to 32"))?;
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix)
    };
    Ok((Ipv4Addr::from(u32::from(ip) & mask), prefix))
}

/// No two groups may give one phone address twice.
fn check_addresses(groups: &[Group]) -> Result<(), FieldError> {
    let mut seen = std::collections::HashSet::new();
    for (i, group) in groups.iter().enumerate() {
        for n in 0..group.count {
            if !seen.insert(group.address(n)) {
                return Err((
                    format!("group[{i}]"),
                    format!(
                        "its phone {} has the address {} of an earlier group's phone; give \
                         the groups different regions or networks",
                        n + 1,
                        group.address(n)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// No two phones may have one extension: the gatekeeper would refuse the second
/// (`duplicateAlias`) for as long as the first stays.
fn check_extensions(groups: &[Group]) -> Result<(), FieldError> {
    // Each group's extensions: its non-TTS and its TTS phones, each a run from its start.
    let mut runs: Vec<(u64, u64, usize, &str)> = Vec::new();
    for (i, group) in groups.iter().enumerate() {
        let tts = tts_phones(group.count, group.tts_share);
        let other = group.count as u64 - tts;
        if other > 0 {
            let from = u64::from(group.extensions_from);
            runs.push((from, from + other, i, "extensions_from"));
        }
        if tts > 0 {
            let from = u64::from(group.tts_extensions_from);
            runs.push((from, from + tts, i, "tts_extensions_from"));
        }
    }
    for (a, first) in runs.iter().enumerate() {
        for second in &runs[a + 1..] {
            if first.0 < second.1 && second.0 < first.1 {
                return Err((
                    format!("group[{}].{}", second.2, second.3),
                    format!(
                        "its extensions {}..{} overlap {}..{} of group[{}].{}: two phones \
                         with one extension, and the gatekeeper refuses the second",
                        second.0,
                        second.1 - 1,
                        first.0,
                        first.1 - 1,
                        first.2,
                        first.3
                    ),
                ));
            }
        }
    }
    Ok(())
}

impl Group {
    /// Phone `n`'s address (0-based within the group).
    pub fn address(&self, n: usize) -> Ipv4Addr {
        match &self.addresses {
            Addresses::Regions(regions) => roster::address(regions, n),
            &Addresses::Network(base, prefix) => {
                let first = if prefix >= 31 { 0 } else { 1 };
                Ipv4Addr::from(u32::from(base) + first + n as u32)
            }
        }
    }

    /// Whether phone `n` is TTS: spread evenly, phone n is TTS when the share's running
    /// total crosses a whole number at n (as `rasgk storm --tts-share` picks them).
    pub fn is_tts(&self, n: usize) -> bool {
        roster::is_tts(self.tts_share, n)
    }

    /// Phone `n`'s extension: its TTS phones number up from `tts_extensions_from`, the
    /// others from `extensions_from`, each in phone order.
    pub fn extension(&self, n: usize) -> u32 {
        roster::extension(
            self.tts_share,
            self.tts_extensions_from,
            self.extensions_from,
            n,
        )
    }

    /// When phone `n` arrives, virtual seconds.
    pub fn arrives_at(&self, n: usize) -> f64 {
        self.arrival.start_s + n as f64 * self.arrival.gap_s
    }
}

fn check_event(
    event: EventFile,
    index: usize,
    at: &dyn Fn(&str) -> String,
    duration_s: f64,
    folder: &Path,
) -> Result<TimedEvent, FieldError> {
    if !(event.at_s.is_finite() && event.at_s >= 0.0 && event.at_s <= duration_s) {
        return Err((
            at("at_s"),
            format!(
                "{} is not within 0 and duration_s ({duration_s})",
                event.at_s
            ),
        ));
    }
    let mut what = Vec::new();
    if let Some(clan) = event.out_of_service {
        what.push(Event::OutOfService(clan));
    }
    if let Some(clan) = event.in_service {
        what.push(Event::InService(clan));
    }
    if let Some(cap) = event.cap {
        if cap.max_sockets == 0 {
            return Err((
                at("cap.max_sockets"),
                "a cap of 0 takes no phone: it must be at least 1 (to take the C-LAN's phones \
                 away, put it out_of_service)"
                    .into(),
            ));
        }
        what.push(Event::Cap {
            clan: cap.clan,
            max_sockets: cap.max_sockets,
        });
    }
    if event.restart {
        what.push(Event::Restart);
    }
    if let Some(path) = event.reload {
        what.push(Event::Reload(folder.join(path)));
    }
    match what.len() {
        1 => Ok(TimedEvent {
            index,
            at_s: event.at_s,
            event: what.remove(0),
        }),
        0 => Err((
            at("at_s"),
            "the event says nothing to do: give one of out_of_service = \"C-LAN\", \
             in_service = \"C-LAN\", cap = { clan = \"C-LAN\", max_sockets = N }, \
             restart = true, reload = \"FILE.toml\""
                .into(),
        )),
        _ => Err((
            at("at_s"),
            "one event does one thing: split it into several [[event]]s at the same at_s".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_toml(text, "s.toml", Path::new("/plans"))
    }

    #[test]
    fn a_scenario_reads_with_its_defaults_and_sorts_its_events() {
        let s = read(
            "duration_s = 600\n\
             [[group]]\ncount = 10\nregion = 2\nrate_per_s = 5\ntts_share = 0.5\n\
             [[event]]\nat_s = 300\nin_service = \"a\"\n\
             [[event]]\nat_s = 100\nout_of_service = \"a\"\n\
             [[event]]\nat_s = 300\nreload = \"b.toml\"\n",
        )
        .unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.groups[0].arrives_at(3), 0.6000000000000001);
        assert_eq!(s.groups[0].address(0), Ipv4Addr::new(127, 2, 1, 1));
        assert_eq!(s.groups[0].address(250), Ipv4Addr::new(127, 2, 2, 1));
        let tts = (0..10).filter(|&n| s.groups[0].is_tts(n)).count();
        assert_eq!(tts, 5);
        let labels: Vec<String> = s.events.iter().map(|e| e.event.label()).collect();
        assert_eq!(
            labels,
            ["a out of service", "a back in service", "reload b.toml"]
        );
        assert_eq!(
            s.events[2].event,
            Event::Reload(PathBuf::from("/plans/b.toml"))
        );
    }

    #[test]
    fn phones_of_several_regions_take_turns_and_addresses_as_the_storm_gives_them() {
        let s = read("duration_s = 60\n[[group]]\ncount = 7\nregions = [1, 2, 1]\n").unwrap();
        let addresses: Vec<String> = (0..7).map(|n| s.groups[0].address(n).to_string()).collect();
        assert_eq!(
            addresses,
            [
                "127.1.1.1",
                "127.2.1.1",
                "127.1.1.2",
                "127.1.1.3",
                "127.2.1.2",
                "127.1.1.4",
                "127.1.1.5"
            ]
        );
    }

    #[test]
    fn mistakes_are_named_by_file_and_field() {
        let cases = [
            ("duration_s = 0\n[[group]]\ncount = 1\nregion = 1\n", "s.toml: duration_s"),
            ("duration_s = 9\n", "s.toml: group: a scenario needs"),
            ("duration_s = 9\n[[group]]\ncount = 1\n", "group[0].region"),
            (
                "duration_s = 9\n[[group]]\ncount = 1\nregions = [0]\n",
                "group[0].regions: regions are 1 to 255",
            ),
            (
                "duration_s = 9\n[[group]]\ncount = 70000\nregions = [4]\n",
                "group[0].count: region 4's block",
            ),
            (
                "duration_s = 9\n[[group]]\ncount = 1\nregion = 1\nnetwork = \"10.0.0.0/8\"\n",
                "group[0].network",
            ),
            (
                "duration_s = 9\n[[group]]\ncount = 9\nnetwork = \"10.0.0.0/30\"\n",
                "group[0].count: 9 phones do not fit",
            ),
            (
                "duration_s = 9\n[[group]]\ncount = 1\nregion = 1\n[[event]]\nat_s = 1\n",
                "event[0].at_s: the event says nothing",
            ),
            (
                "duration_s = 9\n[[group]]\ncount = 1\nregion = 1\n[[event]]\nat_s = 10\nrestart = true\n",
                "event[0].at_s: 10 is not within",
            ),
            (
                "duration_s = 9\n[[group]]\ncount = 1\nregion = 1\n[[group]]\ncount = 1\nregion = 1\n",
                "group[1]: its phone 1 has the address 127.1.1.1",
            ),
            ("duration_s = 9\nphones = 3\n", "s.toml: phones: unknown field `phones`"),
            (
                "duration_s = 9\n[[group]]\ncount = 10\nregion = 1\n\
                 [[group]]\ncount = 10\nregion = 2\nextensions_from = 60005\n",
                "group[1].extensions_from: its extensions 60005..60014 overlap 60000..60009",
            ),
        ];
        for (text, expected) in cases {
            let error = read(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }
}
