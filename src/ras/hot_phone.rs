//! Hand-written ALIGNED PER encoders for the requests a storm phone sends most — GRQ, full
//! RRQ and keep-alive RRQ — in the shapes [`request`](super::request) builds them, written
//! straight from the phone's values.
//!
//! In a registration storm the phones share the machine with the gatekeeper, and building a
//! `RasMessage` for the generated codec (alias vectors, vendor octets, a BMPString of the
//! gatekeeper identifier, one buffer per extension addition) was most of a phone's own work.
//! Anything outside the shapes written here (an alias of an extension alternative, a value
//! that breaks a constraint) answers `None`, and the phone builds the message for the
//! generated codec instead. The output is the generated codec's octet for octet: the
//! property tests below check it over generated values.

use std::net::SocketAddr;

use super::aper::Writer;
use super::hot_reply::{
    additions, alias_list, bmp, boolean_addition, null_addition, protocol_identifier,
    sequence_number, time_to_live, transport_address, RAS_MESSAGE_ROOT,
};
use super::Alias;

/// Extension additions of `GatekeeperRequest`.
pub(super) const GRQ_ADDITIONS: usize = 12;
/// Extension additions of `RegistrationRequest`.
pub(super) const RRQ_ADDITIONS: usize = 27;

/// What an RRQ says, as [`registration_request`] writes it: a full RRQ, or a keep-alive.
#[derive(Debug, Clone, Copy)]
pub struct RrqParts<'a> {
    /// Its `requestSeqNum`.
    pub request_seq_num: u16,
    /// `callSignalAddress` (one).
    pub call_signal_address: SocketAddr,
    /// `rasAddress` (one).
    pub ras_address: SocketAddr,
    /// `terminalType` is a gateway ([`request::gateway`](super::request::gateway)), else a
    /// terminal.
    pub gateway: bool,
    /// `terminalAlias`; left out when empty.
    pub aliases: &'a [Alias],
    /// `gatekeeperIdentifier` as UTF-16BE octets.
    pub gatekeeper_id: Option<&'a [u8]>,
    /// Requested `timeToLive`, seconds.
    pub time_to_live_s: Option<u32>,
    /// A keep-alive's `endpointIdentifier`, as UTF-16BE octets: the RRQ is then lightweight
    /// (`keepAlive` TRUE; a keep-alive carries no aliases and is a terminal's).
    pub keep_alive: Option<&'a [u8]>,
    /// A full RRQ asks for the service frame: `featureSet` is
    /// [`service_frame::request`](super::service_frame::request). (A keep-alive never does.)
    pub service_frame: bool,
}

/// Writes a GRQ into `out` (cleared first), as
/// [`request::gatekeeper_request`](super::request::gatekeeper_request) builds it.
pub fn gatekeeper_request(
    out: &mut Vec<u8>,
    request_seq_num: u16,
    ras_address: SocketAddr,
    aliases: &[Alias],
    gatekeeper_id: Option<&[u8]>,
) -> Option<()> {
    let mut w = Writer::over(out);
    w.bit(false);
    w.constrained(0, RAS_MESSAGE_ROOT)?;
    // Extended; nonStandardData, gatekeeperIdentifier, callServices, endpointAlias.
    w.bit(true);
    w.bit(false);
    w.bit(gatekeeper_id.is_some());
    w.bit(false);
    w.bit(!aliases.is_empty());
    sequence_number(&mut w, request_seq_num)?;
    protocol_identifier(&mut w)?;
    transport_address(&mut w, ras_address)?;
    endpoint_type(&mut w, false);
    if let Some(id) = gatekeeper_id {
        bmp(&mut w, id, 128)?;
    }
    alias_list(&mut w, aliases.iter().map(Alias::view))?;
    // supportsAltGK (7) NULL, supportsAssignedGK (10) FALSE.
    additions(&mut w, GRQ_ADDITIONS, 1 << 7 | 1 << 10);
    null_addition(&mut w)?;
    boolean_addition(&mut w, false)?;
    w.finish_into(out);
    Some(())
}

