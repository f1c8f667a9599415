//! Counters of what the gatekeeper did: messages in and out by type, rejects by reason,
//! expiries, bad datagrams by what was wrong with them, what the limits of `[limits]` held
//! back, phones rebalancing moved. Plain integers, read by the admin port and the metrics.

use std::collections::BTreeMap;

use crate::ras::{DecodeError, MessageKind};

/// What was wrong with a datagram that is no RAS message, as far as the decoder can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum BadDatagram {
    /// No octets at all.
    Empty,
    /// Longer than [`super::MAX_DATAGRAM`]: not read.
    Oversized,
    /// The first octets name no RAS message type (the `RasMessage` CHOICE index is unknown).
    UnknownMessage,
    /// The datagram ends before the message does.
    Truncated,
    /// A value or structure the ASN.1 does not allow (a length, a constraint, an OBJECT
    /// IDENTIFIER, a string's alphabet, …).
    Invalid,
    /// A whole message, with octets after it.
    TrailingData,
}

impl BadDatagram {
    /// Every kind, in counter order.
    pub const ALL: [BadDatagram; 6] = [
        BadDatagram::Empty,
        BadDatagram::Oversized,
        BadDatagram::UnknownMessage,
        BadDatagram::Truncated,
        BadDatagram::Invalid,
        BadDatagram::TrailingData,
    ];

    /// The label `/metrics` shows.
    pub fn name(self) -> &'static str {
        match self {
            BadDatagram::Empty => "empty",
            BadDatagram::Oversized => "oversized",
            BadDatagram::UnknownMessage => "unknown_message",
            BadDatagram::Truncated => "truncated",
            BadDatagram::Invalid => "invalid",
            BadDatagram::TrailingData => "trailing_data",
        }
    }

    /// The kind of a decoder's refusal.
    pub fn of(error: &DecodeError) -> BadDatagram {
        match error {
            DecodeError::Empty => BadDatagram::Empty,
            DecodeError::TrailingData { .. } => BadDatagram::TrailingData,
            DecodeError::Invalid {
                truncated: true, ..
            } => BadDatagram::Truncated,
            DecodeError::Invalid { kind: None, .. } => BadDatagram::UnknownMessage,
            DecodeError::Invalid { .. } => BadDatagram::Invalid,
        }
    }
}

/// Bad datagrams of one kind: answered with XRS, and not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct BadDatagramCount {
    /// Answered with XRS (their sequence number could be read).
    pub answered: u64,
    /// Dropped without an answer.
    pub dropped: u64,
}

