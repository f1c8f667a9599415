//! The RAS messages of a capture, as one line or one JSON object each (`rasgk decode`).
//!
//! A UDP datagram to or from a RAS port (1718, 1719, or any port the caller adds) is taken as
//! RAS; every other packet is skipped and counted. A RAS datagram that does not decode is
//! reported with the decoder's reason, never dropped silently.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;

use crate::pcap::Capture;
use crate::ras::avaya::AvayaEndpoint;
use crate::ras::{self, asn, choice_name, Alias, MessageKind, RasMessage, RAS_PORTS};

/// One RAS datagram of a capture, decoded or not.
#[derive(Debug, Clone)]
pub struct Entry {
    /// 1-based packet number in the capture (as tshark counts frames).
    pub frame: usize,
    /// Capture time since the UNIX epoch.
    pub time: Duration,
    /// Source.
    pub src: SocketAddr,
    /// Destination.
    pub dst: SocketAddr,
    /// The message, or why it did not decode.
    pub message: Result<RasMessage, ras::DecodeError>,
}

/// What [`entries`] found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The RAS datagrams, in capture order.
    pub entries: Vec<Entry>,
    /// Packets that are not RAS: non-UDP, fragments, other ports.
    pub skipped: usize,
}

impl Report {
    /// RAS datagrams that did not decode.
    pub fn undecodable(&self) -> usize {
        self.entries.iter().filter(|e| e.message.is_err()).count()
    }
}

/// Picks the RAS datagrams of a capture and decodes them. `extra_ports` are taken as RAS
/// ports besides 1718 and 1719.
pub fn entries(capture: &Capture, extra_ports: &[u16]) -> Report {
    let is_ras = |port: u16| RAS_PORTS.contains(&port) || extra_ports.contains(&port);
    let mut report = Report {
        entries: Vec::new(),
        skipped: capture.skipped,
    };
    for datagram in &capture.datagrams {
        if !is_ras(datagram.src.port()) && !is_ras(datagram.dst.port()) {
            report.skipped += 1;
            continue;
        }
        report.entries.push(Entry {
            frame: datagram.frame,
            time: datagram.time,
            src: datagram.src,
            dst: datagram.dst,
            message: ras::decode(&datagram.payload),
        });
    }
    report
}

