//! Hand-written ALIGNED PER encoders for the replies a registration storm is made of — GCF
//! and RCF (with its AGL) — written straight from the gatekeeper's own values, in the
//! shapes [`reply`](super::reply) builds them.
//!
//! The generated codec needs the whole `RasMessage` built first (a BMPString copy of the
//! gatekeeper identifier for the RCF and for every AGL entry, vectors of addresses and
//! aliases) and then spends most of its time checking every BMP character against its
//! alphabet. Here the octets are written from plain values into a buffer the caller keeps,
//! with identifiers given as their UTF-16BE octets and the AGL as the complete encoding of
//! its `SEQUENCE OF AlternateGK` ([`agl_octets`]), which the gatekeeper makes once per
//! distinct AGL. Anything outside the shapes written here (an alias of an extension
//! alternative, a value that breaks a constraint) answers `None`, and the caller builds the
//! message for the generated codec instead. The output is the generated codec's octet for
//! octet: the property tests below check it over generated values, and tests/wire_tshark.rs
//! has Wireshark read what a gatekeeper wrote this way.

use std::net::{IpAddr, SocketAddr};

use super::aper::Writer;
use super::reply::AlternateGatekeeper;
use super::{AliasView, PackedAliases};

/// Root alternatives of `RasMessage` (before its `...`).
pub(super) const RAS_MESSAGE_ROOT: u64 = 26;
/// Extension additions of `RegistrationConfirm`.
pub(super) const RCF_ADDITIONS: usize = 20;
/// `dialledDigits`' permitted alphabet, in the order of its character codes.
pub(super) const DIALLED_DIGITS: &[u8] = b"#*,0123456789";
/// The H.225.0 protocol identifier 0.0.8.2250.0.4 as its OBJECT IDENTIFIER contents
/// (first two arcs combined, 2250 in base 128).
const PROTOCOL_IDENTIFIER: [u8; 5] = [0x00, 0x08, 0x91, 0x4A, 0x00];
/// … and its last arc, the version.
const PROTOCOL_VERSION: u8 = 0x04;

/// What an RCF says, as [`registration_confirm`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct RcfParts<'a> {
    /// The RRQ's `requestSeqNum`.
    pub request_seq_num: u16,
    /// `gatekeeperIdentifier` as UTF-16BE octets.
    pub gatekeeper_id: &'a [u8],
    /// `endpointIdentifier` as UTF-16BE octets.
    pub endpoint_id: &'a [u8],
    /// `callSignalAddress`.
    pub call_signal_address: &'a [SocketAddr],
    /// `terminalAlias`; left out when empty.
    pub aliases: &'a PackedAliases,
    /// `timeToLive`, seconds.
    pub time_to_live_s: Option<u32>,
    /// `alternateGatekeeper` as [`agl_octets`] wrote it; `None` for no AGL.
    pub agl: Option<&'a [u8]>,
    /// `featureSet` confirms the service frame
    /// ([`service_frame::confirm`](super::service_frame::confirm)).
    pub service_frame: bool,
}

/// Writes a GCF into `out` (cleared first).
pub fn gatekeeper_confirm(
    out: &mut Vec<u8>,
    request_seq_num: u16,
    gatekeeper_id: &[u8],
    ras_address: SocketAddr,
) -> Option<()> {
    let mut w = Writer::over(out);
    w.bit(false);
    w.constrained(1, RAS_MESSAGE_ROOT)?;
    w.bit(false);
    w.bit(false);
    w.bit(true);
    sequence_number(&mut w, request_seq_num)?;
    protocol_identifier(&mut w)?;
    bmp(&mut w, gatekeeper_id, 128)?;
    transport_address(&mut w, ras_address)?;
    w.finish_into(out);
    Some(())
}

/// Writes an RCF into `out` (cleared first), with `willRespondToIRR` and
/// `maintainConnection` FALSE as [`reply::registration_confirm`](super::reply::registration_confirm)
/// sets them.
pub fn registration_confirm(out: &mut Vec<u8>, rcf: &RcfParts<'_>) -> Option<()> {
    let mut w = Writer::over(out);
    w.bit(false);
    w.constrained(4, RAS_MESSAGE_ROOT)?;
    w.bit(true);
    w.bit(false);
    w.bit(!rcf.aliases.is_empty());
    w.bit(true);
    sequence_number(&mut w, rcf.request_seq_num)?;
    protocol_identifier(&mut w)?;
    w.unconstrained_length(rcf.call_signal_address.len())?;
    for &address in rcf.call_signal_address {
        transport_address(&mut w, address)?;
    }
    alias_list(&mut w, rcf.aliases.iter())?;
    bmp(&mut w, rcf.gatekeeper_id, 128)?;
    bmp(&mut w, rcf.endpoint_id, 128)?;
    // alternateGatekeeper (0), timeToLive (1), willRespondToIRR (5), maintainConnection (7),
    // featureSet (15).
    let present = u64::from(rcf.agl.is_some())
        | u64::from(rcf.time_to_live_s.is_some()) << 1
        | 1 << 5
        | 1 << 7
        | u64::from(rcf.service_frame) << 15;
    additions(&mut w, RCF_ADDITIONS, present);
    if let Some(agl) = rcf.agl {
        w.unconstrained_length(agl.len())?;
        w.octets(agl);
    }
    if let Some(ttl) = rcf.time_to_live_s {
        time_to_live(&mut w, ttl)?;
    }
    // willRespondToIRR and maintainConnection: FALSE.
    boolean_addition(&mut w, false)?;
    boolean_addition(&mut w, false)?;
    if rcf.service_frame {
        w.open_type(|w| {
            w.octets(&super::service_frame::CONFIRM_OCTETS);
            Some(())
        })?;
    }
    w.finish_into(out);
    Some(())
}

