//! Aliases and transport addresses: the ASN.1 `AliasAddress` and `TransportAddress` CHOICEs
//! mapped to plain Rust values, with the constraints of H.225.0 checked on the way in.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use rasn::types::{BmpString, Ia5String};

use super::asn;

/// One alias of an endpoint (`AliasAddress`).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Alias {
    /// `dialledDigits`: 1–128 of `0-9 # * ,` (an extension or E.164 number).
    DialledDigits(String),
    /// `h323-ID`: 1–256 BMP characters (a name).
    H323Id(String),
    /// `url-ID`: 1–512 IA5 characters.
    UrlId(String),
    /// `email-ID`: 1–512 IA5 characters.
    EmailId(String),
    /// `transportID`.
    TransportId(SocketAddr),
    /// An alternative rasgk keeps but does not interpret (`partyNumber`, `mobileUIM`,
    /// `isupNumber`, non-IP transport addresses, later extensions): its ASN.1 name.
    Other(String),
}

/// Why a string cannot be an alias of the kind asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AliasError {
    /// Too short or too long.
    #[error("{kind} alias {value:?} has {len} characters; H.225.0 allows {min} to {max}")]
    Length {
        /// The alternative.
        kind: &'static str,
        /// The offending value.
        value: String,
        /// Its length in characters.
        len: usize,
        /// Least allowed.
        min: usize,
        /// Most allowed.
        max: usize,
    },
    /// A character outside the alternative's alphabet.
    #[error("{kind} alias {value:?} contains {character:?}, which is not allowed ({allowed})")]
    Character {
        /// The alternative.
        kind: &'static str,
        /// The offending value.
        value: String,
        /// The first character not allowed.
        character: char,
        /// What is allowed.
        allowed: &'static str,
    },
}

const DIALLED_DIGITS: &str = "0123456789#*,";

fn check_length(kind: &'static str, value: &str, len: usize, max: usize) -> Result<(), AliasError> {
    if (1..=max).contains(&len) {
        Ok(())
    } else {
        Err(AliasError::Length {
            kind,
            value: value.to_string(),
            len,
            min: 1,
            max,
        })
    }
}

fn check_chars(
    kind: &'static str,
    value: &str,
    allowed: &'static str,
    ok: impl Fn(char) -> bool,
) -> Result<(), AliasError> {
    match value.chars().find(|&c| !ok(c)) {
        None => Ok(()),
        Some(character) => Err(AliasError::Character {
            kind,
            value: value.to_string(),
            character,
            allowed,
        }),
    }
}

fn ia5(kind: &'static str, value: &str, max: usize) -> Result<Ia5String, AliasError> {
    check_length(kind, value, value.chars().count(), max)?;
    check_chars(kind, value, "IA5 (ASCII) characters", |c| c.is_ascii())?;
    Ok(Ia5String::from_iso646_bytes(value.as_bytes()).expect("checked to be ASCII"))
}

/// A BMPString from UTF-8 text. (rasn's `TryFrom<String>` reads the UTF-8 octets as UCS-2
/// pairs, which is not what anyone wants.)
pub(crate) fn bmp(kind: &'static str, value: &str, max: usize) -> Result<BmpString, AliasError> {
    check_length(kind, value, value.chars().count(), max)?;
    check_chars(
        kind,
        value,
        "characters of the Basic Multilingual Plane",
        |c| (c as u32) < 0xFFFE,
    )?;
    let octets: Vec<u8> = value.encode_utf16().flat_map(u16::to_be_bytes).collect();
    Ok(BmpString::try_from(&octets[..]).expect("checked to be in the BMP"))
}

/// UTF-8 text from a BMPString; unpaired surrogates become U+FFFD.
pub(crate) fn bmp_text(value: &BmpString) -> String {
    utf16be_text(&value.to_bytes())
}

/// The text of BMP characters given as UTF-16BE octets (a lone surrogate becomes U+FFFD).
pub(crate) fn utf16be_text(octets: &[u8]) -> String {
    let units: Vec<u16> = octets
        .chunks_exact(2)
        .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
        .collect();
    String::from_utf16_lossy(&units)
}

