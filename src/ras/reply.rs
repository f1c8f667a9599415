//! The messages a gatekeeper sends: GCF, GRJ, RCF (with its AGL), RRJ, URQ, UCF, URJ, ACF,
//! ARJ, DCF, BCF and XRS. Each constructor takes plain Rust values and fills every other
//! field of the ASN.1 type with its absent or FALSE value.

use std::net::SocketAddr;

use super::address::{bmp, Alias, AliasError};
use super::asn::{self, RasMessage};
use super::{protocol_identifier, transport_address};

/// A `gatekeeperIdentifier`: 1–128 BMP characters, checked once when it is made, and kept
/// as its UTF-16BE octets too for the hand-written encoders.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GatekeeperId {
    asn: asn::GatekeeperIdentifier,
    octets: Box<[u8]>,
}

impl GatekeeperId {
    /// Checks and wraps a gatekeeper identifier.
    pub fn new(id: &str) -> Result<GatekeeperId, AliasError> {
        let asn = asn::GatekeeperIdentifier(bmp("gatekeeperIdentifier", id, 128)?);
        let octets = asn.0.to_bytes().into();
        Ok(GatekeeperId { asn, octets })
    }

    pub(crate) fn asn(&self) -> asn::GatekeeperIdentifier {
        self.asn.clone()
    }

    /// The identifier as UTF-16BE octets.
    pub fn octets(&self) -> &[u8] {
        &self.octets
    }
}

/// An `endpointIdentifier`: 1–128 BMP characters, checked once when it is made.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EndpointId(asn::EndpointIdentifier);

impl EndpointId {
    /// Checks and wraps an endpoint identifier.
    pub fn new(id: &str) -> Result<EndpointId, AliasError> {
        Ok(EndpointId(asn::EndpointIdentifier(bmp(
            "endpointIdentifier",
            id,
            128,
        )?)))
    }

    /// The identifier a message carries.
    pub fn from_asn(id: &asn::EndpointIdentifier) -> EndpointId {
        EndpointId(id.clone())
    }

    /// The identifier as text.
    pub fn text(&self) -> String {
        super::address::bmp_text(&self.0 .0)
    }

    /// The identifier as UTF-16BE octets (as the hand-written encoders take it).
    pub fn utf16be(&self) -> Vec<u8> {
        self.0 .0.to_bytes()
    }

    pub(crate) fn asn(&self) -> asn::EndpointIdentifier {
        self.0.clone()
    }
}

/// One entry of an alternate gatekeeper list (`AlternateGK`, always `needToRegister = TRUE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlternateGatekeeper {
    /// The RAS address the phone should register at.
    pub ras_address: SocketAddr,
    /// The gatekeeper identifier to send there, if any.
    pub gatekeeper_id: Option<GatekeeperId>,
    /// 0 (most preferred) to 127.
    pub priority: u8,
}

fn agl(entries: &[AlternateGatekeeper]) -> Vec<asn::AlternateGK> {
    entries
        .iter()
        .map(|entry| asn::AlternateGK {
            ras_address: transport_address(entry.ras_address),
            gatekeeper_identifier: entry.gatekeeper_id.as_ref().map(GatekeeperId::asn),
            need_to_register: true,
            priority: entry.priority.min(127),
        })
        .collect()
}

/// `altGKInfo` of a reject: where to go instead, and whether for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AltGkInfo {
    /// The gatekeepers to try.
    pub alternates: Vec<AlternateGatekeeper>,
    /// `altGKisPermanent`.
    pub permanent: bool,
}

fn alt_gk_info(info: Option<&AltGkInfo>) -> Option<asn::AltGKInfo> {
    info.map(|info| asn::AltGKInfo {
        alternate_gatekeeper: agl(&info.alternates),
        alt_gkis_permanent: info.permanent,
    })
}

pub(crate) fn seq(seq: u16) -> asn::RequestSeqNum {
    asn::RequestSeqNum(seq.max(1))
}

pub(crate) fn aliases(aliases: &[Alias]) -> Option<Vec<asn::AliasAddress>> {
    let list: Vec<_> = aliases.iter().filter_map(|a| a.to_asn().ok()).collect();
    (!list.is_empty()).then_some(list)
}

