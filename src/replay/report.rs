//! The report of a replay: counts, then one row per request whose reply differs (or that got
//! none), as a table or one JSON object.

use std::fmt::Write as _;
use std::net::SocketAddr;

use serde::Serialize;

use crate::ras::MessageKind;

use super::outcome::{Difference, ReplySummary};
use super::plan::Plan;
use super::session::Session;

/// The counts of a replay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Requests replayed.
    pub requests: usize,
    /// Requests that got a reply.
    pub answered: usize,
    /// Requests whose reply matched the captured one (or that got none, like in the capture).
    pub identical: usize,
    /// Requests whose reply differed from the captured one.
    pub different: usize,
    /// Requests that got no reply.
    pub unanswered: usize,
}

/// What the capture held besides the replayed requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// RAS datagrams that did not decode.
    pub undecodable: usize,
    /// Packets that are not RAS.
    pub other_packets: usize,
    /// Requests the gatekeeper sent (URQ, IRQ, DRQ, NSM, …).
    pub gatekeeper_requests: usize,
    /// Phones' answers to those (UCF, …).
    pub phone_answers: usize,
    /// Phones' retransmissions in the capture.
    pub retransmissions: usize,
    /// Captured replies that answer no replayed request.
    pub unmatched_replies: usize,
}

/// What else happened during the replay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Traffic {
    /// Requests rewritten (endpointIdentifier, gatekeeperIdentifier, RAS address).
    pub rewritten: usize,
    /// Requests sent again after a timeout (UDP).
    pub retransmissions: usize,
    /// Requests the replayed gatekeeper sent (URQs …): counted, not answered.
    pub gatekeeper_requests: usize,
    /// Replies after their request gave up (UDP).
    pub late_replies: usize,
    /// Received datagrams that did not decode (UDP).
    pub undecodable_replies: usize,
    /// Requests whose captured gatekeeper address was off loopback, sent to the target
    /// instead (UDP).
    pub retargeted: usize,
}

/// One request whose reply differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// Its frame in the capture.
    pub frame: usize,
    /// The captured phone that sent it.
    pub peer: SocketAddr,
    /// Its `requestSeqNum`.
    pub seq: u16,
    /// Its type.
    pub request: MessageKind,
    /// Where the replay sent it.
    pub sent_to: SocketAddr,
    /// The captured reply.
    pub captured: Option<ReplySummary>,
    /// The replayed reply.
    pub replayed: Option<ReplySummary>,
    /// What differs.
    pub differences: Vec<Difference>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The capture file.
    pub file: String,
    /// What it was replayed against: `udp ADDR` or `in-process CONFIG`.
    pub against: String,
    /// The captured discovery address.
    pub captured_discovery: Option<SocketAddr>,
    /// Distinct captured phones.
    pub phones: usize,
    /// The counts.
    pub counts: Counts,
    /// What was not replayed.
    pub skipped: Skipped,
    /// What else came and went.
    pub traffic: Traffic,
    /// Requests that differ or got no reply, in capture order.
    pub differences: Vec<Row>,
}

impl Report {
    /// The report of a finished session.
    pub fn new(file: String, against: String, session: &Session<'_>, traffic: Traffic) -> Report {
        let plan: &Plan = session.plan;
        let mut counts = Counts {
            requests: plan.requests.len(),
            ..Counts::default()
        };
        let mut rows = Vec::new();
        let mut rewritten = 0;
        for (request, outcome) in plan.requests.iter().zip(&session.outcomes) {
            let Some(outcome) = outcome else {
                counts.unanswered += 1;
                counts.different += 1;
                continue;
            };
            rewritten += usize::from(outcome.rewritten);
            if outcome.replayed.is_some() {
                counts.answered += 1;
            } else {
                counts.unanswered += 1;
            }
            if outcome.differences.is_empty() {
                counts.identical += 1;
            } else {
                counts.different += 1;
            }
            if !outcome.differences.is_empty() || outcome.replayed.is_none() {
                rows.push(Row {
                    frame: request.frame,
                    peer: plan.phones[request.phone],
                    seq: request.seq,
                    request: request.kind,
                    sent_to: outcome.sent_to,
                    captured: request.captured.clone(),
                    replayed: outcome.replayed.clone(),
                    differences: outcome.differences.clone(),
                });
            }
        }
        Report {
            file,
            against,
            captured_discovery: plan.discovery,
            phones: plan.phones.len(),
            counts,
            skipped: Skipped {
                undecodable: plan.undecodable,
                other_packets: plan.other_packets,
                gatekeeper_requests: plan.gatekeeper_requests,
                phone_answers: plan.phone_answers,
                retransmissions: plan.retransmissions,
                unmatched_replies: plan.unmatched_replies,
            },
            traffic: Traffic {
                rewritten,
                retargeted: session.retargeted,
                ..traffic
            },
            differences: rows,
        }
    }

    /// Whether anything differs or went unanswered (what `--strict` fails on).
    pub fn has_differences(&self) -> bool {
        self.counts.different > 0 || self.counts.unanswered > 0
    }

    /// The report as one JSON object.
    pub fn json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
    }

    /// The report as text: a summary line, what was skipped, then the table of differences.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let c = &self.counts;
        let s = &self.skipped;
        let _ =
            writeln!(
            out,
            "{} against {}: {} requests from {} phones, {} answered, {} identical, {} different, \
             {} unanswered",
            self.file, self.against, c.requests, self.phones, c.answered, c.identical, c.different,
            c.unanswered
        );
        let _ = writeln!(
            out,
            "not replayed: {} undecodable, {} gatekeeper-sent requests, {} phone answers to them, \
             {} captured retransmissions, {} other packets; {} captured replies unmatched",
            s.undecodable,
            s.gatekeeper_requests,
            s.phone_answers,
            s.retransmissions,
            s.other_packets,
            s.unmatched_replies
        );
        let t = &self.traffic;
        let _ = writeln!(
            out,
            "replay: {} rewritten, {} sent again, {} gatekeeper-sent requests, {} late replies, \
             {} undecodable replies, {} off-loopback addresses sent to the target",
            t.rewritten,
            t.retransmissions,
            t.gatekeeper_requests,
            t.late_replies,
            t.undecodable_replies,
            t.retargeted
        );
        if self.differences.is_empty() {
            return out;
        }
        let show = |r: &Option<ReplySummary>| r.as_ref().map_or("none".into(), |r| r.to_string());
        let header = [
            "frame", "peer", "seq", "request", "captured", "replayed", "differs",
        ];
        let table: Vec<[String; 7]> = self
            .differences
            .iter()
            .map(|row| {
                [
                    row.frame.to_string(),
                    row.peer.to_string(),
                    row.seq.to_string(),
                    row.request.to_string(),
                    show(&row.captured),
                    show(&row.replayed),
                    if row.differences.is_empty() {
                        "no reply (none captured either)".to_string()
                    } else {
                        row.differences
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ")
                    },
                ]
            })
            .collect();
        let mut widths = header.map(|h| h.chars().count());
        for row in &table {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        out.push('\n');
        let mut line = |cells: &[String]| {
            let mut text = String::new();
            for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                if i + 1 == cells.len() {
                    text.push_str(cell);
                } else {
                    let _ = write!(text, "{cell:<w$}  ");
                }
            }
            let _ = writeln!(out, "{}", text.trim_end());
        };
        line(&header.map(String::from));
        for row in &table {
            line(row);
        }
        out
    }
}
