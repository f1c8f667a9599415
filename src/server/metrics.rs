//! `GET /metrics` in the Prometheus text exposition format (version 0.0.4).
//!
//! The core already keeps every counter (`Stats`), so this renders a copy of them taken by
//! the state task instead of mirroring them in an exporter crate's registry: one source of
//! truth, nothing to keep in step. The format is small and fixed; `tests/admin.rs` reads the
//! output back with a Prometheus text-format parser.

use std::fmt::Write as _;

use crate::config::Limits;
use crate::gatekeeper::relay::BadSignal;
use crate::gatekeeper::stats::LatencyHistogram;
use crate::gatekeeper::stats::{BadDatagram, LATENCY_BOUNDS_US};
use crate::gatekeeper::{
    CallEnd, CallStats, ClanView, Closing, Counts, Gatekeeper, RebalanceView, Refusal, SocketStats,
    Stats, TrunkView,
};
use crate::ras::MessageKind;

/// A per-C-LAN gauge: name, help, how to read it.
type Gauge = (&'static str, &'static str, fn(&ClanView) -> u64);

/// What `/metrics` shows, copied out of the gatekeeper in one go.
pub(crate) struct Figures {
    stats: Stats,
    clans: Vec<ClanView>,
    counts: Counts,
    trunks: Vec<TrunkView>,
    call_hops: u64,
    limits: Limits,
    sockets: SocketStats,
    calls: CallStats,
    calls_active: usize,
    declining: usize,
    max_setups_per_clan: u32,
    rebalance: RebalanceView,
}

impl Figures {
    pub(crate) fn of(gatekeeper: &Gatekeeper) -> Figures {
        Figures {
            stats: gatekeeper.stats().clone(),
            clans: gatekeeper.clans(),
            counts: gatekeeper.counts(),
            trunks: gatekeeper.trunks(),
            call_hops: gatekeeper.call_hops_total(),
            limits: gatekeeper.config().limits,
            sockets: gatekeeper.socket_stats().clone(),
            declining: gatekeeper.declining_phones(),
            calls: gatekeeper.call_stats().clone(),
            calls_active: gatekeeper.routed_calls_active(),
            max_setups_per_clan: gatekeeper.config().gatekeeper.max_setups_per_clan,
            rebalance: gatekeeper.rebalance(),
        }
    }

    /// Rebalancing (docs/rules.md §9.2): whether it is on, its settings, the phones held off,
    /// and the moves by the C-LAN they were made off (every configured C-LAN, 0 when none).
    fn render_rebalance(&self, out: &mut String) {
        let r = &self.rebalance;
        let name = "rasgk_rebalance_enabled";
        header(
            out,
            name,
            "1 when [rebalance] is on (Avaya never rebalances).",
            "gauge",
        );
        let _ = writeln!(out, "{name} {}", u8::from(r.enabled));
        let name = "rasgk_rebalance_setting";
        header(
            out,
            name,
            "The settings of [rebalance] (all 0 when it is off).",
            "gauge",
        );
        for (setting, value) in [
            ("tolerance", f64::from(r.tolerance)),
            ("moves_per_s", r.moves_per_s),
            ("hold_off_s", r.hold_off_s as f64),
        ] {
            let _ = writeln!(out, "{name}{{setting=\"{setting}\"}} {value}");
        }
        let name = "rasgk_rebalance_held_off";
        header(
            out,
            name,
            "Phones moved within hold_off_s, which are not moved again until it runs out.",
            "gauge",
        );
        let _ = writeln!(out, "{name} {}", r.held_off);
        let name = "rasgk_rebalance_moves_total";
        header(
            out,
            name,
            "Phones rebalancing moved (a URQ leading to a lighter C-LAN), by the C-LAN they \
             were moved off.",
            "counter",
        );
        let configured = self.clans.iter().map(|clan| clan.name.as_str());
        let removed = r
            .moves_from
            .keys()
            .map(String::as_str)
            .filter(|name| self.clans.iter().all(|clan| clan.name != *name));
        for clan in configured.chain(removed) {
            let value = r.moves_from.get(clan).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}{{clan=\"{}\"}} {value}", escape(clan));
        }
    }

