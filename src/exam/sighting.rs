//! What an exam sees: one RAS message the gatekeeper received or sent, with the time it
//! passed, the two addresses and the message decoded — and the line it is written as in a
//! check's evidence. The live exam reads them from the admin port's `GET /api/ras`; a test
//! in virtual time makes them from the datagrams it carries.

use std::net::SocketAddr;
use std::time::Duration;

use crate::ras::{self, asn, socket_addr, RasMessage};

use super::verdict::Evidence;

/// Which way a message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// To the gatekeeper: the endpoint sent it.
    In,
    /// From the gatekeeper.
    Out,
}

/// One RAS message seen.
#[derive(Debug, Clone)]
pub struct Sighting {
    /// Since the exam started.
    pub at: Duration,
    /// To the gatekeeper or from it.
    pub direction: Direction,
    /// The gatekeeper's address (the discovery address or a C-LAN's).
    pub local: SocketAddr,
    /// The endpoint's.
    pub peer: SocketAddr,
    /// The message.
    pub message: RasMessage,
}

impl Sighting {
    /// A datagram seen, when it decodes.
    pub fn of(
        at: Duration,
        direction: Direction,
        local: SocketAddr,
        peer: SocketAddr,
        datagram: &[u8],
    ) -> Option<Sighting> {
        let message = ras::decode(datagram).ok()?;
        Some(Sighting {
            at,
            direction,
            local,
            peer,
            message,
        })
    }

    /// Its short name (`RRQ`, `GCF`, …).
    pub fn kind(&self) -> ras::MessageKind {
        ras::kind(&self.message)
    }

    /// Its `requestSeqNum`.
    pub fn seq(&self) -> u16 {
        ras::request_seq_num(&self.message)
    }

    /// An RRQ with `keepAlive` TRUE.
    pub fn is_keep_alive(&self) -> bool {
        matches!(&self.message, RasMessage::registrationRequest(rrq) if rrq.keep_alive == Some(true))
    }

    /// A full RRQ.
    pub fn is_full_rrq(&self) -> bool {
        matches!(&self.message, RasMessage::registrationRequest(rrq) if rrq.keep_alive != Some(true))
    }

    /// The `callIdentifier` of an ARQ or DRQ.
    pub fn call_id(&self) -> Option<[u8; 16]> {
        let id = match &self.message {
            RasMessage::admissionRequest(arq) => arq.call_identifier.as_ref(),
            RasMessage::disengageRequest(drq) => drq.call_identifier.as_ref(),
            _ => None,
        }?;
        <[u8; 16]>::try_from(&id.guid.0[..]).ok()
    }

    /// An ARQ with `answerCall` TRUE.
    pub fn is_answer_arq(&self) -> bool {
        matches!(&self.message, RasMessage::admissionRequest(arq) if arq.answer_call)
    }

    /// An ACF's `destCallSignalAddress`, and whether its `callModel` is gatekeeperRouted.
    pub fn acf_dest(&self) -> Option<(Option<SocketAddr>, bool)> {
        match &self.message {
            RasMessage::admissionConfirm(acf) => Some((
                socket_addr(&acf.dest_call_signal_address),
                matches!(acf.call_model, asn::CallModel::gatekeeperRouted(())),
            )),
            _ => None,
        }
    }

    /// As evidence.
    pub fn evidence(&self) -> Evidence {
        let (from, to) = match self.direction {
            Direction::In => (self.peer, self.local),
            Direction::Out => (self.local, self.peer),
        };
        Evidence {
            at_s: (self.at.as_secs_f64() * 1000.0).round() / 1000.0,
            from: from.to_string(),
            to: to.to_string(),
            message: describe(&self.message),
        }
    }
}

