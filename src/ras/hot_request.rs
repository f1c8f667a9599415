//! Hand-written ALIGNED PER decoders for the requests a registration storm is made of — GRQ
//! and RRQ, full and lightweight — in the shapes phones send: IP transport addresses,
//! `dialledDigits` and `h323-ID` aliases, a vendor identifier, the scalar extension
//! additions (`timeToLive`, `keepAlive`, `endpointIdentifier`, the BOOLEAN and NULL flags).
//!
//! Anything else — tokens, non-standard data, a gateway's protocol list, an alias of an
//! extension alternative, a padding bit that is not zero — answers `None`, and
//! [`decode`](super::decode) runs the generated decoder instead, which then accepts or
//! rejects the datagram as it always did. What is read here is what the generated decoder
//! reads from the same octets: the tests below compare the two over generated requests and
//! over every bit flip of them.

use rasn::types::{BmpString, Ia5String, ObjectIdentifier, OctetString};

use super::aper::Reader;
use super::asn;
use super::asn::RasMessage;
use super::hot_reply::{DIALLED_DIGITS, RAS_MESSAGE_ROOT};

/// Extension additions of `GatekeeperRequest`.
const GRQ_ADDITIONS: usize = 12;
/// Extension additions of `RegistrationRequest`.
const RRQ_ADDITIONS: usize = 27;

/// The message, when the datagram is a GRQ or RRQ of a shape read here.
pub(crate) fn decode(octets: &[u8]) -> Option<RasMessage> {
    let mut r = Reader::new(octets);
    if r.bit()? {
        return None;
    }
    let message = match r.constrained(RAS_MESSAGE_ROOT)? {
        0 => RasMessage::gatekeeperRequest(gatekeeper_request(&mut r)?),
        3 => RasMessage::registrationRequest(registration_request(&mut r)?),
        _ => return None,
    };
    r.at_end()?;
    Some(message)
}

fn gatekeeper_request(r: &mut Reader<'_>) -> Option<asn::GatekeeperRequest> {
    let extended = r.bit()?;
    let [non_standard, has_gatekeeper, call_services, has_aliases] = flags(r)?;
    if non_standard || call_services {
        return None;
    }
    let request_seq_num = sequence_number(r)?;
    let protocol_identifier = asn::ProtocolIdentifier(object_identifier(r)?);
    let ras_address = transport_address(r)?;
    let endpoint_type = endpoint_type(r)?;
    let gatekeeper_identifier = optional(has_gatekeeper, || {
        Some(asn::GatekeeperIdentifier(bmp(r, 128)?))
    })?;
    let endpoint_alias = optional(has_aliases, || aliases(r))?;
    let mut supports_alt_gk = None;
    let mut supports_assigned_gk = None;
    if extended {
        for index in additions(r, GRQ_ADDITIONS)? {
            let mut content = r.open_type()?;
            match index {
                7 => supports_alt_gk = Some(null(&mut content)?),
                10 => supports_assigned_gk = Some(content.bit()?),
                _ => return None,
            }
            content.at_end()?;
        }
    }
    Some(asn::GatekeeperRequest {
        request_seq_num,
        protocol_identifier,
        non_standard_data: None,
        ras_address,
        endpoint_type,
        gatekeeper_identifier,
        call_services: None,
        endpoint_alias,
        alternate_endpoints: None,
        tokens: None,
        crypto_tokens: None,
        authentication_capability: None,
        algorithm_oids: None,
        integrity: None,
        integrity_check_value: None,
        supports_alt_gk,
        feature_set: None,
        generic_data: None,
        supports_assigned_gk,
        assigned_gatekeeper: None,
    })
}