/// GCF: the gatekeeper accepts the phone and names the RAS address to register at.
#[doc(alias = "GCF")]
pub fn gatekeeper_confirm(
    request_seq_num: u16,
    gatekeeper_id: &GatekeeperId,
    ras_address: SocketAddr,
) -> RasMessage {
    RasMessage::gatekeeperConfirm(asn::GatekeeperConfirm {
        request_seq_num: seq(request_seq_num),
        protocol_identifier: protocol_identifier(),
        non_standard_data: None,
        gatekeeper_identifier: Some(gatekeeper_id.asn()),
        ras_address: transport_address(ras_address),
        alternate_gatekeeper: None,
        authentication_mode: None,
        tokens: None,
        crypto_tokens: None,
        algorithm_oid: None,
        integrity: None,
        integrity_check_value: None,
        feature_set: None,
        generic_data: None,
        assigned_gatekeeper: None,
        rehoming_model: None,
    })
}

/// Why a GRQ is rejected (`GatekeeperRejectReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum GrjReason {
    /// No C-LAN has room ("System busy" on the phone).
    ResourceUnavailable,
    /// The source is not allowed here.
    TerminalExcluded,
    /// The protocol version is not supported.
    InvalidRevision,
    /// Anything else.
    UndefinedReason,
    /// Authentication failed.
    SecurityDenial,
}

/// GRJ: the gatekeeper refuses the phone.
#[doc(alias = "GRJ")]
pub fn gatekeeper_reject(
    request_seq_num: u16,
    gatekeeper_id: &GatekeeperId,
    reason: GrjReason,
) -> RasMessage {
    let reject_reason = match reason {
        GrjReason::ResourceUnavailable => asn::GatekeeperRejectReason::resourceUnavailable(()),
        GrjReason::TerminalExcluded => asn::GatekeeperRejectReason::terminalExcluded(()),
        GrjReason::InvalidRevision => asn::GatekeeperRejectReason::invalidRevision(()),
        GrjReason::UndefinedReason => asn::GatekeeperRejectReason::undefinedReason(()),
        GrjReason::SecurityDenial => asn::GatekeeperRejectReason::securityDenial(()),
    };
    RasMessage::gatekeeperReject(asn::GatekeeperReject {
        request_seq_num: seq(request_seq_num),
        protocol_identifier: protocol_identifier(),
        non_standard_data: None,
        gatekeeper_identifier: Some(gatekeeper_id.asn()),
        reject_reason,
        alt_gkinfo: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        feature_set: None,
        generic_data: None,
    })
}

/// What an RCF says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rcf<'a> {
    /// The RRQ's `requestSeqNum`.
    pub request_seq_num: u16,
    /// This gatekeeper.
    pub gatekeeper_id: &'a GatekeeperId,
    /// The identifier assigned to the phone.
    pub endpoint_id: &'a EndpointId,
    /// The phone's call signalling addresses, echoed.
    pub call_signal_address: &'a [SocketAddr],
    /// The phone's aliases, echoed (`terminalAlias`).
    pub aliases: &'a [Alias],
    /// Granted `timeToLive` in seconds (1..=4294967295); `None` for no expiry.
    pub time_to_live_s: Option<u32>,
    /// The AGL (`alternateGatekeeper`); empty for none.
    pub agl: &'a [AlternateGatekeeper],
}

/// RCF: the phone is registered; carries its AGL.
#[doc(alias = "RCF")]
pub fn registration_confirm(rcf: &Rcf<'_>) -> RasMessage {
    RasMessage::registrationConfirm(asn::RegistrationConfirm {
        request_seq_num: seq(rcf.request_seq_num),
        protocol_identifier: protocol_identifier(),
        non_standard_data: None,
        call_signal_address: rcf
            .call_signal_address
            .iter()
            .copied()
            .map(transport_address)
            .collect(),
        terminal_alias: aliases(rcf.aliases),
        gatekeeper_identifier: Some(rcf.gatekeeper_id.asn()),
        endpoint_identifier: rcf.endpoint_id.asn(),
        alternate_gatekeeper: (!rcf.agl.is_empty()).then(|| agl(rcf.agl)),
        time_to_live: rcf.time_to_live_s.map(|s| asn::TimeToLive(s.max(1))),
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        will_respond_to_irr: Some(false),
        pre_granted_arq: None,
        maintain_connection: Some(false),
        service_control: None,
        supports_additive_registration: None,
        terminal_alias_pattern: None,
        supported_prefixes: None,
        usage_spec: None,
        feature_server_alias: None,
        capacity_reporting_spec: None,
        feature_set: None,
        generic_data: None,
        assigned_gatekeeper: None,
        rehoming_model: None,
        transport_qos: None,
    })
}

