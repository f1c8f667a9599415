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
//!
//! One walk serves two ends ([`Walk`]): [`decode`] builds the generated types' values, and
//! [`read`] — for the gatekeeper, which needs nothing of a GRQ but its sequence number,
//! nothing of a keep-alive but four fields and nothing of a full RRQ but the few that
//! registration uses — reads and checks every component the same way but builds none of
//! them. A GRQ or keep-alive then costs no allocation at all; a full RRQ's call signal
//! addresses and aliases are read again from the checked octets when the gatekeeper asks
//! for them ([`TransportAddresses`], [`Aliases`]), so only the aliases it keeps are
//! allocated.

use std::net::{IpAddr, SocketAddr};

use rasn::types::{BmpString, Ia5String, ObjectIdentifier, OctetString};

use super::address::{socket_addr, utf16be_text, Alias};
use super::aper::Reader;
use super::asn;
use super::asn::RasMessage;
use super::avaya::{self, AvayaEndpoint};
use super::hot_phone::{GRQ_ADDITIONS, RRQ_ADDITIONS};
use super::hot_reply::{DIALLED_DIGITS, RAS_MESSAGE_ROOT};
use super::service_frame;

/// What a walk makes of the components it reads and checks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Walk {
    /// The generated types' values.
    Build,
    /// Nothing: every reader answers `Some(None)` for a well-formed component.
    Check,
}

impl Walk {
    /// `value()` when building.
    fn make<T>(self, value: impl FnOnce() -> T) -> Option<T> {
        (self == Walk::Build).then(value)
    }
}

/// The message, when the datagram is a GRQ or RRQ of a shape read here.
pub(crate) fn decode(octets: &[u8]) -> Option<RasMessage> {
    match walk(octets, Walk::Build)? {
        Walked::Grq(grq, ..) => Some(RasMessage::gatekeeperRequest(*grq?)),
        Walked::Rrq(rrq, _) => Some(RasMessage::registrationRequest(*rrq?)),
    }
}

/// A request as the gatekeeper needs it.
#[derive(Debug, PartialEq)]
pub enum Request<'a> {
    /// A GRQ of a shape read here.
    Grq(Discovery<'a>),
    /// A lightweight RRQ of a shape read here (so without tokens) and without aliases.
    KeepAlive(KeepAlive<'a>),
    /// A full RRQ of a shape read here (so without tokens).
    FullRegistration(FullRegistration<'a>),
    /// Any other datagram that decodes, in the slot the caller of
    /// [`read_request`](super::read_request) keeps: a message is some 2 KB, which neither a
    /// box (an allocation past malloc's thread cache per request) nor every GRQ's return
    /// path (copying the whole enum) should carry.
    Message(&'a RasMessage),
}

/// What the gatekeeper reads of a GRQ: read here from the octets, or taken from a decoded
/// message (`From<&GatekeeperRequest>`), the same fields either way.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovery<'a> {
    pub seq: u16,
    /// `endpointAlias` (none when absent): whether the phone is TTS may be known from them
    /// already.
    pub aliases: Aliases<'a>,
    /// `endpointAlias` is present (an empty list tells as little as none).
    pub has_aliases: bool,
    /// Its `nonStandardData` marks an Avaya endpoint (never in a GRQ read here).
    pub avaya: Option<AvayaEndpoint>,
    /// `endpointType` has `gateway`: a trunk member, which takes no C-LAN socket.
    pub gateway: bool,
}

impl<'a> From<&'a asn::GatekeeperRequest> for Discovery<'a> {
    fn from(grq: &'a asn::GatekeeperRequest) -> Self {
        let aliases = grq.endpoint_alias.as_deref().unwrap_or_default();
        Discovery {
            seq: grq.request_seq_num.0,
            aliases: Aliases(Listed::Decoded(aliases.iter())),
            has_aliases: !aliases.is_empty(),
            avaya: avaya::endpoint(grq.non_standard_data.as_ref()),
            gateway: grq.endpoint_type.gateway.is_some(),
        }
    }
}

/// What the gatekeeper reads of a lightweight RRQ.
#[derive(Debug, PartialEq)]
pub struct KeepAlive<'a> {
    pub seq: u16,
    /// The `endpointIdentifier`, as its UTF-16BE octets.
    pub endpoint_id: &'a [u8],
    pub time_to_live: Option<u32>,
}

