//! The requests a phone sends: GRQ, RRQ (full and lightweight), URQ, ARQ, DRQ, BRQ and IRR.
//! Used by the phone simulator, the examples and the tests; the gatekeeper only reads them.

use std::net::SocketAddr;

use super::address::Alias;
use super::asn::{self, RasMessage};
use super::reply::{aliases, seq, EndpointId, GatekeeperId};
use super::{protocol_identifier, transport_address};

pub use super::reply::{unregistration_request, Urq, UrqReason};

/// `EndpointType` of an ordinary IP phone: `terminal` present, nothing else.
pub fn terminal() -> asn::EndpointType {
    asn::EndpointType {
        non_standard_data: None,
        vendor: None,
        gatekeeper: None,
        gateway: None,
        mcu: None,
        terminal: Some(asn::TerminalInfo {
            non_standard_data: None,
        }),
        mc: false,
        undefined_node: false,
        set: None,
        supported_tunnelled_protocols: None,
    }
}

/// `EndpointType` of an H.323 gateway (a trunk, in the call-placement rules).
pub fn gateway() -> asn::EndpointType {
    asn::EndpointType {
        non_standard_data: None,
        vendor: None,
        gatekeeper: None,
        gateway: Some(asn::GatewayInfo {
            protocol: None,
            non_standard_data: None,
        }),
        mcu: None,
        terminal: None,
        mc: false,
        undefined_node: false,
        set: None,
        supported_tunnelled_protocols: None,
    }
}

/// `EndpointType` of an H.323 gateway announcing the number ranges it takes calls for: one
/// `voice` protocol whose `supportedPrefixes` are `prefixes` (what a voice gateway, or GnuGk
/// registering to a parent gatekeeper as a gateway, sends); [`gateway`] when there are none.
pub fn gateway_with_prefixes(prefixes: &[Alias]) -> asn::EndpointType {
    let mut endpoint_type = gateway();
    let prefixes: Vec<asn::SupportedPrefix> = prefixes
        .iter()
        .filter_map(|prefix| prefix.to_asn().ok())
        .map(|prefix| asn::SupportedPrefix::new(None, prefix))
        .collect();
    if !prefixes.is_empty() {
        endpoint_type.gateway = Some(asn::GatewayInfo::new(
            Some(vec![asn::SupportedProtocols::voice(asn::VoiceCaps::new(
                None,
                None,
                Some(prefixes),
            ))]),
            None,
        ));
    }
    endpoint_type
}

/// The `supportedPrefixes` of every protocol of a gateway's `GatewayInfo.protocol`, in
/// order, each once.
pub fn supported_prefixes(protocols: &[asn::SupportedProtocols]) -> Vec<Alias> {
    let mut prefixes: Vec<Alias> = Vec::new();
    for protocol in protocols {
        let listed = match protocol {
            asn::SupportedProtocols::voice(caps) => caps.supported_prefixes.as_deref(),
            asn::SupportedProtocols::h323(caps) => caps.supported_prefixes.as_deref(),
            asn::SupportedProtocols::h320(caps) => caps.supported_prefixes.as_deref(),
            asn::SupportedProtocols::h310(caps) => caps.supported_prefixes.as_deref(),
            asn::SupportedProtocols::h321(caps) => caps.supported_prefixes.as_deref(),
            asn::SupportedProtocols::h322(caps) => caps.supported_prefixes.as_deref(),
            asn::SupportedProtocols::h324(caps) => caps.supported_prefixes.as_deref(),
            asn::SupportedProtocols::t120_only(caps) => caps.supported_prefixes.as_deref(),
            asn::SupportedProtocols::sip(caps) => caps.supported_prefixes.as_deref(),
            _ => None,
        };
        for prefix in listed.unwrap_or_default() {
            let alias = Alias::from_asn(&prefix.prefix);
            if !prefixes.contains(&alias) {
                prefixes.push(alias);
            }
        }
    }
    prefixes
}