impl Alias {
    /// A `dialledDigits` alias, checked.
    pub fn dialled_digits(digits: &str) -> Result<Alias, AliasError> {
        check_length("dialledDigits", digits, digits.len(), 128)?;
        check_chars("dialledDigits", digits, "0-9 # * ,", |c| {
            DIALLED_DIGITS.contains(c)
        })?;
        Ok(Alias::DialledDigits(digits.to_string()))
    }

    /// An `h323-ID` alias, checked.
    pub fn h323_id(name: &str) -> Result<Alias, AliasError> {
        bmp("h323-ID", name, 256)?;
        Ok(Alias::H323Id(name.to_string()))
    }

    /// The ASN.1 value. Fails only for values built without the checked constructors.
    pub fn to_asn(&self) -> Result<asn::AliasAddress, AliasError> {
        Ok(match self {
            Alias::DialledDigits(digits) => {
                Alias::dialled_digits(digits)?; // length and alphabet, a subset of IA5
                asn::AliasAddress::dialledDigits(
                    Ia5String::from_iso646_bytes(digits.as_bytes()).expect("checked digits"),
                )
            }
            Alias::H323Id(name) => asn::AliasAddress::h323_ID(bmp("h323-ID", name, 256)?),
            Alias::UrlId(url) => asn::AliasAddress::url_ID(ia5("url-ID", url, 512)?),
            Alias::EmailId(email) => asn::AliasAddress::email_ID(ia5("email-ID", email, 512)?),
            Alias::TransportId(address) => {
                asn::AliasAddress::transportID(transport_address(*address))
            }
            Alias::Other(name) => {
                return Err(AliasError::Character {
                    kind: "other",
                    value: name.clone(),
                    character: '?',
                    allowed: "only the alternatives rasgk interprets can be encoded",
                })
            }
        })
    }

    /// The alias an ASN.1 value carries.
    pub fn from_asn(alias: &asn::AliasAddress) -> Alias {
        match alias {
            asn::AliasAddress::dialledDigits(digits) => Alias::DialledDigits(digits.to_string()),
            asn::AliasAddress::h323_ID(name) => Alias::H323Id(bmp_text(name)),
            asn::AliasAddress::url_ID(url) => Alias::UrlId(url.to_string()),
            asn::AliasAddress::email_ID(email) => Alias::EmailId(email.to_string()),
            asn::AliasAddress::transportID(address) => match socket_addr(address) {
                Some(address) => Alias::TransportId(address),
                None => Alias::Other("transportID".to_string()),
            },
            asn::AliasAddress::partyNumber(_) => Alias::Other("partyNumber".to_string()),
            asn::AliasAddress::mobileUIM(_) => Alias::Other("mobileUIM".to_string()),
            asn::AliasAddress::isupNumber(_) => Alias::Other("isupNumber".to_string()),
        }
    }
}

impl fmt::Display for Alias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.view().fmt(f)
    }
}