/// What the gatekeeper reads of a full RRQ (one whose `keepAlive` is not TRUE): read here
/// from the octets, or taken from a decoded message (`From<&RegistrationRequest>`), the
/// same fields either way.
#[derive(Debug, Clone, PartialEq)]
pub struct FullRegistration<'a> {
    pub seq: u16,
    /// The IP addresses of `callSignalAddress`.
    pub call_signal_address: TransportAddresses<'a>,
    /// The first IP address of `rasAddress`.
    pub ras_address: Option<SocketAddr>,
    /// `terminalAlias` (none when absent).
    pub aliases: Aliases<'a>,
    pub time_to_live: Option<u32>,
    /// `terminalType` has `gateway`.
    pub gateway: bool,
    /// `cryptoTokens`: never any in an RRQ read here.
    pub tokens: Option<&'a [asn::CryptoH323Token]>,
    /// `endpointIdentifier`: the one an endpoint keeps from an earlier registration.
    pub endpoint_id: Option<Utf16<'a>>,
    /// Its `nonStandardData` marks an Avaya endpoint (never in an RRQ read here).
    pub avaya: Option<AvayaEndpoint>,
    /// A gateway's `terminalType.gateway.protocol` (where its `supportedPrefixes` are):
    /// empty for an RRQ read here, which has none.
    pub gateway_protocols: &'a [asn::SupportedProtocols],
    /// Its `featureSet` asks for the service frame ([`service_frame`](super::service_frame)).
    pub service_frame: bool,
}

/// A BMPString as a request carries it: the UTF-16BE octets read here, or a decoded
/// message's code units. Equal when their code units are.
#[derive(Debug, Clone, Copy)]
pub enum Utf16<'a> {
    /// Two octets a code unit, most significant first.
    Octets(&'a [u8]),
    /// Code units.
    Units(&'a [u16]),
}

impl<'a> Utf16<'a> {
    /// Its code units, in order.
    pub fn units(self) -> impl Iterator<Item = u16> + Clone + 'a {
        let (octets, units) = match self {
            Utf16::Octets(octets) => (octets, &[][..]),
            Utf16::Units(units) => (&[][..], units),
        };
        octets
            .chunks_exact(2)
            .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
            .chain(units.iter().copied())
    }
}

impl PartialEq for Utf16<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.units().eq(other.units())
    }
}

impl<'a> From<&'a asn::RegistrationRequest> for FullRegistration<'a> {
    fn from(rrq: &'a asn::RegistrationRequest) -> Self {
        FullRegistration {
            seq: rrq.request_seq_num.0,
            call_signal_address: TransportAddresses(Listed::Decoded(
                rrq.call_signal_address.iter(),
            )),
            ras_address: rrq.ras_address.iter().find_map(socket_addr),
            aliases: Aliases(Listed::Decoded(
                rrq.terminal_alias.as_deref().unwrap_or_default().iter(),
            )),
            time_to_live: rrq.time_to_live.as_ref().map(|ttl| ttl.0),
            gateway: rrq.terminal_type.gateway.is_some(),
            tokens: rrq.crypto_tokens.as_deref(),
            endpoint_id: rrq
                .endpoint_identifier
                .as_ref()
                .map(|id| Utf16::Units(&id.0)),
            avaya: avaya::endpoint(rrq.non_standard_data.as_ref()),
            gateway_protocols: rrq
                .terminal_type
                .gateway
                .as_ref()
                .and_then(|gateway| gateway.protocol.as_deref())
                .unwrap_or_default(),
            service_frame: service_frame::named(rrq.feature_set.as_ref()),
        }
    }
}

/// A SEQUENCE OF: the checked octets of its items, or a decoded message's list.
#[derive(Clone)]
enum Listed<'a, T> {
    Walked(Items<'a>),
    Decoded(std::slice::Iter<'a, T>),
}

/// The items of a SEQUENCE OF that a check walked: where they start and how many follow.
#[derive(Clone)]
struct Items<'a> {
    at: Reader<'a>,
    left: usize,
}

impl<'a> Items<'a> {
    /// A SEQUENCE OF's length determinant, the reader then at its first item.
    fn read(r: &mut Reader<'a>) -> Option<Items<'a>> {
        let left = r.unconstrained_length()?;
        Some(Items {
            at: r.clone(),
            left,
        })
    }

    /// No items.
    fn none() -> Items<'a> {
        Items {
            at: Reader::new(&[]),
            left: 0,
        }
    }

    /// The next item, read again by `item` (which read it once already). Should it fail
    /// after all, the list ends there.
    fn next<T>(&mut self, item: impl FnOnce(&mut Reader<'a>) -> Option<T>) -> Option<T> {
        self.left = self.left.checked_sub(1)?;
        let read = item(&mut self.at);
        if read.is_none() {
            self.left = 0;
        }
        read
    }

    /// The items left, all of which were checked: a vector collected from them is
    /// allocated once, at its length.
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// `callSignalAddress` as socket addresses: its `ipAddress` and `ip6Address` items, in
/// order.
#[derive(Clone)]
pub struct TransportAddresses<'a>(Listed<'a, asn::TransportAddress>);

impl Iterator for TransportAddresses<'_> {
    type Item = SocketAddr;