/// The `endpointVendor` rasgk's phone simulator announces: T.35 country 181 (United States),
/// manufacturer code 0x7267 ("rg", unassigned), product "rasgk".
pub fn vendor() -> asn::VendorIdentifier {
    asn::VendorIdentifier {
        vendor: asn::H221NonStandard {
            t35_country_code: 181,
            t35_extension: 0,
            manufacturer_code: 0x7267,
        },
        product_id: Some(rasn::types::OctetString::from(&b"rasgk"[..])),
        version_id: Some(rasn::types::OctetString::from(
            env!("CARGO_PKG_VERSION").as_bytes(),
        )),
        enterprise_number: None,
    }
}

/// GRQ: a phone looks for its gatekeeper.
#[doc(alias = "GRQ")]
pub fn gatekeeper_request(
    request_seq_num: u16,
    ras_address: SocketAddr,
    endpoint_alias: &[Alias],
    gatekeeper_id: Option<&GatekeeperId>,
) -> RasMessage {
    RasMessage::gatekeeperRequest(asn::GatekeeperRequest {
        request_seq_num: seq(request_seq_num),
        protocol_identifier: protocol_identifier(),
        non_standard_data: None,
        ras_address: transport_address(ras_address),
        endpoint_type: terminal(),
        gatekeeper_identifier: gatekeeper_id.map(GatekeeperId::asn),
        call_services: None,
        endpoint_alias: aliases(endpoint_alias),
        alternate_endpoints: None,
        tokens: None,
        crypto_tokens: None,
        authentication_capability: None,
        algorithm_oids: None,
        integrity: None,
        integrity_check_value: None,
        supports_alt_gk: Some(()),
        feature_set: None,
        generic_data: None,
        supports_assigned_gk: Some(false),
        assigned_gatekeeper: None,
    })
}

/// What a full RRQ says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rrq<'a> {
    /// Its `requestSeqNum`.
    pub request_seq_num: u16,
    /// Where the phone takes calls.
    pub call_signal_address: SocketAddr,
    /// Where the phone takes RAS.
    pub ras_address: SocketAddr,
    /// `terminalType`: [`terminal`] or [`gateway`].
    pub terminal_type: asn::EndpointType,
    /// `terminalAlias`.
    pub aliases: &'a [Alias],
    /// The gatekeeper named in the GCF.
    pub gatekeeper_id: Option<&'a GatekeeperId>,
    /// Requested `timeToLive` in seconds.
    pub time_to_live_s: Option<u32>,
}

/// RRQ (full): a phone registers.
#[doc(alias = "RRQ")]
pub fn registration_request(rrq: &Rrq<'_>) -> RasMessage {
    RasMessage::registrationRequest(asn::RegistrationRequest {
        request_seq_num: seq(rrq.request_seq_num),
        protocol_identifier: protocol_identifier(),
        non_standard_data: None,
        discovery_complete: true,
        call_signal_address: vec![transport_address(rrq.call_signal_address)],
        ras_address: vec![transport_address(rrq.ras_address)],
        terminal_type: rrq.terminal_type.clone(),
        terminal_alias: aliases(rrq.aliases),
        gatekeeper_identifier: rrq.gatekeeper_id.map(GatekeeperId::asn),
        endpoint_vendor: vendor(),
        alternate_endpoints: None,
        time_to_live: rrq.time_to_live_s.map(|s| asn::TimeToLive(s.max(1))),
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        keep_alive: Some(false),
        endpoint_identifier: None,
        will_supply_uuies: Some(false),
        maintain_connection: Some(false),
        alternate_transport_addresses: None,
        additive_registration: None,
        terminal_alias_pattern: None,
        supports_alt_gk: Some(()),
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
        supports_assigned_gk: Some(false),
        assigned_gatekeeper: None,
        transport_qos: None,
        language: None,
    })
}

