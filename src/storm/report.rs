//! A storm's report: registrations per second, RAS latency percentiles (an HDR histogram),
//! rejects by reason, retransmissions, and the final socket load per C-LAN and per region —
//! as a table for people, one JSON object for scripts, and an SVG chart of the load per
//! C-LAN over time. With `--sockets` it adds the time to service (RCF to the empty TPKT
//! frame), the sockets per C-LAN as the phones hold them, what turned connections away, and
//! the sockets the phones held in service over time (a series of its own in the chart).
//! With `--calls-per-s` it adds the routed calls ([`RoutedCalls`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::calls::CallCounts;
use super::tally::Tally;

/// Latency figures, milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Latency {
    /// Percentiles of a histogram of microseconds.
    pub fn of(histogram: &hdrhistogram::Histogram<u64>) -> Latency {
        let ms = |us: u64| us as f64 / 1000.0;
        if histogram.is_empty() {
            return Latency::default();
        }
        Latency {
            p50: ms(histogram.value_at_quantile(0.50)),
            p90: ms(histogram.value_at_quantile(0.90)),
            p99: ms(histogram.value_at_quantile(0.99)),
            max: ms(histogram.max()),
        }
    }
}

/// One sample of the load over time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSample {
    /// Seconds since the first GRQ.
    pub t: f64,
    /// Sockets per C-LAN.
    pub clans: BTreeMap<String, u64>,
    /// Routed calls in progress with a leg on each C-LAN (`calls` of `/api/clans`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub calls: BTreeMap<String, u64>,
}

/// The routed calls of a storm (`--calls-per-s`): placed by its phones, through the
/// gatekeeper, to its phones.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoutedCalls {
    /// Calls a second asked for (`--calls-per-s`).
    pub per_s: f64,
    /// The counts: placed, connected, failed by reason, ….
    #[serde(flatten)]
    pub counts: CallCounts,
    /// Setups written per second, from the first to the last.
    pub setups_per_s: f64,
    /// Setup written → Connect read, as the callers measured it.
    pub setup_to_connect_ms: Latency,
    /// From the first GRQ to the first Setup, seconds.
    pub started_s: Option<f64>,
    /// From the first GRQ to the end of the last call, seconds.
    pub ended_s: Option<f64>,
    /// The most calls in progress with a leg on each C-LAN in the admin port's samples
    /// (every 100 ms).
    pub peak_calls_per_clan: BTreeMap<String, u64>,
    /// Calls still in progress when the storm ended, as the phones saw them.
    pub in_progress_at_end: u64,
    /// Routed calls in progress at the end as the admin port's `/api/calls` listed them,
    /// read while the phones were still there.
    pub in_progress_at_end_admin: Option<u64>,
}

impl RoutedCalls {
    /// The routed calls of `tally`, at `per_s` a second asked, with the peaks per C-LAN of
    /// the admin port's `load` samples and the calls it listed at the end.
    pub fn of(
        per_s: f64,
        tally: &Tally,
        load: &[LoadSample],
        at_end_admin: Option<u64>,
    ) -> RoutedCalls {
        let calls = &tally.routed_calls;
        let since_start =
            |at: Option<u64>| at.map(|at| at.saturating_sub(tally.first_grq_unix_us) as f64 / 1e6);
        let mut peak_calls_per_clan = BTreeMap::new();
        for sample in load {
            for (clan, &n) in &sample.calls {
                let peak = peak_calls_per_clan.entry(clan.clone()).or_insert(0);
                *peak = n.max(*peak);
            }
        }
        RoutedCalls {
            per_s,
            counts: calls.counts.clone(),
            setups_per_s: calls.setups_per_s(),
            setup_to_connect_ms: Latency::of(&super::tally::histogram_of(
                &calls.setup_to_connect_us,
            )),
            started_s: since_start(calls.first_setup_unix_us),
            ended_s: since_start(calls.last_end_unix_us),
            peak_calls_per_clan,
            in_progress_at_end: calls.counts.in_progress_at_end(),
            in_progress_at_end_admin: at_end_admin,
        }
    }