    fn next(&mut self) -> Option<SocketAddr> {
        match &mut self.0 {
            Listed::Walked(items) => items.next(socket_address),
            Listed::Decoded(list) => list.find_map(socket_addr),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Listed::Walked(items) => items.size_hint(),
            Listed::Decoded(list) => (0, list.size_hint().1),
        }
    }
}

/// `terminalAlias` as the gatekeeper keeps aliases, in order: made from the octets as
/// [`Alias::from_asn`] makes them of the decoded values.
#[derive(Clone)]
pub struct Aliases<'a>(Listed<'a, asn::AliasAddress>);

impl Iterator for Aliases<'_> {
    type Item = Alias;

    fn next(&mut self) -> Option<Alias> {
        match &mut self.0 {
            Listed::Walked(items) => items.next(alias),
            Listed::Decoded(list) => list.next().map(Alias::from_asn),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Listed::Walked(items) => items.size_hint(),
            Listed::Decoded(list) => list.size_hint(),
        }
    }
}

/// Lists are equal when they yield the same items.
macro_rules! listed_eq_and_debug {
    ($($list:ident),*) => {$(
        impl PartialEq for $list<'_> {
            fn eq(&self, other: &Self) -> bool {
                self.clone().eq(other.clone())
            }
        }

        impl std::fmt::Debug for $list<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_list().entries(self.clone()).finish()
            }
        }
    )*};
}

listed_eq_and_debug!(TransportAddresses, Aliases);

/// The request, when the datagram is a GRQ, a keep-alive without aliases or a full RRQ of
/// a shape read here, read and checked as [`decode`] does but built into nothing. `None`:
/// anything else, for the caller to decode — a keep-alive with aliases among them (it is
/// answered from its message, as it always was) and one without an `endpointIdentifier`.
pub(crate) fn read(octets: &[u8]) -> Option<Request<'_>> {
    match walk(octets, Walk::Check)? {
        Walked::Grq(_, seq, aliases, gateway) => Some(Request::Grq(Discovery {
            seq,
            gateway,
            has_aliases: aliases.as_ref().is_some_and(|items| items.left > 0),
            aliases: Aliases(Listed::Walked(aliases.unwrap_or_else(Items::none))),
            avaya: None,
        })),
        Walked::Rrq(_, kept) if !kept.keep_alive => {
            Some(Request::FullRegistration(FullRegistration {
                seq: kept.seq,
                call_signal_address: TransportAddresses(Listed::Walked(kept.call_signal_address)),
                ras_address: kept.ras_address,
                aliases: Aliases(Listed::Walked(
                    kept.terminal_alias.unwrap_or_else(Items::none),
                )),
                time_to_live: kept.time_to_live,
                gateway: kept.gateway,
                tokens: None,
                endpoint_id: kept.endpoint_id.map(Utf16::Octets),
                avaya: None,
                gateway_protocols: &[],
                service_frame: kept.service_frame,
            }))
        }
        Walked::Rrq(
            _,
            Kept {
                seq,
                endpoint_id: Some(endpoint_id),
                time_to_live,
                terminal_alias: None,
                ..
            },
        ) => Some(Request::KeepAlive(KeepAlive {
            seq,
            endpoint_id,
            time_to_live,
        })),
        Walked::Rrq(..) => None,
    }
}

/// A walked request: its value when built, and what a check also keeps. The value is
/// boxed: unboxed, a walk's result was 2 KB, copied on its way out of every check (which
/// builds no value), and the copies were a twentieth of a keep-alive's core time.
enum Walked<'a> {
    /// The value, `requestSeqNum` and `endpointAlias` when present.
    Grq(
        Option<Box<asn::GatekeeperRequest>>,
        u16,
        Option<Items<'a>>,
        bool,
    ),
    Rrq(Option<Box<asn::RegistrationRequest>>, Kept<'a>),
}

/// What either walk keeps of an RRQ: what the gatekeeper reads of it, its lists as where
/// their items are.
struct Kept<'a> {
    seq: u16,
    call_signal_address: Items<'a>,
    /// The first of `rasAddress`, kept as the walk reads it.
    ras_address: Option<SocketAddr>,
    /// `terminalAlias`, when present.
    terminal_alias: Option<Items<'a>>,
    gateway: bool,
    keep_alive: bool,
    endpoint_id: Option<&'a [u8]>,
    time_to_live: Option<u32>,
    /// `featureSet` asks for the service frame, in the one shape a phone of rasgk's writes.
    service_frame: bool,
}