fn registration_request(r: &mut Reader<'_>) -> Option<asn::RegistrationRequest> {
    let extended = r.bit()?;
    let [non_standard, has_aliases, has_gatekeeper] = flags(r)?;
    if non_standard {
        return None;
    }
    let request_seq_num = sequence_number(r)?;
    let protocol_identifier = asn::ProtocolIdentifier(object_identifier(r)?);
    let discovery_complete = r.bit()?;
    let call_signal_address = transport_addresses(r)?;
    let ras_address = transport_addresses(r)?;
    let terminal_type = endpoint_type(r)?;
    let terminal_alias = optional(has_aliases, || aliases(r))?;
    let gatekeeper_identifier = optional(has_gatekeeper, || {
        Some(asn::GatekeeperIdentifier(bmp(r, 128)?))
    })?;
    let endpoint_vendor = vendor_identifier(r)?;
    let mut rrq = asn::RegistrationRequest {
        request_seq_num,
        protocol_identifier,
        non_standard_data: None,
        discovery_complete,
        call_signal_address,
        ras_address,
        terminal_type,
        terminal_alias,
        gatekeeper_identifier,
        endpoint_vendor,
        alternate_endpoints: None,
        time_to_live: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        keep_alive: None,
        endpoint_identifier: None,
        will_supply_uuies: None,
        maintain_connection: None,
        alternate_transport_addresses: None,
        additive_registration: None,
        terminal_alias_pattern: None,
        supports_alt_gk: None,
        usage_reporting_capability: None,
        multiple_calls: None,
        supported_h248_packages: None,
        call_credit_capability: None,
        capacity_reporting_capability: None,
        capacity: None,
        feature_set: None,
        generic_data: None,
        restart: None,
        supports_acfsequences: None,
        supports_assigned_gk: None,
        assigned_gatekeeper: None,
        transport_qos: None,
        language: None,
    };
    if extended {
        for index in additions(r, RRQ_ADDITIONS)? {
            let mut content = r.open_type()?;
            let c = &mut content;
            match index {
                1 => {
                    let ttl = c.constrained(0xFFFF_FFFF)? + 1;
                    rrq.time_to_live = Some(asn::TimeToLive(u32::try_from(ttl).ok()?));
                }
                5 => rrq.keep_alive = Some(c.bit()?),
                6 => rrq.endpoint_identifier = Some(asn::EndpointIdentifier(bmp(c, 128)?)),
                7 => rrq.will_supply_uuies = Some(c.bit()?),
                8 => rrq.maintain_connection = Some(c.bit()?),
                10 => rrq.additive_registration = Some(null(c)?),
                12 => rrq.supports_alt_gk = Some(null(c)?),
                14 => rrq.multiple_calls = Some(c.bit()?),
                21 => rrq.restart = Some(null(c)?),
                22 => rrq.supports_acfsequences = Some(null(c)?),
                23 => rrq.supports_assigned_gk = Some(c.bit()?),
                _ => return None,
            }
            content.at_end()?;
        }
    }
    Some(rrq)
}

/// `N` presence bits of a SEQUENCE's OPTIONAL components.
fn flags<const N: usize>(r: &mut Reader<'_>) -> Option<[bool; N]> {
    let mut flags = [false; N];
    for flag in &mut flags {
        *flag = r.bit()?;
    }
    Some(flags)
}

/// `read()` when `present`, else `None` — `None` of the whole when reading fails.
fn optional<T>(present: bool, read: impl FnOnce() -> Option<T>) -> Option<Option<T>> {
    if present {
        read().map(Some)
    } else {
        Some(None)
    }
}

/// The indices of the extension additions present, from the bitmap after a SEQUENCE's
/// root (one of a type with `known` additions; a bitmap naming more is not read here).
fn additions(r: &mut Reader<'_>, known: usize) -> Option<impl Iterator<Item = usize>> {
    if r.bit()? {
        return None;
    }
    let count = r.bits(6)? as usize + 1;
    if count > known {
        return None;
    }
    let mut present = 0u64;
    for index in 0..count {
        if r.bit()? {
            present |= 1 << index;
        }
    }
    Some((0..count).filter(move |index| present & 1 << index != 0))
}

/// A NULL's complete encoding inside an open type (one zero octet).
fn null(_content: &mut Reader<'_>) -> Option<()> {
    Some(())
}

fn sequence_number(r: &mut Reader<'_>) -> Option<asn::RequestSeqNum> {
    let offset = r.constrained(65_535)?;
    Some(asn::RequestSeqNum(u16::try_from(offset + 1).ok()?))
}

/// An OBJECT IDENTIFIER in its minimal BER form.
fn object_identifier(r: &mut Reader<'_>) -> Option<ObjectIdentifier> {
    let length = r.unconstrained_length()?;
    let contents = r.octets(length)?;
    // Up to 16 arcs (longer ones are left to the generated decoder).
    let mut arcs = [0u32; 16];
    let mut len = 0;
    let mut arc: u32 = 0;
    let mut fresh = true;
    for &octet in contents {
        if fresh && octet == 0x80 {
            return None;
        }
        arc = arc.checked_mul(128)? | u32::from(octet & 0x7F);
        fresh = octet & 0x80 == 0;
        if fresh {
            if len == 0 {
                let (first, second) = match arc {
                    0..=39 => (0, arc),
                    40..=79 => (1, arc - 40),
                    _ => (2, arc - 80),
                };
                arcs[0] = first;
                arcs[1] = second;
                len = 2;
            } else {
                *arcs.get_mut(len)? = arc;
                len += 1;
            }
            arc = 0;
        }
    }
    if !fresh || len == 0 {
        return None;
    }
    let arcs = &arcs[..len];
    match H225_VERSIONS.iter().find(|&&version| version == arcs) {
        Some(&version) => ObjectIdentifier::new(version),
        None => ObjectIdentifier::new(arcs.to_vec()),
    }
}

