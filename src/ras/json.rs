//! Any RAS message as JSON: every field of every alternative, named by its ASN.1 identifier,
//! in the shape of the JSON Encoding Rules (X.697) — a SEQUENCE is an object, a CHOICE a
//! one-member object, a SEQUENCE OF an array.
//!
//! The value is written by [`JsonWriter`], an encoder for rasn's `Encoder` trait, so it walks
//! the generated types the way the PER encoder does and cannot miss an alternative. It
//! exists because rasn 0.30's own JER encoder cannot be trusted with text: it writes a
//! BMPString's UTF-16BE octets as if they were UTF-8, so `Zoë` fails (and the message fell
//! back to a Rust `Debug` dump), and CJK text such as `张伟` (octets `5F 20 4F 1F`) is valid
//! UTF-8 and came out as the wrong text `_ O\u{1f}` without an error. Here:
//!
//! - BMPString: the text, decoded as UTF-16 (a surrogate pair is one character of an astral
//!   plane, as Windows-based H.323 endpoints send it). An unpaired surrogate becomes U+FFFD
//!   and is counted in [`Rendered::unpaired_surrogates`], so the replacement is never silent.
//! - IA5String and the other octet-based strings: one character per octet (ISO 8859-1 for
//!   octets above 0x7F, which IA5 does not allow but a peer may send).
//! - OCTET STRING and open types (`TYPE-IDENTIFIER.&Type`, e.g. `EncodedPwdCertToken`): hex.
//! - BIT STRING: hex; with its `length` in bits unless the size is fixed (X.697 §7.2.1).
//! - OBJECT IDENTIFIER: dotted (`0.0.8.2250.0.4`). INTEGER: a number. NULL: `null`.
//!
//! Rendering never fails and never panics: whatever rasn decoded can be written.
//!
//! What it cannot show: extension additions of a later H.225.0 version than the one in
//! `asn1/` (v7). rasn's PER decoder steps over unknown SEQUENCE extension additions without
//! keeping their octets (X.691 §19.9 lets it), so they are not in the decoded value; an
//! unknown CHOICE alternative does not decode at all.

use rasn::enc::Error as _;
use rasn::error::EncodeError;
use rasn::types::{
    variants, BitStr, BmpString, Constraints, Constructed, Identifier, IntegerType, RealType,
    SetOf, Tag,
};
use rasn::{Codec, Encode};
use serde_json::{Map, Value};

use super::asn::RasMessage;

/// A message as JSON, and what the rendering had to replace.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The message (see the module doc).
    pub value: Value,
    /// UTF-16 code units in BMPStrings that belong to no surrogate pair; each is U+FFFD in
    /// `value`.
    pub unpaired_surrogates: usize,
}

/// The whole message as JSON (see the module doc).
pub fn render(message: &RasMessage) -> Rendered {
    let mut writer = JsonWriter::default();
    match message.encode(&mut writer) {
        Ok(()) => Rendered {
            value: writer.root.unwrap_or(Value::Null),
            unpaired_surrogates: writer.unpaired_surrogates,
        },
        // Unreachable for the generated types (every method below succeeds); kept as JSON
        // all the same, never a panic.
        Err(error) => Rendered {
            value: serde_json::json!({ "render_error": error.to_string() }),
            unpaired_surrogates: writer.unpaired_surrogates,
        },
    }
}

/// The whole message as JSON, without the count of replaced surrogates.
pub fn to_json(message: &RasMessage) -> Value {
    render(message).value
}

/// The text of UTF-16 code units; each unpaired surrogate becomes U+FFFD. Returns the text
/// and how many were replaced.
pub(crate) fn utf16_text(units: impl IntoIterator<Item = u16>) -> (String, usize) {
    let mut unpaired = 0;
    let text = char::decode_utf16(units)
        .map(|unit| {
            unit.unwrap_or_else(|_| {
                unpaired += 1;
                char::REPLACEMENT_CHARACTER
            })
        })
        .collect();
    (text, unpaired)
}