fn walk(octets: &[u8], walk: Walk) -> Option<Walked<'_>> {
    let mut r = Reader::new(octets);
    if r.bit()? {
        return None;
    }
    let walked = match r.constrained(RAS_MESSAGE_ROOT)? {
        0 => gatekeeper_request(&mut r, walk)?,
        3 => registration_request(&mut r, walk)?,
        _ => return None,
    };
    r.at_end()?;
    Some(walked)
}

fn gatekeeper_request<'a>(r: &mut Reader<'a>, walk: Walk) -> Option<Walked<'a>> {
    let extended = r.bit()?;
    let [non_standard, has_gatekeeper, call_services, has_aliases] = flags(r)?;
    if non_standard || call_services {
        return None;
    }
    let seq = sequence_number(r)?;
    let protocol_identifier = object_identifier(r, walk)?;
    let ras_address = transport_address(r, walk)?;
    let (endpoint_type, gateway) = endpoint_type(r, walk)?;
    let gatekeeper_identifier = optional(has_gatekeeper, || bmp(r, 128, walk))?.flatten();
    let alias_items = optional(has_aliases, || Items::read(r))?;
    let endpoint_alias = match &alias_items {
        Some(items) => list(items.left, walk, || alias_address(r, walk))?,
        None => None,
    };
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
    let grq = if walk == Walk::Build {
        Some(Box::new(asn::GatekeeperRequest {
            request_seq_num: asn::RequestSeqNum(seq),
            protocol_identifier: asn::ProtocolIdentifier(protocol_identifier?),
            non_standard_data: None,
            ras_address: ras_address?,
            endpoint_type: endpoint_type?,
            gatekeeper_identifier: gatekeeper_identifier.map(asn::GatekeeperIdentifier),
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
        }))
    } else {
        None
    };
    Some(Walked::Grq(grq, seq, alias_items, gateway))
}

fn registration_request<'a>(r: &mut Reader<'a>, walk: Walk) -> Option<Walked<'a>> {
    let extended = r.bit()?;
    let [non_standard, has_aliases, has_gatekeeper] = flags(r)?;
    if non_standard {
        return None;
    }
    let seq = sequence_number(r)?;
    let protocol_identifier = object_identifier(r, walk)?;
    let discovery_complete = r.bit()?;
    let call_signal_items = Items::read(r)?;
    let call_signal_address = list(call_signal_items.left, walk, || transport_address(r, walk))?;
    let ras_count = r.unconstrained_length()?;
    let mut first_ras_address = None;
    let ras_address = list(ras_count, walk, || {
        let address = socket_address(r)?;
        first_ras_address.get_or_insert(address);
        Some(walk.make(|| super::transport_address(address)))
    })?;
    let (terminal_type, gateway) = endpoint_type(r, walk)?;
    let alias_items = optional(has_aliases, || Items::read(r))?;
    let terminal_alias = match &alias_items {
        Some(items) => list(items.left, walk, || alias_address(r, walk))?,
        None => None,
    };
    let gatekeeper_identifier = optional(has_gatekeeper, || bmp(r, 128, walk))?.flatten();
    let endpoint_vendor = vendor_identifier(r, walk)?;
    let mut kept = Kept {
        seq,
        call_signal_address: call_signal_items,
        ras_address: first_ras_address,
        terminal_alias: alias_items,
        gateway,
        keep_alive: false,
        endpoint_id: None,
        time_to_live: None,
        service_frame: false,
    };
    let mut keep_alive = None;
    let mut will_supply_uuies = None;
    let mut maintain_connection = None;
    let mut additive_registration = None;
    let mut supports_alt_gk = None;
    let mut multiple_calls = None;
    let mut restart = None;
    let mut supports_acfsequences = None;
    let mut supports_assigned_gk = None;
    if extended {
        for index in additions(r, RRQ_ADDITIONS)? {
            let mut content = r.open_type()?;
            let c = &mut content;
            match index {
                1 => {
                    let ttl = c.constrained(0xFFFF_FFFF)? + 1;
                    kept.time_to_live = Some(u32::try_from(ttl).ok()?);
                }
                5 => keep_alive = Some(c.bit()?),
                6 => kept.endpoint_id = Some(bmp_octets(c, 128)?),
                7 => will_supply_uuies = Some(c.bit()?),
                8 => maintain_connection = Some(c.bit()?),
                10 => additive_registration = Some(null(c)?),
                12 => supports_alt_gk = Some(null(c)?),
                14 => multiple_calls = Some(c.bit()?),
                // featureSet: only the one that asks for the service frame, whole.
                19 => {
                    let features = c.octets(service_frame::REQUEST_OCTETS.len())?;
                    if features != &service_frame::REQUEST_OCTETS[..] {
                        return None;
                    }
                    kept.service_frame = true;
                }
                21 => restart = Some(null(c)?),
                22 => supports_acfsequences = Some(null(c)?),
                23 => supports_assigned_gk = Some(c.bit()?),
                _ => return None,
            }
            content.at_end()?;
        }
    }
    kept.keep_alive = keep_alive == Some(true);
    let rrq = if walk == Walk::Build {
        Some(Box::new(asn::RegistrationRequest {
            request_seq_num: asn::RequestSeqNum(seq),
            protocol_identifier: asn::ProtocolIdentifier(protocol_identifier?),
            non_standard_data: None,
            discovery_complete,
            call_signal_address: call_signal_address?,
            ras_address: ras_address?,
            terminal_type: terminal_type?,
            terminal_alias,
            gatekeeper_identifier: gatekeeper_identifier.map(asn::GatekeeperIdentifier),
            endpoint_vendor: endpoint_vendor?,
            alternate_endpoints: None,
            time_to_live: kept.time_to_live.map(asn::TimeToLive),
            tokens: None,
            crypto_tokens: None,
            integrity_check_value: None,
            keep_alive,
            endpoint_identifier: kept
                .endpoint_id
                .map(|octets| asn::EndpointIdentifier(bmp_string(octets))),
            will_supply_uuies,
            maintain_connection,
            alternate_transport_addresses: None,
            additive_registration,
            terminal_alias_pattern: None,
            supports_alt_gk,
            usage_reporting_capability: None,
            multiple_calls,
            supported_h248_packages: None,
            call_credit_capability: None,
            capacity_reporting_capability: None,
            capacity: None,
            feature_set: kept.service_frame.then(service_frame::request),
            generic_data: None,
            restart,
            supports_acfsequences,
            supports_assigned_gk,
            assigned_gatekeeper: None,
            transport_qos: None,
            language: None,
        }))
    } else {
        None
    };
    Some(Walked::Rrq(rrq, kept))
}

