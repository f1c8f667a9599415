//! Reading the message type and `requestSeqNum` of a datagram that does not decode, so that
//! the gatekeeper can still answer it with XRS (`unknownMessageResponse`).
//!
//! In ALIGNED PER every RAS message starts the same way: the `RasMessage` CHOICE index (an
//! extension bit and 5 bits, or for extension alternatives a normally-small number and an
//! open-type length), then the message's SEQUENCE preamble (an extension bit and one bit per
//! OPTIONAL root component), then, octet-aligned, `requestSeqNum INTEGER (1..65535)` in two
//! octets. The preamble sizes come from the generated types' own field lists, so they cannot
//! drift from `asn1/`.

use rasn::types::Constructed;

use super::asn;
use super::kind::MessageKind;

/// Where `requestSeqNum` sits in one message SEQUENCE.
#[derive(Clone, Copy)]
struct Layout {
    /// Bits of the preamble: the extension bit and one per OPTIONAL/DEFAULT root component.
    preamble_bits: usize,
    /// Presence-bit positions (within the preamble) of the OPTIONAL components that come
    /// before `requestSeqNum`; each must be absent for the number to be found.
    must_be_absent: [Option<usize>; 2],
}

fn layout_of<T: Constructed<RL, EL>, const RL: usize, const EL: usize>() -> Option<Layout> {
    let mut must_be_absent = [None; 2];
    // Every component before `requestSeqNum` must be OPTIONAL, so the index of a component
    // is also the index of its presence bit.
    for (optional_seen, field) in T::FIELDS.iter().enumerate() {
        if field.name == "requestSeqNum" {
            return Some(Layout {
                preamble_bits: usize::from(T::IS_EXTENSIBLE)
                    + T::FIELDS.number_of_optional_and_default_fields(),
                must_be_absent,
            });
        }
        if !field.is_optional_or_default() {
            return None;
        }
        *must_be_absent.get_mut(optional_seen)? =
            Some(usize::from(T::IS_EXTENSIBLE) + optional_seen);
    }
    None
}

fn layout(kind: MessageKind) -> Option<Layout> {
    use MessageKind as K;
    match kind {
        K::Grq => layout_of::<asn::GatekeeperRequest, _, _>(),
        K::Gcf => layout_of::<asn::GatekeeperConfirm, _, _>(),
        K::Grj => layout_of::<asn::GatekeeperReject, _, _>(),
        K::Rrq => layout_of::<asn::RegistrationRequest, _, _>(),
        K::Rcf => layout_of::<asn::RegistrationConfirm, _, _>(),
        K::Rrj => layout_of::<asn::RegistrationReject, _, _>(),
        K::Urq => layout_of::<asn::UnregistrationRequest, _, _>(),
        K::Ucf => layout_of::<asn::UnregistrationConfirm, _, _>(),
        K::Urj => layout_of::<asn::UnregistrationReject, _, _>(),
        K::Arq => layout_of::<asn::AdmissionRequest, _, _>(),
        K::Acf => layout_of::<asn::AdmissionConfirm, _, _>(),
        K::Arj => layout_of::<asn::AdmissionReject, _, _>(),
        K::Brq => layout_of::<asn::BandwidthRequest, _, _>(),
        K::Bcf => layout_of::<asn::BandwidthConfirm, _, _>(),
        K::Brj => layout_of::<asn::BandwidthReject, _, _>(),
        K::Drq => layout_of::<asn::DisengageRequest, _, _>(),
        K::Dcf => layout_of::<asn::DisengageConfirm, _, _>(),
        K::Drj => layout_of::<asn::DisengageReject, _, _>(),
        K::Lrq => layout_of::<asn::LocationRequest, _, _>(),
        K::Lcf => layout_of::<asn::LocationConfirm, _, _>(),
        K::Lrj => layout_of::<asn::LocationReject, _, _>(),
        K::Irq => layout_of::<asn::InfoRequest, _, _>(),
        K::Irr => layout_of::<asn::InfoRequestResponse, _, _>(),
        K::Nsm => layout_of::<asn::NonStandardMessage, _, _>(),
        K::Xrs => layout_of::<asn::UnknownMessageResponse, _, _>(),
        K::Rip => layout_of::<asn::RequestInProgress, _, _>(),
        K::Rai => layout_of::<asn::ResourcesAvailableIndicate, _, _>(),
        K::Rac => layout_of::<asn::ResourcesAvailableConfirm, _, _>(),
        K::Iack => layout_of::<asn::InfoRequestAck, _, _>(),
        K::Inak => layout_of::<asn::InfoRequestNak, _, _>(),
        K::Sci => layout_of::<asn::ServiceControlIndication, _, _>(),
        K::Scr => layout_of::<asn::ServiceControlResponse, _, _>(),
        K::Acfseq => None,
    }
}