/// `protocolIdentifier`s of H.225.0 versions 1 to 7, {itu-t(0) recommendation(0) h(8) 2250
/// version(0) N}: what phones send, read without allocating its arcs.
const H225_VERSIONS: [&[u32]; 7] = [
    &[0, 0, 8, 2250, 0, 1],
    &[0, 0, 8, 2250, 0, 2],
    &[0, 0, 8, 2250, 0, 3],
    &[0, 0, 8, 2250, 0, 4],
    &[0, 0, 8, 2250, 0, 5],
    &[0, 0, 8, 2250, 0, 6],
    &[0, 0, 8, 2250, 0, 7],
];

/// A BMPString of `1..=max` characters of the Basic Multilingual Plane.
fn bmp(r: &mut Reader<'_>, max: usize) -> Option<BmpString> {
    let length = r.constrained_length(1, max)?;
    let octets = r.octets(length * 2)?;
    let units = octets
        .chunks_exact(2)
        .map(|unit| u16::from_be_bytes([unit[0], unit[1]]))
        .map(|unit| (unit < 0xFFFE).then_some(unit))
        .collect::<Option<Vec<u16>>>()?;
    // Every unit is checked above against the alphabet (U+0000 to U+FFFD) that rasn's
    // `TryFrom` would search a table of 65,534 for, one binary search a character.
    let mut string = BmpString::default();
    *string = units;
    Some(string)
}

fn transport_addresses(r: &mut Reader<'_>) -> Option<Vec<asn::TransportAddress>> {
    let count = r.unconstrained_length()?;
    (0..count).map(|_| transport_address(r)).collect()
}

/// `TransportAddress`: `ipAddress` and `ip6Address`.
fn transport_address(r: &mut Reader<'_>) -> Option<asn::TransportAddress> {
    if r.bit()? {
        return None;
    }
    match r.constrained(7)? {
        0 => {
            let ip = OctetString::from(r.octets(4)?);
            let port = r.constrained(65_536)? as u16;
            Some(asn::TransportAddress::ipAddress(
                asn::TransportAddressIpAddress::new(ip, port),
            ))
        }
        3 => {
            if r.bit()? {
                return None;
            }
            let ip = OctetString::from(r.octets(16)?);
            let port = r.constrained(65_536)? as u16;
            Some(asn::TransportAddress::ip6Address(
                asn::TransportAddressIp6Address::new(ip, port),
            ))
        }
        _ => None,
    }
}

fn aliases(r: &mut Reader<'_>) -> Option<Vec<asn::AliasAddress>> {
    let count = r.unconstrained_length()?;
    (0..count).map(|_| alias_address(r)).collect()
}

/// `AliasAddress`: its root alternatives, `dialledDigits` and `h323-ID`.
fn alias_address(r: &mut Reader<'_>) -> Option<asn::AliasAddress> {
    if r.bit()? {
        return None;
    }
    match r.constrained(2)? {
        0 => {
            let length = r.constrained_length(1, 128)?;
            r.align()?;
            let digits = (0..length)
                .map(|_| DIALLED_DIGITS.get(r.bits(4)? as usize).copied())
                .collect::<Option<Vec<u8>>>()?;
            Some(asn::AliasAddress::dialledDigits(
                Ia5String::from_iso646_bytes(&digits).ok()?,
            ))
        }
        _ => Some(asn::AliasAddress::h323_ID(bmp(r, 256)?)),
    }
}

/// `EndpointType` with no non-standard data, no extension additions, and empty gateway and
/// MCU information when present.
fn endpoint_type(r: &mut Reader<'_>) -> Option<asn::EndpointType> {
    let extended = r.bit()?;
    let [non_standard, vendor, gatekeeper, gateway, mcu, terminal] = flags(r)?;
    if extended || non_standard {
        return None;
    }
    let vendor = optional(vendor, || vendor_identifier(r))?;
    let gatekeeper = optional(gatekeeper, || {
        empty_info(r)?;
        Some(asn::GatekeeperInfo::new(None))
    })?;
    let gateway = optional(gateway, || {
        let [extended, protocol, non_standard] = flags(r)?;
        (!extended && !protocol && !non_standard).then(|| asn::GatewayInfo::new(None, None))
    })?;
    let mcu = optional(mcu, || {
        empty_info(r)?;
        Some(asn::McuInfo::new(None, None))
    })?;
    let terminal = optional(terminal, || {
        empty_info(r)?;
        Some(asn::TerminalInfo::new(None))
    })?;
    let mc = r.bit()?;
    let undefined_node = r.bit()?;
    Some(asn::EndpointType::new(
        None,
        vendor,
        gatekeeper,
        gateway,
        mcu,
        terminal,
        mc,
        undefined_node,
        None,
        None,
    ))
}