/// `N` presence bits of a SEQUENCE's OPTIONAL components.
pub(super) fn flags<const N: usize>(r: &mut Reader<'_>) -> Option<[bool; N]> {
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
pub(super) fn additions(r: &mut Reader<'_>, known: usize) -> Option<impl Iterator<Item = usize>> {
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

pub(super) fn sequence_number(r: &mut Reader<'_>) -> Option<u16> {
    let offset = r.constrained(65_535)?;
    u16::try_from(offset + 1).ok()
}

/// An OBJECT IDENTIFIER in its minimal BER form.
pub(super) fn object_identifier(
    r: &mut Reader<'_>,
    walk: Walk,
) -> Option<Option<ObjectIdentifier>> {
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
    // The arcs as read are a valid OBJECT IDENTIFIER (a first arc of 0 or 1 has a second
    // below 40), so a check has nothing more to look at.
    if walk == Walk::Check {
        return Some(None);
    }
    let arcs = &arcs[..len];
    let oid = match H225_VERSIONS.iter().find(|&&version| version == arcs) {
        Some(&version) => ObjectIdentifier::new(version),
        None => ObjectIdentifier::new(arcs.to_vec()),
    };
    oid.map(Some)
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

/// A BMPString of `1..=max` characters of the Basic Multilingual Plane, as its UTF-16BE
/// octets.
pub(super) fn bmp_octets<'a>(r: &mut Reader<'a>, max: usize) -> Option<&'a [u8]> {
    let length = r.constrained_length(1, max)?;
    let octets = r.octets(length * 2)?;
    octets
        .chunks_exact(2)
        .all(|unit| u16::from_be_bytes([unit[0], unit[1]]) < 0xFFFE)
        .then_some(octets)
}

/// The BMPString of octets [`bmp_octets`] has checked.
fn bmp_string(octets: &[u8]) -> BmpString {
    // Every unit is checked against the alphabet (U+0000 to U+FFFD) that rasn's `TryFrom`
    // would search a table of 65,534 for, one binary search a character: it is handed over
    // through DerefMut instead.
    let mut string = BmpString::default();
    *string = octets
        .chunks_exact(2)
        .map(|unit| u16::from_be_bytes([unit[0], unit[1]]))
        .collect();
    string
}

fn bmp(r: &mut Reader<'_>, max: usize, walk: Walk) -> Option<Option<BmpString>> {
    let octets = bmp_octets(r, max)?;
    Some(walk.make(|| bmp_string(octets)))
}

/// `count` items read one after the other; when building, in a vector allocated once (for
/// up to 8; a count the datagram cannot hold fails at its first missing item).
fn list<T>(
    count: usize,
    walk: Walk,
    mut item: impl FnMut() -> Option<Option<T>>,
) -> Option<Option<Vec<T>>> {
    let mut items = walk.make(|| Vec::with_capacity(count.min(8)));
    for _ in 0..count {
        let read = item()?;
        if let (Some(items), Some(read)) = (&mut items, read) {
            items.push(read);
        }
    }
    Some(items)
}

/// `TransportAddress`: `ipAddress` and `ip6Address`.
fn transport_address(r: &mut Reader<'_>, walk: Walk) -> Option<Option<asn::TransportAddress>> {
    let address = socket_address(r)?;
    Some(walk.make(|| super::transport_address(address)))
}

/// A `TransportAddress` of the `ipAddress` or `ip6Address` alternative, as its socket
/// address.
pub(super) fn socket_address(r: &mut Reader<'_>) -> Option<SocketAddr> {
    if r.bit()? {
        return None;
    }
    let ip = match r.constrained(7)? {
        0 => IpAddr::from(<[u8; 4]>::try_from(r.octets(4)?).ok()?),
        3 => {
            if r.bit()? {
                return None;
            }
            IpAddr::from(<[u8; 16]>::try_from(r.octets(16)?).ok()?)
        }
        _ => return None,
    };
    let port = r.constrained(65_536)? as u16;
    Some(SocketAddr::new(ip, port))
}

/// Which root alternative of `AliasAddress` follows: `Some(true)` for `dialledDigits`,
/// `Some(false)` for `h323-ID` (an extension alternative is not read here).
fn dialled_digits_follow(r: &mut Reader<'_>) -> Option<bool> {
    if r.bit()? {
        return None;
    }
    Some(r.constrained(2)? == 0)
}

/// The length of a `dialledDigits`, the reader then at its first character.
fn dialled_digits_length(r: &mut Reader<'_>) -> Option<usize> {
    let length = r.constrained_length(1, 128)?;
    r.align()?;
    Some(length)
}

/// One character of a `dialledDigits`.
fn dialled_digit(r: &mut Reader<'_>) -> Option<u8> {
    DIALLED_DIGITS.get(r.bits(4)? as usize).copied()
}

/// `AliasAddress`: its root alternatives, `dialledDigits` and `h323-ID`.
pub(super) fn alias_address(r: &mut Reader<'_>, walk: Walk) -> Option<Option<asn::AliasAddress>> {
    if dialled_digits_follow(r)? {
        let length = dialled_digits_length(r)?;
        // Every character of DIALLED_DIGITS is IA5, so the string is filled directly
        // (through DerefMut), not checked again by `from_iso646_bytes`.
        let mut digits = walk.make(|| {
            let mut digits = Ia5String::default();
            digits.reserve_exact(length);
            digits
        });
        for _ in 0..length {
            let digit = dialled_digit(r)?;
            if let Some(digits) = &mut digits {
                digits.push(digit);
            }
        }
        Some(digits.map(asn::AliasAddress::dialledDigits))
    } else {
        Some(bmp(r, 256, walk)?.map(asn::AliasAddress::h323_ID))
    }
}

/// An `AliasAddress` of [`alias_address`]'s shapes as the gatekeeper keeps it: the
/// [`Alias`] that [`Alias::from_asn`] makes of the value `alias_address` builds.
fn alias(r: &mut Reader<'_>) -> Option<Alias> {
    if dialled_digits_follow(r)? {
        let length = dialled_digits_length(r)?;
        let mut digits = String::with_capacity(length);
        for _ in 0..length {
            digits.push(char::from(dialled_digit(r)?));
        }
        Some(Alias::DialledDigits(digits))
    } else {
        Some(Alias::H323Id(utf16be_text(bmp_octets(r, 256)?)))
    }
}

/// `EndpointType` with no non-standard data, no extension additions, and empty gateway and
/// MCU information when present; and whether it has `gateway`, which a check keeps too.
fn endpoint_type(r: &mut Reader<'_>, walk: Walk) -> Option<(Option<asn::EndpointType>, bool)> {
    let extended = r.bit()?;
    let [non_standard, vendor, gatekeeper, gateway, mcu, terminal] = flags(r)?;
    if extended || non_standard {
        return None;
    }
    let vendor = optional(vendor, || vendor_identifier(r, walk))?.flatten();
    let gatekeeper = optional(gatekeeper, || empty_info(r))?;
    let gateway = optional(gateway, || {
        let [extended, protocol, non_standard] = flags(r)?;
        (!extended && !protocol && !non_standard).then_some(())
    })?;
    let mcu = optional(mcu, || empty_info(r))?;
    let terminal = optional(terminal, || empty_info(r))?;
    let mc = r.bit()?;
    let undefined_node = r.bit()?;
    let has_gateway = gateway.is_some();
    let built = walk.make(|| {
        asn::EndpointType::new(
            None,
            vendor,
            gatekeeper.map(|()| asn::GatekeeperInfo::new(None)),
            gateway.map(|()| asn::GatewayInfo::new(None, None)),
            mcu.map(|()| asn::McuInfo::new(None, None)),
            terminal.map(|()| asn::TerminalInfo::new(None)),
            mc,
            undefined_node,
            None,
            None,
        )
    });
    Some((built, has_gateway))
}

/// `SEQUENCE { nonStandardData OPTIONAL, ... }` with neither.
fn empty_info(r: &mut Reader<'_>) -> Option<()> {
    let [extended, non_standard] = flags(r)?;
    (!extended && !non_standard).then_some(())
}

/// `VendorIdentifier` without its extension addition.
fn vendor_identifier(r: &mut Reader<'_>, walk: Walk) -> Option<Option<asn::VendorIdentifier>> {
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
            r.octets(length)
        })
    };
    let product_id = octets(product)?;
    let version_id = octets(version)?;
    Some(walk.make(|| {
        asn::VendorIdentifier::new(
            asn::H221NonStandard::new(country, extension, manufacturer),
            product_id.map(OctetString::from),
            version_id.map(OctetString::from),
            None,
        )
    }))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::codec::decode_generated;
    use super::super::hot_strategies::{self as strategies, address, alias, generated as octets};
    use super::super::reply::{EndpointId, GatekeeperId};
    use super::super::request;
    use super::*;

    fn identifier() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(strategies::identifier())
    }

    /// A GRQ, full RRQ or lightweight RRQ as `request::` builds them, a full RRQ's address
    /// lists lengthened by up to two more, and asking for the service frame or not.
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
            proptest::collection::vec(address(), 0..3),
            any::<bool>(),
        )
            .prop_filter_map(
                "identifiers the constructors accept",
                |(
                    which,
                    seq,
                    ras,
                    call,
                    aliases,
                    gatekeeper,
                    endpoint,
                    ttl,
                    gateway,
                    more,
                    service_frame,
                )| {
                    let gatekeeper = match gatekeeper {
                        Some(id) => Some(GatekeeperId::new(&id).ok()?),
                        None => None,
                    };
                    Some(match which {
                        0 => request::gatekeeper_request(seq, ras, &aliases, gatekeeper.as_ref()),
                        1 => {
                            let mut message = request::registration_request(&request::Rrq {
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
                            });
                            if let RasMessage::registrationRequest(rrq) = &mut message {
                                let more = more.into_iter().map(super::super::transport_address);
                                rrq.call_signal_address.extend(more.clone());
                                rrq.ras_address.extend(more.rev());
                                rrq.feature_set =
                                    service_frame.then(super::super::service_frame::request);
                            }
                            message
                        }
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

    /// `read` of a datagram says what `decode` of it builds — a GRQ's sequence number, a
    /// keep-alive's four fields, every field the gatekeeper takes of a full RRQ's message —
    /// and leaves nothing else to it: no GRQ, no full RRQ, and no keep-alive but one with
    /// aliases or without an `endpointIdentifier`.
    fn read_agrees_with_decode(octets: &[u8]) -> Result<(), TestCaseError> {
        let (read, decoded) = (read(octets), decode(octets));
        match (read, decoded) {
            (Some(Request::Grq(discovery)), Some(RasMessage::gatekeeperRequest(grq))) => {
                let from_message = Discovery::from(&grq);
                let aliases: Vec<Alias> = discovery.aliases.clone().collect();
                prop_assert_eq!(aliases, from_message.aliases.clone().collect::<Vec<_>>());
                prop_assert_eq!(discovery, from_message);
            }
            (Some(Request::KeepAlive(keep_alive)), Some(RasMessage::registrationRequest(rrq))) => {
                prop_assert_eq!(rrq.keep_alive, Some(true));
                prop_assert!(rrq.terminal_alias.is_none());
                prop_assert_eq!(keep_alive.seq, rrq.request_seq_num.0);
                let id = rrq.endpoint_identifier.map(|id| id.0.to_bytes());
                prop_assert_eq!(Some(keep_alive.endpoint_id.to_vec()), id);
                prop_assert_eq!(keep_alive.time_to_live, rrq.time_to_live.map(|t| t.0));
            }
            (
                Some(Request::FullRegistration(registration)),
                Some(RasMessage::registrationRequest(rrq)),
            ) => {
                prop_assert_ne!(rrq.keep_alive, Some(true));
                // Every field, the lists item by item, and the lists again as collected
                // (which sizes the vector from what is left to read).
                let collected = |registration: &FullRegistration<'_>| {
                    let addresses: Vec<SocketAddr> =
                        registration.call_signal_address.clone().collect();
                    let aliases: Vec<Alias> = registration.aliases.clone().collect();
                    (addresses, aliases)
                };
                let from_message = FullRegistration::from(&rrq);
                prop_assert_eq!(collected(&registration), collected(&from_message));
                prop_assert_eq!(registration, from_message);
            }
            (None, Some(RasMessage::gatekeeperRequest(_))) => {
                return Err(TestCaseError::fail("a GRQ left to decode"));
            }
            (None, Some(RasMessage::registrationRequest(rrq))) => {
                // Only a keep-alive is left to decode, and only one with aliases (answered
                // from its message as it always was) or without an identifier (see `read`).
                prop_assert_eq!(rrq.keep_alive, Some(true), "a full RRQ left to decode");
                prop_assert!(
                    rrq.terminal_alias.is_some() || rrq.endpoint_identifier.is_none(),
                    "a keep-alive left to decode"
                );
            }
            (None, _) => {}
            (read, decoded) => {
                return Err(TestCaseError::fail(format!(
                    "read {read:?} but decoded {decoded:?}"
                )));
            }
        }
        Ok(())
    }

    /// A full RRQ with two of each address, a repeated alias and an `h323-ID` that is no
    /// UTF-16 (a lone surrogate): read into what registration uses, as its message converts.
    #[test]
    fn a_full_rrq_is_read_into_the_fields_registration_uses() {
        let digits = Alias::dialled_digits("5000#*,").unwrap();
        let name = Alias::h323_id("Zoë ☎").unwrap();
        let (call, ras): (SocketAddr, SocketAddr) = (
            "127.1.7.9:1720".parse().unwrap(),
            "[::1]:1719".parse().unwrap(),
        );
        let mut message = request::registration_request(&request::Rrq {
            request_seq_num: 7,
            call_signal_address: call,
            ras_address: ras,
            terminal_type: request::gateway(),
            aliases: &[digits.clone(), name.clone(), digits.clone()],
            gatekeeper_id: None,
            time_to_live_s: Some(300),
        });
        let RasMessage::registrationRequest(rrq) = &mut message else {
            unreachable!("an RRQ");
        };
        rrq.call_signal_address
            .push(super::super::transport_address(ras));
        rrq.ras_address.push(super::super::transport_address(call));
        let lone = BmpString::try_from(&[0xD8, 0x00, 0x00, 0x41][..]).unwrap();
        let aliases = rrq.terminal_alias.get_or_insert_default();
        aliases.push(asn::AliasAddress::h323_ID(lone));
        let octets = octets(&message);
        let Some(Request::FullRegistration(read)) = read(&octets) else {
            panic!("not read: {:?}", read(&octets));
        };
        assert_eq!(read.seq, 7);
        assert_eq!(
            read.call_signal_address.clone().collect::<Vec<_>>(),
            [call, ras]
        );
        assert_eq!(read.ras_address, Some(ras));
        let odd = Alias::H323Id("\u{FFFD}A".into());
        let aliases = [digits.clone(), name, digits, odd];
        assert_eq!(read.aliases.clone().collect::<Vec<_>>(), aliases);
        assert_eq!(
            (read.time_to_live, read.gateway, read.tokens),
            (Some(300), true, None)
        );
        let RasMessage::registrationRequest(rrq) = decode(&octets).unwrap() else {
            unreachable!("an RRQ");
        };
        assert_eq!(read, FullRegistration::from(&rrq));
    }

    /// A full RRQ with no `callSignalAddress`, `rasAddress` or `terminalAlias` is read too
    /// (the gatekeeper answers `invalidCallSignalAddress`).
    #[test]
    fn a_full_rrq_without_lists_is_read() {
        let address: SocketAddr = "127.1.7.9:1720".parse().unwrap();
        let mut message = request::registration_request(&request::Rrq {
            request_seq_num: 8,
            call_signal_address: address,
            ras_address: address,
            terminal_type: request::terminal(),
            aliases: &[],
            gatekeeper_id: None,
            time_to_live_s: None,
        });
        let RasMessage::registrationRequest(rrq) = &mut message else {
            unreachable!("an RRQ");
        };
        rrq.call_signal_address.clear();
        rrq.ras_address.clear();
        rrq.terminal_alias = None;
        let octets = octets(&message);
        let Some(Request::FullRegistration(read)) = read(&octets) else {
            panic!("not read: {:?}", read(&octets));
        };
        assert_eq!(read.call_signal_address.count(), 0);
        assert_eq!(read.ras_address, None);
        assert_eq!(read.aliases.count(), 0);
        assert_eq!((read.time_to_live, read.gateway), (None, false));
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
            read_agrees_with_decode(&octets)?;
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
                read_agrees_with_decode(&variant)?;
                if let Some(hot) = decode(&variant) {
                    prop_assert_eq!(Ok(hot), decode_generated(&variant), "octets {:02x?}", variant);
                }
            }
        }
    }
}