/// A message in a line: its short name, `requestSeqNum` and the fields an exam looks at.
pub fn describe(message: &RasMessage) -> String {
    let mut line = format!(
        "{} seq {}",
        ras::kind(message).short_name(),
        ras::request_seq_num(message)
    );
    let mut add = |part: String| {
        line.push(' ');
        line.push_str(&part);
    };
    match message {
        RasMessage::gatekeeperConfirm(gcf) => {
            add(format!("rasAddress {}", address(&gcf.ras_address)))
        }
        RasMessage::gatekeeperReject(grj) => add(ras::choice_name(&grj.reject_reason)),
        RasMessage::registrationRequest(rrq) => {
            if rrq.keep_alive == Some(true) {
                add("keepAlive TRUE".to_string());
            } else {
                add(format!("rasAddress {}", addresses(&rrq.ras_address)));
                add(format!(
                    "callSignalAddress {}",
                    addresses(&rrq.call_signal_address)
                ));
                if let Some(aliases) = &rrq.terminal_alias {
                    add(format!("aliases {}", alias_list(aliases)));
                }
            }
            if let Some(id) = &rrq.endpoint_identifier {
                add(format!("endpointIdentifier {}", ras::bmp_text(&id.0)));
            }
            if rrq.crypto_tokens.as_ref().is_some_and(|t| !t.is_empty()) {
                add("cryptoTokens".to_string());
            }
        }
        RasMessage::registrationConfirm(rcf) => {
            add(format!(
                "callSignalAddress {}",
                addresses(&rcf.call_signal_address)
            ));
            add(format!(
                "endpointIdentifier {}",
                ras::bmp_text(&rcf.endpoint_identifier.0)
            ));
            if let Some(ttl) = &rcf.time_to_live {
                add(format!("timeToLive {}", ttl.0));
            }
            if let Some(agl) = &rcf.alternate_gatekeeper {
                add(format!("AGL {}", alternates(agl)));
            }
        }
        RasMessage::registrationReject(rrj) => {
            add(ras::choice_name(&rrj.reject_reason));
            if let Some(info) = &rrj.alt_gkinfo {
                let need = info
                    .alternate_gatekeeper
                    .first()
                    .map(|gk| gk.need_to_register);
                add(format!(
                    "altGKInfo {} needToRegister {}",
                    alternates(&info.alternate_gatekeeper),
                    if need == Some(true) { "TRUE" } else { "FALSE" }
                ));
            }
        }
        RasMessage::unregistrationRequest(urq) => {
            if let Some(reason) = &urq.reason {
                add(ras::choice_name(reason));
            }
            if let Some(agl) = &urq.alternate_gatekeeper {
                add(format!("AGL {}", alternates(agl)));
            }
        }
        RasMessage::admissionRequest(arq) => {
            add(format!(
                "answerCall {}",
                if arq.answer_call { "TRUE" } else { "FALSE" }
            ));
            if let Some(id) = &arq.call_identifier {
                add(format!("callIdentifier {}", guid(&id.guid)));
            }
        }
        RasMessage::admissionConfirm(acf) => {
            add(format!(
                "destCallSignalAddress {}",
                address(&acf.dest_call_signal_address)
            ));
            add(format!("callModel {}", ras::choice_name(&acf.call_model)));
        }
        RasMessage::admissionReject(arj) => add(ras::choice_name(&arj.reject_reason)),
        RasMessage::disengageRequest(drq) => {
            if let Some(id) = &drq.call_identifier {
                add(format!("callIdentifier {}", guid(&id.guid)));
            }
        }
        _ => {}
    }
    line
}

fn address(address: &asn::TransportAddress) -> String {
    socket_addr(address).map_or_else(|| "(not IP)".to_string(), |a| a.to_string())
}

fn addresses(list: &[asn::TransportAddress]) -> String {
    let all: Vec<String> = list.iter().map(address).collect();
    all.join(",")
}

fn alternates(list: &[asn::AlternateGK]) -> String {
    let all: Vec<String> = list.iter().map(|gk| address(&gk.ras_address)).collect();
    format!("[{}]", all.join(","))
}

fn alias_list(list: &[asn::AliasAddress]) -> String {
    let all: Vec<String> = list
        .iter()
        .map(|a| ras::Alias::from_asn(a).to_string())
        .collect();
    all.join(",")
}

/// A GUID as 32 hex digits.
pub fn guid(guid: &asn::GloballyUniqueID) -> String {
    describe_call_id(&guid.0[..])
}

/// A `callIdentifier` (or any GUID's octets) as 32 hex digits.
pub fn describe_call_id(octets: &[u8]) -> String {
    octets.iter().map(|b| format!("{b:02x}")).collect()
}