    /// Socket mode: connections refused and closed by reason, establishments, octets and
    /// frames read, time to service.
    fn render_sockets(&self, out: &mut String) {
        let s = &self.sockets;
        let name = "rasgk_connections_refused_total";
        header(
            out,
            name,
            "Signalling connections refused (reset) at once, by reason.",
            "counter",
        );
        for reason in Refusal::ALL {
            let value = s.refused.get(&reason).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}{{reason=\"{}\"}} {value}", reason.name());
        }
        let name = "rasgk_sockets_closed_total";
        header(
            out,
            name,
            "Signalling sockets and TTS set-ups that ended, by reason.",
            "counter",
        );
        for reason in Closing::ALL {
            let value = s.closed.get(&reason).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}{{reason=\"{}\"}} {value}", reason.name());
        }
        for (name, help, value) in [
            (
                "rasgk_sockets_established_total",
                "Signalling sockets established.",
                s.established,
            ),
            (
                "rasgk_tts_connects_total",
                "TTS connects the gatekeeper started.",
                s.connects,
            ),
            (
                "rasgk_tts_declines_total",
                "TTS sockets declined: closed by the phone before any call ran on them, as a \
                 standard H.323 endpoint closes a connection that brings no Setup.",
                s.declines,
            ),
            (
                "rasgk_service_frames_total",
                "Service frames written: empty TPKT frames telling a phone that asked for them \
                 that its socket is in service.",
                s.service_frames,
            ),
            (
                "rasgk_signal_octets_total",
                "Octets phones sent on their signalling sockets.",
                s.octets,
            ),
            (
                "rasgk_signal_frames_total",
                "TPKT frames phones sent on their signalling sockets.",
                s.frames,
            ),
        ] {
            header(out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        }
        let name = "rasgk_tts_declining_phones";
        header(
            out,
            name,
            "TTS phones whose last socket was declined, waiting for their next back-off round.",
            "gauge",
        );
        let _ = writeln!(out, "{name} {}", self.declining);
        let name = "rasgk_max_setups_per_clan";
        header(
            out,
            name,
            "Socket establishments allowed at once per C-LAN.",
            "gauge",
        );
        let _ = writeln!(out, "{name} {}", self.max_setups_per_clan);
        let name = "rasgk_time_to_service_seconds";
        header(
            out,
            name,
            "From the RCF to the phone's established signalling socket, TTS and not.",
            "histogram",
        );
        histogram(out, name, "tts=\"true\",", &s.time_to_service_tts);
        histogram(out, name, "tts=\"false\",", &s.time_to_service_other);
    }

    /// Routed calls (docs/rules.md §8.7): set-ups, answers, endings and failures by reason,
    /// messages that belong to no call, what was relayed, Setup → Connect.
    fn render_calls(&self, out: &mut String) {
        let c = &self.calls;
        for (name, help, value) in [
            (
                "rasgk_call_setups_total",
                "Routed calls: Setups relayed to a registered callee.",
                c.setups,
            ),
            (
                "rasgk_calls_connected_total",
                "Routed calls the callee answered (Connect).",
                c.connected,
            ),
            (
                "rasgk_call_messages_relayed_total",
                "Routed calls: Q.931 messages relayed from one leg to the other.",
                c.relayed,
            ),
            (
                "rasgk_call_releases_sent_total",
                "Routed calls: Release Completes the gatekeeper wrote itself.",
                c.released,
            ),
            (
                "rasgk_call_messages_late_total",
                "Routed calls: messages that crossed their call's end (the other side's own \
                 Release Complete), dropped.",
                c.late,
            ),
            (
                "rasgk_call_connections_total",
                "Routed calls: connections accepted or opened beyond the phones' sockets.",
                c.call_connections,
            ),
        ] {
            header(out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        }
        for (name, help, counts) in [
            (
                "rasgk_calls_ended_total",
                "Routed calls that ended, and Setups that made none, by reason.",
                &c.ended,
            ),
            (
                "rasgk_call_failures_total",
                "Routed calls that ended before the callee answered, and Setups that made \
                 none, by reason.",
                &c.failed,
            ),
        ] {
            header(out, name, help, "counter");
            for reason in CallEnd::ALL {
                let value = counts.get(&reason).copied().unwrap_or(0);
                let _ = writeln!(out, "{name}{{reason=\"{}\"}} {value}", reason.name());
            }
        }
        let name = "rasgk_calls_active";
        header(
            out,
            name,
            "Routed calls in progress (set up, not yet ended).",
            "gauge",
        );
        let _ = writeln!(out, "{name} {}", self.calls_active);
        let name = "rasgk_call_signal_bad_total";
        header(
            out,
            name,
            "Call-signalling messages that belong to no routed call, by what was wrong.",
            "counter",
        );
        for kind in BadSignal::ALL {
            let value = c.bad.get(&kind).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}{{kind=\"{}\"}} {value}", kind.name());
        }
        let name = "rasgk_call_setup_to_connect_seconds";
        header(
            out,
            name,
            "Routed calls: from the caller's Setup to the callee's Connect.",
            "histogram",
        );
        histogram(out, name, "", &c.setup_to_connect);
    }

    /// Bad datagrams by kind, and what `[limits]` held back, with the limits themselves.
    fn render_guard(&self, out: &mut String) {
        let name = "rasgk_malformed_total";
        header(
            out,
            name,
            "Datagrams that are no RAS message, by what was wrong and whether XRS answered.",
            "counter",
        );
        for kind in BadDatagram::ALL {
            let count = self.stats.malformed_of(kind);
            for (answer, value) in [("xrs", count.answered), ("dropped", count.dropped)] {
                let _ = writeln!(
                    out,
                    "{name}{{kind=\"{}\",answer=\"{answer}\"}} {value}",
                    kind.name()
                );
            }
        }
        let (s, c) = (&self.stats, &self.counts);
        for (name, help, value) in [
            (
                "rasgk_rate_limited_total",
                "Datagrams dropped unread: their source was over limits.rate_per_source.",
                s.rate_limited,
            ),
            (
                "rasgk_rate_limit_sources_forgotten_total",
                "Sources the rate limit forgot to make room (limits.max_sources).",
                c.rate_limit_sources_forgotten,
            ),
            (
                "rasgk_reservations_dropped_total",
                "GCF reservations dropped to make room (limits.max_reservations).",
                s.reservations_dropped,
            ),
            (
                "rasgk_cached_replies_evicted_total",
                "Cached replies dropped early to make room (limits.max_cached_replies).",
                c.cached_replies_evicted,
            ),
            (
                "rasgk_reflection_shortened_total",
                "Replies to unregistered sources shortened to limits.reflection_ratio.",
                s.reflection_shortened,
            ),
            (
                "rasgk_reflection_dropped_total",
                "Replies to unregistered sources not sent: too long even shortened.",
                s.reflection_dropped,
            ),
        ] {
            header(out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        }
        let name = "rasgk_limit";
        header(
            out,
            name,
            "The bounds of [limits] (rate_per_source 0: no rate limit).",
            "gauge",
        );
        let l = &self.limits;
        for (limit, value) in [
            ("rate_per_source", l.rate_per_source.map_or(0, u64::from)),
            ("burst_per_source", l.burst_per_source.into()),
            ("max_sources", l.max_sources as u64),
            ("max_reservations", l.max_reservations as u64),
            ("max_cached_replies", l.max_cached_replies as u64),
            ("reflection_ratio", l.reflection_ratio as u64),
            ("max_frame_octets", l.max_frame_octets.into()),
        ] {
            let _ = writeln!(out, "{name}{{limit=\"{limit}\"}} {value}");
        }
    }

    /// Outbound trunk calls: in progress and placed per trunk and node, and hops.
    fn render_trunks(&self, out: &mut String) {
        for (name, help, kind) in [
            (
                "rasgk_trunk_calls",
                "Trunk calls in progress, by trunk and placing node.",
                "gauge",
            ),
            (
                "rasgk_trunk_calls_total",
                "Trunk calls placed, by trunk and placing node.",
                "counter",
            ),
        ] {
            header(out, name, help, kind);
            for trunk in &self.trunks {
                for node in &trunk.per_node {
                    let value = if kind == "gauge" {
                        u64::from(node.active)
                    } else {
                        node.total
                    };
                    let _ = writeln!(
                        out,
                        "{name}{{trunk=\"{}\",node=\"{}\"}} {value}",
                        escape(&trunk.name),
                        escape(&node.node)
                    );
                }
            }
        }
        let name = "rasgk_call_hops_total";
        header(
            out,
            name,
            "Intra-cluster hops of trunk calls (phone to route-list node, calling to placing node).",
            "counter",
        );
        let _ = writeln!(out, "{name} {}", self.call_hops);
    }

    /// The exposition text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let clan_labels = |clan: &ClanView| {
            format!(
                "clan=\"{}\",region=\"{}\",node=\"{}\",kind=\"{}\"",
                escape(&clan.name),
                clan.region,
                escape(&clan.node),
                match clan.kind {
                    crate::config::ClanKind::Clan => "clan",
                    crate::config::ClanKind::Pe => "pe",
                }
            )
        };
        let gauges: [Gauge; 9] = [
            (
                "rasgk_clan_sockets",
                "Sockets in use on a C-LAN (socket mode: places of registered phones).",
                |c| c.sockets.into(),
            ),
            (
                "rasgk_clan_established",
                "Socket mode: established signalling sockets on a C-LAN.",
                |c| c.established.into(),
            ),
            (
                "rasgk_clan_call_connections",
                "Routed calls: connections calls need beyond the phones' sockets on a C-LAN \
                 (each holds a place).",
                |c| c.call_connections.into(),
            ),
            (
                "rasgk_clan_calls",
                "Routed calls in progress with a leg on a C-LAN.",
                |c| c.calls.into(),
            ),
            (
                "rasgk_clan_setups",
                "Socket mode: socket establishments in progress on a C-LAN.",
                |c| c.setups.into(),
            ),
            (
                "rasgk_clan_setups_queued",
                "Socket mode: TTS set-ups waiting for a free establishment slot on a C-LAN.",
                |c| c.queued.into(),
            ),
            ("rasgk_clan_reserved", "GCF reservations on a C-LAN.", |c| {
                c.reserved.into()
            }),
            ("rasgk_clan_max_sockets", "A C-LAN's socket cap.", |c| {
                c.max_sockets.into()
            }),
            (
                "rasgk_clan_in_service",
                "1 when a C-LAN is in service.",
                |c| c.in_service.into(),
            ),
        ];
        for (name, help, value) in gauges {
            header(&mut out, name, help, "gauge");
            for clan in &self.clans {
                let _ = writeln!(out, "{name}{{{}}} {}", clan_labels(clan), value(clan));
            }
        }
        let name = "rasgk_clan_warn_sockets";
        header(
            &mut out,
            name,
            "A C-LAN's warn_sockets: the load that raises its warning (C-LANs with one).",
            "gauge",
        );
        for clan in &self.clans {
            if let Some(warn) = clan.warn_sockets {
                let _ = writeln!(out, "{name}{{{}}} {warn}", clan_labels(clan));
            }
        }
        let name = "rasgk_clans_warning";
        header(
            &mut out,
            name,
            "C-LANs whose warn_sockets warning stands (load reached it, not yet back below it \
             by the hysteresis).",
            "gauge",
        );
        let warning = self.clans.iter().filter(|c| c.warning).count();
        let _ = writeln!(out, "{name} {warning}");
        for (name, help, counts) in [
            (
                "rasgk_ras_received_total",
                "RAS messages received, by type.",
                &self.stats.received,
            ),
            (
                "rasgk_ras_sent_total",
                "RAS messages sent, by type.",
                &self.stats.sent,
            ),
            (
                "rasgk_security_denied_total",
                "Requests that did not prove their aliases' H.235 passwords, by type.",
                &self.stats.security_denied,
            ),
        ] {
            header(&mut out, name, help, "counter");
            for kind in MessageKind::ALL {
                let _ = writeln!(out, "{name}{{type=\"{kind}\"}} {}", counts[kind as usize]);
            }
        }
        header(
            &mut out,
            "rasgk_rejects_total",
            "Rejects sent, by message and reason.",
            "counter",
        );
        for (key, count) in &self.stats.rejects {
            let (message, reason) = key.split_once(' ').unwrap_or((key, ""));
            let _ = writeln!(
                out,
                "rasgk_rejects_total{{message=\"{}\",reason=\"{}\"}} {count}",
                escape(message),
                escape(reason)
            );
        }
        let s = &self.stats;
        for (name, help, value) in [
            (
                "rasgk_decode_failures_total",
                "Datagrams that did not decode (rasgk_malformed_total of every kind).",
                s.decode_failures,
            ),
            (
                "rasgk_encode_failures_total",
                "Replies that could not be encoded.",
                s.encode_failures,
            ),
            (
                "rasgk_retransmissions_total",
                "Requests answered from the retransmission cache.",
                s.retransmissions,
            ),
            (
                "rasgk_registrations_total",
                "Full registrations accepted.",
                s.registrations,
            ),
            (
                "rasgk_keep_alives_total",
                "Lightweight RRQs accepted.",
                s.keep_alives,
            ),
            (
                "rasgk_unregistrations_total",
                "URQs from endpoints accepted.",
                s.unregistrations,
            ),
            (
                "rasgk_irq_answered_total",
                "IRRs answering a gatekeeper-sent IRQ.",
                s.irq_answered,
            ),
            (
                "rasgk_registrations_expired_total",
                "Registrations that ran out of TTL.",
                s.registrations_expired,
            ),
            (
                "rasgk_reservations_expired_total",
                "GCF reservations that ran out unused.",
                s.reservations_expired,
            ),
            (
                "rasgk_gcf_tts_total",
                "GCFs to phones known to be TTS at their GRQ, which take no reservation.",
                s.gcf_tts,
            ),
            (
                "rasgk_events_dropped_total",
                "Events dropped before anyone read them.",
                self.counts.events_dropped,
            ),
        ] {
            header(&mut out, name, help, "counter");
            let _ = writeln!(out, "{name} {value}");
        }
        let c = &self.counts;
        for (name, help, value) in [
            (
                "rasgk_registrations",
                "Registered endpoints.",
                c.registrations,
            ),
            (
                "rasgk_reservations",
                "GCF reservations not yet used.",
                c.reservations,
            ),
            (
                "rasgk_tts_pending",
                "TTS phones registered without a socket.",
                c.tts_pending,
            ),
            (
                "rasgk_pending_urqs",
                "Gatekeeper-sent URQs waiting for UCF.",
                c.pending_urqs,
            ),
            (
                "rasgk_cached_replies",
                "Replies held for retransmissions.",
                c.cached_replies,
            ),
            (
                "rasgk_rate_limit_sources",
                "Sources the rate limit keeps track of.",
                c.rate_limit_sources,
            ),
            (
                "rasgk_timers",
                "Deadlines held (reservations, registrations, unanswered URQs).",
                c.timers,
            ),
        ] {
            header(&mut out, name, help, "gauge");
            let _ = writeln!(out, "{name} {value}");
        }
        self.render_guard(&mut out);
        self.render_trunks(&mut out);
        self.render_sockets(&mut out);
        self.render_calls(&mut out);
        self.render_rebalance(&mut out);
        let name = "rasgk_registration_latency_seconds";
        header(
            &mut out,
            name,
            "From the GRQ that reserved a place to the RCF of the RRQ that used it.",
            "histogram",
        );
        histogram(&mut out, name, "", &self.stats.registration_latency);
        out
    }
}

/// A histogram's series; `labels` go before `le` (each ending in a comma).
fn histogram(out: &mut String, name: &str, labels: &str, histogram: &LatencyHistogram) {
    let mut cumulative = 0;
    for (bound, count) in LATENCY_BOUNDS_US.iter().zip(&histogram.buckets) {
        cumulative += count;
        let le = *bound as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"{le}\"}} {cumulative}");
    }
    let _ = writeln!(
        out,
        "{name}_bucket{{{labels}le=\"+Inf\"}} {}",
        histogram.count
    );
    let plain = labels.trim_end_matches(',');
    let braces = |text: &str| {
        if text.is_empty() {
            String::new()
        } else {
            format!("{{{text}}}")
        }
    };
    let _ = writeln!(
        out,
        "{name}_sum{} {}",
        braces(plain),
        histogram.sum_us as f64 / 1e6
    );
    let _ = writeln!(out, "{name}_count{} {}", braces(plain), histogram.count);
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
