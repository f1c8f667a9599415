//! Avaya endpoints: how their GRQ and RRQ mark them, and what a gatekeeper leaves out of
//! what it sends them (docs/rules.md §14).
//!
//! Avaya's H.323 phones and softphones put `nonStandardData` into their GRQ and RRQ under
//! the object identifier `2.16.840.1.113778.4.2.1` ([`CCMS_OID`]; Avaya calls it its H.221
//! non-standard identifier): the payload is a message of CCMS, Avaya's own signalling —
//! a *discovery request* in the GRQ, `85 01 40` ([`DISCOVERY_REQUEST`]), a *login request*
//! in the RRQ, which carries the phone's MAC address. Some of these endpoints crash on a
//! GCF that carries a `gatekeeperIdentifier` (GnuGk's changelog; GnuGk's Avaya support
//! leaves it out of the GCF and the RCF): [`leave_out_gatekeeper_id`] does that.
//!
//! What is read of a login request ([`login_mac`]) — an *assumption*, as Avaya does not
//! publish CCMS: the one login request on public record (GnuGk's `avaya_station_1000.h`,
//! a 1600-series phone, reverse-engineered from a lab CM) is
//!
//! ```text
//!  offset  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 …
//!         09 81 01 00 26 1e 9e 00 01 20 01 00 06 b4 b0 17 8d 29 c6 01 …
//!            ^ loginRequest             length ^  └ macAddress ──┘
//! ```
//!
//! GnuGk reads the MAC address at offsets 13 to 18 of a payload of at least 20 octets. We
//! read it there too, and only when octet 1 is the login request's `81` and octet 12 is the
//! `06` that gives the address's length in that sample; any other payload under the OID
//! still marks an Avaya endpoint, shown without a MAC address. The CCMS signalling itself
//! (login accepted, switch info, button and hook events) is out of scope.

use std::fmt;
use std::str::FromStr;

use rasn::types::{ObjectIdentifier, OctetString};

use super::asn;

/// Avaya's object identifier of CCMS `nonStandardData`: {joint-iso-itu-t(2) country(16)
/// us(840) organization(1) 113778 4 2 1}.
pub const CCMS_OID: [u32; 8] = [2, 16, 840, 1, 113_778, 4, 2, 1];

/// The CCMS discovery request an Avaya GRQ carries (`natTerminal` NULL, as GnuGk reads it).
pub const DISCOVERY_REQUEST: [u8; 3] = [0x85, 0x01, 0x40];

/// The CCMS message number of a login request (octet 1 of the payload).
pub const LOGIN_REQUEST: u8 = 0x81;

/// Where the MAC address's length octet sits in a login request; the address follows.
const MAC_LENGTH_AT: usize = 12;

/// A MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Mac(pub [u8; 6]);

impl fmt::Display for Mac {
    /// Six pairs of lower-case hex digits with colons: `b4:b0:17:8d:29:c6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

/// A text that is no MAC address of the `b4:b0:17:8d:29:c6` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a MAC address (six pairs of hex digits with colons)")]
pub struct NotAMac(pub String);

impl FromStr for Mac {
    type Err = NotAMac;