/// RRQ (lightweight, `keepAlive = TRUE`): a registered phone refreshes its registration.
#[doc(alias = "RRQ")]
pub fn keep_alive(
    request_seq_num: u16,
    call_signal_address: SocketAddr,
    ras_address: SocketAddr,
    endpoint_id: &EndpointId,
    gatekeeper_id: Option<&GatekeeperId>,
    time_to_live_s: Option<u32>,
) -> RasMessage {
    RasMessage::registrationRequest(asn::RegistrationRequest {
        request_seq_num: seq(request_seq_num),
        protocol_identifier: protocol_identifier(),
        non_standard_data: None,
        discovery_complete: true,
        call_signal_address: vec![transport_address(call_signal_address)],
        ras_address: vec![transport_address(ras_address)],
        terminal_type: terminal(),
        terminal_alias: None,
        gatekeeper_identifier: gatekeeper_id.map(GatekeeperId::asn),
        endpoint_vendor: vendor(),
        alternate_endpoints: None,
        time_to_live: time_to_live_s.map(|s| asn::TimeToLive(s.max(1))),
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        keep_alive: Some(true),
        endpoint_identifier: Some(endpoint_id.asn()),
        will_supply_uuies: Some(false),
        maintain_connection: Some(false),
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
        supports_assigned_gk: Some(false),
        assigned_gatekeeper: None,
        transport_qos: None,
        language: None,
    })
}

/// Puts `tokens` into a request's `cryptoTokens` (replacing any there): GRQ, RRQ, URQ, ARQ,
/// DRQ, BRQ and IRR carry them; other messages are left as they are.
pub fn set_crypto_tokens(message: &mut RasMessage, tokens: Vec<asn::CryptoH323Token>) {
    let tokens = Some(tokens);
    match message {
        RasMessage::gatekeeperRequest(m) => m.crypto_tokens = tokens,
        RasMessage::registrationRequest(m) => m.crypto_tokens = tokens,
        RasMessage::unregistrationRequest(m) => m.crypto_tokens = tokens,
        RasMessage::admissionRequest(m) => m.crypto_tokens = tokens,
        RasMessage::disengageRequest(m) => m.crypto_tokens = tokens,
        RasMessage::bandwidthRequest(m) => m.crypto_tokens = tokens,
        RasMessage::infoRequestResponse(m) => m.crypto_tokens = tokens,
        _ => {}
    }
}

/// The identity of one call, shared by its ARQ, BRQ and DRQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Call {
    /// `callReferenceValue` (0..=65535).
    pub call_reference_value: u16,
    /// `conferenceID`.
    pub conference_id: [u8; 16],
    /// `callIdentifier`.
    pub call_id: [u8; 16],
}

/// What an ARQ says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arq<'a> {
    /// Its `requestSeqNum`.
    pub request_seq_num: u16,
    /// The calling endpoint.
    pub endpoint_id: &'a EndpointId,
    /// The dialled number or name (`destinationInfo`).
    pub destination: &'a [Alias],
    /// The caller's aliases (`srcInfo`).
    pub source: &'a [Alias],
    /// The call.
    pub call: Call,
    /// Requested bandwidth, in units of 100 bit/s.
    pub band_width: u32,
    /// TRUE on the called side.
    pub answer_call: bool,
}

/// ARQ: a phone asks to place (or answer) a call.
#[doc(alias = "ARQ")]
pub fn admission_request(arq: &Arq<'_>) -> RasMessage {
    RasMessage::admissionRequest(asn::AdmissionRequest {
        request_seq_num: seq(arq.request_seq_num),
        call_type: asn::CallType::pointToPoint(()),
        call_model: None,
        endpoint_identifier: arq.endpoint_id.asn(),
        destination_info: aliases(arq.destination),
        dest_call_signal_address: None,
        dest_extra_call_info: None,
        src_info: aliases(arq.source).unwrap_or_default(),
        src_call_signal_address: None,
        band_width: asn::BandWidth(arq.band_width),
        call_reference_value: asn::CallReferenceValue(arq.call.call_reference_value),
        non_standard_data: None,
        call_services: None,
        conference_id: asn::ConferenceIdentifier(asn::GloballyUniqueID(
            arq.call.conference_id.into(),
        )),
        active_mc: false,
        answer_call: arq.answer_call,
        can_map_alias: Some(false),
        call_identifier: Some(asn::CallIdentifier {
            guid: asn::GloballyUniqueID(arq.call.call_id.into()),
        }),
        src_alternatives: None,
        dest_alternatives: None,
        gatekeeper_identifier: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        transport_qos: None,
        will_supply_uuies: Some(false),
        call_linkage: None,
        gateway_data_rate: None,
        capacity: None,
        circuit_info: None,
        desired_protocols: None,
        desired_tunnelled_protocol: None,
        feature_set: None,
        generic_data: None,
        can_map_src_alias: Some(false),
    })
}

