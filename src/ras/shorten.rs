//! Shortening a reply for a source that has not registered (the gatekeeper's reflection
//! bound): leaving out everything a reply may carry beyond its answer.

use super::asn::RasMessage;

/// Leaves out of `message` what its answer does not need: alternate gatekeepers (a GCF's or
/// RCF's `alternateGatekeeper`, a reject's `altGKInfo`), the `gatekeeperIdentifier` of a
/// GCF or a reject, and the echoed octets of an XRS (`messageNotUnderstood`, left empty).
/// `true` when anything was left out.
pub fn shorten(message: &mut RasMessage) -> bool {
    fn clear<T>(field: &mut Option<T>) -> bool {
        field.take().is_some()
    }
    match message {
        RasMessage::gatekeeperConfirm(gcf) => {
            clear(&mut gcf.alternate_gatekeeper) | clear(&mut gcf.gatekeeper_identifier)
        }
        RasMessage::gatekeeperReject(grj) => {
            clear(&mut grj.alt_gkinfo) | clear(&mut grj.gatekeeper_identifier)
        }
        RasMessage::registrationConfirm(rcf) => clear(&mut rcf.alternate_gatekeeper),
        RasMessage::registrationReject(rrj) => {
            clear(&mut rrj.alt_gkinfo) | clear(&mut rrj.gatekeeper_identifier)
        }
        RasMessage::unregistrationReject(urj) => clear(&mut urj.alt_gkinfo),
        RasMessage::admissionReject(arj) => clear(&mut arj.alt_gkinfo),
        RasMessage::bandwidthReject(brj) => clear(&mut brj.alt_gkinfo),
        RasMessage::disengageReject(drj) => clear(&mut drj.alt_gkinfo),
        RasMessage::locationReject(lrj) => clear(&mut lrj.alt_gkinfo),
        RasMessage::infoRequestNak(inak) => clear(&mut inak.alt_gkinfo),
        RasMessage::unknownMessageResponse(xrs) => match &mut xrs.message_not_understood {
            Some(octets) if !octets.is_empty() => {
                *octets = rasn::types::OctetString::from_static(&[]);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ras::reply::{self, AltGkInfo, AlternateGatekeeper, GatekeeperId, RrjReason};
    use crate::ras::{decode, encode, kind};

    #[test]
    fn an_rrj_loses_its_alternates_and_stays_an_rrj() {
        let gk = GatekeeperId::new("rasgk").unwrap();
        let alternates: Vec<AlternateGatekeeper> = (0..8)
            .map(|i| AlternateGatekeeper {
                ras_address: std::net::SocketAddr::from(([127, 0, 1, i + 1], 1719)),
                gatekeeper_id: Some(gk.clone()),
                priority: i,
            })
            .collect();
        let mut rrj = reply::registration_reject(
            7,
            &gk,
            &RrjReason::ResourceUnavailable,
            Some(&AltGkInfo {
                alternates,
                permanent: false,
            }),
        );
        let long = encode(&rrj).unwrap().len();
        assert!(shorten(&mut rrj));
        let short = encode(&rrj).unwrap();
        assert!(short.len() * 4 < long, "{} → {}", long, short.len());
        let again = decode(&short).unwrap();
        assert_eq!(kind(&again), crate::ras::MessageKind::Rrj);
        assert_eq!(crate::ras::request_seq_num(&again), 7);
        assert!(!shorten(&mut rrj), "nothing left to leave out");
    }

    #[test]
    fn an_xrs_keeps_its_sequence_number_without_the_echo() {
        let mut xrs = reply::unknown_message_response(9, &[0xab; 300]);
        assert!(shorten(&mut xrs));
        let short = encode(&xrs).unwrap();
        assert!(short.len() < 16, "{short:02x?}");
        assert_eq!(crate::ras::request_seq_num(&decode(&short).unwrap()), 9);
    }
}
