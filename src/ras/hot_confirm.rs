//! Hand-written ALIGNED PER decoders for the confirms a phone waits for in a registration
//! storm — GCF and RCF with its AGL — in the shapes [`hot_reply`](super::hot_reply) writes
//! them, read into the few values a phone keeps.
//!
//! The generated decoder builds the whole message first: a BMPString of the gatekeeper
//! identifier in the confirm and in every AGL entry, each character looked up in its
//! alphabet, and vectors of addresses and aliases, all freed again a moment later. Here
//! every component is read and checked the way [`hot_request`](super::hot_request) checks a
//! request's, and only the sequence number, addresses, endpoint identifier and TTL are
//! kept. Anything else (non-standard data, an extension addition not written by rasgk, an
//! alias of an extension alternative, a padding bit that is not zero) answers `None`, and
//! the phone decodes with the generated codec instead. The tests below check that whatever
//! is read here is what the generated decoder reads from the same octets.

use std::net::SocketAddr;

use super::aper::Reader;
use super::hot_reply::{RAS_MESSAGE_ROOT, RCF_ADDITIONS};
use super::hot_request::{
    additions, alias_address, bmp_octets, flags, object_identifier, sequence_number,
    socket_address, Walk,
};
use super::service_frame;

/// A GCF or RCF as a phone keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confirm<'a> {
    /// GCF.
    Gcf {
        /// `requestSeqNum`.
        seq: u16,
        /// `rasAddress`: the C-LAN to register at.
        ras_address: SocketAddr,
    },
    /// RCF.
    Rcf {
        /// `requestSeqNum`.
        seq: u16,
        /// `callSignalAddress`'s first entry: where the phone's call signalling goes (in
        /// socket mode, the C-LAN's TCP listener).
        call_signal_address: Option<SocketAddr>,
        /// `endpointIdentifier`, as its UTF-16BE octets.
        endpoint_id: &'a [u8],
        /// `alternateGatekeeper`'s RAS addresses, in order.
        agl: Vec<SocketAddr>,
        /// `timeToLive`, seconds.
        time_to_live_s: Option<u32>,
        /// Its `featureSet` says the gatekeeper writes the service frame
        /// ([`service_frame`](super::service_frame)).
        service_frame: bool,
    },
}

/// The confirm, when the datagram is a GCF or RCF of a shape read here.
pub fn read(octets: &[u8]) -> Option<Confirm<'_>> {
    let mut r = Reader::new(octets);
    if r.bit()? {
        return None;
    }
    let confirm = match r.constrained(RAS_MESSAGE_ROOT)? {
        1 => gatekeeper_confirm(&mut r)?,
        4 => registration_confirm(&mut r)?,
        _ => return None,
    };
    r.at_end()?;
    Some(confirm)
}

fn gatekeeper_confirm<'a>(r: &mut Reader<'a>) -> Option<Confirm<'a>> {
    let [extended, non_standard, has_gatekeeper] = flags(r)?;
    if extended || non_standard {
        return None;
    }
    let seq = sequence_number(r)?;
    object_identifier(r, Walk::Check)?;
    if has_gatekeeper {
        bmp_octets(r, 128)?;
    }
    let ras_address = socket_address(r)?;
    Some(Confirm::Gcf { seq, ras_address })
}

fn registration_confirm<'a>(r: &mut Reader<'a>) -> Option<Confirm<'a>> {
    let [extended, non_standard, has_aliases, has_gatekeeper] = flags(r)?;
    if non_standard {
        return None;
    }
    let seq = sequence_number(r)?;
    object_identifier(r, Walk::Check)?;
    let mut call_signal_address = None;
    for _ in 0..r.unconstrained_length()? {
        let address = socket_address(r)?;
        call_signal_address = call_signal_address.or(Some(address));
    }
    if has_aliases {
        for _ in 0..r.unconstrained_length()? {
            alias_address(r, Walk::Check)?;
        }
    }
    if has_gatekeeper {
        bmp_octets(r, 128)?;
    }
    let endpoint_id = bmp_octets(r, 128)?;
    let mut agl = Vec::new();
    let mut time_to_live_s = None;
    let mut service_frame = false;
    if extended {
        for index in additions(r, RCF_ADDITIONS)? {
            let mut content = r.open_type()?;
            let c = &mut content;
            match index {
                0 => agl = alternate_gatekeepers(c)?,
                1 => time_to_live_s = Some(u32::try_from(c.constrained(0xFFFF_FFFF)? + 1).ok()?),
                // willRespondToIRR, maintainConnection: BOOLEAN.
                5 | 7 => {
                    c.bit()?;
                }
                // featureSet: only the one that confirms the service frame, whole.
                15 => {
                    let features = c.octets(service_frame::CONFIRM_OCTETS.len())?;
                    if features != &service_frame::CONFIRM_OCTETS[..] {
                        return None;
                    }
                    service_frame = true;
                }
                _ => return None,
            }
            content.at_end()?;
        }
    }
    Some(Confirm::Rcf {
        seq,
        call_signal_address,
        endpoint_id,
        agl,
        time_to_live_s,
        service_frame,
    })
}

