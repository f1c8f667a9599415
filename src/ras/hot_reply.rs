//! Hand-written ALIGNED PER encoders for the replies a registration storm is made of — GCF
//! and RCF (with its AGL) — in the shapes [`reply`](super::reply) builds them.
//!
//! The generated codec spends most of an RCF's time checking every BMP character of the
//! gatekeeper identifier against its alphabet, once for the RCF and once per AGL entry; here
//! the same octets are written directly. Anything outside the shapes written here (an alias
//! of an extension alternative, tokens, a non-IP address, …) answers `None`, and
//! [`encode`](super::encode) uses the generated codec instead. The output is the generated
//! codec's octet for octet: the property tests below check it over generated messages, and
//! every tshark test reads what these functions wrote.

use super::aper::Writer;
use super::asn;
use super::asn::RasMessage;

/// Root alternatives of `RasMessage` (before its `...`).
pub(super) const RAS_MESSAGE_ROOT: u64 = 26;
/// Extension additions of `RegistrationConfirm`.
const RCF_ADDITIONS: usize = 20;
/// `dialledDigits`' permitted alphabet, in the order of its character codes.
pub(super) const DIALLED_DIGITS: &[u8] = b"#*,0123456789";

/// The octets of `message` when it is a GCF or RCF of a shape written here.
pub(crate) fn encode(message: &RasMessage) -> Option<Vec<u8>> {
    match message {
        RasMessage::gatekeeperConfirm(gcf) => gatekeeper_confirm(gcf),
        RasMessage::registrationConfirm(rcf) => registration_confirm(rcf),
        _ => None,
    }
}

fn gatekeeper_confirm(gcf: &asn::GatekeeperConfirm) -> Option<Vec<u8>> {
    let extended = gcf.alternate_gatekeeper.is_some()
        || gcf.authentication_mode.is_some()
        || gcf.tokens.is_some()
        || gcf.crypto_tokens.is_some()
        || gcf.algorithm_oid.is_some()
        || gcf.integrity.is_some()
        || gcf.integrity_check_value.is_some()
        || gcf.feature_set.is_some()
        || gcf.generic_data.is_some()
        || gcf.assigned_gatekeeper.is_some()
        || gcf.rehoming_model.is_some();
    if extended || gcf.non_standard_data.is_some() {
        return None;
    }
    let mut w = Writer::with_capacity(48);
    w.bit(false);
    w.constrained(1, RAS_MESSAGE_ROOT)?;
    w.bit(false);
    w.bit(false);
    w.bit(gcf.gatekeeper_identifier.is_some());
    sequence_number(&mut w, gcf.request_seq_num.0)?;
    object_identifier(&mut w, &gcf.protocol_identifier.0)?;
    if let Some(id) = &gcf.gatekeeper_identifier {
        bmp(&mut w, &id.0, 128)?;
    }
    transport_address(&mut w, &gcf.ras_address)?;
    Some(w.finish())
}

