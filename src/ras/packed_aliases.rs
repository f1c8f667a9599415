//! A registration's aliases packed into one run of octets, held inline when short.
//!
//! A gatekeeper holds 100,000 registrations, nearly all with one or two short aliases (an
//! extension, a name). As `Box<[Alias]>` each took a block for the list and one for every
//! alias's text: 80 octets of heap for one extension, against the 8 octets it says. Packed,
//! the aliases are one sequence of (alternative, length, octets) — the text's UTF-8, or a
//! `transportID`'s address — held in the registration itself when it fits in
//! [`INLINE`] octets, and in one block of exactly its size when it does not. They are read
//! back as [`AliasView`]s, borrowed from the octets, so encoding an RCF or looking an alias
//! up allocates nothing.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use super::address::{Alias, AliasView};

/// Octets held in place: the registration's other fields need the alignment of a pointer,
/// so a list this long costs nothing beyond the boxed slice it replaces but a word.
const INLINE: usize = 22;

/// An endpoint's aliases, in the order given.
#[derive(Clone)]
pub struct PackedAliases(Octets);

#[derive(Clone)]
enum Octets {
    Inline { len: u8, octets: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Default for PackedAliases {
    fn default() -> PackedAliases {
        PackedAliases(Octets::Inline {
            len: 0,
            octets: [0; INLINE],
        })
    }
}

/// The octet naming each alternative.
const DIALLED_DIGITS: u8 = 0;
const H323_ID: u8 = 1;
const URL_ID: u8 = 2;
const EMAIL_ID: u8 = 3;
const TRANSPORT_ID: u8 = 4;
const OTHER: u8 = 5;

/// The octets being packed: in place while they fit, on the heap once they do not, so
/// that packing the usual short list allocates nothing.
struct Packer {
    inline: [u8; INLINE],
    len: usize,
    heap: Vec<u8>,
}

impl Packer {
    fn push(&mut self, octet: u8) {
        self.extend_from_slice(&[octet]);
    }

    fn extend_from_slice(&mut self, octets: &[u8]) {
        let end = self.len + octets.len();
        match self.inline.get_mut(self.len..end) {
            Some(room) if self.heap.is_empty() => room.copy_from_slice(octets),
            _ => {
                if self.heap.is_empty() {
                    self.heap.reserve(end.max(2 * INLINE));
                    self.heap.extend_from_slice(&self.inline[..self.len]);
                }
                self.heap.extend_from_slice(octets);
            }
        }
        self.len = end;
    }
}

/// Appends `value` as a LEB128 number.
fn push_length(out: &mut Packer, mut value: usize) {
    while value >= 0x80 {
        out.push((value & 0x7F) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A LEB128 number and what follows it.
fn read_length(octets: &[u8]) -> Option<(usize, &[u8])> {
    let mut value = 0usize;
    for (at, &octet) in octets.iter().enumerate().take(4) {
        value |= usize::from(octet & 0x7F) << (7 * at);
        if octet & 0x80 == 0 {
            return Some((value, &octets[at + 1..]));
        }
    }
    None
}

/// Appends one alias.
fn push_alias(out: &mut Packer, alias: AliasView<'_>) {
    let (kind, text) = match alias {
        AliasView::DialledDigits(text) => (DIALLED_DIGITS, text),
        AliasView::H323Id(text) => (H323_ID, text),
        AliasView::UrlId(text) => (URL_ID, text),
        AliasView::EmailId(text) => (EMAIL_ID, text),
        AliasView::Other(text) => (OTHER, text),
        AliasView::TransportId(address) => {
            out.push(TRANSPORT_ID);
            match address {
                SocketAddr::V4(address) => {
                    push_length(out, 6);
                    out.extend_from_slice(&address.ip().octets());
                    out.extend_from_slice(&address.port().to_be_bytes());
                }
                SocketAddr::V6(address) => {
                    push_length(out, 26);
                    out.extend_from_slice(&address.ip().octets());
                    out.extend_from_slice(&address.port().to_be_bytes());
                    out.extend_from_slice(&address.flowinfo().to_be_bytes());
                    out.extend_from_slice(&address.scope_id().to_be_bytes());
                }
            }
            return;
        }
    };
    out.push(kind);
    push_length(out, text.len());
    out.extend_from_slice(text.as_bytes());
}

/// The address a `transportID`'s octets hold.
fn address_of(octets: &[u8]) -> Option<SocketAddr> {
    let port = |at: usize| Some(u16::from_be_bytes(octets.get(at..at + 2)?.try_into().ok()?));
    let word = |at: usize| Some(u32::from_be_bytes(octets.get(at..at + 4)?.try_into().ok()?));
    match octets.len() {
        6 => {
            let ip: [u8; 4] = octets[..4].try_into().ok()?;
            Some(SocketAddrV4::new(Ipv4Addr::from(ip), port(4)?).into())
        }
        26 => {
            let ip: [u8; 16] = octets[..16].try_into().ok()?;
            Some(SocketAddrV6::new(Ipv6Addr::from(ip), port(16)?, word(18)?, word(22)?).into())
        }
        _ => None,
    }
}

/// The alias of one alternative's octets.
fn view(kind: u8, octets: &[u8]) -> AliasView<'_> {
    if kind == TRANSPORT_ID {
        return address_of(octets).map_or(AliasView::Other("transportID"), AliasView::TransportId);
    }
    // Written from a `str` by `push_alias`: always UTF-8.
    let text = std::str::from_utf8(octets).unwrap_or_default();
    match kind {
        DIALLED_DIGITS => AliasView::DialledDigits(text),
        H323_ID => AliasView::H323Id(text),
        URL_ID => AliasView::UrlId(text),
        EMAIL_ID => AliasView::EmailId(text),
        _ => AliasView::Other(text),
    }
}

impl PackedAliases {
    /// These aliases, packed.
    pub fn new<'a>(aliases: impl IntoIterator<Item = AliasView<'a>>) -> PackedAliases {
        let mut packer = Packer {
            inline: [0; INLINE],
            len: 0,
            heap: Vec::new(),
        };
        for alias in aliases {
            push_alias(&mut packer, alias);
        }
        match u8::try_from(packer.len) {
            Ok(len) if packer.heap.is_empty() => PackedAliases(Octets::Inline {
                len,
                octets: packer.inline,
            }),
            _ => PackedAliases(Octets::Heap(packer.heap.into_boxed_slice())),
        }
    }

    fn octets(&self) -> &[u8] {
        match &self.0 {
            Octets::Inline { len, octets } => &octets[..usize::from(*len)],
            Octets::Heap(octets) => octets,
        }
    }

    /// The aliases, in order.
    pub fn iter(&self) -> Iter<'_> {
        let rest = self.octets();
        let left = Iter { rest, left: 0 }.fold(0, |count, _| count + 1);
        Iter { rest, left }
    }

    /// How many aliases.
    pub fn len(&self) -> usize {
        self.iter().len()
    }

    /// No aliases?
    pub fn is_empty(&self) -> bool {
        self.octets().is_empty()
    }

    /// The first alias.
    pub fn first(&self) -> Option<AliasView<'_>> {
        self.iter().next()
    }

    /// The alias at `at`.
    pub fn get(&self, at: usize) -> Option<AliasView<'_>> {
        self.iter().nth(at)
    }

