//! What a capture asks of a gatekeeper: its phones' RAS requests, in capture order, each with
//! the reply the captured gatekeeper gave.
//!
//! A UDP datagram to or from port 1718 or 1719 is RAS. Which side of it is the gatekeeper is
//! read from the capture itself: an address that receives a GRQ, RRQ, ARQ, LRQ, IRR or RAI,
//! that sends a confirm or reject only a gatekeeper sends (GCF, GRJ, RCF, RRJ, ACF, ARJ, LCF,
//! LRJ, RAC, IACK, INAK), or that a GCF, an AGL or an `altGKInfo` names, is the gatekeeper's.
//! A request is replayed when a phone sent it to the gatekeeper's side; requests the
//! gatekeeper sent (its URQs, IRQs, DRQs, NSM between gatekeepers) are not, nor is a phone's
//! UCF answering one, nor a phone's retransmission of a request it already sent (the replay
//! makes its own retransmissions).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use crate::pcap::Capture;
use crate::ras::RAS_PORTS;
use crate::ras::{self, asn, MessageKind, RasMessage};

use super::outcome::ReplySummary;

/// How long a captured request with the same source, destination, sequence number and octets
/// counts as a retransmission of the earlier one (the core's retransmission window).
const RETRANSMISSION_WINDOW: Duration = Duration::from_secs(10);

/// One request to replay.
#[derive(Debug, Clone)]
pub struct PlannedRequest {
    /// Its frame number in the capture (1-based, as Wireshark counts).
    pub frame: usize,
    /// Capture time.
    pub time: Duration,
    /// Index of its phone in [`Plan::phones`].
    pub phone: usize,
    /// The gatekeeper address the capture sent it to.
    pub dst: SocketAddr,
    /// Its type.
    pub kind: MessageKind,
    /// Its `requestSeqNum`.
    pub seq: u16,
    /// The decoded request.
    pub message: RasMessage,
    /// The captured octets (sent as they are unless something had to be rewritten).
    pub payload: Vec<u8>,
    /// The reply the capture holds: the next datagram from the gatekeeper's side to this
    /// phone with the same `requestSeqNum` and a reply's type.
    pub captured: Option<ReplySummary>,
}

/// The requests of a capture and what was left out.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The requests, in capture order.
    pub requests: Vec<PlannedRequest>,
    /// Each distinct captured phone source, in order of its first request.
    pub phones: Vec<SocketAddr>,
    /// The captured gatekeeper's discovery address: where the GRQs went (the most used one),
    /// else the gatekeeper address that received the most requests.
    pub discovery: Option<SocketAddr>,
    /// Every address the capture shows as the gatekeeper's.
    pub gatekeeper_side: BTreeSet<SocketAddr>,
    /// RAS datagrams (port 1718/1719) in the capture.
    pub ras_datagrams: usize,
    /// RAS datagrams that did not decode (skipped).
    pub undecodable: usize,
    /// Packets that are not RAS (not UDP, or other ports).
    pub other_packets: usize,
    /// Requests the gatekeeper's side sent (URQ, IRQ, DRQ, NSM, …): not replayed.
    pub gatekeeper_requests: usize,
    /// Phones' answers to those (UCF, …): not replayed.
    pub phone_answers: usize,
    /// Phones' retransmissions of a request already in the plan: not replayed.
    pub retransmissions: usize,
    /// Replies the capture holds that answer no planned request.
    pub unmatched_replies: usize,
}

/// Kinds only a gatekeeper sends.
fn gatekeeper_reply(kind: MessageKind) -> bool {
    use MessageKind::*;
    matches!(
        kind,
        Gcf | Grj | Rcf | Rrj | Acf | Arj | Lcf | Lrj | Rac | Iack | Inak | Acfseq
    )
}

/// Requests only sent towards a gatekeeper.
fn to_gatekeeper(kind: MessageKind) -> bool {
    use MessageKind::*;
    matches!(kind, Grq | Rrq | Arq | Lrq | Irr | Rai)
}

/// The gatekeeper addresses a message names: a GCF's `rasAddress`, AGL entries, `altGKInfo`.
fn named_gatekeepers(message: &RasMessage) -> Vec<SocketAddr> {
    let agl = |list: &Option<Vec<asn::AlternateGK>>| -> Vec<SocketAddr> {
        list.iter()
            .flatten()
            .filter_map(|gk| ras::socket_addr(&gk.ras_address))
            .collect()
    };
    match message {
        RasMessage::gatekeeperConfirm(gcf) => {
            let mut out: Vec<SocketAddr> = ras::socket_addr(&gcf.ras_address).into_iter().collect();
            out.extend(agl(&gcf.alternate_gatekeeper));
            out
        }
        RasMessage::registrationConfirm(rcf) => agl(&rcf.alternate_gatekeeper),
        RasMessage::registrationReject(rrj) => rrj
            .alt_gkinfo
            .iter()
            .flat_map(|info| &info.alternate_gatekeeper)
            .filter_map(|gk| ras::socket_addr(&gk.ras_address))
            .collect(),
        _ => Vec::new(),
    }
}