/// Number of root alternatives of `RasMessage` (GRQ … XRS).
const ROOT_ALTERNATIVES: usize = 25;

fn bit(bytes: &[u8], at: usize) -> Option<bool> {
    Some(bytes.get(at / 8)? & (0x80 >> (at % 8)) != 0)
}

fn bits(bytes: &[u8], at: usize, count: usize) -> Option<usize> {
    (at..at + count).try_fold(0, |acc, i| Some(acc << 1 | usize::from(bit(bytes, i)?)))
}

/// The message type and the bit offset where its SEQUENCE begins.
fn peek_choice(bytes: &[u8]) -> Option<(MessageKind, usize)> {
    if !bit(bytes, 0)? {
        let index = bits(bytes, 1, 5)?;
        return (index < ROOT_ALTERNATIVES)
            .then(|| MessageKind::from_index(index).map(|kind| (kind, 6)))
            .flatten();
    }
    // Extension alternative: a normally small number (0 and 6 bits), then an open type whose
    // length determinant is octet-aligned at octet 1.
    if bit(bytes, 1)? {
        return None;
    }
    let kind = MessageKind::from_index(ROOT_ALTERNATIVES + bits(bytes, 2, 6)?)?;
    let length = *bytes.get(1)?;
    let start = if length & 0x80 == 0 { 2 } else { 3 };
    Some((kind, start * 8))
}

/// The message type of a datagram, from its first octets only.
pub(crate) fn peek_kind(bytes: &[u8]) -> Option<MessageKind> {
    peek_choice(bytes).map(|(kind, _)| kind)
}

/// Where a datagram's `requestSeqNum` sits: the offset of its two octets, found from the
/// first octets only. `None` when the octets cannot be a RAS message's start.
pub fn request_seq_num_octet(bytes: &[u8]) -> Option<usize> {
    let (kind, start) = peek_choice(bytes)?;
    let layout = layout(kind)?;
    for position in layout.must_be_absent.into_iter().flatten() {
        if bit(bytes, start + position)? {
            return None;
        }
    }
    let octet = (start + layout.preamble_bits).div_ceil(8);
    bytes.get(octet..octet + 2)?;
    Some(octet)
}

/// The `requestSeqNum` of a datagram, read from its first octets only, even when the rest
/// does not decode. `None` when the octets cannot be a RAS message's start.
pub fn peek_request_seq_num(bytes: &[u8]) -> Option<u16> {
    let octet = request_seq_num_octet(bytes)?;
    let raw = u16::from_be_bytes([bytes[octet], bytes[octet + 1]]);
    raw.checked_add(1)
}

/// Writes `seq` as the `requestSeqNum` of an encoded request, where
/// [`peek_request_seq_num`] reads it; `None` (nothing written) where it reads nothing.
pub fn set_request_seq_num(bytes: &mut [u8], seq: u16) -> Option<()> {
    peek_request_seq_num(bytes)?;
    let octet = request_seq_num_octet(bytes)?;
    let raw = seq.checked_sub(1)?.to_be_bytes();
    bytes[octet..octet + 2].copy_from_slice(&raw);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sequence_number_written_is_the_one_encoded() {
        let mut phone = crate::phone::Phone::extension(
            60001,
            std::net::SocketAddr::from(([127, 1, 1, 1], 1719)),
        );
        phone.endpoint_id = crate::ras::reply::EndpointId::new("0000000A1").ok();
        let mut reused = phone.keep_alive().expect("a keep-alive");
        for _ in 0..300 {
            let fresh = phone.keep_alive().expect("a keep-alive");
            set_request_seq_num(&mut reused, phone.last_seq()).expect("written");
            assert_eq!(reused, fresh);
        }
        assert_eq!(set_request_seq_num(&mut [0xff, 0xff], 7), None);
        assert_eq!(set_request_seq_num(&mut reused, 0), None);
    }

    #[test]
    fn garbage_and_truncations_never_panic() {
        for len in 0..8 {
            for fill in [0x00, 0x55, 0xaa, 0xff] {
                let bytes = vec![fill; len];
                let _ = peek_request_seq_num(&bytes);
                let _ = peek_kind(&bytes);
            }
        }
    }
}
