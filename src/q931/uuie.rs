//! The `H323-UserInformation` inside a message's User-user element: decoded and encoded with
//! rasn's ALIGNED PER codec through the generated types, and read once into the few
//! [`Facts`] a relay needs.

use std::net::SocketAddr;

use rasn::error::DecodeErrorKind;

use super::error::Q931Error;
use super::message::{ie, Message, USER_USER_ASN1};
use super::message_type::MessageType;
use crate::ras::asn::{self, H323UUPDUH323MessageBody as Body};
use crate::ras::{self, Alias};

pub use crate::ras::asn::H323UserInformation;

/// The `H323-UserInformation` of a message (its User-user element, PER-decoded).
pub fn user_information(message: &Message<'_>) -> Result<H323UserInformation, Q931Error> {
    let message_type = message.message_type;
    let element = message
        .element(ie::USER_USER)
        .ok_or(Q931Error::NoUserUser(message_type))?;
    match element.content {
        [USER_USER_ASN1, per @ ..] => decode(per, element.at + 4, message_type),
        [discriminator, ..] => Err(Q931Error::UserUserProtocol {
            message_type,
            at: element.at,
            discriminator: *discriminator,
        }),
        // `Message::parse` refuses a User-user element of length 0.
        [] => Err(Q931Error::UserUserEmpty {
            message_type,
            at: element.at,
        }),
    }
}

/// Decodes PER octets that start at octet `at` of a `message_type` message.
fn decode(
    per: &[u8],
    at: usize,
    message_type: MessageType,
) -> Result<H323UserInformation, Q931Error> {
    match rasn::aper::decode_with_remainder::<H323UserInformation>(per) {
        // PER pads the last octet with zero bits; anything after it is not part of the value.
        Ok((_, rest)) if !rest.is_empty() => Err(Q931Error::TrailingData {
            message_type,
            at,
            used: per.len() - rest.len(),
            len: per.len(),
        }),
        Ok((information, _)) => Ok(information),
        Err(error) if unknown_body(&error) => Err(Q931Error::UnknownBody { message_type, at }),
        Err(error) => Err(Q931Error::UserInformation {
            message_type,
            at,
            len: per.len(),
            truncated: ras::ended_too_soon(&error),
            reason: error.kind.to_string(),
        }),
    }
}

/// Whether the decoder stopped at an `h323-message-body` alternative it does not know: an
/// extension alternative added after version 7. (rasn 0.30 refuses an unknown extension
/// alternative of a CHOICE, where X.691 lets the decoder skip its open type.)
fn unknown_body(error: &rasn::error::DecodeError) -> bool {
    let mut error = error;
    while let DecodeErrorKind::FieldError { name, nested } = &*error.kind {
        if *name == "H323UUPDU.h323_message_body" {
            return matches!(*nested.kind, DecodeErrorKind::ChoiceIndexNotFound { .. });
        }
        error = nested;
    }
    false
}

/// The PER octets of an `H323-UserInformation`, for a `message_type` message.
pub fn encode(
    information: &H323UserInformation,
    message_type: MessageType,
) -> Result<Vec<u8>, Q931Error> {
    rasn::aper::encode(information).map_err(|error| Q931Error::Encode {
        message_type,
        reason: error.kind.to_string(),
    })
}

/// An `H323-UserInformation` carrying `body`, with `h245Tunnelling` (a mandatory extension
/// addition) set and nothing else.
pub fn user_information_of(body: Body, h245_tunnelling: bool) -> H323UserInformation {
    H323UserInformation {
        h323_uu_pdu: asn::H323UUPDU {
            h323_message_body: body,
            non_standard_data: None,
            h4501_supplementary_service: None,
            h245_tunnelling: Some(h245_tunnelling),
            h245_control: None,
            non_standard_control: None,
            call_linkage: None,
            tunnelled_signalling_message: None,
            provisional_resp_to_h245_tunnelling: None,
            stimulus_control: None,
            generic_data: None,
        },
        user_data: None,
    }
}

/// Which alternative of `h323-message-body` a message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyKind {
    /// `setup`
    Setup,
    /// `callProceeding`
    CallProceeding,
    /// `connect`
    Connect,
    /// `alerting`
    Alerting,
    /// `information`
    Information,
    /// `releaseComplete`
    ReleaseComplete,
    /// `facility`
    Facility,
    /// `progress`
    Progress,
    /// `empty`: a message that carries only other UUIE parts (tunnelled H.245, H.450).
    Empty,
    /// `status`
    Status,
    /// `statusInquiry`
    StatusInquiry,
    /// `setupAcknowledge`
    SetupAcknowledge,
    /// `notify`
    Notify,
    /// An alternative added to H.225.0 after version 7 (not in `asn1/`).
    Unknown,
}