/// Why an RRQ is rejected (`RegistrationRejectReason`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum RrjReason {
    /// A full RRQ reached the discovery address: send GRQ first.
    DiscoveryRequired,
    /// The protocol version is not supported.
    InvalidRevision,
    /// The call signalling address is unusable.
    InvalidCallSignalAddress,
    /// The RAS address is unusable.
    InvalidRasAddress,
    /// These aliases are registered from another transport address.
    DuplicateAlias(Vec<Alias>),
    /// The terminal type is not accepted.
    InvalidTerminalType,
    /// Anything else.
    UndefinedReason,
    /// The transport is not supported.
    TransportNotSupported,
    /// The C-LAN has no room (or is out of service).
    ResourceUnavailable,
    /// An alias is not acceptable.
    InvalidAlias,
    /// Authentication failed.
    SecurityDenial,
    /// A lightweight RRQ from an unknown endpoint: register in full.
    FullRegistrationRequired,
}

/// RRJ: the registration is refused; `alternates` may name where to go instead.
#[doc(alias = "RRJ")]
pub fn registration_reject(
    request_seq_num: u16,
    gatekeeper_id: &GatekeeperId,
    reason: &RrjReason,
    alternates: Option<&AltGkInfo>,
) -> RasMessage {
    use asn::RegistrationRejectReason as R;
    let reject_reason = match reason {
        RrjReason::DiscoveryRequired => R::discoveryRequired(()),
        RrjReason::InvalidRevision => R::invalidRevision(()),
        RrjReason::InvalidCallSignalAddress => R::invalidCallSignalAddress(()),
        RrjReason::InvalidRasAddress => R::invalidRASAddress(()),
        RrjReason::DuplicateAlias(list) => R::duplicateAlias(aliases(list).unwrap_or_default()),
        RrjReason::InvalidTerminalType => R::invalidTerminalType(()),
        RrjReason::UndefinedReason => R::undefinedReason(()),
        RrjReason::TransportNotSupported => R::transportNotSupported(()),
        RrjReason::ResourceUnavailable => R::resourceUnavailable(()),
        RrjReason::InvalidAlias => R::invalidAlias(()),
        RrjReason::SecurityDenial => R::securityDenial(()),
        RrjReason::FullRegistrationRequired => R::fullRegistrationRequired(()),
    };
    RasMessage::registrationReject(asn::RegistrationReject {
        request_seq_num: seq(request_seq_num),
        protocol_identifier: protocol_identifier(),
        non_standard_data: None,
        reject_reason,
        gatekeeper_identifier: Some(gatekeeper_id.asn()),
        alt_gkinfo: alt_gk_info(alternates),
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        feature_set: None,
        generic_data: None,
        assigned_gatekeeper: None,
    })
}

/// Why a URQ is sent (`UnregRequestReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum UrqReason {
    /// Register again (the C-LAN went out of service).
    ReregistrationRequired,
    /// The registration's time to live ran out.
    TtlExpired,
    /// Authentication failed.
    SecurityDenial,
    /// Anything else.
    UndefinedReason,
    /// Maintenance.
    Maintenance,
}

/// What a URQ says, whichever side sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Urq<'a> {
    /// Its `requestSeqNum`.
    pub request_seq_num: u16,
    /// The endpoint's call signalling addresses.
    pub call_signal_address: &'a [SocketAddr],
    /// The endpoint's aliases (`endpointAlias`).
    pub aliases: &'a [Alias],
    /// The endpoint.
    pub endpoint_id: Option<&'a EndpointId>,
    /// The gatekeeper.
    pub gatekeeper_id: Option<&'a GatekeeperId>,
    /// Why.
    pub reason: Option<UrqReason>,
    /// Where to register next (`alternateGatekeeper`, gatekeeper-sent only); empty for none.
    pub agl: &'a [AlternateGatekeeper],
}