/// Writes an RRQ into `out` (cleared first), as
/// [`request::registration_request`](super::request::registration_request) builds a full
/// one and [`request::keep_alive`](super::request::keep_alive) a keep-alive. A phone keeps
/// its registration alive with a keep-alive every time-to-live, so a bench or a storm sends
/// as many of these as of anything.
pub fn registration_request(out: &mut Vec<u8>, rrq: &RrqParts<'_>) -> Option<()> {
    let mut w = Writer::over(out);
    w.bit(false);
    w.constrained(3, RAS_MESSAGE_ROOT)?;
    // Extended; nonStandardData, terminalAlias, gatekeeperIdentifier.
    w.bit(true);
    w.bit(false);
    w.bit(!rrq.aliases.is_empty());
    w.bit(rrq.gatekeeper_id.is_some());
    sequence_number(&mut w, rrq.request_seq_num)?;
    protocol_identifier(&mut w)?;
    // discoveryComplete, then one callSignalAddress and one rasAddress.
    w.bit(true);
    w.unconstrained_length(1)?;
    transport_address(&mut w, rrq.call_signal_address)?;
    w.unconstrained_length(1)?;
    transport_address(&mut w, rrq.ras_address)?;
    endpoint_type(&mut w, rrq.gateway);
    alias_list(&mut w, rrq.aliases.iter().map(Alias::view))?;
    if let Some(id) = rrq.gatekeeper_id {
        bmp(&mut w, id, 128)?;
    }
    vendor(&mut w)?;
    // timeToLive (1), keepAlive (5), a keep-alive's endpointIdentifier (6),
    // willSupplyUUIEs (7) FALSE, maintainConnection (8) FALSE, a full RRQ's supportsAltGK
    // (12) NULL, a full RRQ's featureSet (19) asking for the service frame,
    // supportsAssignedGK (23) FALSE.
    let keep_alive = rrq.keep_alive.is_some();
    let service_frame = rrq.service_frame && !keep_alive;
    let present = u64::from(rrq.time_to_live_s.is_some()) << 1
        | 1 << 5
        | u64::from(keep_alive) << 6
        | 1 << 7
        | 1 << 8
        | u64::from(!keep_alive) << 12
        | u64::from(service_frame) << 19
        | 1 << 23;
    additions(&mut w, RRQ_ADDITIONS, present);
    if let Some(ttl) = rrq.time_to_live_s {
        time_to_live(&mut w, ttl)?;
    }
    boolean_addition(&mut w, keep_alive)?;
    if let Some(id) = rrq.keep_alive {
        w.open_type(|w| bmp(w, id, 128))?;
    }
    boolean_addition(&mut w, false)?;
    boolean_addition(&mut w, false)?;
    if !keep_alive {
        null_addition(&mut w)?;
    }
    if service_frame {
        w.open_type(|w| {
            w.octets(&super::service_frame::REQUEST_OCTETS);
            Some(())
        })?;
    }
    boolean_addition(&mut w, false)?;
    w.finish_into(out);
    Some(())
}

/// `EndpointType` with only `terminal` or only `gateway` (no protocols), each empty.
fn endpoint_type(w: &mut Writer, gateway: bool) {
    // Not extended; nonStandardData, vendor, gatekeeper, gateway, mcu, terminal.
    w.bit(false);
    w.bits(0, 3);
    w.bit(gateway);
    w.bit(false);
    w.bit(!gateway);
    if gateway {
        // GatewayInfo: not extended, no protocol, no nonStandardData.
        w.bits(0, 3);
    } else {
        // TerminalInfo: not extended, no nonStandardData.
        w.bits(0, 2);
    }
    // mc, undefinedNode.
    w.bits(0, 2);
}