fn aliases(list: &[asn::AliasAddress]) -> String {
    list.iter()
        .map(|a| Alias::from_asn(a).to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn address(address: &asn::TransportAddress) -> String {
    ras::socket_addr(address).map_or_else(|| choice_name(address), |a| a.to_string())
}

fn addresses(list: &[asn::TransportAddress]) -> String {
    list.iter().map(address).collect::<Vec<_>>().join(",")
}

fn bmp(text: &rasn::types::BmpString) -> String {
    printable(&ras::bmp_text(text))
}

/// Text for a one-line summary: control characters (phones pad identifiers with NULs) are
/// escaped, so that a line stays one line and shows what was sent.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn agl(list: &[asn::AlternateGK]) -> String {
    format!(
        "{}[{}]",
        list.len(),
        list.iter()
            .map(|gk| format!("{}/{}", address(&gk.ras_address), gk.priority))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// The Avaya endpoint a GRQ's or RRQ's `nonStandardData` marks (Avaya's CCMS,
/// [`ras::avaya`]), if it does.
pub fn avaya(message: &RasMessage) -> Option<AvayaEndpoint> {
    let non_standard = match message {
        RasMessage::gatekeeperRequest(m) => m.non_standard_data.as_ref(),
        RasMessage::registrationRequest(m) => m.non_standard_data.as_ref(),
        _ => None,
    };
    ras::avaya::endpoint(non_standard)
}

/// The key fields of a message, as `(name, value)` pairs named after the ASN.1 components;
/// an Avaya endpoint's GRQ or RRQ ends with `vendor=avaya` and, where its login request
/// gives one, `mac`.
pub fn key_fields(message: &RasMessage) -> Vec<(&'static str, String)> {
    let mut fields: Vec<(&'static str, Option<String>)> = Vec::new();
    match message {
        RasMessage::gatekeeperRequest(m) => {
            fields.push(("rasAddress", Some(address(&m.ras_address))));
            fields.push(("endpointAlias", m.endpoint_alias.as_deref().map(aliases)));
            fields.push((
                "gatekeeperIdentifier",
                m.gatekeeper_identifier.as_ref().map(|g| bmp(&g.0)),
            ));
        }
        RasMessage::gatekeeperConfirm(m) => {
            fields.push((
                "gatekeeperIdentifier",
                m.gatekeeper_identifier.as_ref().map(|g| bmp(&g.0)),
            ));
            fields.push(("rasAddress", Some(address(&m.ras_address))));
            fields.push((
                "alternateGatekeeper",
                m.alternate_gatekeeper.as_deref().map(agl),
            ));
        }
        RasMessage::gatekeeperReject(m) => {
            fields.push(("rejectReason", Some(choice_name(&m.reject_reason))));
        }
        RasMessage::registrationRequest(m) => {
            fields.push(("keepAlive", Some(m.keep_alive.unwrap_or(false).to_string())));
            fields.push(("terminalAlias", m.terminal_alias.as_deref().map(aliases)));
            fields.push(("callSignalAddress", Some(addresses(&m.call_signal_address))));
            fields.push(("rasAddress", Some(addresses(&m.ras_address))));
            fields.push((
                "endpointIdentifier",
                m.endpoint_identifier.as_ref().map(|e| bmp(&e.0)),
            ));
            fields.push((
                "timeToLive",
                m.time_to_live.as_ref().map(|t| t.0.to_string()),
            ));
        }
        RasMessage::registrationConfirm(m) => {
            fields.push(("endpointIdentifier", Some(bmp(&m.endpoint_identifier.0))));
            fields.push(("terminalAlias", m.terminal_alias.as_deref().map(aliases)));
            fields.push((
                "timeToLive",
                m.time_to_live.as_ref().map(|t| t.0.to_string()),
            ));
            fields.push((
                "alternateGatekeeper",
                m.alternate_gatekeeper.as_deref().map(agl),
            ));
        }
        RasMessage::registrationReject(m) => {
            fields.push(("rejectReason", Some(choice_name(&m.reject_reason))));
            fields.push((
                "altGKInfo",
                m.alt_gkinfo.as_ref().map(|i| agl(&i.alternate_gatekeeper)),
            ));
        }
        RasMessage::unregistrationRequest(m) => {
            fields.push((
                "endpointIdentifier",
                m.endpoint_identifier.as_ref().map(|e| bmp(&e.0)),
            ));
            fields.push(("endpointAlias", m.endpoint_alias.as_deref().map(aliases)));
            fields.push(("reason", m.reason.as_ref().map(choice_name)));
            fields.push((
                "alternateGatekeeper",
                m.alternate_gatekeeper.as_deref().map(agl),
            ));
        }
        RasMessage::unregistrationReject(m) => {
            fields.push(("rejectReason", Some(choice_name(&m.reject_reason))));
        }
        RasMessage::admissionRequest(m) => {
            fields.push(("endpointIdentifier", Some(bmp(&m.endpoint_identifier.0))));
            fields.push((
                "destinationInfo",
                m.destination_info.as_deref().map(aliases),
            ));
            fields.push(("srcInfo", Some(aliases(&m.src_info))));
            fields.push(("answerCall", Some(m.answer_call.to_string())));
        }
        RasMessage::admissionConfirm(m) => {
            fields.push((
                "destCallSignalAddress",
                Some(address(&m.dest_call_signal_address)),
            ));
            fields.push(("callModel", Some(choice_name(&m.call_model))));
        }
        RasMessage::admissionReject(m) => {
            fields.push(("rejectReason", Some(choice_name(&m.reject_reason))));
        }
        RasMessage::disengageRequest(m) => {
            fields.push(("endpointIdentifier", Some(bmp(&m.endpoint_identifier.0))));
            fields.push(("disengageReason", Some(choice_name(&m.disengage_reason))));
        }
        RasMessage::bandwidthRequest(m) => {
            fields.push(("endpointIdentifier", Some(bmp(&m.endpoint_identifier.0))));
            fields.push(("bandWidth", Some(m.band_width.0.to_string())));
        }
        RasMessage::bandwidthConfirm(m) => {
            fields.push(("bandWidth", Some(m.band_width.0.to_string())));
        }
        RasMessage::infoRequestResponse(m) => {
            fields.push(("endpointIdentifier", Some(bmp(&m.endpoint_identifier.0))));
            fields.push(("rasAddress", Some(address(&m.ras_address))));
        }
        RasMessage::unknownMessageResponse(m) => {
            fields.push((
                "messageNotUnderstood",
                m.message_not_understood
                    .as_ref()
                    .map(|m| format!("{} octets", m.len())),
            ));
        }
        _ => {}
    }
    if let Some(avaya) = avaya(message) {
        fields.push(("vendor", Some("avaya".to_string())));
        fields.push(("mac", avaya.mac.map(|mac| mac.to_string())));
    }
    fields
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .collect()
}

/// One line: time since `start`, source → destination, short type, seq, key fields.
pub fn line(entry: &Entry, start: Duration) -> String {
    let time = entry.time.saturating_sub(start).as_secs_f64();
    let mut out = format!("{time:12.6} {} → {}", entry.src, entry.dst);
    match &entry.message {
        Ok(message) => {
            let _ = write!(
                out,
                " {} seq={}",
                ras::kind(message),
                ras::request_seq_num(message)
            );
            for (name, value) in key_fields(message) {
                let _ = write!(out, " {name}={value}");
            }
        }
        Err(error) => {
            let _ = write!(out, " undecodable: {error}");
        }
    }
    out
}

/// One JSON object: `frame`, `time`, `src`, `dst`, `type` (short name), `seq`, `message`
/// (every field, in the shape of X.697 JSON: see [`ras::json`]) and `unpaired_surrogates`
/// (UTF-16 code units of its BMPStrings shown as U+FFFD), and for an Avaya endpoint's GRQ
/// or RRQ `avaya` (`{"mac": "00:00:5e:00:53:01"}`, `mac` null when its request gives
/// none); for a datagram that did not decode, `error`, with `type` and `seq` as far as its
/// first octets tell (else null).
pub fn json(entry: &Entry) -> serde_json::Value {
    let mut object = json!({
        "frame": entry.frame,
        "time": entry.time.as_secs_f64(),
        "src": entry.src.to_string(),
        "dst": entry.dst.to_string(),
    });
    match &entry.message {
        Ok(message) => {
            let kind: MessageKind = ras::kind(message);
            object["type"] = json!(kind.short_name());
            object["seq"] = json!(ras::request_seq_num(message));
            let rendered = ras::json::render(message);
            object["message"] = rendered.value;
            object["unpaired_surrogates"] = json!(rendered.unpaired_surrogates);
            if let Some(avaya) = avaya(message) {
                object["avaya"] = json!(avaya);
            }
        }
        Err(error) => {
            // What the first octets still tell: the CHOICE index and the sequence number.
            let (kind, seq) = match error {
                ras::DecodeError::Invalid { kind, seq, .. } => (*kind, *seq),
                ras::DecodeError::TrailingData { kind, seq, .. } => (Some(*kind), Some(*seq)),
                ras::DecodeError::Empty => (None, None),
            };
            object["type"] = json!(kind.map(MessageKind::short_name));
            object["seq"] = json!(seq);
            object["error"] = json!(error.to_string());
        }
    }
    object
}