fn hex(octets: &[u8]) -> String {
    use std::fmt::Write as _;
    octets
        .iter()
        .fold(String::with_capacity(octets.len() * 2), |mut out, octet| {
            let _ = write!(out, "{octet:02X}");
            out
        })
}

/// One character per octet: ASCII as itself, octets above 0x7F as ISO 8859-1.
fn octet_text(octets: &[u8]) -> String {
    octets.iter().map(|&octet| char::from(octet)).collect()
}

/// An encoder for rasn's `Encoder` trait that builds a `serde_json::Value`.
///
/// The field names of a SEQUENCE are pushed on `names` (last field first) when it starts;
/// every field then takes its name off the stack, whether it writes a value or is absent
/// (`encode_none`). This is how rasn's own JER encoder names fields, and it works because the
/// derived `Encode` makes exactly one call per field, in declaration order.
#[derive(Debug, Default)]
struct JsonWriter {
    /// Names of the fields still to come in the open SEQUENCEs, next one last.
    names: Vec<&'static str>,
    /// The open SEQUENCEs and CHOICEs, innermost last.
    objects: Vec<Map<String, Value>>,
    /// The finished value, once the outermost one is written.
    root: Option<Value>,
    /// See [`Rendered::unpaired_surrogates`].
    unpaired_surrogates: usize,
}

impl JsonWriter {
    /// Puts a finished value where it belongs: as the next field of the innermost open
    /// object, or as the result.
    fn put(&mut self, value: Value) -> Result<(), EncodeError> {
        match self.names.pop() {
            Some(name) => {
                let object = self.objects.last_mut().ok_or_else(|| {
                    EncodeError::custom("a field outside any SEQUENCE", Codec::Jer)
                })?;
                object.insert(name.to_string(), value);
            }
            None => self.root = Some(value),
        }
        Ok(())
    }

    /// Encodes `value` on its own (an element of a SEQUENCE OF) and returns it.
    fn element<E: Encode>(&mut self, value: &E) -> Result<Value, EncodeError> {
        let mut inner = JsonWriter::default();
        value.encode(&mut inner)?;
        self.unpaired_surrogates += inner.unpaired_surrogates;
        Ok(inner.root.unwrap_or(Value::Null))
    }

    /// Runs `fields` inside a new object whose field names are `names` in order.
    fn object(
        &mut self,
        names: impl DoubleEndedIterator<Item = &'static str>,
        fields: impl FnOnce(&mut Self) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let depth = self.names.len();
        self.names.extend(names.rev());
        self.objects.push(Map::new());
        fields(self)?;
        let object = self
            .objects
            .pop()
            .ok_or_else(|| EncodeError::custom("object stack out of step", Codec::Jer))?;
        // Fields the derived code did not visit (none, for the generated types) must not
        // name the next value of the enclosing object.
        self.names.truncate(depth);
        self.put(Value::Object(object))
    }
}

