//! The messages rasgk writes: the gatekeeper's Release Complete ([`release_complete`]) and,
//! for the phone simulator, a call's Setup, Call Proceeding, Alerting and Connect. Each
//! returns a whole Q.931 message (a TPKT payload; frame it with [`crate::tpkt::frame`]),
//! with the call reference written in 2 octets as [`CallReference::octets`] says.
//!
//! Every mandatory extension addition of the UUIEs (`callIdentifier`, `multipleCalls`,
//! `maintainConnection`, `h245Tunnelling`, …; `asn1/README.md`, Repair 2) is filled.

use bytes::Bytes;

use super::error::Q931Error;
use super::message::{ie, CallReference, MessageWriter};
use super::message_type::MessageType;
use super::uuie::{encode, user_information_of};
use crate::ras::asn::{self, H323UUPDUH323MessageBody as Body};
use crate::ras::reply::EndpointId;
use crate::ras::request::terminal;
use crate::ras::{protocol_identifier, Alias};

/// Bearer capability of a speech call, as H323Plus writes it in every Setup
/// (`Q931::BuildSetup`): ITU-T coding, information transfer capability speech (`80`);
/// circuit mode, 64 kbit/s (`90`); user information layer 1 protocol H.221/H.242 (`a5`).
pub const SPEECH_BEARER: [u8; 3] = [0x80, 0x90, 0xA5];

/// Location of the Cause element rasgk writes: "private network serving the local user"
/// (Q.850 2.2.4), the gatekeeper being a private network to its phones.
const LOCATION_PRIVATE_LOCAL: u8 = 0x01;

/// The longest Display content: Q.931 4.5.16 allows a Display element of at most 82
/// octets, 80 of them content.
const DISPLAY_MAX: usize = 80;

/// Why the gatekeeper (or a phone) clears a call with a Release Complete: a Q.931 cause and
/// an H.225.0 `ReleaseCompleteReason`.
///
/// Where there is a `ReleaseCompleteReason`, the cause is the one H.225.0 (clause 7.2.2.8,
/// table 5) maps it to, as GnuGk's default `H225toQ931` table has it (`Toolkit.cxx`,
/// `LoadReasonMap`). Both are sent, so that an endpoint that reads either hears the same:
/// H323Plus reads the cause first and falls back to the reason only without a Cause element
/// (`H323TranslateToCallEndReason`), and maps both 20 and `calledPartyNotRegistered` to
/// "could not find user", both 47 and `gatekeeperResources` to "remote congestion".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Release {
    /// The call ended normally: cause 16 (normal call clearing), no reason.
    NormalClearing,
    /// The called phone did not answer in time: cause 19 (no answer from user), reason
    /// `undefinedReason` (H.225.0 has none closer).
    NoAnswer,
    /// Nobody is registered with the dialled number: cause 20 (subscriber absent), reason
    /// `calledPartyNotRegistered`.
    CalledPartyNotRegistered,
    /// The caller is not registered with the gatekeeper: cause 31 (normal, unspecified),
    /// reason `callerNotRegistered`.
    CallerNotRegistered,
    /// The gatekeeper has no room for the call: cause 47 (resource unavailable,
    /// unspecified), reason `gatekeeperResources`.
    GatekeeperResources,
    /// The called phone could not be reached: cause 3 (no route to destination), reason
    /// `unreachableDestination`.
    Unreachable,
    /// The dialled address is malformed: cause 28 (invalid number format), reason
    /// `badFormatAddress`.
    BadFormat,
    /// A message for a call reference no call has: cause 81 (invalid call reference value,
    /// Q.931 5.8.3.2), no reason.
    InvalidCallReference,
    /// A message whose contents could not be read: cause 95 (invalid message, unspecified),
    /// no reason.
    InvalidMessage,
}

