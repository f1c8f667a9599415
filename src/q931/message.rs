//! Q.931 framing as H.225.0 uses it: the header (protocol discriminator, call reference,
//! message type) and the information elements, read in place ([`Message`]) and written
//! ([`MessageWriter`]).
//!
//! ```text
//!  08 │ 02 │ 80 2a │ 5a │ 08 02 81 90 │ 7e 00 1d 05 <PER…>
//!  PD   CRL  CRV     MT   Cause IE      User-user IE (2-octet length, then discriminator 05)
//! ```
//!
//! * Protocol discriminator 0x08 (Q.931).
//! * Call reference: a length octet, then that many octets. H.225.0 uses 2; 0 (the dummy
//!   call reference) and 1 are read too, more than 2 is an error. The first octet's bit 8 is
//!   the flag: 0 when the message comes from the side that chose the call reference (the
//!   caller), 1 when it goes to that side. The other bits are the value (15 of them with 2
//!   octets, 7 with 1).
//! * Message type, one octet ([`MessageType`]).
//! * Information elements. Bit 8 of the identifier set: a single-octet element (Sending
//!   complete 0xA1, a shift 0x9X, …), the identifier octet is all of it. Otherwise a
//!   variable-length element: identifier, one length octet, content. Except the User-user
//!   element 0x7E, whose length is two octets (big-endian) in H.225.0 (7.2.2.31), followed
//!   by a protocol discriminator (0x05: X.208/X.209 coded user information) and the PER
//!   encoding of the `H323-UserInformation`.
//!
//! Elements are looked up by their identifier octet alone. Codeset shifts are read as
//! single-octet elements and not followed: H.225.0 messages do not use them.

use bytes::{BufMut, Bytes, BytesMut};

use super::error::Q931Error;
use super::message_type::MessageType;

/// Q.931's protocol discriminator, the first octet of every message.
pub const PROTOCOL_DISCRIMINATOR: u8 = 0x08;

/// The User-user element's protocol discriminator for ASN.1 (X.208/X.209) coded user
/// information: what comes before the PER encoding of an `H323-UserInformation`.
pub const USER_USER_ASN1: u8 = 0x05;

/// Identifiers of the information elements rasgk reads or writes (codeset 0).
pub mod ie {
    /// Bearer capability (Q.931 4.5.5): mandatory in Setup.
    pub const BEARER_CAPABILITY: u8 = 0x04;
    /// Cause (Q.931 4.5.12, Q.850).
    pub const CAUSE: u8 = 0x08;
    /// Display (Q.931 4.5.16): IA5 text to show the user.
    pub const DISPLAY: u8 = 0x28;
    /// Calling party number (Q.931 4.5.10).
    pub const CALLING_PARTY_NUMBER: u8 = 0x6C;
    /// Called party number (Q.931 4.5.8).
    pub const CALLED_PARTY_NUMBER: u8 = 0x70;
    /// User-user (Q.931 4.5.30; H.225.0 7.2.2.31): the `H323-UserInformation`.
    pub const USER_USER: u8 = 0x7E;
}

/// The call reference of a message (Q.931 4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CallReference {
    /// The call reference value: 0..=0x7FFF (15 bits) in the 2 octets H.225.0 uses.
    pub value: u16,
    /// The flag (bit 8 of the first octet): `false` in messages sent by the side that chose
    /// the value (the caller: Setup, its Release Complete), `true` in messages sent to it
    /// (Call Proceeding, Alerting, Connect, the callee's Release Complete).
    pub from_destination: bool,
}

impl CallReference {
    /// The largest value 2 octets hold.
    pub const MAX: u16 = 0x7FFF;

    /// `value` in a message from the side that chose it (flag 0).
    pub fn from_originator(value: u16) -> CallReference {
        CallReference {
            value,
            from_destination: false,
        }
    }

    /// `value` in a message to the side that chose it (flag 1).
    pub fn to_originator(value: u16) -> CallReference {
        CallReference {
            value,
            from_destination: true,
        }
    }

    /// The same call reference as the other side writes it (the flag inverted).
    pub fn reversed(self) -> CallReference {
        CallReference {
            value: self.value,
            from_destination: !self.from_destination,
        }
    }

    /// The 2 octets on the wire. Bits of `value` above the 15th are not written (they are
    /// not part of any call reference value; [`with_call_reference`] refuses them).
    pub fn octets(self) -> [u8; 2] {
        let [high, low] = (self.value & Self::MAX).to_be_bytes();
        [high | if self.from_destination { 0x80 } else { 0 }, low]
    }
}

/// One information element of a message, borrowed from its octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InformationElement<'a> {
    /// The identifier octet (for a single-octet element, the whole element).
    pub id: u8,
    /// Where the element starts in the message (its identifier octet).
    pub at: usize,
    /// The content after the length field: empty for a single-octet element; for the
    /// User-user element, the protocol discriminator and then the user information.
    pub content: &'a [u8],
}

/// The header of a message and where its elements start.
struct Header {
    call_reference: CallReference,
    call_reference_length: u8,
    message_type: MessageType,
    /// Index of the message type octet; the elements start after it.
    message_type_at: usize,
}

