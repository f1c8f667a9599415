//! H.235 password authentication as RAS carries it: the `cryptoEPPwdHash` CryptoH323Token
//! (H.225.0 §7.x, H.235 "password with hashing"), built by a phone and checked by the
//! gatekeeper.
//!
//! The token sends an alias, a `timeStamp` (UNIX seconds) and an MD5 hash, never the password.
//! The hash is over the ALIGNED PER encoding of an H.235 `ClearToken` (the
//! `EncodedPwdCertToken` of the ASN.1) holding
//!
//! | field | value |
//! |---|---|
//! | `tokenOID` | `0.0` |
//! | `timeStamp` | the token's `timeStamp` |
//! | `password` | the password as a BMPString, with a terminating U+0000 |
//! | `generalID` | the alias's text as a BMPString, with a terminating U+0000 |
//!
//! and the token's `algorithmOID` is MD5 (1.2.840.113549.2.5), its `paramS` empty and its
//! `hash` the 128-bit digest. That is the construction Cisco gatekeepers check and the
//! OpenH323 family of endpoints sends (their "Cisco compatible" `H235AuthSimpleMD5`, with the
//! trailing NUL on both strings). The hash covers neither the rest of the message nor the
//! source address: it proves the sender knows the password at `timeStamp`, nothing more,
//! so the gatekeeper bounds how old a `timeStamp` may be and refuses one older than the
//! newest it accepted for the alias.

use md5::{Digest, Md5};
use rasn::types::{BitString, ObjectIdentifier};

use super::address::{bmp, Alias, AliasError};
use super::asn::{self, h235};

/// The `algorithmOID` of MD5.
pub const MD5_OID: [u32; 6] = [1, 2, 840, 113_549, 2, 5];

/// The `tokenOID` of the hashed `ClearToken`.
const CLEAR_TOKEN_OID: [u32; 2] = [0, 0];

/// Longest password or alias text: the BMPStrings are 1..128 characters with the NUL.
pub const MAX_TEXT: usize = 127;

/// The text an alias is hashed (and matched against `[[password]] alias`) as: the digits
/// of `dialledDigits`, the name of an `h323-ID`, the URL or e-mail address; `None` for
/// aliases without such a text.
pub fn alias_text(alias: &Alias) -> Option<&str> {
    match alias {
        Alias::DialledDigits(text)
        | Alias::H323Id(text)
        | Alias::UrlId(text)
        | Alias::EmailId(text) => Some(text),
        Alias::TransportId(_) | Alias::Other(_) => None,
    }
}

/// Why a token cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// A password or alias text that the ClearToken cannot hold.
    #[error("the {0} needs 1 to {MAX_TEXT} characters of the Basic Multilingual Plane")]
    Text(&'static str),
    /// An alias without a text.
    #[error("alias {0} has no text to hash (dialledDigits, h323-ID, url-ID or email-ID has)")]
    Alias(String),
    /// The alias cannot go on the wire.
    #[error(transparent)]
    Encode(#[from] AliasError),
}

/// A BMPString of `text` with the terminating NUL the hash includes.
fn with_nul(what: &'static str, text: &str) -> Result<rasn::types::BmpString, TokenError> {
    if text.is_empty() || text.contains('\0') {
        return Err(TokenError::Text(what));
    }
    bmp(what, &format!("{text}\0"), MAX_TEXT + 1).map_err(|_| TokenError::Text(what))
}

/// The MD5 digest of the `ClearToken` for an alias text, a password and a time stamp.
/// Fails when a text is empty, longer than [`MAX_TEXT`] characters or outside the BMP.
/// A `time_stamp` of 0 (TimeStamp is 1..4294967295) is taken as 1.
pub fn pwd_hash(alias: &str, password: &str, time_stamp: u32) -> Result<[u8; 16], TokenError> {
    let token = h235::ClearToken {
        token_oid: ObjectIdentifier::new(&CLEAR_TOKEN_OID[..])
            .expect("0.0 is a valid object identifier"),
        time_stamp: Some(h235::TimeStamp(time_stamp.max(1))),
        password: Some(h235::Password(with_nul("password", password)?)),
        dhkey: None,
        challenge: None,
        random: None,
        certificate: None,
        general_id: Some(h235::Identifier(with_nul("generalID", alias)?)),
        non_standard: None,
        eckasdhkey: None,
        senders_id: None,
        h235_key: None,
        profile_info: None,
    };
    // Every value is inside its constraints (checked above), so the encoding cannot fail.
    let octets = rasn::aper::encode(&token).expect("a checked ClearToken encodes");
    Ok(Md5::digest(&octets).into())
}

/// A `cryptoEPPwdHash` token for `alias` with `password` at `time_stamp` (UNIX seconds).
pub fn ep_pwd_hash(
    alias: &Alias,
    password: &str,
    time_stamp: u32,
) -> Result<asn::CryptoH323Token, TokenError> {
    let text = alias_text(alias).ok_or_else(|| TokenError::Alias(alias.to_string()))?;
    let digest = pwd_hash(text, password, time_stamp)?;
    Ok(asn::CryptoH323Token::cryptoEPPwdHash(
        asn::CryptoH323TokenCryptoEPPwdHash {
            alias: alias.to_asn()?,
            time_stamp: h235::TimeStamp(time_stamp.max(1)),
            token: asn::CryptoH323TokenCryptoEPPwdHashToken {
                algorithm_oid: ObjectIdentifier::new(&MD5_OID[..]).expect("MD5's OID is valid"),
                param_s: asn::CryptoH323TokenCryptoEPPwdHashTokenParamS {
                    ran_int: None,
                    iv8: None,
                    iv16: None,
                    iv: None,
                    clear_salt: None,
                },
                hash: BitString::from_slice(&digest),
            },
        },
    ))
}

/// A `cryptoEPPwdHash` token as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PwdHashToken {
    /// The alias's text (see [`alias_text`]); `None` for an alias without one.
    pub alias: Option<String>,
    /// `timeStamp`, UNIX seconds.
    pub time_stamp: u32,
    /// The digest, when `algorithmOID` is MD5 and `hash` has 128 bits.
    pub md5: Option<[u8; 16]>,
}