    /// Its lines of the table.
    fn table(&self, out: &mut String) {
        let counts = |map: &BTreeMap<String, u64>| {
            if map.is_empty() {
                return "none".to_string();
            }
            let each: Vec<String> = map.iter().map(|(why, n)| format!("{n} {why}")).collect();
            each.join(", ")
        };
        let _ = writeln!(
            out,
            "routed calls (--calls-per-s {}): {} placed, {} connected, {} failed ({}); {:.1} \
             Setups/s",
            self.per_s,
            self.counts.placed,
            self.counts.connected,
            self.counts.failed.values().sum::<u64>(),
            counts(&self.counts.failed),
            self.setups_per_s,
        );
        let l = &self.setup_to_connect_ms;
        let _ = writeln!(
            out,
            "  Setup → Connect ms p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}; {} with Call \
             Proceeding, {} with Alerting; {} Setups answered by the phones called",
            l.p50,
            l.p90,
            l.p99,
            l.max,
            self.counts.proceeding,
            self.counts.alerting,
            self.counts.answered,
        );
        let _ = writeln!(
            out,
            "  cut short: {}; in progress at the end: {} (phones), {} (admin); {} stray frames",
            counts(&self.counts.cut_short),
            self.in_progress_at_end,
            self.in_progress_at_end_admin
                .map_or_else(|| "?".to_string(), |n| n.to_string()),
            self.counts.stray_frames,
        );
        if !self.peak_calls_per_clan.is_empty() {
            let peaks: Vec<String> = self
                .peak_calls_per_clan
                .iter()
                .map(|(clan, n)| format!("{clan} {n}"))
                .collect();
            let _ = writeln!(out, "  peak calls per C-LAN (admin): {}", peaks.join(", "));
        }
    }
}

/// Sockets the phones held in service, at one time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InServiceSample {
    /// Seconds since the first GRQ (the start of a 100-ms slot).
    pub t: f64,
    /// Sockets in service, summed over the storm's processes.
    pub sockets: u64,
}

/// Phones refused for good with one rejection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refused {
    /// How many.
    pub phones: u64,
    /// A few of them, with who holds their alias when the admin port said.
    pub examples: Vec<RefusedPhone>,
    /// What the rejection means, and what to do.
    pub advice: String,
}

/// One phone refused for good.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RefusedPhone {
    /// Its first alias.
    pub alias: String,
    /// Its RAS address.
    pub phone: String,
    /// The registration holding that alias (`endpointIdentifier`), when the gatekeeper's
    /// admin port lists one.
    pub held_by: Option<String>,
    /// Where that registration's RAS comes from.
    pub held_from: Option<String>,
}

impl Refused {
    /// Phones refused with `reject` (`"RRJ duplicateAlias"`); `registrations` is the
    /// gatekeeper's `/api/registrations` when its admin port (at `admin`) answered.
    pub fn of(
        reject: &str,
        phones: u64,
        examples: &[(String, String)],
        registrations: Option<&[crate::gatekeeper::RegistrationView]>,
        admin: Option<std::net::SocketAddr>,
    ) -> Refused {
        let examples: Vec<RefusedPhone> = examples
            .iter()
            .map(|(alias, phone)| {
                let holder = registrations
                    .into_iter()
                    .flatten()
                    .find(|r| r.aliases.iter().any(|a| a == alias));
                RefusedPhone {
                    alias: alias.clone(),
                    phone: phone.clone(),
                    held_by: holder.map(|r| r.endpoint_id.clone()),
                    held_from: holder.map(|r| r.ras_address.to_string()),
                }
            })
            .collect();
        let advice = advice(reject, &examples, admin);
        Refused {
            phones,
            examples,
            advice,
        }
    }
}

/// What a rejection a retry cannot change means, and what to do about it.
fn advice(reject: &str, examples: &[RefusedPhone], admin: Option<std::net::SocketAddr>) -> String {
    let reason = reject.split_once(' ').map_or(reject, |(_, reason)| reason);
    match reason {
        "duplicateAlias" => {
            let held: Vec<String> = examples
                .iter()
                .map(|e| match (&e.held_by, &e.held_from) {
                    (Some(id), Some(from)) => format!("{} by {id} from {from}", e.alias),
                    _ => format!("{} by an endpoint the admin port did not name", e.alias),
                })
                .collect();
            let ip = |address: &str| address.parse::<std::net::SocketAddr>().map(|a| a.ip()).ok();
            let own_addresses = !examples.is_empty()
                && examples.iter().all(|e| {
                    e.held_from
                        .as_deref()
                        .is_some_and(|from| ip(from).is_some() && ip(from) == ip(&e.phone))
                });
            let whose = if own_addresses {
                " They registered from these phones' own IP addresses: an earlier storm's \
                 phones, left registered (--leave-registered) or cut off before their URQ."
            } else {
                ""
            };
            let delete = match (admin, examples.iter().find_map(|e| e.held_by.as_ref())) {
                (Some(admin), Some(id)) => {
                    format!(" (curl -X DELETE http://{admin}/api/registrations/{id})")
                }
                _ => String::new(),
            };
            format!(
                "their aliases are registered from other addresses: {}.{whose} Unregister those \
                 endpoints{delete}, wait for their time to live to run out, or give these \
                 phones other extensions (--from, --tts-from).",
                held.join(", ")
            )
        }
        "securityDenial" | "securityError" => "the gatekeeper refuses these phones' \
            credentials: check --password against its [[password]] entries (and the clocks: \
            a token carries a time stamp)."
            .to_string(),
        "terminalExcluded" => "the gatekeeper excludes these phones: its network map or \
            access rules leave their addresses out."
            .to_string(),
        _ => "the gatekeeper answers this request so every time: a retry cannot change it."
            .to_string(),
    }
}