fn header(payload: &[u8]) -> Result<Header, Q931Error> {
    let truncated = |what, at| Q931Error::Truncated {
        what,
        at,
        len: payload.len(),
    };
    let discriminator = *payload
        .first()
        .ok_or_else(|| truncated("protocol discriminator", 0))?;
    if discriminator != PROTOCOL_DISCRIMINATOR {
        return Err(Q931Error::ProtocolDiscriminator(discriminator));
    }
    let length = *payload
        .get(1)
        .ok_or_else(|| truncated("call reference length", 1))?;
    if length > 2 {
        return Err(Q931Error::CallReferenceLength(length));
    }
    let message_type_at = 2 + usize::from(length);
    let octets = payload
        .get(2..message_type_at)
        .ok_or_else(|| truncated("call reference value", payload.len()))?;
    let call_reference = match *octets {
        [] => CallReference::default(),
        [only] => CallReference {
            value: u16::from(only & 0x7F),
            from_destination: only & 0x80 != 0,
        },
        [high, low] => CallReference {
            value: u16::from_be_bytes([high & 0x7F, low]),
            from_destination: high & 0x80 != 0,
        },
        _ => return Err(Q931Error::CallReferenceLength(length)),
    };
    let message_type = MessageType::from_code(
        *payload
            .get(message_type_at)
            .ok_or_else(|| truncated("message type", message_type_at))?,
    );
    Ok(Header {
        call_reference,
        call_reference_length: length,
        message_type,
        message_type_at,
    })
}

/// The element starting at `at`, and where the next one starts; `None` at the end.
fn element_at<'a>(
    payload: &'a [u8],
    at: usize,
    message_type: MessageType,
) -> Result<Option<(InformationElement<'a>, usize)>, Q931Error> {
    let Some(&id) = payload.get(at) else {
        return Ok(None);
    };
    if id & 0x80 != 0 {
        let element = InformationElement {
            id,
            at,
            content: &[],
        };
        return Ok(Some((element, at + 1)));
    }
    let available = payload.len() - at;
    let truncated = |needed| Q931Error::ElementTruncated {
        message_type,
        id,
        at,
        needed,
        available,
    };
    let (length_octets, length) = if id == ie::USER_USER {
        match payload.get(at + 1..at + 3) {
            Some(&[high, low]) => (2, usize::from(u16::from_be_bytes([high, low]))),
            _ => return Err(truncated(3)),
        }
    } else {
        match payload.get(at + 1) {
            Some(&length) => (1, usize::from(length)),
            None => return Err(truncated(2)),
        }
    };
    if id == ie::USER_USER && length == 0 {
        return Err(Q931Error::UserUserEmpty { message_type, at });
    }
    let start = at + 1 + length_octets;
    let end = start + length;
    let content = payload.get(start..end).ok_or_else(|| truncated(end - at))?;
    Ok(Some((InformationElement { id, at, content }, end)))
}

/// The information elements of a [`Message`], in order.
#[derive(Debug, Clone)]
pub struct Elements<'a> {
    payload: &'a [u8],
    at: usize,
    message_type: MessageType,
}

impl<'a> Iterator for Elements<'a> {
    type Item = InformationElement<'a>;

    fn next(&mut self) -> Option<InformationElement<'a>> {
        // `Message::parse` read every element once, so this finds no error; stopping at one
        // would be the safe answer all the same.
        let (element, next) = element_at(self.payload, self.at, self.message_type).ok()??;
        self.at = next;
        Some(element)
    }
}

/// A Q.931 message read in place: the header decoded, the elements checked to fit and
/// borrowed from the octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// The call reference.
    pub call_reference: CallReference,
    /// How many octets the call reference had on the wire (0, 1 or 2).
    pub call_reference_length: u8,
    /// The message type.
    pub message_type: MessageType,
    /// The whole message.
    payload: &'a [u8],
    /// Where the elements start.
    elements_at: usize,
}

impl<'a> Message<'a> {
    /// Reads a message: `payload` is one TPKT frame's payload (no TPKT header). Every
    /// element is checked to fit inside the octets; their contents are not interpreted.
    /// Never panics, whatever the input.
    pub fn parse(payload: &'a [u8]) -> Result<Message<'a>, Q931Error> {
        let header = header(payload)?;
        let elements_at = header.message_type_at + 1;
        let mut at = elements_at;
        while let Some((_, next)) = element_at(payload, at, header.message_type)? {
            at = next;
        }
        Ok(Message {
            call_reference: header.call_reference,
            call_reference_length: header.call_reference_length,
            message_type: header.message_type,
            payload,
            elements_at,
        })
    }

    /// The octets the message was read from.
    pub fn octets(&self) -> &'a [u8] {
        self.payload
    }