/// An [`Alias`] borrowed: the same alternatives, the text not owned (as a registration's
/// packed aliases hand them out, see [`PackedAliases`](super::PackedAliases)). Equal views
/// are views of equal aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AliasView<'a> {
    /// `dialledDigits`.
    DialledDigits(&'a str),
    /// `h323-ID`.
    H323Id(&'a str),
    /// `url-ID`.
    UrlId(&'a str),
    /// `email-ID`.
    EmailId(&'a str),
    /// `transportID`.
    TransportId(SocketAddr),
    /// An alternative rasgk keeps but does not interpret: its ASN.1 name.
    Other(&'a str),
}

impl Alias {
    /// The alias borrowed.
    pub fn view(&self) -> AliasView<'_> {
        match self {
            Alias::DialledDigits(text) => AliasView::DialledDigits(text),
            Alias::H323Id(text) => AliasView::H323Id(text),
            Alias::UrlId(text) => AliasView::UrlId(text),
            Alias::EmailId(text) => AliasView::EmailId(text),
            Alias::TransportId(address) => AliasView::TransportId(*address),
            Alias::Other(text) => AliasView::Other(text),
        }
    }
}

impl AliasView<'_> {
    /// The alias owned.
    pub fn to_alias(self) -> Alias {
        match self {
            AliasView::DialledDigits(text) => Alias::DialledDigits(text.to_string()),
            AliasView::H323Id(text) => Alias::H323Id(text.to_string()),
            AliasView::UrlId(text) => Alias::UrlId(text.to_string()),
            AliasView::EmailId(text) => Alias::EmailId(text.to_string()),
            AliasView::TransportId(address) => Alias::TransportId(address),
            AliasView::Other(text) => Alias::Other(text.to_string()),
        }
    }
}

impl fmt::Display for AliasView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AliasView::DialledDigits(digits) => f.write_str(digits),
            AliasView::H323Id(name) => write!(f, "h323-ID:{name}"),
            AliasView::UrlId(url) => write!(f, "url-ID:{url}"),
            AliasView::EmailId(email) => write!(f, "email-ID:{email}"),
            AliasView::TransportId(address) => write!(f, "transportID:{address}"),
            AliasView::Other(name) => write!(f, "{name}"),
        }
    }
}

/// The `TransportAddress` of a socket address (`ipAddress` or `ip6Address`).
pub fn transport_address(address: SocketAddr) -> asn::TransportAddress {
    match address.ip() {
        IpAddr::V4(ip) => asn::TransportAddress::ipAddress(asn::TransportAddressIpAddress::new(
            rasn::types::OctetString::from(&ip.octets()[..]),
            address.port(),
        )),
        IpAddr::V6(ip) => asn::TransportAddress::ip6Address(asn::TransportAddressIp6Address::new(
            rasn::types::OctetString::from(&ip.octets()[..]),
            address.port(),
        )),
    }
}

/// The socket address of an `ipAddress` or `ip6Address`; `None` for other alternatives.
pub fn socket_addr(address: &asn::TransportAddress) -> Option<SocketAddr> {
    match address {
        asn::TransportAddress::ipAddress(a) => {
            let octets: [u8; 4] = a.ip.as_ref().try_into().ok()?;
            Some(SocketAddr::new(Ipv4Addr::from(octets).into(), a.port))
        }
        asn::TransportAddress::ip6Address(a) => {
            let octets: [u8; 16] = a.ip.as_ref().try_into().ok()?;
            Some(SocketAddr::new(Ipv6Addr::from(octets).into(), a.port))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_constructors_refuse_what_h225_forbids() {
        assert!(Alias::dialled_digits("5000#*,").is_ok());
        assert!(matches!(
            Alias::dialled_digits("50a0"),
            Err(AliasError::Character { character: 'a', .. })
        ));
        assert!(matches!(
            Alias::dialled_digits(""),
            Err(AliasError::Length { .. })
        ));
        assert!(Alias::dialled_digits(&"1".repeat(129)).is_err());
        assert!(Alias::h323_id("Zoë ☎").is_ok());
        assert!(Alias::h323_id("😀").is_err());
        assert!(Alias::h323_id(&"x".repeat(257)).is_err());
    }

    #[test]
    fn aliases_round_trip_through_asn() {
        for alias in [
            Alias::dialled_digits("50000").unwrap(),
            Alias::h323_id("Zoë ☎").unwrap(),
            Alias::UrlId("h323:alice@example".into()),
            Alias::EmailId("alice@example".into()),
            Alias::TransportId("127.0.0.1:1720".parse().unwrap()),
        ] {
            assert_eq!(Alias::from_asn(&alias.to_asn().unwrap()), alias);
        }
    }

    #[test]
    fn socket_addresses_round_trip() {
        for text in ["127.1.0.1:1719", "[::1]:1720"] {
            let address: SocketAddr = text.parse().unwrap();
            assert_eq!(socket_addr(&transport_address(address)), Some(address));
        }
    }
}