fn registration_confirm(rcf: &asn::RegistrationConfirm) -> Option<Vec<u8>> {
    let unsupported = rcf.non_standard_data.is_some()
        || rcf.tokens.is_some()
        || rcf.crypto_tokens.is_some()
        || rcf.integrity_check_value.is_some()
        || rcf.pre_granted_arq.is_some()
        || rcf.service_control.is_some()
        || rcf.supports_additive_registration.is_some()
        || rcf.terminal_alias_pattern.is_some()
        || rcf.supported_prefixes.is_some()
        || rcf.usage_spec.is_some()
        || rcf.feature_server_alias.is_some()
        || rcf.capacity_reporting_spec.is_some()
        || rcf.feature_set.is_some()
        || rcf.generic_data.is_some()
        || rcf.assigned_gatekeeper.is_some()
        || rcf.rehoming_model.is_some()
        || rcf.transport_qos.is_some();
    if unsupported {
        return None;
    }
    // Presence of the additions written here, in their order in the type.
    let present = [
        (0, rcf.alternate_gatekeeper.is_some()),
        (1, rcf.time_to_live.is_some()),
        (5, rcf.will_respond_to_irr.is_some()),
        (7, rcf.maintain_connection.is_some()),
    ];
    let extended = present.iter().any(|&(_, is)| is);
    let mut w =
        Writer::with_capacity(96 + 40 * rcf.alternate_gatekeeper.as_ref().map_or(0, Vec::len));
    w.bit(false);
    w.constrained(4, RAS_MESSAGE_ROOT)?;
    w.bit(extended);
    w.bit(false);
    w.bit(rcf.terminal_alias.is_some());
    w.bit(rcf.gatekeeper_identifier.is_some());
    sequence_number(&mut w, rcf.request_seq_num.0)?;
    object_identifier(&mut w, &rcf.protocol_identifier.0)?;
    w.unconstrained_length(rcf.call_signal_address.len())?;
    for address in &rcf.call_signal_address {
        transport_address(&mut w, address)?;
    }
    if let Some(aliases) = &rcf.terminal_alias {
        w.unconstrained_length(aliases.len())?;
        for alias in aliases {
            alias_address(&mut w, alias)?;
        }
    }
    if let Some(id) = &rcf.gatekeeper_identifier {
        bmp(&mut w, &id.0, 128)?;
    }
    bmp(&mut w, &rcf.endpoint_identifier.0, 128)?;
    if !extended {
        return Some(w.finish());
    }
    // The bitmap of additions: its length as a normally small length, then a bit each.
    w.bit(false);
    w.bits(RCF_ADDITIONS as u64 - 1, 6);
    let mut bitmap = [false; RCF_ADDITIONS];
    for (index, is) in present {
        bitmap[index] = is;
    }
    for is in bitmap {
        w.bit(is);
    }
    if let Some(agl) = &rcf.alternate_gatekeeper {
        w.open_type(|w| {
            w.unconstrained_length(agl.len())?;
            agl.iter()
                .try_for_each(|entry| alternate_gatekeeper(w, entry))
        })?;
    }
    if let Some(ttl) = &rcf.time_to_live {
        w.open_type(|w| w.constrained(u64::from(ttl.0).checked_sub(1)?, 0xFFFF_FFFF))?;
    }
    if let Some(will) = rcf.will_respond_to_irr {
        w.open_type(|w| {
            w.bit(will);
            Some(())
        })?;
    }
    if let Some(maintain) = rcf.maintain_connection {
        w.open_type(|w| {
            w.bit(maintain);
            Some(())
        })?;
    }
    Some(w.finish())
}

/// `RequestSeqNum ::= INTEGER (1..65535)`.
fn sequence_number(w: &mut Writer, seq: u16) -> Option<()> {
    w.constrained(u64::from(seq.checked_sub(1)?), 65_535)
}

/// An OBJECT IDENTIFIER: its length, then the BER contents (first two arcs combined, each
/// arc in base 128).
fn object_identifier(w: &mut Writer, arcs: &[u32]) -> Option<()> {
    let (&first, rest) = arcs.split_first()?;
    let (&second, rest) = rest.split_first()?;
    let mut contents = Vec::with_capacity(8);
    let head = u64::from(first) * 40 + u64::from(second);
    for arc in std::iter::once(head).chain(rest.iter().map(|&arc| u64::from(arc))) {
        let groups = (64 - arc.leading_zeros()).div_ceil(7).max(1);
        for group in (0..groups).rev() {
            let more = if group > 0 { 0x80 } else { 0 };
            contents.push(more | ((arc >> (7 * group)) & 0x7F) as u8);
        }
    }
    w.unconstrained_length(contents.len())?;
    w.octets(&contents);
    Some(())
}

/// A BMPString of `1..=max` characters: its length, then 16 aligned bits a character.
fn bmp(w: &mut Writer, text: &rasn::types::BmpString, max: usize) -> Option<()> {
    let octets = text.to_bytes();
    w.constrained_length(octets.len() / 2, 1, max)?;
    w.octets(&octets);
    Some(())
}