/// The complete encoding of an AGL (`SEQUENCE OF AlternateGK`, every entry
/// `needToRegister` TRUE), as [`RcfParts::agl`] takes it; `None` for an empty list or an
/// identifier that breaks its constraint.
pub fn agl_octets(entries: &[AlternateGatekeeper]) -> Option<Vec<u8>> {
    if entries.is_empty() {
        return None;
    }
    let mut octets = Vec::with_capacity(8 + 40 * entries.len());
    let mut w = Writer::over(&mut octets);
    w.unconstrained_length(entries.len())?;
    for entry in entries {
        w.bit(false);
        w.bit(entry.gatekeeper_id.is_some());
        transport_address(&mut w, entry.ras_address)?;
        if let Some(id) = &entry.gatekeeper_id {
            bmp(&mut w, id.octets(), 128)?;
        }
        w.bit(true);
        w.constrained(u64::from(entry.priority.min(127)), 128)?;
    }
    w.finish_into(&mut octets);
    Some(octets)
}

/// The bitmap of a SEQUENCE's `count` extension additions (its length as a normally small
/// length, then a bit each), with the additions whose bits are set in `present`.
pub(super) fn additions(w: &mut Writer, count: usize, present: u64) {
    w.bit(false);
    w.bits(count as u64 - 1, 6);
    for index in 0..count {
        w.bit(present & 1 << index != 0);
    }
}

/// A NULL extension addition: an open type of one zero octet.
pub(super) fn null_addition(w: &mut Writer) -> Option<()> {
    w.open_type(|_| Some(()))
}

/// A BOOLEAN extension addition: an open type of one octet.
pub(super) fn boolean_addition(w: &mut Writer, value: bool) -> Option<()> {
    w.open_type(|w| {
        w.bit(value);
        Some(())
    })
}

/// `timeToLive INTEGER (1..4294967295)` as an extension addition; 0 is sent as 1, as the
/// constructors do.
pub(super) fn time_to_live(w: &mut Writer, seconds: u32) -> Option<()> {
    w.open_type(|w| w.constrained(u64::from(seconds.max(1)) - 1, 0xFFFF_FFFF))
}

/// `SEQUENCE OF AliasAddress` when there are aliases (absent when empty).
pub(super) fn alias_list<'a>(
    w: &mut Writer,
    mut aliases: impl ExactSizeIterator<Item = AliasView<'a>>,
) -> Option<()> {
    if aliases.len() == 0 {
        return Some(());
    }
    w.unconstrained_length(aliases.len())?;
    aliases.try_for_each(|alias| alias_address(w, alias))
}

/// `RequestSeqNum ::= INTEGER (1..65535)`; 0 is sent as 1, as [`reply`](super::reply) does.
pub(super) fn sequence_number(w: &mut Writer, seq: u16) -> Option<()> {
    w.constrained(u64::from(seq.max(1) - 1), 65_535)
}

/// `protocolIdentifier`: its length, then the BER contents.
pub(super) fn protocol_identifier(w: &mut Writer) -> Option<()> {
    w.unconstrained_length(PROTOCOL_IDENTIFIER.len() + 1)?;
    w.octets(&PROTOCOL_IDENTIFIER);
    w.octets(&[PROTOCOL_VERSION]);
    Some(())
}

/// A BMPString of `1..=max` characters given as UTF-16BE octets: its length, then the
/// octets, aligned.
pub(super) fn bmp(w: &mut Writer, octets: &[u8], max: usize) -> Option<()> {
    if !octets.len().is_multiple_of(2) {
        return None;
    }
    w.constrained_length(octets.len() / 2, 1, max)?;
    w.octets(octets);
    Some(())
}

/// `TransportAddress`: `ipAddress` and `ip6Address`.
pub(super) fn transport_address(w: &mut Writer, address: SocketAddr) -> Option<()> {
    match address.ip() {
        IpAddr::V4(ip) => {
            w.bit(false);
            w.constrained(0, 7)?;
            w.octets(&ip.octets());
        }
        IpAddr::V6(ip) => {
            w.bit(false);
            w.constrained(3, 7)?;
            w.bit(false);
            w.octets(&ip.octets());
        }
    }
    w.octets(&address.port().to_be_bytes());
    Some(())
}