/// `endpointVendor` as [`request::vendor`](super::request::vendor) names rasgk.
fn vendor(w: &mut Writer) -> Option<()> {
    // Not extended; productId and versionId present; H221NonStandard not extended.
    w.bits(0b011, 3);
    w.bit(false);
    w.constrained(181, 256)?;
    w.constrained(0, 256)?;
    w.constrained(0x7267, 65_536)?;
    for octets in [&b"rasgk"[..], env!("CARGO_PKG_VERSION").as_bytes()] {
        w.constrained_length(octets.len(), 1, 256)?;
        w.octets(octets);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::hot_strategies::{address, alias, generated, identifier};
    use super::super::reply::{EndpointId, GatekeeperId};
    use super::super::request;
    use super::super::RasMessage;
    use super::*;

    fn gatekeeper() -> impl Strategy<Value = Option<GatekeeperId>> {
        proptest::option::of(
            identifier().prop_filter_map("an identifier", |id| GatekeeperId::new(&id).ok()),
        )
    }

    /// An alias of an extension alternative is left to the generated codec.
    fn extension_alias(aliases: &[Alias]) -> bool {
        aliases.iter().any(|a| matches!(a, Alias::UrlId(_)))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn grq_is_the_generated_codecs_octet_for_octet(
            seq in 0u16..,
            ras in address(),
            aliases in proptest::collection::vec(alias(), 0..4),
            gatekeeper in gatekeeper(),
        ) {
            let message = request::gatekeeper_request(seq, ras, &aliases, gatekeeper.as_ref());
            let mut hot = vec![0xEE; 3];
            let written = gatekeeper_request(
                &mut hot, seq, ras, &aliases, gatekeeper.as_ref().map(GatekeeperId::octets),
            );
            prop_assert_eq!(written.is_none(), extension_alias(&aliases));
            if written.is_some() {
                prop_assert_eq!(hot, generated(&message));
            }
        }

        #[test]
        fn rrq_is_the_generated_codecs_octet_for_octet(
            seq in 0u16..,
            ras in address(),
            call in address(),
            gateway in any::<bool>(),
            aliases in proptest::collection::vec(alias(), 0..4),
            gatekeeper in gatekeeper(),
            ttl in proptest::option::of(0u32..),
            service_frame in any::<bool>(),
        ) {
            let mut message = request::registration_request(&request::Rrq {
                request_seq_num: seq,
                call_signal_address: call,
                ras_address: ras,
                terminal_type: if gateway { request::gateway() } else { request::terminal() },
                aliases: &aliases,
                gatekeeper_id: gatekeeper.as_ref(),
                time_to_live_s: ttl,
            });
            if let (true, RasMessage::registrationRequest(rrq)) = (service_frame, &mut message) {
                rrq.feature_set = Some(super::super::service_frame::request());
            }
            let mut hot = vec![0xEE; 3];
            let written = registration_request(&mut hot, &RrqParts {
                request_seq_num: seq,
                call_signal_address: call,
                ras_address: ras,
                gateway,
                aliases: &aliases,
                gatekeeper_id: gatekeeper.as_ref().map(GatekeeperId::octets),
                time_to_live_s: ttl,
                keep_alive: None,
                service_frame,
            });
            prop_assert_eq!(written.is_none(), extension_alias(&aliases));
            if written.is_some() {
                prop_assert_eq!(hot, generated(&message));
            }
        }

        #[test]
        fn keep_alive_is_the_generated_codecs_octet_for_octet(
            seq in 0u16..,
            ras in address(),
            call in address(),
            endpoint in identifier().prop_filter_map("an identifier", |id| EndpointId::new(&id).ok()),
            gatekeeper in gatekeeper(),
            ttl in proptest::option::of(0u32..),
        ) {
            let message = request::keep_alive(seq, call, ras, &endpoint, gatekeeper.as_ref(), ttl);
            let mut hot = vec![0xEE; 3];
            let endpoint_id = endpoint.utf16be();
            let written = registration_request(&mut hot, &RrqParts {
                request_seq_num: seq,
                call_signal_address: call,
                ras_address: ras,
                gateway: false,
                aliases: &[],
                gatekeeper_id: gatekeeper.as_ref().map(GatekeeperId::octets),
                time_to_live_s: ttl,
                keep_alive: Some(&endpoint_id),
                // A keep-alive never asks: the flag is not written.
                service_frame: true,
            });
            prop_assert!(written.is_some());
            prop_assert_eq!(hot, generated(&message));
        }
    }
}