    /// The aliases, owned.
    pub fn to_vec(&self) -> Vec<Alias> {
        self.iter().map(AliasView::to_alias).collect()
    }
}

impl From<&[Alias]> for PackedAliases {
    fn from(aliases: &[Alias]) -> PackedAliases {
        PackedAliases::new(aliases.iter().map(Alias::view))
    }
}

impl PartialEq for PackedAliases {
    fn eq(&self, other: &PackedAliases) -> bool {
        self.octets() == other.octets()
    }
}

impl Eq for PackedAliases {}

impl fmt::Debug for PackedAliases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a PackedAliases {
    type Item = AliasView<'a>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The aliases of a [`PackedAliases`], in order.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    rest: &'a [u8],
    /// Aliases still to come (0 while [`PackedAliases::iter`] counts them).
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = AliasView<'a>;

    fn next(&mut self) -> Option<AliasView<'a>> {
        let (&kind, rest) = self.rest.split_first()?;
        let (len, rest) = read_length(rest)?;
        let (octets, rest) = rest.split_at_checked(len)?;
        self.rest = rest;
        self.left = self.left.saturating_sub(1);
        Some(view(kind, octets))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_come_back_as_they_went_in() {
        let long = "x".repeat(300);
        let lists: Vec<Vec<Alias>> = vec![
            vec![],
            vec![Alias::dialled_digits("100000").unwrap()],
            vec![
                Alias::dialled_digits("4711").unwrap(),
                Alias::h323_id("Zoë Müller").unwrap(),
            ],
            vec![
                Alias::H323Id(long),
                Alias::UrlId("http://x".into()),
                Alias::EmailId("a@b".into()),
                Alias::TransportId("127.0.0.1:1720".parse().unwrap()),
                Alias::TransportId("[fe80::1%3]:1720".parse().unwrap()),
                Alias::Other("partyNumber".into()),
            ],
        ];
        for aliases in lists {
            let packed = PackedAliases::from(&aliases[..]);
            assert_eq!(packed.to_vec(), aliases);
            assert_eq!(packed.len(), aliases.len());
            assert_eq!(packed.iter().len(), aliases.len());
            assert_eq!(packed.is_empty(), aliases.is_empty());
            assert_eq!(packed.first(), aliases.first().map(Alias::view));
            assert_eq!(packed.get(1), aliases.get(1).map(Alias::view));
            assert_eq!(packed, PackedAliases::new(aliases.iter().map(Alias::view)));
        }
    }

    #[test]
    fn an_extension_and_a_name_are_held_inline() {
        let aliases = [
            Alias::dialled_digits("1234567").unwrap(),
            Alias::h323_id("Phone 1234").unwrap(),
        ];
        let packed = PackedAliases::from(&aliases[..]);
        assert!(matches!(packed.0, Octets::Inline { .. }));
        assert_eq!(std::mem::size_of::<PackedAliases>(), 24);
    }
}