/// `SEQUENCE { nonStandardData OPTIONAL, ... }` with neither.
fn empty_info(r: &mut Reader<'_>) -> Option<()> {
    let [extended, non_standard] = flags(r)?;
    (!extended && !non_standard).then_some(())
}

/// `VendorIdentifier` without its extension addition.
fn vendor_identifier(r: &mut Reader<'_>) -> Option<asn::VendorIdentifier> {
    let [extended, product, version] = flags(r)?;
    if extended || r.bit()? {
        // The identifier's own extension, or H221NonStandard's.
        return None;
    }
    let country = r.constrained(256)? as u8;
    let extension = r.constrained(256)? as u8;
    let manufacturer = r.constrained(65_536)? as u16;
    let mut octets = |present: bool| {
        optional(present, || {
            let length = r.constrained_length(1, 256)?;
            Some(OctetString::from(r.octets(length)?))
        })
    };
    let product_id = octets(product)?;
    let version_id = octets(version)?;
    Some(asn::VendorIdentifier::new(
        asn::H221NonStandard::new(country, extension, manufacturer),
        product_id,
        version_id,
        None,
    ))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::codec::decode_generated;
    use super::super::hot_strategies::{address, alias, generated as octets};
    use super::super::reply::{EndpointId, GatekeeperId};
    use super::super::request;
    use super::*;

    fn identifier() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(prop_oneof!["[A-Za-z0-9]{1,128}", "\\PC{1,30}"])
    }

    /// A GRQ, full RRQ or lightweight RRQ as `request::` builds them.
    fn requests() -> impl Strategy<Value = RasMessage> {
        (
            0..3u8,
            1u16..,
            address(),
            address(),
            proptest::collection::vec(alias(), 0..4),
            identifier(),
            identifier(),
            proptest::option::of(1u32..),
            any::<bool>(),
        )
            .prop_filter_map(
                "identifiers the constructors accept",
                |(which, seq, ras, call, aliases, gatekeeper, endpoint, ttl, gateway)| {
                    let gatekeeper = match gatekeeper {
                        Some(id) => Some(GatekeeperId::new(&id).ok()?),
                        None => None,
                    };
                    Some(match which {
                        0 => request::gatekeeper_request(seq, ras, &aliases, gatekeeper.as_ref()),
                        1 => request::registration_request(&request::Rrq {
                            request_seq_num: seq,
                            call_signal_address: call,
                            ras_address: ras,
                            terminal_type: if gateway {
                                request::gateway()
                            } else {
                                request::terminal()
                            },
                            aliases: &aliases,
                            gatekeeper_id: gatekeeper.as_ref(),
                            time_to_live_s: ttl,
                        }),
                        _ => {
                            let endpoint =
                                EndpointId::new(&endpoint.unwrap_or("EP1".into())).ok()?;
                            request::keep_alive(seq, call, ras, &endpoint, gatekeeper.as_ref(), ttl)
                        }
                    })
                },
            )
    }

    fn uses_extension_alias(message: &RasMessage) -> bool {
        let aliases = match message {
            RasMessage::gatekeeperRequest(grq) => grq.endpoint_alias.as_ref(),
            RasMessage::registrationRequest(rrq) => rrq.terminal_alias.as_ref(),
            _ => None,
        };
        aliases.is_some_and(|aliases| {
            aliases.iter().any(|alias| {
                !matches!(
                    alias,
                    asn::AliasAddress::dialledDigits(_) | asn::AliasAddress::h323_ID(_)
                )
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Every request of the shapes phones send is read here, as the generated decoder
        /// reads it.
        #[test]
        fn requests_read_as_the_generated_decoder_reads_them(message in requests()) {
            let octets = octets(&message);
            let hot = decode(&octets);
            prop_assert_eq!(hot.is_none(), uses_extension_alias(&message));
            if let Some(hot) = hot {
                prop_assert_eq!(&hot, &message);
                prop_assert_eq!(hot, decode_generated(&octets).unwrap());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Whatever a damaged request decodes to here, the generated decoder decodes the same
        /// octets to the same message: every single-bit flip and every truncation (of 24
        /// requests a run, about 30,000 datagrams).
        #[test]
        fn damaged_requests_are_read_the_same_or_left_alone(message in requests()) {
            let original = octets(&message);
            let mut variants: Vec<Vec<u8>> = (0..original.len()).map(|len| original[..len].to_vec()).collect();
            for bit in 0..original.len() * 8 {
                let mut flipped = original.clone();
                flipped[bit / 8] ^= 0x80 >> (bit % 8);
                variants.push(flipped);
            }
            for variant in variants {
                if let Some(hot) = decode(&variant) {
                    prop_assert_eq!(Ok(hot), decode_generated(&variant), "octets {:02x?}", variant);
                }
            }
        }
    }
}
