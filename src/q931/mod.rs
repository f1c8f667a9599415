//! H.225.0 call signalling on the wire: Q.931 messages whose User-user information element
//! carries an ALIGNED PER `H323-UserInformation`, as H.323 endpoints exchange them over
//! TPKT over TCP (port 1720). A pure codec: no sockets, no state.
//!
//! - `message.rs`: Q.931 framing. [`Message::parse`] reads the header (protocol
//!   discriminator, [`CallReference`], [`MessageType`]) and borrows the information
//!   elements; [`with_call_reference`] copies a message under another call reference (for a
//!   relay); [`MessageWriter`] writes one.
//! - `message_type.rs`: [`MessageType`], the message type octet.
//! - `uuie.rs`: the `H323-UserInformation` of the User-user element, through the generated
//!   types of [`crate::ras::asn`] and rasn's APER codec: [`user_information`] decodes it,
//!   [`facts`] reads a message and the [`Facts`] a relay needs in one go.
//! - `build.rs`: the messages rasgk writes: [`release_complete`] (the gatekeeper, with a
//!   [`Release`] reason), and [`setup`], [`call_proceeding`], [`alerting`] and [`connect`]
//!   (the phone simulator).
//! - `error.rs`: [`Q931Error`], what was wrong and at which octet.
//! - `tests.rs`: unit and property tests (hand-written octets, builders read back, no
//!   panics).
//!
//! ```text
//!  TPKT payload ──Message::parse──▶ Message ──user_information──▶ H323UserInformation
//!        │                            │ ie / cause / called_party_number
//!        └──────────facts───────────▶ (Message, Facts)
//!  build::* ──▶ payload ──crate::tpkt::frame──▶ TPKT frame
//! ```
//!
//! Every reader here returns an error for bad input and never panics (a proptest and the
//! `q931` fuzz target check it).

mod build;
mod error;
mod message;
mod message_type;
#[cfg(test)]
mod tests;
mod uuie;

pub use build::{
    alerting, call_proceeding, connect, release_complete, setup, Release, Setup, SPEECH_BEARER,
};
pub use error::Q931Error;
pub use message::{
    ie, with_call_reference, CallReference, Elements, InformationElement, Message, MessageWriter,
    PROTOCOL_DISCRIMINATOR, USER_USER_ASN1,
};
pub use message_type::MessageType;
pub use uuie::{
    encode as encode_user_information, facts, release_reason_name, user_information,
    user_information_of, BodyKind, Facts, H323UserInformation,
};
