//! What of a reply is compared: its type, a reject's reason, the `rasAddress` of a GCF and the
//! length of an RCF's AGL. Everything else (endpoint identifiers, AGL order, timeToLive, …)
//! may differ between two correct gatekeepers and is not compared.

use std::fmt;
use std::net::SocketAddr;

use serde::Serialize;

use crate::ras::choice_name;
use crate::ras::{self, asn, MessageKind, RasMessage};

/// The compared parts of one reply, and the identifiers a phone learns from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplySummary {
    /// Its type (`GCF`, `RRJ`, …).
    #[serde(rename = "type")]
    pub kind: MessageKind,
    /// A reject's reason (GRJ, RRJ, URJ, ARJ, BRJ, DRJ, LRJ, INAK), by its ASN.1 name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A GCF's `rasAddress`: the C-LAN the phone is sent to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ras_address: Option<SocketAddr>,
    /// An RCF's AGL length (0 without `alternateGatekeeper`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agl: Option<usize>,
    /// An RCF's `endpointIdentifier` (learnt, not compared).
    #[serde(skip)]
    pub endpoint_id: Option<asn::EndpointIdentifier>,
    /// A GCF's or RCF's `gatekeeperIdentifier` (learnt, not compared).
    #[serde(skip)]
    pub gatekeeper_id: Option<asn::GatekeeperIdentifier>,
}

impl ReplySummary {
    /// The summary of a decoded reply.
    pub fn of(message: &RasMessage) -> ReplySummary {
        let mut summary = ReplySummary {
            kind: ras::kind(message),
            reason: None,
            ras_address: None,
            agl: None,
            endpoint_id: None,
            gatekeeper_id: None,
        };
        match message {
            RasMessage::gatekeeperConfirm(m) => {
                summary.ras_address = ras::socket_addr(&m.ras_address);
                summary.gatekeeper_id = m.gatekeeper_identifier.clone();
            }
            RasMessage::registrationConfirm(m) => {
                summary.agl = Some(m.alternate_gatekeeper.as_ref().map_or(0, Vec::len));
                summary.endpoint_id = Some(m.endpoint_identifier.clone());
                summary.gatekeeper_id = m.gatekeeper_identifier.clone();
            }
            RasMessage::gatekeeperReject(m) => summary.reason = Some(choice_name(&m.reject_reason)),
            RasMessage::registrationReject(m) => {
                summary.reason = Some(choice_name(&m.reject_reason));
            }
            RasMessage::unregistrationReject(m) => {
                summary.reason = Some(choice_name(&m.reject_reason));
            }
            RasMessage::admissionReject(m) => summary.reason = Some(choice_name(&m.reject_reason)),
            RasMessage::bandwidthReject(m) => summary.reason = Some(choice_name(&m.reject_reason)),
            RasMessage::disengageReject(m) => summary.reason = Some(choice_name(&m.reject_reason)),
            RasMessage::locationReject(m) => summary.reason = Some(choice_name(&m.reject_reason)),
            RasMessage::infoRequestNak(m) => summary.reason = Some(choice_name(&m.nak_reason)),
            _ => {}
        }
        summary
    }
}

impl fmt::Display for ReplySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(reason) = &self.reason {
            write!(f, " {reason}")?;
        }
        if let Some(address) = self.ras_address {
            write!(f, " {address}")?;
        }
        if let Some(agl) = self.agl {
            write!(f, " AGL {agl}")?;
        }
        Ok(())
    }
}

/// One way a replayed reply differs from the captured one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "field", rename_all = "snake_case")]
pub enum Difference {
    /// The capture has a reply, the replay got none (or the reverse).
    Reply {
        /// Whether the capture has one.
        captured: bool,
        /// Whether the replay got one.
        replayed: bool,
    },
    /// Another message type.
    Type {
        /// Captured type.
        captured: MessageKind,
        /// Replayed type.
        replayed: MessageKind,
    },
    /// Another reject reason.
    Reason {
        /// Captured reason.
        captured: String,
        /// Replayed reason.
        replayed: String,
    },
    /// The GCF names another C-LAN.
    RasAddress {
        /// Captured `rasAddress`.
        captured: Option<SocketAddr>,
        /// Replayed `rasAddress`.
        replayed: Option<SocketAddr>,
    },
    /// The RCF's AGL has another length.
    AglLength {
        /// Captured length.
        captured: usize,
        /// Replayed length.
        replayed: usize,
    },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let or_none = |a: &Option<SocketAddr>| a.map_or("none".to_string(), |a| a.to_string());
        match self {
            Difference::Reply { captured: true, .. } => f.write_str("no reply"),
            Difference::Reply { .. } => f.write_str("a reply the capture does not have"),
            Difference::Type { captured, replayed } => write!(f, "type {captured} → {replayed}"),
            Difference::Reason { captured, replayed } => {
                write!(f, "reason {captured} → {replayed}")
            }
            Difference::RasAddress { captured, replayed } => {
                write!(
                    f,
                    "rasAddress {} → {}",
                    or_none(captured),
                    or_none(replayed)
                )
            }
            Difference::AglLength { captured, replayed } => {
                write!(f, "AGL length {captured} → {replayed}")
            }
        }
    }
}

/// How the replayed reply differs from the captured one (empty: identical).
pub fn compare(
    captured: Option<&ReplySummary>,
    replayed: Option<&ReplySummary>,
) -> Vec<Difference> {
    let (captured, replayed) = match (captured, replayed) {
        (None, None) => return Vec::new(),
        (Some(c), Some(r)) => (c, r),
        (c, r) => {
            return vec![Difference::Reply {
                captured: c.is_some(),
                replayed: r.is_some(),
            }]
        }
    };
    if captured.kind != replayed.kind {
        return vec![Difference::Type {
            captured: captured.kind,
            replayed: replayed.kind,
        }];
    }
    let mut out = Vec::new();
    if captured.reason != replayed.reason {
        out.push(Difference::Reason {
            captured: captured.reason.clone().unwrap_or_default(),
            replayed: replayed.reason.clone().unwrap_or_default(),
        });
    }
    if captured.ras_address != replayed.ras_address {
        out.push(Difference::RasAddress {
            captured: captured.ras_address,
            replayed: replayed.ras_address,
        });
    }
    if let (Some(c), Some(r)) = (captured.agl, replayed.agl) {
        if c != r {
            out.push(Difference::AglLength {
                captured: c,
                replayed: r,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gcf(address: &str) -> ReplySummary {
        ReplySummary {
            kind: MessageKind::Gcf,
            reason: None,
            ras_address: Some(address.parse().unwrap()),
            agl: None,
            endpoint_id: None,
            gatekeeper_id: None,
        }
    }

    #[test]
    fn identical_replies_have_no_difference() {
        let a = gcf("127.0.20.11:1719");
        assert!(compare(Some(&a), Some(&a.clone())).is_empty());
        assert!(compare(None, None).is_empty());
    }

    #[test]
    fn another_clan_and_a_missing_reply_are_differences() {
        let a = gcf("127.0.20.11:1719");
        let b = gcf("127.0.20.12:1719");
        let d = compare(Some(&a), Some(&b));
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].to_string(),
            "rasAddress 127.0.20.11:1719 → 127.0.20.12:1719"
        );
        assert_eq!(compare(Some(&a), None)[0].to_string(), "no reply");
        let mut grj = a.clone();
        grj.kind = MessageKind::Grj;
        assert_eq!(
            compare(Some(&a), Some(&grj))[0].to_string(),
            "type GCF → GRJ"
        );
    }
}