/// `SEQUENCE OF AlternateGK` without extension additions: the RAS addresses.
fn alternate_gatekeepers(r: &mut Reader<'_>) -> Option<Vec<SocketAddr>> {
    let count = r.unconstrained_length()?;
    let mut agl = Vec::with_capacity(count.min(32));
    for _ in 0..count {
        let [extended, has_gatekeeper] = flags(r)?;
        if extended {
            return None;
        }
        agl.push(socket_address(r)?);
        if has_gatekeeper {
            bmp_octets(r, 128)?;
        }
        // needToRegister, priority INTEGER (0..127).
        r.bit()?;
        r.constrained(128)?;
    }
    Some(agl)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::hot_reply::{self, RcfParts};
    use super::super::hot_strategies::{address, agl, agl_entries, alias, identifier};
    use super::super::reply::{EndpointId, GatekeeperId};
    use super::super::{decode, socket_addr, RasMessage};
    use super::*;

    /// Sequence number, GCF rasAddress, RCF first callSignalAddress, endpoint id, AGL,
    /// TTL and the service frame confirmed.
    type Kept = (
        u16,
        Option<SocketAddr>,
        Option<SocketAddr>,
        Vec<u8>,
        Vec<SocketAddr>,
        Option<u32>,
        bool,
    );

    /// What the generated decoder makes of a GCF or RCF, in a [`Confirm`]'s terms.
    fn decoded(octets: &[u8]) -> Option<Kept> {
        match decode(octets).ok()? {
            RasMessage::gatekeeperConfirm(gcf) => Some((
                gcf.request_seq_num.0,
                socket_addr(&gcf.ras_address),
                None,
                Vec::new(),
                Vec::new(),
                None,
                false,
            )),
            RasMessage::registrationConfirm(rcf) => Some((
                rcf.request_seq_num.0,
                None,
                rcf.call_signal_address.first().and_then(socket_addr),
                rcf.endpoint_identifier.0.to_bytes(),
                rcf.alternate_gatekeeper
                    .iter()
                    .flatten()
                    .filter_map(|gk| socket_addr(&gk.ras_address))
                    .collect(),
                rcf.time_to_live.map(|ttl| ttl.0),
                service_frame::named(rcf.feature_set.as_ref()),
            )),
            _ => None,
        }
    }

    fn kept(confirm: &Confirm<'_>) -> Kept {
        match confirm {
            Confirm::Gcf { seq, ras_address } => (
                *seq,
                Some(*ras_address),
                None,
                Vec::new(),
                Vec::new(),
                None,
                false,
            ),
            Confirm::Rcf {
                seq,
                call_signal_address,
                endpoint_id,
                agl,
                time_to_live_s,
                service_frame,
            } => (
                *seq,
                None,
                *call_signal_address,
                endpoint_id.to_vec(),
                agl.clone(),
                *time_to_live_s,
                *service_frame,
            ),
        }
    }

    /// A GCF or RCF as a gatekeeper writes them.
    fn confirms() -> impl Strategy<Value = Vec<u8>> {
        (
            any::<bool>(),
            1u16..,
            identifier(),
            identifier(),
            address(),
            proptest::collection::vec(address(), 0..3),
            proptest::collection::vec(alias(), 0..3),
            proptest::option::of(1u32..),
            agl_entries(8),
            any::<bool>(),
        )
            .prop_filter_map(
                "identifiers and aliases the writers take",
                |(
                    gcf,
                    seq,
                    gatekeeper,
                    endpoint,
                    ras,
                    call_signal,
                    aliases,
                    ttl,
                    entries,
                    service_frame,
                )| {
                    let gatekeeper = GatekeeperId::new(&gatekeeper).ok()?;
                    let mut out = Vec::new();
                    if gcf {
                        hot_reply::gatekeeper_confirm(&mut out, seq, gatekeeper.octets(), ras)?;
                        return Some(out);
                    }
                    let endpoint = EndpointId::new(&endpoint).ok()?.asn().0.to_bytes();
                    let agl = hot_reply::agl_octets(&agl(entries, &gatekeeper));
                    hot_reply::registration_confirm(
                        &mut out,
                        &RcfParts {
                            request_seq_num: seq,
                            gatekeeper_id: gatekeeper.octets(),
                            endpoint_id: &endpoint,
                            call_signal_address: &call_signal,
                            aliases: &crate::ras::PackedAliases::from(&aliases[..]),
                            time_to_live_s: ttl,
                            agl: agl.as_deref(),
                            service_frame,
                        },
                    )?;
                    Some(out)
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn every_confirm_a_gatekeeper_writes_is_read_as_the_generated_decoder_reads_it(
            octets in confirms(),
        ) {
            let confirm = read(&octets);
            prop_assert!(confirm.is_some(), "not read: {:02X?}", octets);
            prop_assert_eq!(Some(kept(&confirm.unwrap())), decoded(&octets));
        }
    }

    proptest! {
        // Each case decodes every bit flip and truncation of a confirm of up to ~400 octets.
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn what_is_read_of_a_damaged_confirm_is_what_the_generated_decoder_reads(
            octets in confirms(),
        ) {
            // Every bit flip and every truncation: read either declines or agrees.
            let mut damaged = Vec::new();
            for bit in 0..octets.len() * 8 {
                let mut flipped = octets.clone();
                flipped[bit / 8] ^= 0x80 >> (bit % 8);
                damaged.push(flipped);
            }
            damaged.extend((0..octets.len()).map(|len| octets[..len].to_vec()));
            for octets in damaged {
                if let Some(confirm) = read(&octets) {
                    prop_assert_eq!(Some(kept(&confirm)), decoded(&octets), "{:02X?}", octets);
                }
            }
        }
    }
}