struct Decoded {
    index: usize,
    kind: MessageKind,
    seq: u16,
    message: RasMessage,
}

/// The plan of a capture. Never panics: undecodable datagrams are counted and skipped.
pub fn plan(capture: &Capture) -> Plan {
    let mut plan = Plan {
        other_packets: capture.skipped,
        ..Plan::default()
    };
    let is_ras = |port: u16| RAS_PORTS.contains(&port);
    let mut decoded: Vec<Decoded> = Vec::new();
    for (index, datagram) in capture.datagrams.iter().enumerate() {
        if !is_ras(datagram.src.port()) && !is_ras(datagram.dst.port()) {
            plan.other_packets += 1;
            continue;
        }
        plan.ras_datagrams += 1;
        match ras::decode(&datagram.payload) {
            Ok(message) => decoded.push(Decoded {
                index,
                kind: ras::kind(&message),
                seq: ras::request_seq_num(&message),
                message,
            }),
            Err(_) => plan.undecodable += 1,
        }
    }

    // Which addresses are the gatekeeper's.
    let mut side = BTreeSet::new();
    for d in &decoded {
        let datagram = &capture.datagrams[d.index];
        if to_gatekeeper(d.kind) {
            side.insert(datagram.dst);
        }
        if gatekeeper_reply(d.kind) {
            side.insert(datagram.src);
        }
        side.extend(named_gatekeepers(&d.message));
    }
    let multicast = |a: &SocketAddr| a.ip().is_multicast();

    // Replies by (phone, seq), in capture order, for matching.
    let mut replies: HashMap<(SocketAddr, u16), Vec<usize>> = HashMap::new();
    for (position, d) in decoded.iter().enumerate() {
        let datagram = &capture.datagrams[d.index];
        if !d.kind.is_request() && side.contains(&datagram.src) && !side.contains(&datagram.dst) {
            replies
                .entry((datagram.dst, d.seq))
                .or_default()
                .push(position);
        }
    }
    let mut claimed: HashSet<usize> = HashSet::new();
    let mut phone_index: HashMap<SocketAddr, usize> = HashMap::new();
    let mut seen: HashMap<(SocketAddr, SocketAddr, u16), (Duration, u64)> = HashMap::new();
    let mut grq_destinations: BTreeMap<SocketAddr, usize> = BTreeMap::new();
    let mut request_destinations: BTreeMap<SocketAddr, usize> = BTreeMap::new();
    let mut reply_positions = 0;

    for (position, d) in decoded.iter().enumerate() {
        let datagram = &capture.datagrams[d.index];
        let from_gatekeeper = side.contains(&datagram.src);
        let to_gk = side.contains(&datagram.dst) || multicast(&datagram.dst);
        if !d.kind.is_request() {
            if from_gatekeeper && !side.contains(&datagram.dst) {
                reply_positions += 1;
            } else if !from_gatekeeper {
                plan.phone_answers += 1;
            }
            continue;
        }
        if from_gatekeeper || !to_gk {
            plan.gatekeeper_requests += 1;
            continue;
        }
        let fingerprint = crate::gatekeeper::retransmit::fingerprint(&datagram.payload);
        let key = (datagram.src, datagram.dst, d.seq);
        if let Some(&(when, earlier)) = seen.get(&key) {
            if earlier == fingerprint && datagram.time.saturating_sub(when) <= RETRANSMISSION_WINDOW
            {
                plan.retransmissions += 1;
                continue;
            }
        }
        seen.insert(key, (datagram.time, fingerprint));
        let phone = *phone_index.entry(datagram.src).or_insert_with(|| {
            plan.phones.push(datagram.src);
            plan.phones.len() - 1
        });
        let captured = replies.get(&(datagram.src, d.seq)).and_then(|list| {
            let &found = list
                .iter()
                .find(|&&p| p > position && !claimed.contains(&p))?;
            claimed.insert(found);
            Some(ReplySummary::of(&decoded[found].message))
        });
        if d.kind == MessageKind::Grq {
            *grq_destinations.entry(datagram.dst).or_default() += 1;
        }
        if !multicast(&datagram.dst) {
            *request_destinations.entry(datagram.dst).or_default() += 1;
        }
        plan.requests.push(PlannedRequest {
            frame: datagram.frame,
            time: datagram.time,
            phone,
            dst: datagram.dst,
            kind: d.kind,
            seq: d.seq,
            message: d.message.clone(),
            payload: datagram.payload.clone(),
            captured,
        });
    }
    plan.unmatched_replies = reply_positions - claimed.len();
    let most = |counts: &BTreeMap<SocketAddr, usize>| {
        counts
            .iter()
            .filter(|(a, _)| !multicast(a))
            .max_by_key(|&(a, n)| (*n, std::cmp::Reverse(*a)))
            .map(|(a, _)| *a)
    };
    plan.discovery = most(&grq_destinations).or_else(|| most(&request_destinations));
    plan.gatekeeper_side = side;
    plan
}

/// Multicast discovery (224.0.1.41:1718) is the discovery address too.
pub fn is_discovery(plan: &Plan, address: SocketAddr) -> bool {
    Some(address) == plan.discovery || address.ip().is_multicast()
}