/// DRQ: a phone reports that a call has ended (`normalDrop`).
#[doc(alias = "DRQ")]
pub fn disengage_request(request_seq_num: u16, endpoint_id: &EndpointId, call: Call) -> RasMessage {
    RasMessage::disengageRequest(asn::DisengageRequest {
        request_seq_num: seq(request_seq_num),
        endpoint_identifier: endpoint_id.asn(),
        conference_id: asn::ConferenceIdentifier(asn::GloballyUniqueID(call.conference_id.into())),
        call_reference_value: asn::CallReferenceValue(call.call_reference_value),
        disengage_reason: asn::DisengageReason::normalDrop(()),
        non_standard_data: None,
        call_identifier: Some(asn::CallIdentifier {
            guid: asn::GloballyUniqueID(call.call_id.into()),
        }),
        gatekeeper_identifier: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        answered_call: Some(false),
        call_linkage: None,
        capacity: None,
        circuit_info: None,
        usage_information: None,
        termination_cause: None,
        service_control: None,
        generic_data: None,
    })
}

/// BRQ: a phone asks for a different bandwidth (units of 100 bit/s) for a call.
#[doc(alias = "BRQ")]
pub fn bandwidth_request(
    request_seq_num: u16,
    endpoint_id: &EndpointId,
    call: Call,
    band_width: u32,
) -> RasMessage {
    RasMessage::bandwidthRequest(asn::BandwidthRequest {
        request_seq_num: seq(request_seq_num),
        endpoint_identifier: endpoint_id.asn(),
        conference_id: asn::ConferenceIdentifier(asn::GloballyUniqueID(call.conference_id.into())),
        call_reference_value: asn::CallReferenceValue(call.call_reference_value),
        call_type: Some(asn::CallType::pointToPoint(())),
        band_width: asn::BandWidth(band_width),
        non_standard_data: None,
        call_identifier: Some(asn::CallIdentifier {
            guid: asn::GloballyUniqueID(call.call_id.into()),
        }),
        gatekeeper_identifier: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        answered_call: Some(false),
        call_linkage: None,
        capacity: None,
        usage_information: None,
        bandwidth_details: None,
        generic_data: None,
        transport_qos: None,
    })
}

/// IRR: a phone reports its state (answering an IRQ, or unsolicited).
#[doc(alias = "IRR")]
pub fn info_request_response(
    request_seq_num: u16,
    endpoint_id: &EndpointId,
    ras_address: SocketAddr,
    call_signal_address: SocketAddr,
    endpoint_alias: &[Alias],
    unsolicited: bool,
) -> RasMessage {
    RasMessage::infoRequestResponse(asn::InfoRequestResponse {
        non_standard_data: None,
        request_seq_num: seq(request_seq_num),
        endpoint_type: terminal(),
        endpoint_identifier: endpoint_id.asn(),
        ras_address: transport_address(ras_address),
        call_signal_address: vec![transport_address(call_signal_address)],
        endpoint_alias: aliases(endpoint_alias),
        per_call_info: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        need_response: Some(false),
        capacity: None,
        irr_status: None,
        unsolicited: Some(unsolicited),
        generic_data: None,
    })
}