/// `AliasAddress`: its root alternatives, `dialledDigits` and `h323-ID`, checked as
/// [`Alias::to_asn`] checks them.
pub(super) fn alias_address(w: &mut Writer, alias: AliasView<'_>) -> Option<()> {
    match alias {
        AliasView::DialledDigits(digits) => {
            w.bit(false);
            w.constrained(0, 2)?;
            w.constrained_length(digits.len(), 1, 128)?;
            w.align();
            for digit in digits.bytes() {
                let index = DIALLED_DIGITS.iter().position(|&c| c == digit)?;
                w.bits(index as u64, 4);
            }
        }
        AliasView::H323Id(name) => {
            w.bit(false);
            w.constrained(1, 2)?;
            let characters = name.chars().count();
            if name.chars().any(|c| c as u32 >= 0xFFFE) {
                return None;
            }
            w.constrained_length(characters, 1, 256)?;
            w.align();
            for unit in name.encode_utf16() {
                w.octets(&unit.to_be_bytes());
            }
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::hot_strategies::{address, agl, agl_entries, alias, generated, identifier};
    use super::super::reply::{self, EndpointId, GatekeeperId, Rcf};
    use super::super::Alias;
    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn rcf_is_the_generated_codecs_octet_for_octet(
            seq in 1u16..,
            gatekeeper in identifier(),
            endpoint in identifier(),
            call_signal in proptest::collection::vec(address(), 0..3),
            aliases in proptest::collection::vec(alias(), 0..4),
            ttl in proptest::option::of(1u32..),
            agl_entries in agl_entries(20),
            service_frame in any::<bool>(),
        ) {
            let (Ok(gatekeeper), Ok(endpoint)) = (GatekeeperId::new(&gatekeeper), EndpointId::new(&endpoint)) else {
                return Ok(());
            };
            let agl = agl(agl_entries, &gatekeeper);
            let mut message = reply::registration_confirm(&Rcf {
                request_seq_num: seq,
                gatekeeper_id: &gatekeeper,
                endpoint_id: &endpoint,
                call_signal_address: &call_signal,
                aliases: &aliases,
                time_to_live_s: ttl,
                agl: &agl,
            });
            if service_frame {
                super::super::service_frame::confirm_in(&mut message);
            }
            let agl_octets = agl_octets(&agl);
            prop_assert_eq!(agl_octets.is_none(), agl.is_empty());
            let endpoint_octets = endpoint.asn().0.to_bytes();
            let mut hot = vec![0xEE; 3];
            let written = registration_confirm(&mut hot, &RcfParts {
                request_seq_num: seq,
                gatekeeper_id: gatekeeper.octets(),
                endpoint_id: &endpoint_octets,
                call_signal_address: &call_signal,
                aliases: &PackedAliases::from(&aliases[..]),
                time_to_live_s: ttl,
                agl: agl_octets.as_deref(),
                service_frame,
            });
            let extension_alias = aliases.iter().any(|a| matches!(a, Alias::UrlId(_)));
            // Every shape rasgk sends is written here; an alias of an extension alternative
            // is left to the generated codec.
            prop_assert_eq!(written.is_none(), extension_alias);
            if written.is_some() {
                prop_assert_eq!(hot, generated(&message));
            }
        }

        #[test]
        fn gcf_is_the_generated_codecs_octet_for_octet(
            seq in 1u16..,
            gatekeeper in identifier(),
            ras_address in address(),
        ) {
            let Ok(gatekeeper) = GatekeeperId::new(&gatekeeper) else {
                return Ok(());
            };
            let message = reply::gatekeeper_confirm(seq, &gatekeeper, ras_address);
            let mut hot = vec![0xEE; 3];
            prop_assert!(gatekeeper_confirm(&mut hot, seq, gatekeeper.octets(), ras_address).is_some());
            prop_assert_eq!(hot, generated(&message));
        }
    }

    #[test]
    fn a_long_open_type_takes_a_two_octet_length() {
        // 200 octets of content: the length determinant is 0x80 0xC8, written in place.
        let mut out = Vec::new();
        let mut w = Writer::over(&mut out);
        w.bit(true);
        w.open_type(|w| {
            (0..200).for_each(|i| w.octets(&[i as u8]));
            Some(())
        })
        .unwrap();
        w.finish_into(&mut out);
        assert_eq!(&out[..4], &[0x80, 0x80, 0xC8, 0x00]);
        assert_eq!(out.len(), 3 + 200);
        assert_eq!(out[202], 199);
    }

    #[test]
    fn sequence_number_zero_is_sent_as_one_as_the_constructors_do() {
        let gatekeeper = GatekeeperId::new("rasgk").unwrap();
        let address = "127.0.0.1:1719".parse().unwrap();
        let mut hot = Vec::new();
        gatekeeper_confirm(&mut hot, 0, gatekeeper.octets(), address).unwrap();
        assert_eq!(
            hot,
            generated(&reply::gatekeeper_confirm(0, &gatekeeper, address))
        );
    }
}