impl BodyKind {
    /// The alternative of a body.
    pub fn of(body: &Body) -> BodyKind {
        match body {
            Body::setup(_) => BodyKind::Setup,
            Body::callProceeding(_) => BodyKind::CallProceeding,
            Body::connect(_) => BodyKind::Connect,
            Body::alerting(_) => BodyKind::Alerting,
            Body::information(_) => BodyKind::Information,
            Body::releaseComplete(_) => BodyKind::ReleaseComplete,
            Body::facility(_) => BodyKind::Facility,
            Body::progress(_) => BodyKind::Progress,
            Body::empty(()) => BodyKind::Empty,
            Body::status(_) => BodyKind::Status,
            Body::statusInquiry(_) => BodyKind::StatusInquiry,
            Body::setupAcknowledge(_) => BodyKind::SetupAcknowledge,
            Body::notify(_) => BodyKind::Notify,
        }
    }

    /// The ASN.1 identifier of the alternative (what Wireshark shows), e.g.
    /// `releaseComplete`; `unknown` for [`BodyKind::Unknown`].
    pub fn name(self) -> &'static str {
        match self {
            BodyKind::Setup => "setup",
            BodyKind::CallProceeding => "callProceeding",
            BodyKind::Connect => "connect",
            BodyKind::Alerting => "alerting",
            BodyKind::Information => "information",
            BodyKind::ReleaseComplete => "releaseComplete",
            BodyKind::Facility => "facility",
            BodyKind::Progress => "progress",
            BodyKind::Empty => "empty",
            BodyKind::Status => "status",
            BodyKind::StatusInquiry => "statusInquiry",
            BodyKind::SetupAcknowledge => "setupAcknowledge",
            BodyKind::Notify => "notify",
            BodyKind::Unknown => "unknown",
        }
    }
}

/// The ASN.1 identifier of a `ReleaseCompleteReason` alternative, e.g.
/// `calledPartyNotRegistered`.
pub fn release_reason_name(reason: &asn::ReleaseCompleteReason) -> &'static str {
    use asn::ReleaseCompleteReason as R;
    match reason {
        R::noBandwidth(()) => "noBandwidth",
        R::gatekeeperResources(()) => "gatekeeperResources",
        R::unreachableDestination(()) => "unreachableDestination",
        R::destinationRejection(()) => "destinationRejection",
        R::invalidRevision(()) => "invalidRevision",
        R::noPermission(()) => "noPermission",
        R::unreachableGatekeeper(()) => "unreachableGatekeeper",
        R::gatewayResources(()) => "gatewayResources",
        R::badFormatAddress(()) => "badFormatAddress",
        R::adaptiveBusy(()) => "adaptiveBusy",
        R::inConf(()) => "inConf",
        R::undefinedReason(()) => "undefinedReason",
        R::facilityCallDeflection(()) => "facilityCallDeflection",
        R::securityDenied(()) => "securityDenied",
        R::calledPartyNotRegistered(()) => "calledPartyNotRegistered",
        R::callerNotRegistered(()) => "callerNotRegistered",
        R::newConnectionNeeded(()) => "newConnectionNeeded",
        R::nonStandardReason(_) => "nonStandardReason",
        R::replaceWithConferenceInvite(_) => "replaceWithConferenceInvite",
        R::genericDataReason(()) => "genericDataReason",
        R::neededFeatureNotSupported(()) => "neededFeatureNotSupported",
        R::tunnelledSignallingRejected(()) => "tunnelledSignallingRejected",
        R::invalidCID(()) => "invalidCID",
        R::securityError(_) => "securityError",
        R::hopCountExceeded(()) => "hopCountExceeded",
    }
}