/// URQ: unregister. The gatekeeper sends it with the phone's new AGL when a C-LAN goes out
/// of service; a phone sends it when it leaves.
#[doc(alias = "URQ")]
pub fn unregistration_request(urq: &Urq<'_>) -> RasMessage {
    let reason = urq.reason.map(|reason| match reason {
        UrqReason::ReregistrationRequired => asn::UnregRequestReason::reregistrationRequired(()),
        UrqReason::TtlExpired => asn::UnregRequestReason::ttlExpired(()),
        UrqReason::SecurityDenial => asn::UnregRequestReason::securityDenial(()),
        UrqReason::UndefinedReason => asn::UnregRequestReason::undefinedReason(()),
        UrqReason::Maintenance => asn::UnregRequestReason::maintenance(()),
    });
    RasMessage::unregistrationRequest(asn::UnregistrationRequest {
        request_seq_num: seq(urq.request_seq_num),
        call_signal_address: urq
            .call_signal_address
            .iter()
            .copied()
            .map(transport_address)
            .collect(),
        endpoint_alias: aliases(urq.aliases),
        non_standard_data: None,
        endpoint_identifier: urq.endpoint_id.map(EndpointId::asn),
        alternate_endpoints: None,
        gatekeeper_identifier: urq.gatekeeper_id.map(GatekeeperId::asn),
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        reason,
        endpoint_alias_pattern: None,
        supported_prefixes: None,
        alternate_gatekeeper: (!urq.agl.is_empty()).then(|| agl(urq.agl)),
        generic_data: None,
        assigned_gatekeeper: None,
    })
}

/// UCF: the endpoint is unregistered.
#[doc(alias = "UCF")]
pub fn unregistration_confirm(request_seq_num: u16) -> RasMessage {
    RasMessage::unregistrationConfirm(asn::UnregistrationConfirm {
        request_seq_num: seq(request_seq_num),
        non_standard_data: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        generic_data: None,
        assigned_gatekeeper: None,
    })
}

/// Why a URQ is rejected (`UnregRejectReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum UrjReason {
    /// No such registration.
    NotCurrentlyRegistered,
    /// The endpoint has a call.
    CallInProgress,
    /// Anything else.
    UndefinedReason,
    /// Not allowed to unregister this endpoint.
    PermissionDenied,
    /// Authentication failed.
    SecurityDenial,
}

/// URJ: the unregistration is refused.
#[doc(alias = "URJ")]
pub fn unregistration_reject(request_seq_num: u16, reason: UrjReason) -> RasMessage {
    let reject_reason = match reason {
        UrjReason::NotCurrentlyRegistered => asn::UnregRejectReason::notCurrentlyRegistered(()),
        UrjReason::CallInProgress => asn::UnregRejectReason::callInProgress(()),
        UrjReason::UndefinedReason => asn::UnregRejectReason::undefinedReason(()),
        UrjReason::PermissionDenied => asn::UnregRejectReason::permissionDenied(()),
        UrjReason::SecurityDenial => asn::UnregRejectReason::securityDenial(()),
    };
    RasMessage::unregistrationReject(asn::UnregistrationReject {
        request_seq_num: seq(request_seq_num),
        reject_reason,
        non_standard_data: None,
        alt_gkinfo: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        generic_data: None,
    })
}

/// ACF: the call may proceed to `dest_call_signal_address`.
#[doc(alias = "ACF")]
pub fn admission_confirm(
    request_seq_num: u16,
    dest_call_signal_address: SocketAddr,
    band_width: u32,
    gatekeeper_routed: bool,
) -> RasMessage {
    let call_model = if gatekeeper_routed {
        asn::CallModel::gatekeeperRouted(())
    } else {
        asn::CallModel::direct(())
    };
    RasMessage::admissionConfirm(asn::AdmissionConfirm {
        request_seq_num: seq(request_seq_num),
        band_width: asn::BandWidth(band_width),
        call_model,
        dest_call_signal_address: transport_address(dest_call_signal_address),
        irr_frequency: None,
        non_standard_data: None,
        destination_info: None,
        dest_extra_call_info: None,
        destination_type: None,
        remote_extension_address: None,
        alternate_endpoints: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        transport_qos: None,
        will_respond_to_irr: Some(false),
        uuies_requested: Some(no_uuies()),
        language: None,
        alternate_transport_addresses: None,
        use_specified_transport: None,
        circuit_info: None,
        usage_spec: None,
        supported_protocols: None,
        service_control: None,
        multiple_calls: None,
        feature_set: None,
        generic_data: None,
        modified_src_info: None,
        assigned_gatekeeper: None,
    })
}