impl rasn::Encoder<'_> for JsonWriter {
    type Ok = ();
    type Error = EncodeError;
    type AnyEncoder<'this, const R: usize, const E: usize> = JsonWriter;

    fn codec(&self) -> Codec {
        Codec::Jer
    }

    fn encode_any(
        &mut self,
        _: Tag,
        value: &rasn::types::Any,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(hex(value.as_bytes())))
    }

    fn encode_bool(&mut self, _: Tag, value: bool, _: Identifier) -> Result<(), EncodeError> {
        self.put(Value::Bool(value))
    }

    fn encode_bit_string(
        &mut self,
        _: Tag,
        constraints: &Constraints,
        value: &BitStr,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        let mut bits = value.to_bitvec();
        bits.force_align();
        let octets = hex(bits.as_raw_slice());
        let fixed = !constraints.extensible()
            && constraints.size().is_some_and(|s| s.constraint.is_fixed());
        self.put(if fixed {
            Value::String(octets)
        } else {
            serde_json::json!({ "value": octets, "length": value.len() })
        })
    }

    fn encode_enumerated<E: rasn::types::Enumerated>(
        &mut self,
        _: Tag,
        value: &E,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(value.identifier().to_string()))
    }

    fn encode_object_identifier(
        &mut self,
        _: Tag,
        value: &[u32],
        _: Identifier,
    ) -> Result<(), EncodeError> {
        let dotted: Vec<String> = value.iter().map(u32::to_string).collect();
        self.put(Value::String(dotted.join(".")))
    }

    fn encode_integer<I: IntegerType>(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &I,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        let number = match (value.to_i64(), value.to_u64()) {
            (Some(small), _) => Value::from(small),
            (None, Some(large)) => Value::from(large),
            // Beyond 64 bits (no RAS INTEGER is): its decimal digits.
            (None, None) => Value::String(value.to_bigint().unwrap_or_default().to_string()),
        };
        self.put(number)
    }

    fn encode_real<R: RealType>(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &R,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        // No REAL in RAS: a number where JSON can hold it, else rasn's text for it.
        let text = value.to_string();
        let value = text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(text), Value::Number);
        self.put(value)
    }

    fn encode_null(&mut self, _: Tag, _: Identifier) -> Result<(), EncodeError> {
        self.put(Value::Null)
    }

    fn encode_octet_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &[u8],
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(hex(value)))
    }

    fn encode_general_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &rasn::types::GeneralString,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(octet_text(value.as_bytes())))
    }

    fn encode_graphic_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &rasn::types::GraphicString,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(octet_text(value.as_bytes())))
    }

    fn encode_utf8_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &str,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(value.to_string()))
    }

    fn encode_visible_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &rasn::types::VisibleString,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(octet_text(value.as_iso646_bytes())))
    }

    fn encode_ia5_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &rasn::types::Ia5String,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(octet_text(value.as_iso646_bytes())))
    }

    fn encode_printable_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &rasn::types::PrintableString,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(octet_text(value.as_bytes())))
    }

    fn encode_numeric_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &rasn::types::NumericString,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(octet_text(value.as_bytes())))
    }

    fn encode_teletex_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &rasn::types::TeletexString,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        // Not reachable from RAS; T.61 is not ISO 8859-1, so its octets, in hex.
        self.put(Value::String(hex(&value.to_bytes())))
    }

    fn encode_bmp_string(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &BmpString,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        let octets = value.to_bytes();
        let units = octets
            .chunks_exact(2)
            .map(|pair| u16::from_be_bytes([pair[0], pair[1]]));
        let (text, unpaired) = utf16_text(units);
        self.unpaired_surrogates += unpaired;
        self.put(Value::String(text))
    }

    fn encode_generalized_time(
        &mut self,
        _: Tag,
        value: &rasn::types::GeneralizedTime,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(value.to_rfc3339()))
    }

    fn encode_utc_time(
        &mut self,
        _: Tag,
        value: &rasn::types::UtcTime,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(value.to_rfc3339()))
    }

    fn encode_date(
        &mut self,
        _: Tag,
        value: &rasn::types::Date,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        self.put(Value::String(value.to_string()))
    }

    fn encode_explicit_prefix<V: Encode>(
        &mut self,
        _: Tag,
        value: &V,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        value.encode(self)
    }

    fn encode_sequence<'b, const RL: usize, const EL: usize, C, F>(
        &'b mut self,
        _: Tag,
        fields: F,
        _: Identifier,
    ) -> Result<(), EncodeError>
    where
        C: Constructed<RL, EL>,
        F: FnOnce(&mut Self::AnyEncoder<'b, RL, EL>) -> Result<(), EncodeError>,
    {
        let names = C::FIELDS
            .iter()
            .chain(C::EXTENDED_FIELDS.iter().flat_map(|fields| fields.iter()))
            .map(|field| field.name)
            .collect::<Vec<_>>();
        self.object(names.into_iter(), fields)
    }

    fn encode_sequence_of<E: Encode>(
        &mut self,
        _: Tag,
        value: &[E],
        _: &Constraints,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        let items = value
            .iter()
            .map(|item| self.element(item))
            .collect::<Result<Vec<_>, _>>()?;
        self.put(Value::Array(items))
    }

    fn encode_set<'b, const RL: usize, const EL: usize, C, F>(
        &'b mut self,
        tag: Tag,
        fields: F,
        identifier: Identifier,
    ) -> Result<(), EncodeError>
    where
        C: Constructed<RL, EL>,
        F: FnOnce(&mut Self::AnyEncoder<'b, RL, EL>) -> Result<(), EncodeError>,
    {
        self.encode_sequence::<RL, EL, C, F>(tag, fields, identifier)
    }

    fn encode_set_of<E: Encode + Eq + core::hash::Hash>(
        &mut self,
        _: Tag,
        value: &SetOf<E>,
        _: &Constraints,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        let items = value
            .to_vec()
            .into_iter()
            .map(|item| self.element(item))
            .collect::<Result<Vec<_>, _>>()?;
        self.put(Value::Array(items))
    }

    fn encode_some<E: Encode>(&mut self, value: &E, _: Identifier) -> Result<(), EncodeError> {
        value.encode(self)
    }

    fn encode_some_with_tag_and_constraints<E: Encode>(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: &E,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        value.encode(self)
    }

    fn encode_none<E: Encode>(&mut self, _: Identifier) -> Result<(), EncodeError> {
        self.names.pop();
        Ok(())
    }

    fn encode_none_with_tag(&mut self, _: Tag, _: Identifier) -> Result<(), EncodeError> {
        self.names.pop();
        Ok(())
    }

    fn encode_choice<E: Encode + rasn::types::Choice>(
        &mut self,
        _: &Constraints,
        tag: Tag,
        alternative: impl FnOnce(&mut Self) -> Result<Tag, EncodeError>,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        let tags = variants::Variants::from_slice(
            &[E::VARIANTS, E::EXTENDED_VARIANTS.unwrap_or(&[])].concat(),
        );
        let name = tags
            .iter()
            .position(|&variant| variant == tag)
            .and_then(|i| E::IDENTIFIERS.get(i).copied())
            .ok_or_else(|| EncodeError::variant_not_in_choice(Codec::Jer))?;
        self.object(std::iter::once(name), |writer| {
            alternative(writer).map(drop)
        })
    }

    fn encode_extension_addition<E: Encode>(
        &mut self,
        _: Tag,
        _: &Constraints,
        value: E,
        _: Identifier,
    ) -> Result<(), EncodeError> {
        value.encode(self)
    }

    fn encode_extension_addition_group<const RL: usize, const EL: usize, E>(
        &mut self,
        value: Option<&E>,
        _: Identifier,
    ) -> Result<(), EncodeError>
    where
        E: Encode + Constructed<RL, EL>,
    {
        match value {
            Some(group) => group.encode(self),
            None => {
                self.names.pop();
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ras::reply::{self, GatekeeperId};

    #[test]
    fn utf16_pairs_are_one_character_and_lone_surrogates_are_counted() {
        let units: Vec<u16> = "a😀b".encode_utf16().collect();
        assert_eq!(utf16_text(units), ("a😀b".to_string(), 0));
        // A high surrogate followed by a letter, and a low one at the end.
        assert_eq!(
            utf16_text([0xD83D, 0x61, 0xDE00]),
            ("\u{FFFD}a\u{FFFD}".to_string(), 2)
        );
        assert_eq!(utf16_text([]), (String::new(), 0));
    }

    #[test]
    fn a_gcf_has_every_field_by_its_asn1_identifier() {
        let gk = GatekeeperId::new("Ελένη 张伟").unwrap();
        let gcf = reply::gatekeeper_confirm(7, &gk, "127.0.1.3:1719".parse().unwrap());
        let rendered = render(&gcf);
        assert_eq!(rendered.unpaired_surrogates, 0);
        let body = &rendered.value["gatekeeperConfirm"];
        assert_eq!(rendered.value.as_object().map(Map::len), Some(1));
        assert_eq!(body["requestSeqNum"], 7);
        assert_eq!(body["protocolIdentifier"], "0.0.8.2250.0.4");
        assert_eq!(body["gatekeeperIdentifier"], "Ελένη 张伟");
        assert_eq!(body["rasAddress"]["ipAddress"]["ip"], "7F000103");
        assert_eq!(body["rasAddress"]["ipAddress"]["port"], 1719);
    }
}