/// What a relay needs to know of a message's `H323-UserInformation`, read once. Fields the
/// body does not have, or that the message left out, are `None` or empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Which `h323-message-body` alternative it carries.
    pub body: BodyKind,
    /// `callIdentifier.guid` (every body but Empty has one, most as an extension addition).
    pub call_identifier: Option<[u8; 16]>,
    /// `conferenceID` (Setup, Connect, Facility).
    pub conference_id: Option<[u8; 16]>,
    /// `endpointIdentifier` of a Setup: the caller's registration at the gatekeeper.
    pub endpoint_identifier: Option<String>,
    /// `sourceAddress` of a Setup: the caller's aliases.
    pub source_aliases: Vec<Alias>,
    /// `destinationAddress` of a Setup: the called aliases.
    pub destination_aliases: Vec<Alias>,
    /// `h245Address` (Setup, Call Proceeding, Connect, Alerting, Facility, Progress), when
    /// an IP address.
    pub h245_address: Option<SocketAddr>,
    /// `h245Tunnelling` of the `H323-UU-PDU` (absent from version 1 endpoints).
    pub h245_tunnelling: Option<bool>,
    /// The `reason` of a Release Complete, by its ASN.1 identifier (e.g.
    /// `calledPartyNotRegistered`).
    pub release_reason: Option<&'static str>,
}

impl Facts {
    /// Facts of a `body` and nothing else.
    fn bare(body: BodyKind) -> Facts {
        Facts {
            body,
            call_identifier: None,
            conference_id: None,
            endpoint_identifier: None,
            source_aliases: Vec::new(),
            destination_aliases: Vec::new(),
            h245_address: None,
            h245_tunnelling: None,
            release_reason: None,
        }
    }

    /// The facts of a decoded `H323-UserInformation`.
    pub fn of(information: &H323UserInformation) -> Facts {
        let pdu = &information.h323_uu_pdu;
        let body = &pdu.h323_message_body;
        let mut facts = Facts::bare(BodyKind::of(body));
        facts.h245_tunnelling = pdu.h245_tunnelling;
        let guid = |id: &asn::CallIdentifier| *id.guid.0;
        let (call_identifier, conference_id, h245_address) = match body {
            Body::setup(setup) => {
                facts.endpoint_identifier = setup
                    .endpoint_identifier
                    .as_ref()
                    .map(|id| ras::bmp_text(&id.0));
                facts.source_aliases = aliases(setup.source_address.as_deref());
                facts.destination_aliases = aliases(setup.destination_address.as_deref());
                (
                    setup.call_identifier.as_ref(),
                    Some(&setup.conference_id),
                    setup.h245_address.as_ref(),
                )
            }
            Body::callProceeding(m) => (m.call_identifier.as_ref(), None, m.h245_address.as_ref()),
            Body::connect(m) => (
                m.call_identifier.as_ref(),
                Some(&m.conference_id),
                m.h245_address.as_ref(),
            ),
            Body::alerting(m) => (m.call_identifier.as_ref(), None, m.h245_address.as_ref()),
            Body::information(m) => (m.call_identifier.as_ref(), None, None),
            Body::releaseComplete(m) => {
                facts.release_reason = m.reason.as_ref().map(release_reason_name);
                (m.call_identifier.as_ref(), None, None)
            }
            Body::facility(m) => (
                m.call_identifier.as_ref(),
                m.conference_id.as_ref(),
                m.h245_address.as_ref(),
            ),
            Body::progress(m) => (Some(&m.call_identifier), None, m.h245_address.as_ref()),
            Body::empty(()) => (None, None, None),
            Body::status(m) => (Some(&m.call_identifier), None, None),
            Body::statusInquiry(m) => (Some(&m.call_identifier), None, None),
            Body::setupAcknowledge(m) => (Some(&m.call_identifier), None, None),
            Body::notify(m) => (Some(&m.call_identifier), None, None),
        };
        facts.call_identifier = call_identifier.map(guid);
        facts.conference_id = conference_id.map(|id| *id.0 .0);
        facts.h245_address = h245_address.and_then(ras::socket_addr);
        facts
    }
}

fn aliases(list: Option<&[asn::AliasAddress]>) -> Vec<Alias> {
    list.unwrap_or_default()
        .iter()
        .map(Alias::from_asn)
        .collect()
}

/// Reads a message and the facts of its `H323-UserInformation`: `payload` is one TPKT
/// frame's payload. A body alternative newer than version 7 gives [`BodyKind::Unknown`]
/// and no other facts. Fails when the message is not Q.931, has no User-user element, or
/// its `H323-UserInformation` does not decode. Never panics, whatever the input.
pub fn facts(payload: &[u8]) -> Result<(Message<'_>, Facts), Q931Error> {
    let message = Message::parse(payload)?;
    match user_information(&message) {
        Ok(information) => Ok((message, Facts::of(&information))),
        Err(Q931Error::UnknownBody { .. }) => Ok((message, Facts::bare(BodyKind::Unknown))),
        Err(error) => Err(error),
    }
}