impl PwdHashToken {
    /// Whether the token proves `password` for its alias.
    pub fn proves(&self, password: &str) -> bool {
        let (Some(alias), Some(got)) = (&self.alias, &self.md5) else {
            return false;
        };
        match pwd_hash(alias, password, self.time_stamp) {
            // Every octet compared, whatever the first difference.
            Ok(want) => want.iter().zip(got).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0,
            Err(_) => false,
        }
    }
}

/// The `cryptoEPPwdHash` tokens of a request's `cryptoTokens`.
pub fn pwd_hash_tokens(tokens: Option<&[asn::CryptoH323Token]>) -> Vec<PwdHashToken> {
    tokens
        .unwrap_or_default()
        .iter()
        .filter_map(|token| match token {
            asn::CryptoH323Token::cryptoEPPwdHash(pwd) => Some(pwd),
            _ => None,
        })
        .map(|pwd| {
            let alias = Alias::from_asn(&pwd.alias);
            let md5 = (pwd.token.algorithm_oid.as_ref() == &MD5_OID[..])
                .then(|| <[u8; 16]>::try_from(pwd.token.hash.as_raw_slice()).ok())
                .flatten()
                .filter(|_| pwd.token.hash.len() == 128);
            PwdHashToken {
                alias: alias_text(&alias).map(str::to_string),
                time_stamp: pwd.time_stamp.0,
                md5,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hashed_clear_token_is_the_per_encoding_worked_out_by_hand() {
        // ClearToken {tokenOID 0.0, timeStamp 1767225600, password "pw", generalID "2001"},
        // ALIGNED PER, worked out from X.691 without rasn: the octets below.
        let octets = {
            let token = h235::ClearToken {
                token_oid: ObjectIdentifier::new(&CLEAR_TOKEN_OID[..]).unwrap(),
                time_stamp: Some(h235::TimeStamp(1_767_225_600)),
                password: Some(h235::Password(with_nul("password", "pw").unwrap())),
                dhkey: None,
                challenge: None,
                random: None,
                certificate: None,
                general_id: Some(h235::Identifier(with_nul("generalID", "2001").unwrap())),
                non_standard: None,
                eckasdhkey: None,
                senders_id: None,
                h235_key: None,
                profile_info: None,
            };
            rasn::aper::encode(&token).unwrap()
        };
        // Extension bit 0, then the optional bitmap timeStamp password dhkey challenge
        // random certificate generalID nonStandard = 11000010, padded: 0x61 0x00. OID:
        // length 1, 0.0 → 0x00. timeStamp (1..2^32-1): octet count - 1 in 2 bits (11),
        // padded, then value - 1 = 0x6955B8FF. password (BMPString 1..128): length - 1 in
        // 7 bits (2: "pw" + NUL), padded, UCS-2. generalID: the same, "2001" + NUL.
        let expected: &[u8] = &[
            0x61, 0x00, // ext, bitmap (8 bits), 7 bits of padding
            0x01, 0x00, // OID: length 1, 0.0
            0xC0, 0x69, 0x55, 0xB8, 0xFF, // timeStamp: length 4 (bits 11), value - 1
            0x04, 0x00, 0x70, 0x00, 0x77, 0x00, 0x00, // password "pw\0": length 3 (0000010)
            0x08, 0x00, 0x32, 0x00, 0x30, 0x00, 0x30, 0x00, 0x31, 0x00, 0x00, // "2001\0"
        ];
        assert_eq!(octets, expected, "{octets:02X?}");
        // MD5 of those octets (computed apart, with Python's hashlib).
        let digest = [
            0x2F, 0xF1, 0x19, 0xE0, 0xBF, 0xE2, 0x74, 0xEB, 0x97, 0x48, 0xDB, 0xC2, 0xED, 0x73,
            0x14, 0xBD,
        ];
        assert_eq!(pwd_hash("2001", "pw", 1_767_225_600).unwrap(), digest);
    }

    #[test]
    fn a_token_proves_its_password_and_no_other() {
        let alias = Alias::dialled_digits("2001").unwrap();
        let token = ep_pwd_hash(&alias, "s3cret", 1_767_225_600).unwrap();
        let read = pwd_hash_tokens(Some(&[token]));
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].alias.as_deref(), Some("2001"));
        assert_eq!(read[0].time_stamp, 1_767_225_600);
        assert!(read[0].proves("s3cret"));
        assert!(!read[0].proves("s3creT"));
        let mut other_time = read[0].clone();
        other_time.time_stamp += 1;
        assert!(!other_time.proves("s3cret"));
    }

    #[test]
    fn texts_outside_the_limits_are_refused() {
        assert!(pwd_hash("", "pw", 1).is_err());
        assert!(pwd_hash("2001", "", 1).is_err());
        assert!(pwd_hash("2001", &"x".repeat(MAX_TEXT), 1).is_ok());
        assert!(pwd_hash("2001", &"x".repeat(MAX_TEXT + 1), 1).is_err());
        assert!(pwd_hash("2001", "😀", 1).is_err());
    }
}