/// Everything a storm measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Phones simulated.
    pub phones: usize,
    /// Storm processes the phones were spread over (each phone holds an open file).
    pub processes: usize,
    /// Phones that registered (each counted once).
    pub registered: usize,
    /// Phones that never registered.
    pub unregistered_never: usize,
    /// Rejects received, by message and reason (`"GRJ resourceUnavailable"`).
    pub rejected: BTreeMap<String, u64>,
    /// Requests sent again after a timeout.
    pub retransmissions: u64,
    /// Datagrams the simulated loss dropped (both ways).
    pub dropped: u64,
    /// Gatekeeper-sent URQs the phones answered.
    pub gatekeeper_urqs: u64,
    /// Phones that unregistered at the end (unless `--leave-registered`).
    pub unregistered: usize,
    /// Phones that sent URQ at the end and heard no UCF within 5 s.
    #[serde(default)]
    pub unregister_failed: usize,
    /// The phones were left registered at the end (`--leave-registered`).
    #[serde(default)]
    pub left_registered: bool,
    /// The storm was interrupted (Ctrl-C) and ended early.
    #[serde(default)]
    pub interrupted: bool,
    /// Phones whose attempts a rejection a retry cannot change ended, by that rejection
    /// (`"RRJ duplicateAlias"`): how many, who holds their aliases, and what to do.
    #[serde(default)]
    pub refused: BTreeMap<String, Refused>,
    /// From the first GRQ to the last first RCF, seconds.
    pub registration_s: f64,
    /// Registrations per second over that time.
    pub rate_per_s: f64,
    /// Socket mode: from the first GRQ to the last socket in service, seconds.
    #[serde(default)]
    pub service_s: Option<f64>,
    /// First GRQ to first RCF per phone.
    pub latency_ms: Latency,
    /// Sockets per C-LAN at the end: from the admin port's `/api/clans` when it answered,
    /// else the phones' own count (non-TTS phones by the C-LAN they registered at).
    pub clans: BTreeMap<String, u64>,
    /// Where `clans` came from: `"admin"` or `"phones"`.
    pub clans_source: &'static str,
    /// Sockets per region at the end (same source as `clans`).
    pub regions: BTreeMap<String, u64>,
    /// Phones registered at each C-LAN address, as the phones saw it (TTS phones included:
    /// the C-LAN of their RRQ, which need not hold their socket).
    pub registered_at: BTreeMap<String, u64>,
    /// The load over time (when the admin port answered).
    pub load: Vec<LoadSample>,
    /// Calls that got an ACF.
    pub calls: u64,
    /// Calls refused (ARJ).
    pub calls_refused: u64,
    /// ACFs per `destCallSignalAddress` (for trunk calls, the placing node), as the phones saw
    /// them.
    pub calls_per_node: BTreeMap<String, u64>,
    /// Calls placed since start per node from the admin port's `/api/trunks` (summed over
    /// trunks), when it answered.
    pub trunk_calls_per_node: BTreeMap<String, u64>,
    /// The storm's seed.
    pub seed: u64,
    /// The simulated loss, each way.
    pub loss: f64,
    /// Whether the phones took part in socket mode (`--sockets`); the fields below are
    /// empty or 0 without it.
    pub sockets: bool,
    /// RCF to the empty TPKT frame that puts the socket in service, once per registration
    /// that got a socket, all phones.
    pub time_to_service_ms: Latency,
    /// The same, TTS phones (the gatekeeper connected to them).
    pub tts_time_to_service_ms: Latency,
    /// The same, non-TTS phones (they connected to the C-LAN).
    pub non_tts_time_to_service_ms: Latency,
    /// How many times to service were measured.
    pub time_to_service_count: usize,
    /// Sockets in service per C-LAN signalling address (`"ip:port"`) as the phones held them
    /// at the end (a TTS socket's C-LAN is named by its IP alone when no RCF named a
    /// signalling address of that IP).
    pub sockets_held: BTreeMap<String, u64>,
    /// Phones (registered or not) that held no socket in service at the end.
    pub phones_without_socket: usize,
    /// Non-TTS connection attempts turned away before service: rejected busy or refused
    /// (reset, refused, ended or timed out before the TPKT frame).
    pub connections_rejected: u64,
    /// Sockets in service the gatekeeper closed (FIN or RST) while the phone was registered.
    pub sockets_closed_by_gatekeeper: u64,
    /// Connections the TTS phones' listeners accepted and handed to a TTS phone.
    pub tts_connections_accepted: u64,
    /// Connections the listeners accepted and closed at once (to no TTS phone's address).
    pub tts_connections_closed: u64,
    /// Other socket failures, by what the system said.
    pub socket_errors: BTreeMap<String, u64>,
    /// Sockets the phones held in service over time, every 100 ms.
    pub in_service: Vec<InServiceSample>,
    /// Routed calls (`--calls-per-s`), or `None` without them.
    pub routed_calls: Option<RoutedCalls>,
}