impl Release {
    /// Every reason, for tests and tables.
    pub const ALL: [Release; 9] = [
        Release::NormalClearing,
        Release::NoAnswer,
        Release::CalledPartyNotRegistered,
        Release::CallerNotRegistered,
        Release::GatekeeperResources,
        Release::Unreachable,
        Release::BadFormat,
        Release::InvalidCallReference,
        Release::InvalidMessage,
    ];

    /// The Q.931 cause value (Q.850) of the Cause element.
    pub fn cause(self) -> u8 {
        match self {
            Release::NormalClearing => 16,
            Release::NoAnswer => 19,
            Release::CalledPartyNotRegistered => 20,
            Release::CallerNotRegistered => 31,
            Release::GatekeeperResources => 47,
            Release::Unreachable => 3,
            Release::BadFormat => 28,
            Release::InvalidCallReference => 81,
            Release::InvalidMessage => 95,
        }
    }

    /// The `ReleaseCompleteReason` of the UUIE, if any.
    pub fn reason(self) -> Option<asn::ReleaseCompleteReason> {
        use asn::ReleaseCompleteReason as R;
        Some(match self {
            Release::NormalClearing | Release::InvalidCallReference | Release::InvalidMessage => {
                return None
            }
            Release::NoAnswer => R::undefinedReason(()),
            Release::CalledPartyNotRegistered => R::calledPartyNotRegistered(()),
            Release::CallerNotRegistered => R::callerNotRegistered(()),
            Release::GatekeeperResources => R::gatekeeperResources(()),
            Release::Unreachable => R::unreachableDestination(()),
            Release::BadFormat => R::badFormatAddress(()),
        })
    }
}

fn call_identifier(guid: [u8; 16]) -> Option<asn::CallIdentifier> {
    Some(asn::CallIdentifier {
        guid: asn::GloballyUniqueID(guid.into()),
    })
}

fn conference_identifier(guid: [u8; 16]) -> asn::ConferenceIdentifier {
    asn::ConferenceIdentifier(asn::GloballyUniqueID(guid.into()))
}

/// The message: `elements` (in ascending identifier order) written, then the User-user
/// element with `body`.
fn message(
    call_reference: CallReference,
    message_type: MessageType,
    elements: &[(u8, &'static str, &[u8])],
    body: Body,
    h245_tunnelling: bool,
) -> Result<Bytes, Q931Error> {
    let per = encode(&user_information_of(body, h245_tunnelling), message_type)?;
    let mut writer = MessageWriter::new(call_reference, message_type);
    for (id, what, content) in elements {
        writer.element(*id, what, content)?;
    }
    writer.user_user(&per)?;
    Ok(writer.finish())
}

/// A message whose every field is fixed in size: encoding cannot fail.
fn fixed(message: Result<Bytes, Q931Error>) -> Bytes {
    message.expect("a message of fixed-size fields always encodes")
}

/// Release Complete (0x5A): a Cause element ([`Release::cause`]; coding standard ITU-T,
/// location private network serving the local user) and a `releaseComplete` UUIE with the
/// [`Release::reason`], `callIdentifier` and `h245Tunnelling` FALSE.
///
/// `callIdentifier` is a mandatory extension addition: without a known one (a Setup that
/// carried none) it is written as 16 zero octets, which no generated GUID is (RFC 4122
/// GUIDs carry a version).
pub fn release_complete(
    call_reference: CallReference,
    call_identifier_guid: Option<[u8; 16]>,
    release: Release,
) -> Bytes {
    let cause = [0x80 | LOCATION_PRIVATE_LOCAL, 0x80 | release.cause()];
    let body = Body::releaseComplete(asn::ReleaseCompleteUUIE {
        protocol_identifier: protocol_identifier(),
        reason: release.reason(),
        call_identifier: call_identifier(call_identifier_guid.unwrap_or([0; 16])),
        tokens: None,
        crypto_tokens: None,
        busy_address: None,
        presentation_indicator: None,
        screening_indicator: None,
        capacity: None,
        service_control: None,
        feature_set: None,
        destination_info: None,
        display_name: None,
    });
    fixed(message(
        call_reference,
        MessageType::ReleaseComplete,
        &[(ie::CAUSE, "Cause", &cause)],
        body,
        false,
    ))
}

/// What a phone's Setup says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup<'a> {
    /// The call reference the caller chose (its flag is normally 0).
    pub call_reference: CallReference,
    /// `callIdentifier`.
    pub call_identifier: [u8; 16],
    /// `conferenceID`.
    pub conference_id: [u8; 16],
    /// `sourceAddress`: the caller's aliases (left out when empty).
    pub source: &'a [Alias],
    /// `destinationAddress`: the called aliases (left out when empty). The first
    /// `dialledDigits` among them also goes in the Called party number element, as H323Plus
    /// does.
    pub destination: &'a [Alias],
    /// The Display element: up to 80 IA5 characters.
    pub display: Option<&'a str>,
    /// `endpointIdentifier`: the caller's registration at the gatekeeper.
    pub endpoint_identifier: Option<&'a EndpointId>,
}

fn alias_list(
    what: &'static str,
    aliases: &[Alias],
) -> Result<Option<Vec<asn::AliasAddress>>, Q931Error> {
    let list = aliases
        .iter()
        .map(Alias::to_asn)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| Q931Error::Alias { what, source })?;
    Ok((!list.is_empty()).then_some(list))
}