fn no_uuies() -> asn::UUIEsRequested {
    asn::UUIEsRequested {
        setup: false,
        call_proceeding: false,
        connect: false,
        alerting: false,
        information: false,
        release_complete: false,
        facility: false,
        progress: false,
        empty: false,
        status: Some(false),
        status_inquiry: Some(false),
        setup_acknowledge: Some(false),
        notify: Some(false),
    }
}

/// Why an ARQ is rejected (`AdmissionRejectReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ArjReason {
    /// No route pattern and no registered alias matches the dialled number.
    CalledPartyNotRegistered,
    /// Not allowed.
    InvalidPermission,
    /// Refused.
    RequestDenied,
    /// Anything else.
    UndefinedReason,
    /// The caller is not registered.
    CallerNotRegistered,
    /// The endpoint identifier is unknown.
    InvalidEndpointIdentifier,
    /// Every trunk is busy.
    ResourceUnavailable,
    /// Authentication failed.
    SecurityDenial,
    /// The number is incomplete.
    IncompleteAddress,
    /// The caller's call capacity is exhausted.
    ExceedsCallCapacity,
    /// No route leads to the destination.
    NoRouteToDestination,
    /// The number is not allocated.
    UnallocatedNumber,
}

/// ARJ: the call is refused.
#[doc(alias = "ARJ")]
pub fn admission_reject(request_seq_num: u16, reason: ArjReason) -> RasMessage {
    use asn::AdmissionRejectReason as R;
    let reject_reason = match reason {
        ArjReason::CalledPartyNotRegistered => R::calledPartyNotRegistered(()),
        ArjReason::InvalidPermission => R::invalidPermission(()),
        ArjReason::RequestDenied => R::requestDenied(()),
        ArjReason::UndefinedReason => R::undefinedReason(()),
        ArjReason::CallerNotRegistered => R::callerNotRegistered(()),
        ArjReason::InvalidEndpointIdentifier => R::invalidEndpointIdentifier(()),
        ArjReason::ResourceUnavailable => R::resourceUnavailable(()),
        ArjReason::SecurityDenial => R::securityDenial(()),
        ArjReason::IncompleteAddress => R::incompleteAddress(()),
        ArjReason::ExceedsCallCapacity => R::exceedsCallCapacity(()),
        ArjReason::NoRouteToDestination => R::noRouteToDestination(()),
        ArjReason::UnallocatedNumber => R::unallocatedNumber(()),
    };
    RasMessage::admissionReject(asn::AdmissionReject {
        request_seq_num: seq(request_seq_num),
        reject_reason,
        non_standard_data: None,
        alt_gkinfo: None,
        tokens: None,
        crypto_tokens: None,
        call_signal_address: None,
        integrity_check_value: None,
        service_control: None,
        feature_set: None,
        generic_data: None,
        assigned_gatekeeper: None,
    })
}

/// DCF: the call has ended.
#[doc(alias = "DCF")]
pub fn disengage_confirm(request_seq_num: u16) -> RasMessage {
    RasMessage::disengageConfirm(asn::DisengageConfirm {
        request_seq_num: seq(request_seq_num),
        non_standard_data: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        capacity: None,
        circuit_info: None,
        usage_information: None,
        generic_data: None,
        assigned_gatekeeper: None,
    })
}

/// BCF: the bandwidth (in units of 100 bit/s) is granted.
#[doc(alias = "BCF")]
pub fn bandwidth_confirm(request_seq_num: u16, band_width: u32) -> RasMessage {
    RasMessage::bandwidthConfirm(asn::BandwidthConfirm {
        request_seq_num: seq(request_seq_num),
        band_width: asn::BandWidth(band_width),
        non_standard_data: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        capacity: None,
        generic_data: None,
        transport_qos: None,
    })
}

/// XRS (`unknownMessageResponse`): the request was not understood; `message` is the
/// request's octets (`messageNotUnderstood`).
#[doc(alias = "XRS")]
pub fn unknown_message_response(request_seq_num: u16, message: &[u8]) -> RasMessage {
    RasMessage::unknownMessageResponse(asn::UnknownMessageResponse {
        request_seq_num: seq(request_seq_num),
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        message_not_understood: Some(rasn::types::OctetString::from(message)),
    })
}