    fn from_str(text: &str) -> Result<Mac, NotAMac> {
        let mut octets = [0u8; 6];
        let mut parts = text.split(':');
        for octet in &mut octets {
            let part = parts.next().filter(|part| part.len() == 2);
            *octet = part
                .and_then(|part| u8::from_str_radix(part, 16).ok())
                .ok_or_else(|| NotAMac(text.to_string()))?;
        }
        match parts.next() {
            None => Ok(Mac(octets)),
            Some(_) => Err(NotAMac(text.to_string())),
        }
    }
}

impl serde::Serialize for Mac {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Mac {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Mac, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What marks a request as an Avaya endpoint's, and what it says of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct AvayaEndpoint {
    /// The MAC address of its login request, where it carries one as modelled here.
    #[serde(default)]
    pub mac: Option<Mac>,
}

/// The Avaya endpoint a request's `nonStandardData` marks, if it does.
pub fn endpoint(non_standard: Option<&asn::NonStandardParameter>) -> Option<AvayaEndpoint> {
    let data = ccms(non_standard?)?;
    Some(AvayaEndpoint {
        mac: login_mac(data),
    })
}

/// The CCMS payload of a `nonStandardData` under [`CCMS_OID`].
pub fn ccms(non_standard: &asn::NonStandardParameter) -> Option<&[u8]> {
    match &non_standard.non_standard_identifier {
        asn::NonStandardIdentifier::object(oid) if oid[..] == CCMS_OID[..] => {
            Some(&non_standard.data[..])
        }
        _ => None,
    }
}

/// The MAC address of a CCMS login request (see the module doc for where, and why there).
pub fn login_mac(data: &[u8]) -> Option<Mac> {
    if data.len() < 20 || data[1] != LOGIN_REQUEST || data[MAC_LENGTH_AT] != 6 {
        return None;
    }
    let at = MAC_LENGTH_AT + 1;
    let mut mac = [0u8; 6];
    mac.copy_from_slice(&data[at..at + 6]);
    Some(Mac(mac))
}

/// `nonStandardData` under [`CCMS_OID`] carrying `data`.
pub fn non_standard_data(data: &[u8]) -> asn::NonStandardParameter {
    asn::NonStandardParameter {
        non_standard_identifier: asn::NonStandardIdentifier::object(
            ObjectIdentifier::new(CCMS_OID.to_vec()).expect("CCMS_OID is a valid identifier"),
        ),
        data: OctetString::from(data.to_vec()),
    }
}

/// A CCMS login request naming `mac`, laid out as the one on public record (see the module
/// doc), with that phone's other fields: what rasgk's phone simulator and fixtures send.
pub fn login_request(mac: Mac) -> Vec<u8> {
    let mut data = vec![
        0x09,
        LOGIN_REQUEST,
        0x01,
        0x00, // forceLogin FALSE
        0x26,
        0x1e,
        0x9e,
        0x00,
        0x01,
        0x20, // audioCapable, callSigProtocol, connectionType (not read)
        0x01,
        0x00, // emergencyCallHandling
        0x06, // the MAC address's length
    ];
    data.extend_from_slice(&mac.0);
    data.extend_from_slice(&[
        0x01, 0x00, // signalingChannelRecoveryAlgorithmVersion
        0x05, 0xc0, 0x02, 0x00, 0x00, 0x2f, // unicodeScript
        0x01, 0x00, // ttiCapable
        0x01, 0x80, // sendButtonInfo
        0x01, 0x00, // sendSwitchRelease
        0x01, 0x00, // sendStationInfo
    ]);
    data
}

/// Leaves `gatekeeperIdentifier` out of a GCF, RCF or URQ for an Avaya endpoint, and out of
/// the alternate gatekeepers it lists (GnuGk's RCF to Avaya endpoints lists its one
/// alternate without one too). Other messages are left as they are.
pub fn leave_out_gatekeeper_id(message: &mut asn::RasMessage) {
    let alternates = match message {
        asn::RasMessage::gatekeeperConfirm(gcf) => {
            gcf.gatekeeper_identifier = None;
            gcf.alternate_gatekeeper.as_mut()
        }
        asn::RasMessage::registrationConfirm(rcf) => {
            rcf.gatekeeper_identifier = None;
            rcf.alternate_gatekeeper.as_mut()
        }
        asn::RasMessage::unregistrationRequest(urq) => {
            urq.gatekeeper_identifier = None;
            urq.alternate_gatekeeper.as_mut()
        }
        _ => None,
    };
    for alternate in alternates.into_iter().flatten() {
        alternate.gatekeeper_identifier = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE_MAC: Mac = Mac([0xb4, 0xb0, 0x17, 0x8d, 0x29, 0xc6]);

    #[test]
    fn the_login_request_on_record_gives_its_mac_address() {
        let data = login_request(SAMPLE_MAC);
        assert_eq!(data.len(), 35);
        assert_eq!(&data[..2], &[0x09, 0x81]);
        assert_eq!(login_mac(&data), Some(SAMPLE_MAC));
        let marked = endpoint(Some(&non_standard_data(&data)));
        assert_eq!(
            marked,
            Some(AvayaEndpoint {
                mac: Some(SAMPLE_MAC)
            })
        );
        assert_eq!(SAMPLE_MAC.to_string(), "b4:b0:17:8d:29:c6");
    }

    #[test]
    fn other_payloads_under_the_oid_mark_avaya_without_a_mac() {
        for data in [
            &DISCOVERY_REQUEST[..],
            &[],
            &login_request(SAMPLE_MAC)[..19],
            &[
                0x09, 0x82, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 1, 2, 3, 4, 5, 6, 7,
            ],
            &[
                0x09, 0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4, 5, 6, 7,
            ],
        ] {
            let marked = endpoint(Some(&non_standard_data(data)));
            assert_eq!(marked, Some(AvayaEndpoint { mac: None }), "{data:02x?}");
        }
    }

    #[test]
    fn other_identifiers_mark_nothing() {
        let data = login_request(SAMPLE_MAC);
        let other = asn::NonStandardParameter {
            non_standard_identifier: asn::NonStandardIdentifier::object(
                ObjectIdentifier::new(vec![2, 16, 840, 1, 113_778, 4, 2, 2]).unwrap(),
            ),
            data: OctetString::from(data.clone()),
        };
        assert_eq!(endpoint(Some(&other)), None);
        let h221 = asn::NonStandardParameter {
            non_standard_identifier: asn::NonStandardIdentifier::h221NonStandard(
                asn::H221NonStandard {
                    t35_country_code: 181,
                    t35_extension: 0,
                    manufacturer_code: 0x6761,
                },
            ),
            data: OctetString::from(data),
        };
        assert_eq!(endpoint(Some(&h221)), None);
        assert_eq!(endpoint(None), None);
    }

    #[test]
    fn mac_addresses_read_back_what_they_print() {
        assert_eq!("b4:b0:17:8d:29:c6".parse(), Ok(SAMPLE_MAC));
        for bad in [
            "",
            "b4:b0:17:8d:29",
            "b4:b0:17:8d:29:c6:00",
            "b4-b0-17-8d-29-c6",
            "g4:b0:17:8d:29:c6",
            "b4:b0:17:8d:29:c",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad}");
        }
        let json = serde_json::to_string(&AvayaEndpoint {
            mac: Some(SAMPLE_MAC),
        })
        .unwrap();
        assert_eq!(json, r#"{"mac":"b4:b0:17:8d:29:c6"}"#);
        let back: AvayaEndpoint = serde_json::from_str(&json).unwrap();
        assert_eq!(back.mac, Some(SAMPLE_MAC));
    }
}
