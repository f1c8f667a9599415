//! [`Q931Error`]: why octets are not the call-signalling message they should be, or why a
//! message cannot be written. Every reading error names the octet (0-based, from the start
//! of the Q.931 message, i.e. of the TPKT payload) where what was wrong begins.

use super::message_type::MessageType;
use crate::ras::AliasError;

/// What was wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Q931Error {
    /// The octets end inside the message header.
    #[error(
        "the message ends after {len} octets, inside its header: the {what} at octet {at} \
         is missing"
    )]
    Truncated {
        /// The header field that is missing ("protocol discriminator", "call reference
        /// length", "call reference value", "message type").
        what: &'static str,
        /// Where it should be.
        at: usize,
        /// The message's length.
        len: usize,
    },
    /// Octet 0 is not Q.931's protocol discriminator.
    #[error("protocol discriminator 0x{0:02x} at octet 0: Q.931 has 0x08")]
    ProtocolDiscriminator(u8),
    /// Octet 1 gives a call reference longer than 2 octets.
    #[error(
        "call reference length {0} at octet 1: H.225.0 uses 2 octets, and no more than 2 \
         are accepted"
    )]
    CallReferenceLength(u8),
    /// A variable-length information element runs past the end of the message.
    #[error(
        "information element 0x{id:02x} at octet {at} of {message_type} needs {needed} \
         octets (identifier, length and content) but only {available} are left"
    )]
    ElementTruncated {
        /// The message.
        message_type: MessageType,
        /// The element's identifier.
        id: u8,
        /// Where the element starts (its identifier octet).
        at: usize,
        /// Octets the element needs, by its length field (or the length field itself).
        needed: usize,
        /// Octets left from `at`.
        available: usize,
    },
    /// A User-user information element with length 0: it has no room for its protocol
    /// discriminator.
    #[error(
        "User-user information element at octet {at} of {message_type} has length 0, with \
         no room for its protocol discriminator"
    )]
    UserUserEmpty {
        /// The message.
        message_type: MessageType,
        /// Where the element starts.
        at: usize,
    },
    /// A call reference value that does not fit in the 15 bits of a 2-octet call reference.
    #[error("call reference value 0x{0:04x} does not fit in 15 bits (at most 0x7fff)")]
    CallReferenceValue(u16),
    /// The User-user element carries something other than ASN.1 (X.208/X.209) user
    /// information, so it is no H323-UserInformation.
    #[error(
        "User-user information element at octet {at} of {message_type} has protocol \
         discriminator 0x{discriminator:02x}; H.225.0 carries an H323-UserInformation \
         under 0x05 (X.208/X.209 coded user information)"
    )]
    UserUserProtocol {
        /// The message.
        message_type: MessageType,
        /// Where the element starts.
        at: usize,
        /// The discriminator found.
        discriminator: u8,
    },
    /// The message has no User-user element (asked for its H323-UserInformation).
    #[error("{0} has no User-user information element, so no H323-UserInformation")]
    NoUserUser(MessageType),
    /// The PER decoder refused the H323-UserInformation.
    #[error(
        "cannot decode the {len}-octet H323-UserInformation at octet {at} of \
         {message_type}{}: {reason}",
        if *truncated { " (it ends too soon)" } else { "" }
    )]
    UserInformation {
        /// The message.
        message_type: MessageType,
        /// Where the PER octets start.
        at: usize,
        /// How many there are.
        len: usize,
        /// The octets ended before the value did, as opposed to octets that break the
        /// ASN.1.
        truncated: bool,
        /// The decoder's reason.
        reason: String,
    },
    /// The `h323-message-body` is an alternative that H.225.0 version 7 does not have (the
    /// rest of the value cannot be read past it).
    #[error(
        "the H323-UserInformation at octet {at} of {message_type} carries an \
         h323-message-body alternative that H.225.0 version 7 does not know"
    )]
    UnknownBody {
        /// The message.
        message_type: MessageType,
        /// Where the PER octets start.
        at: usize,
    },
    /// The H323-UserInformation decoded, but octets follow it inside the element.
    #[error(
        "the H323-UserInformation at octet {at} of {message_type} ends after {used} of the \
         element's {len} PER octets"
    )]
    TrailingData {
        /// The message.
        message_type: MessageType,
        /// Where the PER octets start.
        at: usize,
        /// Octets the value used.
        used: usize,
        /// Octets the element holds.
        len: usize,
    },
    /// A value to write is outside what its field can hold.
    #[error("cannot write {what} {value:?}: {why}")]
    Value {
        /// The field ("Display", "called party number", …).
        what: &'static str,
        /// The offending value.
        value: String,
        /// What the field allows.
        why: &'static str,
    },
    /// An alias to write breaks H.225.0's constraints.
    #[error("cannot write {what}: {source}")]
    Alias {
        /// Where the alias was to go (`sourceAddress`, `destinationAddress`).
        what: &'static str,
        /// What is wrong with it.
        #[source]
        source: AliasError,
    },
    /// The PER encoder refused the H323-UserInformation, or the result does not fit in a
    /// User-user element (at most 65,534 octets).
    #[error("cannot write the H323-UserInformation of {message_type}: {reason}")]
    Encode {
        /// The message.
        message_type: MessageType,
        /// Why.
        reason: String,
    },
}