/// IRQ: the gatekeeper asks a registered endpoint for its state (an IRR in answer, with this
/// `requestSeqNum`), about all its calls (`callReferenceValue` 0), the answer to go to
/// `reply_address` (the gatekeeper's RAS address it is sent from).
#[doc(alias = "IRQ")]
pub fn info_request(request_seq_num: u16, reply_address: SocketAddr) -> RasMessage {
    RasMessage::infoRequest(asn::InfoRequest {
        request_seq_num: seq(request_seq_num),
        call_reference_value: asn::CallReferenceValue(0),
        non_standard_data: None,
        reply_address: Some(transport_address(reply_address)),
        call_identifier: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        uuies_requested: None,
        call_linkage: None,
        usage_info_requested: None,
        segmented_response_supported: None,
        next_segment_requested: None,
        capacity_info_requested: None,
        generic_data: None,
        assigned_gatekeeper: None,
    })
}

/// IACK: an IRR that asked for a response (`needResponse`) was received.
#[doc(alias = "IACK")]
pub fn info_request_ack(request_seq_num: u16) -> RasMessage {
    RasMessage::infoRequestAck(asn::InfoRequestAck {
        request_seq_num: seq(request_seq_num),
        non_standard_data: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
    })
}

/// INAK `notRegistered`: an IRR that asked for a response came from an unknown endpoint.
#[doc(alias = "INAK")]
pub fn info_request_nak_not_registered(request_seq_num: u16) -> RasMessage {
    RasMessage::infoRequestNak(asn::InfoRequestNak {
        request_seq_num: seq(request_seq_num),
        non_standard_data: None,
        nak_reason: asn::InfoRequestNakReason::notRegistered(()),
        alt_gkinfo: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
    })
}

/// DRJ `notRegistered`: a DRQ from an endpoint that is not registered.
#[doc(alias = "DRJ")]
pub fn disengage_reject_not_registered(request_seq_num: u16) -> RasMessage {
    RasMessage::disengageReject(asn::DisengageReject {
        request_seq_num: seq(request_seq_num),
        reject_reason: asn::DisengageRejectReason::notRegistered(()),
        non_standard_data: None,
        alt_gkinfo: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        generic_data: None,
    })
}

/// BRJ `notBound`: a BRQ from an endpoint that is not registered; no bandwidth allowed.
#[doc(alias = "BRJ")]
pub fn bandwidth_reject_not_bound(request_seq_num: u16) -> RasMessage {
    RasMessage::bandwidthReject(asn::BandwidthReject {
        request_seq_num: seq(request_seq_num),
        reject_reason: asn::BandRejectReason::notBound(()),
        allowed_band_width: asn::BandWidth(0),
        non_standard_data: None,
        alt_gkinfo: None,
        tokens: None,
        crypto_tokens: None,
        integrity_check_value: None,
        generic_data: None,
    })
}

/// DRJ `securityDenial`: a DRQ whose tokens do not prove the endpoint's password.
#[doc(alias = "DRJ")]
pub fn disengage_reject_security_denial(request_seq_num: u16) -> RasMessage {
    let mut drj = disengage_reject_not_registered(request_seq_num);
    if let RasMessage::disengageReject(drj) = &mut drj {
        drj.reject_reason = asn::DisengageRejectReason::securityDenial(());
    }
    drj
}

/// BRJ `securityDenial`: a BRQ whose tokens do not prove the endpoint's password.
#[doc(alias = "BRJ")]
pub fn bandwidth_reject_security_denial(request_seq_num: u16) -> RasMessage {
    let mut brj = bandwidth_reject_not_bound(request_seq_num);
    if let RasMessage::bandwidthReject(brj) = &mut brj {
        brj.reject_reason = asn::BandRejectReason::securityDenial(());
    }
    brj
}

/// INAK `securityDenial`: an IRR asking for an answer whose tokens do not prove the
/// endpoint's password.
#[doc(alias = "INAK")]
pub fn info_request_nak_security_denial(request_seq_num: u16) -> RasMessage {
    let mut inak = info_request_nak_not_registered(request_seq_num);
    if let RasMessage::infoRequestNak(inak) = &mut inak {
        inak.nak_reason = asn::InfoRequestNakReason::securityDenial(());
    }
    inak
}