impl Report {
    /// The table for people.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} phones{}: {} registered, {} never ({}), {} retransmissions, {} dropped by simulated loss",
            self.phones,
            if self.processes > 1 {
                format!(" in {} processes", self.processes)
            } else {
                String::new()
            },
            self.registered,
            self.unregistered_never,
            if self.rejected.is_empty() {
                "no rejects".to_string()
            } else {
                self.rejected
                    .iter()
                    .map(|(reason, n)| format!("{n} {reason}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            self.retransmissions,
            self.dropped,
        );
        let _ = writeln!(
            out,
            "{:.0} registrations/s over {:.3} s; latency ms p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
            self.rate_per_s,
            self.registration_s,
            self.latency_ms.p50,
            self.latency_ms.p90,
            self.latency_ms.p99,
            self.latency_ms.max
        );
        if self.interrupted {
            let _ = writeln!(out, "interrupted (Ctrl-C): the storm ended early");
        }
        for (reject, refused) in &self.refused {
            let _ = writeln!(
                out,
                "refused for good, not tried again: {reject}, {} phones: {}",
                refused.phones, refused.advice
            );
        }
        let at_the_end = if self.left_registered {
            "left registered at the end (--leave-registered)".to_string()
        } else if self.unregister_failed > 0 {
            format!(
                "{} unregistered at the end, {} with no UCF within 5 s",
                self.unregistered, self.unregister_failed
            )
        } else {
            format!("{} unregistered at the end", self.unregistered)
        };
        if self.gatekeeper_urqs > 0 || self.registered > 0 {
            let _ = writeln!(
                out,
                "{} gatekeeper URQs answered, {at_the_end}",
                self.gatekeeper_urqs
            );
        }
        if self.calls > 0 || self.calls_refused > 0 {
            let _ = writeln!(
                out,
                "{} calls placed, {} refused; per destination (node): {}",
                self.calls,
                self.calls_refused,
                self.calls_per_node
                    .iter()
                    .map(|(at, n)| format!("{at} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            if !self.trunk_calls_per_node.is_empty() {
                let _ = writeln!(
                    out,
                    "  per node (/api/trunks): {}",
                    self.trunk_calls_per_node
                        .iter()
                        .map(|(node, n)| format!("{node} {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        // A storm none of whose phones registered had no sockets and placed no calls.
        if self.sockets && self.registered > 0 {
            self.socket_table(&mut out);
        }
        if let Some(calls) = self.routed_calls.as_ref().filter(|_| self.registered > 0) {
            calls.table(&mut out);
        }
        let _ = writeln!(out, "sockets per C-LAN ({}):", self.clans_source);
        let width = self.clans.keys().map(String::len).max().unwrap_or(4);
        let most = self.clans.values().copied().max().unwrap_or(0).max(1);
        for (clan, sockets) in &self.clans {
            let cells = (sockets * 40).div_ceil(most) as usize;
            let _ = writeln!(out, "  {clan:<width$}  {sockets:>6}  {}", "█".repeat(cells));
        }
        if !self.regions.is_empty() {
            let _ = writeln!(out, "sockets per region:");
            for (region, sockets) in &self.regions {
                let _ = writeln!(out, "  region {region:<4} {sockets:>6}");
            }
        }
        out
    }

    /// The socket-mode lines of the table.
    fn socket_table(&self, out: &mut String) {
        let held: u64 = self.sockets_held.values().sum();
        let _ = writeln!(
            out,
            "sockets (--sockets): {held} held by the phones at the end, {} phones without; {} \
             connections rejected busy or refused, {} closed by the gatekeeper; {} TTS \
             connections accepted, {} to no TTS phone",
            self.phones_without_socket,
            self.connections_rejected,
            self.sockets_closed_by_gatekeeper,
            self.tts_connections_accepted,
            self.tts_connections_closed,
        );
        let line = |l: &Latency| {
            format!(
                "p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
                l.p50, l.p90, l.p99, l.max
            )
        };
        if let Some(service_s) = self.service_s {
            let _ = writeln!(out, "first GRQ to last socket in service {service_s:.3} s");
        }
        let _ = writeln!(
            out,
            "time to service ms ({} measured): all {}",
            self.time_to_service_count,
            line(&self.time_to_service_ms)
        );
        let _ = writeln!(out, "  TTS      {}", line(&self.tts_time_to_service_ms));
        let _ = writeln!(out, "  non-TTS  {}", line(&self.non_tts_time_to_service_ms));
        if !self.socket_errors.is_empty() {
            let _ = writeln!(out, "socket errors:");
            for (error, n) in &self.socket_errors {
                let _ = writeln!(out, "  {n:>6}  {error}");
            }
        }
        let _ = writeln!(out, "sockets per C-LAN (held by the phones):");
        let width = self.sockets_held.keys().map(String::len).max().unwrap_or(4);
        for (clan, sockets) in &self.sockets_held {
            let _ = writeln!(out, "  {clan:<width$}  {sockets:>6}");
        }
    }

    /// An SVG line chart of the sockets per C-LAN over time (from the admin port), and in
    /// socket mode of the sockets the phones held in service.
    pub fn svg(&self) -> String {
        let (width, height, margin) = (800.0, 400.0, 50.0);
        let t_max = self
            .load
            .last()
            .map(|s| s.t)
            .unwrap_or(0.0)
            .max(self.in_service.last().map_or(0.0, |s| s.t))
            .max(self.registration_s)
            .max(0.001);
        let y_max = self
            .load
            .iter()
            .flat_map(|s| s.clans.values())
            .chain(self.clans.values())
            .chain(self.in_service.iter().map(|s| &s.sockets))
            .copied()
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let x = |t: f64| margin + t / t_max * (width - 2.0 * margin);
        let y = |v: f64| height - margin - v / y_max * (height - 2.0 * margin);
        let colours = [
            "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf",
        ];
        let mut out = String::new();
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let _ = writeln!(
            out,
            r#"<text x="{margin}" y="20" font-size="14">Sockets per C-LAN over time: {} phones, seed {}, loss {}</text>"#,
            self.phones, self.seed, self.loss
        );
        let _ = writeln!(
            out,
            r##"<g stroke="#999"><line x1="{margin}" y1="{}" x2="{}" y2="{}"/><line x1="{margin}" y1="{margin}" x2="{margin}" y2="{}"/></g>"##,
            height - margin,
            width - margin,
            height - margin,
            height - margin
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{t_max:.2} s</text><text x="{}" y="{}" text-anchor="end">{y_max}</text>"#,
            width - margin,
            height - margin + 16.0,
            margin - 4.0,
            margin + 4.0
        );
        for (i, clan) in self.clans.keys().enumerate() {
            let colour = colours[i % colours.len()];
            let points: Vec<String> = self
                .load
                .iter()
                .map(|s| {
                    let v = s.clans.get(clan).copied().unwrap_or(0) as f64;
                    format!("{:.1},{:.1}", x(s.t), y(v))
                })
                .collect();
            if !points.is_empty() {
                let _ = writeln!(
                    out,
                    r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
                    points.join(" "),
                    escape(clan)
                );
            }
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" fill="{colour}">{} ({})</text>"#,
                width - margin + 4.0 - 120.0,
                margin + 16.0 * i as f64,
                escape(clan),
                self.clans[clan]
            );
        }
        if !self.in_service.is_empty() {
            let points: Vec<String> = self
                .in_service
                .iter()
                .map(|s| format!("{:.1},{:.1}", x(s.t), y(s.sockets as f64)))
                .collect();
            let _ = writeln!(
                out,
                r#"<polyline fill="none" stroke="black" stroke-width="2" stroke-dasharray="6 3" points="{}"><title>in service, held by the phones</title></polyline>"#,
                points.join(" ")
            );
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}">in service, held by the phones ({})</text>"#,
                width - margin + 4.0 - 120.0,
                margin + 16.0 * self.clans.len() as f64,
                self.sockets_held.values().sum::<u64>()
            );
        }
        out.push_str("</svg>\n");
        out
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