/// Everything counted since start.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Messages received, by [`MessageKind`] index.
    pub received: Vec<u64>,
    /// Messages sent, by [`MessageKind`] index.
    pub sent: Vec<u64>,
    /// Rejects sent, by message and reason (`"RRJ duplicateAlias"`).
    pub rejects: BTreeMap<String, u64>,
    /// Requests that did not prove their aliases' passwords, by [`MessageKind`] index of the
    /// request, answered (`securityDenial`) or not (an IRR that asked for no answer).
    pub security_denied: Vec<u64>,
    /// Datagrams that did not decode (or were too long to read): every kind of
    /// [`malformed`](Stats::malformed) together.
    pub decode_failures: u64,
    /// Bad datagrams by [`BadDatagram`] index.
    pub malformed: Vec<BadDatagramCount>,
    /// Datagrams dropped unread because their source was over `[limits] rate_per_source`.
    pub rate_limited: u64,
    /// Replies to sources without a registration shortened to the reflection bound.
    pub reflection_shortened: u64,
    /// Replies to sources without a registration not sent: too long even shortened.
    pub reflection_dropped: u64,
    /// Reservations dropped to make room at `[limits] max_reservations`.
    pub reservations_dropped: u64,
    /// Replies that could not be encoded (a bug if ever non-zero).
    pub encode_failures: u64,
    /// Requests answered from the retransmission cache.
    pub retransmissions: u64,
    /// Full registrations accepted.
    pub registrations: u64,
    /// Lightweight RRQs accepted.
    pub keep_alives: u64,
    /// URQs from endpoints accepted.
    pub unregistrations: u64,
    /// IRRs answering a gatekeeper-sent IRQ (its `requestSeqNum`).
    pub irq_answered: u64,
    /// Registrations that ran out of TTL.
    pub registrations_expired: u64,
    /// GCF reservations that ran out before an RRQ.
    pub reservations_expired: u64,
    /// GCFs to phones known to be TTS at their GRQ: no reservation (docs/rules.md §4.3).
    pub gcf_tts: u64,
    /// GRQ → RCF latency of registrations that used their reservation.
    pub registration_latency: LatencyHistogram,
    /// Phones rebalancing moved (docs/rules.md §9.2), by the C-LAN they were moved off.
    pub rebalance_moves: BTreeMap<String, u64>,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            received: vec![0; MessageKind::ALL.len()],
            sent: vec![0; MessageKind::ALL.len()],
            rejects: BTreeMap::new(),
            security_denied: vec![0; MessageKind::ALL.len()],
            decode_failures: 0,
            malformed: vec![BadDatagramCount::default(); BadDatagram::ALL.len()],
            rate_limited: 0,
            reflection_shortened: 0,
            reflection_dropped: 0,
            reservations_dropped: 0,
            encode_failures: 0,
            retransmissions: 0,
            registrations: 0,
            keep_alives: 0,
            unregistrations: 0,
            irq_answered: 0,
            registrations_expired: 0,
            reservations_expired: 0,
            gcf_tts: 0,
            registration_latency: LatencyHistogram::default(),
            rebalance_moves: BTreeMap::new(),
        }
    }
}

impl Stats {
    /// Counts one reject.
    pub fn reject(&mut self, message: &str, reason: &str) {
        *self
            .rejects
            .entry(format!("{message} {reason}"))
            .or_default() += 1;
    }

    /// Counts one bad datagram, and whether it was answered with XRS.
    pub fn count_malformed(&mut self, kind: BadDatagram, answered: bool) {
        self.decode_failures += 1;
        let count = &mut self.malformed[kind as usize];
        if answered {
            count.answered += 1;
        } else {
            count.dropped += 1;
        }
    }

    /// Bad datagrams of one kind.
    pub fn malformed_of(&self, kind: BadDatagram) -> BadDatagramCount {
        self.malformed[kind as usize]
    }

    /// Messages received of one kind.
    pub fn received_of(&self, kind: MessageKind) -> u64 {
        self.received[kind as usize]
    }

    /// Messages sent of one kind.
    pub fn sent_of(&self, kind: MessageKind) -> u64 {
        self.sent[kind as usize]
    }
}

/// Upper bounds of the registration latency buckets, microseconds (Prometheus `le`).
pub const LATENCY_BOUNDS_US: [u64; 12] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000, 1_000_000, 5_000_000, 30_000_000,
];

/// A histogram of registration latency: from the GRQ that reserved a place to the RCF of
/// the RRQ that used it, as the gatekeeper saw them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LatencyHistogram {
    /// Observations at or below each bound of [`LATENCY_BOUNDS_US`] (not cumulative).
    pub buckets: Vec<u64>,
    /// Observations above the last bound.
    pub over: u64,
    /// Sum of all observations, microseconds.
    pub sum_us: u64,
    /// Number of observations.
    pub count: u64,
}

impl Default for LatencyHistogram {
    fn default() -> LatencyHistogram {
        LatencyHistogram {
            buckets: vec![0; LATENCY_BOUNDS_US.len()],
            over: 0,
            sum_us: 0,
            count: 0,
        }
    }
}

impl LatencyHistogram {
    /// Records one latency.
    pub fn observe(&mut self, latency: std::time::Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        match LATENCY_BOUNDS_US.iter().position(|&bound| us <= bound) {
            Some(i) => self.buckets[i] += 1,
            None => self.over += 1,
        }
        self.sum_us = self.sum_us.saturating_add(us);
        self.count += 1;
    }
}