/// Setup (0x05): Bearer capability speech ([`SPEECH_BEARER`]), Display (if any), Called
/// party number (type unknown, plan ISDN/telephony, as H323Plus writes it) and a `setup`
/// UUIE: `sourceInfo` a terminal, `conferenceGoal` create, `callType` pointToPoint,
/// `activeMC`, `mediaWaitForConnect`, `canOverlapSend`, `multipleCalls` and
/// `maintainConnection` FALSE, `h245Tunnelling` TRUE. Fails for a Display that is not IA5
/// or too long, or an alias outside H.225.0's constraints.
pub fn setup(setup: &Setup<'_>) -> Result<Bytes, Q931Error> {
    let display = match setup.display {
        Some(text) if !text.is_ascii() || text.len() > DISPLAY_MAX => {
            return Err(Q931Error::Value {
                what: "Display",
                value: text.to_string(),
                why: "Q.931 allows at most 80 IA5 characters",
            })
        }
        Some(text) => Some(text.as_bytes()),
        None => None,
    };
    let called_number = setup.destination.iter().find_map(|alias| match alias {
        Alias::DialledDigits(digits) => {
            let mut content = vec![0x81]; // type of number unknown, ISDN/telephony plan
            content.extend_from_slice(digits.as_bytes());
            Some(content)
        }
        _ => None,
    });
    let body = Body::setup(asn::SetupUUIE {
        protocol_identifier: protocol_identifier(),
        h245_address: None,
        source_address: alias_list("sourceAddress", setup.source)?,
        source_info: terminal(),
        destination_address: alias_list("destinationAddress", setup.destination)?,
        dest_call_signal_address: None,
        dest_extra_call_info: None,
        dest_extra_crv: None,
        active_mc: false,
        conference_id: conference_identifier(setup.conference_id),
        conference_goal: asn::SetupUUIEConferenceGoal::create(()),
        call_services: None,
        call_type: asn::CallType::pointToPoint(()),
        source_call_signal_address: None,
        remote_extension_address: None,
        call_identifier: call_identifier(setup.call_identifier),
        h245_security_capability: None,
        tokens: None,
        crypto_tokens: None,
        fast_start: None,
        media_wait_for_connect: Some(false),
        can_overlap_send: Some(false),
        endpoint_identifier: setup.endpoint_identifier.map(EndpointId::asn),
        multiple_calls: Some(false),
        maintain_connection: Some(false),
        connection_parameters: None,
        language: None,
        presentation_indicator: None,
        screening_indicator: None,
        service_control: None,
        symmetric_operation_required: None,
        capacity: None,
        circuit_info: None,
        desired_protocols: None,
        needed_features: None,
        desired_features: None,
        supported_features: None,
        parallel_h245_control: None,
        additional_source_addresses: None,
        hop_count: None,
        display_name: None,
    });
    let mut elements: Vec<(u8, &'static str, &[u8])> =
        vec![(ie::BEARER_CAPABILITY, "Bearer capability", &SPEECH_BEARER)];
    if let Some(display) = display {
        elements.push((ie::DISPLAY, "Display", display));
    }
    if let Some(number) = &called_number {
        elements.push((ie::CALLED_PARTY_NUMBER, "Called party number", number));
    }
    message(
        setup.call_reference,
        MessageType::Setup,
        &elements,
        body,
        true,
    )
}

/// Call Proceeding (0x02): a `callProceeding` UUIE, `destinationInfo` a terminal,
/// `multipleCalls` and `maintainConnection` FALSE, `h245Tunnelling` TRUE.
pub fn call_proceeding(call_reference: CallReference, call_identifier_guid: [u8; 16]) -> Bytes {
    let body = Body::callProceeding(asn::CallProceedingUUIE {
        protocol_identifier: protocol_identifier(),
        destination_info: terminal(),
        h245_address: None,
        call_identifier: call_identifier(call_identifier_guid),
        h245_security_mode: None,
        tokens: None,
        crypto_tokens: None,
        fast_start: None,
        multiple_calls: Some(false),
        maintain_connection: Some(false),
        fast_connect_refused: None,
        feature_set: None,
    });
    fixed(message(
        call_reference,
        MessageType::CallProceeding,
        &[],
        body,
        true,
    ))
}

/// Alerting (0x01): an `alerting` UUIE, `destinationInfo` a terminal, `multipleCalls` and
/// `maintainConnection` FALSE, `h245Tunnelling` TRUE.
pub fn alerting(call_reference: CallReference, call_identifier_guid: [u8; 16]) -> Bytes {
    let body = Body::alerting(asn::AlertingUUIE {
        protocol_identifier: protocol_identifier(),
        destination_info: terminal(),
        h245_address: None,
        call_identifier: call_identifier(call_identifier_guid),
        h245_security_mode: None,
        tokens: None,
        crypto_tokens: None,
        fast_start: None,
        multiple_calls: Some(false),
        maintain_connection: Some(false),
        alerting_address: None,
        presentation_indicator: None,
        screening_indicator: None,
        fast_connect_refused: None,
        service_control: None,
        capacity: None,
        feature_set: None,
        display_name: None,
    });
    fixed(message(
        call_reference,
        MessageType::Alerting,
        &[],
        body,
        true,
    ))
}

/// Connect (0x07): a `connect` UUIE with `conferenceID`, `destinationInfo` a terminal,
/// `multipleCalls` and `maintainConnection` FALSE, `h245Tunnelling` TRUE.
pub fn connect(
    call_reference: CallReference,
    call_identifier_guid: [u8; 16],
    conference_id: [u8; 16],
) -> Bytes {
    let body = Body::connect(asn::ConnectUUIE {
        protocol_identifier: protocol_identifier(),
        h245_address: None,
        destination_info: terminal(),
        conference_id: conference_identifier(conference_id),
        call_identifier: call_identifier(call_identifier_guid),
        h245_security_mode: None,
        tokens: None,
        crypto_tokens: None,
        fast_start: None,
        multiple_calls: Some(false),
        maintain_connection: Some(false),
        language: None,
        connected_address: None,
        presentation_indicator: None,
        screening_indicator: None,
        fast_connect_refused: None,
        service_control: None,
        capacity: None,
        feature_set: None,
        display_name: None,
    });
    fixed(message(
        call_reference,
        MessageType::Connect,
        &[],
        body,
        true,
    ))
}