    /// The information elements, in order.
    pub fn elements(&self) -> Elements<'a> {
        Elements {
            payload: self.payload,
            at: self.elements_at,
            message_type: self.message_type,
        }
    }

    /// The first element with identifier `id`.
    pub fn element(&self, id: u8) -> Option<InformationElement<'a>> {
        self.elements().find(|element| element.id == id)
    }

    /// The content of the first element with identifier `id` (see
    /// [`InformationElement::content`]).
    pub fn ie(&self, id: u8) -> Option<&'a [u8]> {
        self.element(id).map(|element| element.content)
    }

    /// The PER octets of the User-user element: what follows its protocol discriminator,
    /// when that is 0x05 (ASN.1). `None` without a User-user element or with another
    /// discriminator.
    pub fn user_user(&self) -> Option<&'a [u8]> {
        match self.ie(ie::USER_USER)? {
            [USER_USER_ASN1, per @ ..] => Some(per),
            _ => None,
        }
    }

    /// The digits of the Called party number (0x70): the content after the type of number
    /// and numbering plan octet (octet 3, and 3a… while bit 8 of each is 0). `None` without
    /// the element, or when no octet ends that group. Octets that are not IA5 become U+FFFD.
    pub fn called_party_number(&self) -> Option<String> {
        let content = self.ie(ie::CALLED_PARTY_NUMBER)?;
        let last_of_octet_3 = content.iter().position(|octet| octet & 0x80 != 0)?;
        Some(String::from_utf8_lossy(&content[last_of_octet_3 + 1..]).into_owned())
    }

    /// The cause value (7 bits, Q.850) of the Cause element (0x08): octet 4, after octet 3
    /// (coding standard, location) and, when bit 8 of octet 3 is 0, octet 3a
    /// (recommendation). `None` without the element or when it is too short to hold one.
    pub fn cause(&self) -> Option<u8> {
        let content = self.ie(ie::CAUSE)?;
        let octet_4 = if content.first()? & 0x80 != 0 { 1 } else { 2 };
        content.get(octet_4).map(|octet| octet & 0x7F)
    }

    /// The text of the Display element (0x28), octets that are not IA5 as U+FFFD.
    pub fn display(&self) -> Option<String> {
        let content = self.ie(ie::DISPLAY)?;
        Some(String::from_utf8_lossy(content).into_owned())
    }
}

/// The same message with another call reference, for a relay: the octets copied, the call
/// reference replaced by `call_reference` in 2 octets (whatever length it had). Only the
/// header is read (the elements are copied as they are).
pub fn with_call_reference(
    payload: &[u8],
    call_reference: CallReference,
) -> Result<Bytes, Q931Error> {
    if call_reference.value > CallReference::MAX {
        return Err(Q931Error::CallReferenceValue(call_reference.value));
    }
    let header = header(payload)?;
    let rest = &payload[header.message_type_at..];
    let mut out = BytesMut::with_capacity(4 + rest.len());
    out.put_u8(PROTOCOL_DISCRIMINATOR);
    out.put_u8(2);
    out.put_slice(&call_reference.octets());
    out.put_slice(rest);
    Ok(out.freeze())
}

/// Writes one message: the header, then the elements in the order they are given (Q.931
/// wants ascending identifiers within a codeset; the caller keeps to it).
#[derive(Debug)]
pub struct MessageWriter {
    message_type: MessageType,
    octets: BytesMut,
}

impl MessageWriter {
    /// A message of `message_type` with a 2-octet `call_reference` (see
    /// [`CallReference::octets`]).
    pub fn new(call_reference: CallReference, message_type: MessageType) -> MessageWriter {
        let mut octets = BytesMut::with_capacity(256);
        octets.put_u8(PROTOCOL_DISCRIMINATOR);
        octets.put_u8(2);
        octets.put_slice(&call_reference.octets());
        octets.put_u8(message_type.code());
        MessageWriter {
            message_type,
            octets,
        }
    }

    /// A variable-length element (not User-user: see [`MessageWriter::user_user`]). Fails
    /// when `content` is longer than a length octet can say (255).
    pub fn element(
        &mut self,
        id: u8,
        what: &'static str,
        content: &[u8],
    ) -> Result<&mut MessageWriter, Q931Error> {
        let length = u8::try_from(content.len()).map_err(|_| Q931Error::Value {
            what,
            value: format!("{} octets", content.len()),
            why: "an information element holds at most 255 octets",
        })?;
        self.octets.put_u8(id);
        self.octets.put_u8(length);
        self.octets.put_slice(content);
        Ok(self)
    }

    /// The User-user element: 2-octet length, discriminator 0x05, then `per` (the PER
    /// encoding of an `H323-UserInformation`). Fails when it does not fit the length.
    pub fn user_user(&mut self, per: &[u8]) -> Result<&mut MessageWriter, Q931Error> {
        let length = u16::try_from(per.len() + 1).map_err(|_| Q931Error::Encode {
            message_type: self.message_type,
            reason: format!(
                "{} PER octets do not fit in a User-user element (at most 65,534)",
                per.len()
            ),
        })?;
        self.octets.put_u8(ie::USER_USER);
        self.octets.put_u16(length);
        self.octets.put_u8(USER_USER_ASN1);
        self.octets.put_slice(per);
        Ok(self)
    }

    /// The message's octets.
    pub fn finish(self) -> Bytes {
        self.octets.freeze()
    }
}