/// `TransportAddress`: `ipAddress` and `ip6Address`.
fn transport_address(w: &mut Writer, address: &asn::TransportAddress) -> Option<()> {
    match address {
        asn::TransportAddress::ipAddress(ip) if ip.ip.len() == 4 => {
            w.bit(false);
            w.constrained(0, 7)?;
            w.octets(&ip.ip);
            w.octets(&ip.port.to_be_bytes());
        }
        asn::TransportAddress::ip6Address(ip) if ip.ip.len() == 16 => {
            w.bit(false);
            w.constrained(3, 7)?;
            w.bit(false);
            w.octets(&ip.ip);
            w.octets(&ip.port.to_be_bytes());
        }
        _ => return None,
    }
    Some(())
}

/// `AliasAddress`: its root alternatives, `dialledDigits` and `h323-ID`.
fn alias_address(w: &mut Writer, alias: &asn::AliasAddress) -> Option<()> {
    match alias {
        asn::AliasAddress::dialledDigits(digits) => {
            let digits = digits.as_iso646_bytes();
            w.bit(false);
            w.constrained(0, 2)?;
            w.constrained_length(digits.len(), 1, 128)?;
            w.align();
            for &digit in digits {
                let index = DIALLED_DIGITS.iter().position(|&c| c == digit)?;
                w.bits(index as u64, 4);
            }
        }
        asn::AliasAddress::h323_ID(name) => {
            w.bit(false);
            w.constrained(1, 2)?;
            bmp(w, name, 256)?;
        }
        _ => return None,
    }
    Some(())
}

/// `AlternateGK` (an AGL entry).
fn alternate_gatekeeper(w: &mut Writer, entry: &asn::AlternateGK) -> Option<()> {
    w.bit(false);
    w.bit(entry.gatekeeper_identifier.is_some());
    transport_address(w, &entry.ras_address)?;
    if let Some(id) = &entry.gatekeeper_identifier {
        bmp(w, &id.0, 128)?;
    }
    w.bit(entry.need_to_register);
    w.constrained(u64::from(entry.priority), 128)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::hot_strategies::{address, alias, generated};
    use super::super::reply::{self, AlternateGatekeeper, EndpointId, GatekeeperId, Rcf};
    use super::super::Alias;
    use super::*;

    fn identifier() -> impl Strategy<Value = String> {
        prop_oneof!["[A-Za-z0-9]{1,128}", "\\PC{1,30}"]
    }

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
            agl in proptest::collection::vec((address(), any::<bool>(), 0u8..128), 0..20),
        ) {
            let (Ok(gatekeeper), Ok(endpoint)) = (GatekeeperId::new(&gatekeeper), EndpointId::new(&endpoint)) else {
                return Ok(());
            };
            let agl: Vec<AlternateGatekeeper> = agl
                .into_iter()
                .map(|(ras_address, named, priority)| AlternateGatekeeper {
                    ras_address,
                    gatekeeper_id: named.then(|| gatekeeper.clone()),
                    priority,
                })
                .collect();
            let message = reply::registration_confirm(&Rcf {
                request_seq_num: seq,
                gatekeeper_id: &gatekeeper,
                endpoint_id: &endpoint,
                call_signal_address: &call_signal,
                aliases: &aliases,
                time_to_live_s: ttl,
                agl: &agl,
            });
            let hot = encode(&message);
            let extension_alias = aliases.iter().any(|a| matches!(a, Alias::UrlId(_)));
            // Every shape rasgk sends is written here; an alias of an extension alternative
            // is left to the generated codec.
            prop_assert_eq!(hot.is_none(), extension_alias);
            if let Some(hot) = hot {
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
            let hot = encode(&message).expect("every GCF rasgk sends");
            prop_assert_eq!(hot, generated(&message));
        }
    }

    #[test]
    fn other_messages_are_left_to_the_generated_codec() {
        let gatekeeper = GatekeeperId::new("rasgk").unwrap();
        let grj = reply::gatekeeper_reject(3, &gatekeeper, reply::GrjReason::ResourceUnavailable);
        assert!(encode(&grj).is_none());
    }
}
