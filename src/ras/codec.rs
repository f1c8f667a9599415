//! Bytes ⇄ [`RasMessage`]: ALIGNED PER through the generated types, with errors that say
//! which message failed and why.

use rasn::error::DecodeErrorKind;

use super::asn::RasMessage;
use super::kind::MessageKind;
use super::peek;

/// Why a datagram is not a RAS message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The datagram is empty.
    #[error("empty datagram: a RAS message needs at least one octet")]
    Empty,
    /// The PER decoder failed. `kind` and `seq` are what could be read before it did.
    #[error("cannot decode {len}-octet RAS message{}: {reason}", context(*kind, *seq))]
    Invalid {
        /// Length of the datagram.
        len: usize,
        /// The message type, when the CHOICE index could be read.
        kind: Option<MessageKind>,
        /// The `requestSeqNum`, when it could be read.
        seq: Option<u16>,
        /// The datagram ended before the message did (the decoder wanted more octets), as
        /// opposed to octets that break the ASN.1.
        truncated: bool,
        /// The decoder's reason.
        reason: String,
    },
    /// The message decoded but octets follow it.
    #[error("{kind} (seq {seq}) ends at octet {used} but the datagram has {len} octets")]
    TrailingData {
        /// The message type.
        kind: MessageKind,
        /// Its `requestSeqNum`.
        seq: u16,
        /// Octets the message used.
        used: usize,
        /// Length of the datagram.
        len: usize,
    },
}

fn context(kind: Option<MessageKind>, seq: Option<u16>) -> String {
    match (kind, seq) {
        (Some(kind), Some(seq)) => format!(" ({kind}, seq {seq})"),
        (Some(kind), None) => format!(" ({kind})"),
        _ => String::new(),
    }
}

/// Why a message could not be encoded: a value outside its ASN.1 constraints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot encode {kind} (seq {seq}): {reason}")]
pub struct EncodeError {
    /// The message type.
    pub kind: MessageKind,
    /// Its `requestSeqNum`.
    pub seq: u16,
    /// The encoder's reason.
    pub reason: String,
}

/// Decodes one RAS message from a datagram. Never panics, whatever the input. GRQ and RRQ
/// of the shapes phones send are read by the hand-written decoders of `hot_request`, the
/// rest by the generated codec; the message is the same either way.
pub fn decode(bytes: &[u8]) -> Result<RasMessage, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    if let Some(message) = super::hot_request::decode(bytes) {
        return Ok(message);
    }
    decode_generated(bytes)
}

/// Reads one datagram as the gatekeeper needs it: a GRQ, a keep-alive without aliases or a
/// full RRQ of the shapes phones send as the few fields it uses (read and checked as
/// [`decode`] reads them, built into no message), anything else decoded as [`decode`]
/// decodes it. A decoded message is put in `slot`, which the caller keeps for as long as
/// the request.
pub fn read_request<'a>(
    bytes: &'a [u8],
    slot: &'a mut Option<RasMessage>,
) -> Result<super::Request<'a>, DecodeError> {
    if let Some(request) = super::hot_request::read(bytes) {
        return Ok(request);
    }
    let message = decode(bytes)?;
    Ok(super::Request::Message(slot.insert(message)))
}

/// Decodes through the generated codec only.
pub(crate) fn decode_generated(bytes: &[u8]) -> Result<RasMessage, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    match rasn::aper::decode_with_remainder::<RasMessage>(bytes) {
        Ok((message, rest)) => {
            // PER pads the last octet with zero bits; anything beyond it is not ours.
            if !rest.is_empty() {
                return Err(DecodeError::TrailingData {
                    kind: super::kind(&message),
                    seq: super::request_seq_num(&message),
                    used: bytes.len() - rest.len(),
                    len: bytes.len(),
                });
            }
            Ok(message)
        }
        Err(error) => Err(DecodeError::Invalid {
            len: bytes.len(),
            kind: peek::peek_kind(bytes),
            seq: peek::peek_request_seq_num(bytes),
            truncated: ended_too_soon(&error),
            reason: error.kind.to_string(),
        }),
    }
}

/// Whether a PER decoder failed because the octets ended before the value did, as opposed
/// to octets that break the ASN.1.
pub(crate) fn ended_too_soon(error: &rasn::error::DecodeError) -> bool {
    error.matches_root_cause(|cause| {
        matches!(
            cause,
            DecodeErrorKind::Incomplete { .. }
                | DecodeErrorKind::Eof
                | DecodeErrorKind::UnexpectedEmptyInput
        )
    })
}

/// Encodes a RAS message.
pub fn encode(message: &RasMessage) -> Result<Vec<u8>, EncodeError> {
    let mut buffer = Vec::with_capacity(128);
    encode_generated(message, &mut buffer)?;
    Ok(buffer)
}

/// Encodes a RAS message into `buffer` (cleared first), reusing its allocation.
pub fn encode_into(message: &RasMessage, buffer: &mut Vec<u8>) -> Result<(), EncodeError> {
    encode_generated(message, buffer)
}

/// Encodes through the generated codec only.
pub(crate) fn encode_generated(
    message: &RasMessage,
    buffer: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    rasn::aper::encode_buf(message, buffer).map_err(|error| EncodeError {
        kind: super::kind(message),
        seq: super::request_seq_num(message),
        reason: error.kind.to_string(),
    })
}
