//! H.235.1 ("baseline security profile") procedure I as RAS carries it: a `nestedcryptoToken`
//! whose HMAC-SHA1-96 covers the whole encoded message, made by a sender and checked by the
//! receiver.
//!
//! The token is a `CryptoToken.cryptoHashedToken`:
//!
//! | field | value |
//! |---|---|
//! | `tokenOID` | `0.0.8.235.0.2.1` ("A": all fields of the RAS message are hashed) |
//! | `hashedVals` | a ClearToken {`tokenOID` `0.0.8.235.0.2.5` ("T"), `timeStamp`, `random`, `generalID` = the recipient, `sendersID` = the sender} |
//! | `token.algorithmOID` | `0.0.8.235.0.2.6` ("U": HMAC-SHA1-96) |
//! | `token.hash` | 96 bits |
//!
//! The key is SHA-1 of the password (20 octets). The sender encodes the whole RAS message
//! with a placeholder in `hash`, zeroes those 12 octets, computes HMAC-SHA1 over the encoding
//! and writes its first 96 bits where the placeholder was. The receiver finds the hash in the
//! octets it received, zeroes it and computes the same. Being an unconstrained BIT STRING of
//! more than 16 bits, the hash is octet-aligned in ALIGNED PER, so it is 12 whole octets of
//! the datagram. That is how H323Plus's `H2351_Authenticator` does it (GnuGk checks with the
//! same code): its placeholder is the ASCII text `tWelVe~byteS`, and the receiver tries every
//! place the 12 octets occur. Unlike the MD5 `cryptoEPPwdHash` ([`super::h235`]) the hash
//! binds the token to its message: a captured token proves nothing about another message,
//! only the same message again, which `timeStamp` and `random` let the receiver refuse.
//!
//! H323Plus accepts the version digit of the "A" OID (its sixth arc) being any value; so
//! does [`hashed_tokens`].

use hmac::{Hmac, Mac};
use rasn::types::{BitString, Integer, ObjectIdentifier};
use sha1::{Digest, Sha1};

use super::address::{bmp, bmp_text};
use super::asn::{self, h235, RasMessage};

/// "A": every field of the RAS message is hashed.
pub const ALL_FIELDS_OID: [u32; 7] = [0, 0, 8, 235, 0, 2, 1];
/// "T": `hashedVals` is a ClearToken.
pub const CLEAR_TOKEN_OID: [u32; 7] = [0, 0, 8, 235, 0, 2, 5];
/// "U": HMAC-SHA1-96.
pub const HMAC_SHA1_96_OID: [u32; 7] = [0, 0, 8, 235, 0, 2, 6];

/// Octets of the truncated HMAC.
pub const HASH_LEN: usize = 12;

/// What a sender writes into `hash` before sealing (H323Plus's search pattern).
const PLACEHOLDER: [u8; HASH_LEN] = *b"tWelVe~byteS";

/// The HMAC key of a password: SHA-1 of its UTF-8 octets.
pub fn key(password: &str) -> [u8; 20] {
    Sha1::digest(password.as_bytes()).into()
}

/// HMAC-SHA1-96 of `octets` under `key`.
pub fn mac(key: &[u8; 20], octets: &[u8]) -> [u8; HASH_LEN] {
    let mut hmac =
        <Hmac<Sha1> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    hmac.update(octets);
    let full = hmac.finalize().into_bytes();
    let mut truncated = [0; HASH_LEN];
    truncated.copy_from_slice(&full[..HASH_LEN]);
    truncated
}

/// Every octet compared, whatever the first difference.
fn same(a: &[u8; HASH_LEN], b: &[u8; HASH_LEN]) -> bool {
    a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Does `octets` (a whole RAS message) carry `hash` as the HMAC of itself with that hash
/// zeroed? Every place the 12 octets occur is tried.
pub fn authenticates(octets: &[u8], hash: &[u8; HASH_LEN], key: &[u8; 20]) -> bool {
    let mut zeroed = octets.to_vec();
    let mut from = 0;
    while let Some(at) = find(&zeroed[from..], hash).map(|at| from + at) {
        zeroed[at..at + HASH_LEN].fill(0);
        if same(&mac(key, &zeroed), hash) {
            return true;
        }
        zeroed[at..at + HASH_LEN].copy_from_slice(hash);
        from = at + 1;
    }
    false
}

fn find(haystack: &[u8], needle: &[u8; HASH_LEN]) -> Option<usize> {
    haystack
        .windows(HASH_LEN)
        .position(|window| window == needle)
}

/// Seals an encoded message carrying a token from [`token`]: its placeholder becomes the
/// HMAC of the message with those octets zeroed. `false` when there is no placeholder.
pub fn seal(octets: &mut [u8], key: &[u8; 20]) -> bool {
    let Some(at) = find(octets, &PLACEHOLDER) else {
        return false;
    };
    octets[at..at + HASH_LEN].fill(0);
    let hash = mac(key, octets);
    octets[at..at + HASH_LEN].copy_from_slice(&hash);
    true
}

/// Why a token cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {0} needs 1 to 128 characters of the Basic Multilingual Plane")]
pub struct IdError(&'static str);

/// A procedure I token from `senders_id` to `general_id` at `time_stamp` (UNIX seconds, 0
/// taken as 1) with `random`, its hash the placeholder that [`seal`] replaces once the message
/// holding it is encoded.
pub fn token(
    general_id: &str,
    senders_id: &str,
    time_stamp: u32,
    random: u32,
) -> Result<asn::CryptoH323Token, IdError> {
    let id = |what, text: &str| {
        bmp(what, text, 128)
            .ok()
            .filter(|_| !text.is_empty())
            .map(h235::Identifier)
            .ok_or(IdError(what))
    };
    let oid = |arcs: &'static [u32]| ObjectIdentifier::new(arcs).expect("an H.235.1 OID is valid");
    Ok(asn::CryptoH323Token::nestedcryptoToken(
        h235::CryptoToken::cryptoHashedToken(h235::CryptoTokenCryptoHashedToken {
            token_oid: oid(&ALL_FIELDS_OID),
            hashed_vals: h235::ClearToken {
                token_oid: oid(&CLEAR_TOKEN_OID),
                time_stamp: Some(h235::TimeStamp(time_stamp.max(1))),
                password: None,
                dhkey: None,
                challenge: None,
                random: Some(h235::RandomVal(Integer::from(i64::from(random)))),
                certificate: None,
                general_id: Some(id("generalID", general_id)?),
                non_standard: None,
                eckasdhkey: None,
                senders_id: Some(id("sendersID", senders_id)?),
                h235_key: None,
                profile_info: None,
            },
            token: h235::CryptoTokenCryptoHashedTokenToken {
                algorithm_oid: oid(&HMAC_SHA1_96_OID),
                param_s: h235::CryptoTokenCryptoHashedTokenTokenParamS {
                    ran_int: None,
                    iv8: None,
                    iv16: None,
                    iv: None,
                    clear_salt: None,
                },
                hash: BitString::from_slice(&PLACEHOLDER),
            },
        }),
    ))
}

/// A procedure I token as received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashedToken {
    /// `timeStamp`, UNIX seconds (`None` when absent: such a token never passes the check).
    pub time_stamp: Option<u32>,
    /// `random`, when present and within 64 bits.
    pub random: Option<i64>,
    /// `generalID`: whom it is for.
    pub general_id: Option<String>,
    /// `sendersID`: who sent it.
    pub senders_id: Option<String>,
    /// The 96-bit hash.
    pub hash: [u8; HASH_LEN],
}

/// Whether `oid` is `want` but for the version arc (the sixth), as H323Plus compares them.
fn same_but_version(oid: &ObjectIdentifier, want: &[u32; 7]) -> bool {
    let arcs: &[u32] = oid.as_ref();
    arcs.len() == want.len()
        && arcs
            .iter()
            .zip(want)
            .enumerate()
            .all(|(i, (a, b))| i == 5 || a == b)
}

/// The procedure I tokens of a message's `cryptoTokens`: `nestedcryptoToken`s holding a
/// `cryptoHashedToken` with the OIDs A, T and U and a 96-bit hash. Other tokens (MD5
/// `cryptoEPPwdHash` among them) are not these.
pub fn hashed_tokens(tokens: Option<&[asn::CryptoH323Token]>) -> Vec<HashedToken> {
    tokens
        .unwrap_or_default()
        .iter()
        .filter_map(|token| match token {
            asn::CryptoH323Token::nestedcryptoToken(h235::CryptoToken::cryptoHashedToken(
                hashed,
            )) => Some(hashed),
            _ => None,
        })
        .filter(|hashed| {
            same_but_version(&hashed.token_oid, &ALL_FIELDS_OID)
                && same_but_version(&hashed.hashed_vals.token_oid, &CLEAR_TOKEN_OID)
                && same_but_version(&hashed.token.algorithm_oid, &HMAC_SHA1_96_OID)
                && hashed.token.hash.len() == HASH_LEN * 8
        })
        .filter_map(|hashed| {
            let vals = &hashed.hashed_vals;
            Some(HashedToken {
                time_stamp: vals.time_stamp.as_ref().map(|t| t.0),
                random: vals
                    .random
                    .as_ref()
                    .and_then(|r| i64::try_from(r.0.clone()).ok()),
                general_id: vals.general_id.as_ref().map(|id| bmp_text(&id.0)),
                senders_id: vals.senders_id.as_ref().map(|id| bmp_text(&id.0)),
                hash: hashed.token.hash.as_raw_slice().try_into().ok()?,
            })
        })
        .collect()
}

/// The `cryptoTokens` of a request: RRQ, URQ, ARQ, DRQ, BRQ or IRR (`None` for any other).
pub fn request_tokens(message: &RasMessage) -> Option<&[asn::CryptoH323Token]> {
    match message {
        RasMessage::registrationRequest(m) => m.crypto_tokens.as_deref(),
        RasMessage::unregistrationRequest(m) => m.crypto_tokens.as_deref(),
        RasMessage::admissionRequest(m) => m.crypto_tokens.as_deref(),
        RasMessage::disengageRequest(m) => m.crypto_tokens.as_deref(),
        RasMessage::bandwidthRequest(m) => m.crypto_tokens.as_deref(),
        RasMessage::infoRequestResponse(m) => m.crypto_tokens.as_deref(),
        _ => None,
    }
}

/// Puts `tokens` into a reply's `cryptoTokens` (replacing any there): the confirms and
/// rejects of GRQ, RRQ, URQ, ARQ, DRQ and BRQ, IACK, INAK and XRS. `false` for any other
/// message, which is left as it was.
pub fn set_reply_tokens(message: &mut RasMessage, tokens: Vec<asn::CryptoH323Token>) -> bool {
    let tokens = Some(tokens);
    match message {
        RasMessage::gatekeeperConfirm(m) => m.crypto_tokens = tokens,
        RasMessage::gatekeeperReject(m) => m.crypto_tokens = tokens,
        RasMessage::registrationConfirm(m) => m.crypto_tokens = tokens,
        RasMessage::registrationReject(m) => m.crypto_tokens = tokens,
        RasMessage::unregistrationConfirm(m) => m.crypto_tokens = tokens,
        RasMessage::unregistrationReject(m) => m.crypto_tokens = tokens,
        RasMessage::admissionConfirm(m) => m.crypto_tokens = tokens,
        RasMessage::admissionReject(m) => m.crypto_tokens = tokens,
        RasMessage::disengageConfirm(m) => m.crypto_tokens = tokens,
        RasMessage::disengageReject(m) => m.crypto_tokens = tokens,
        RasMessage::bandwidthConfirm(m) => m.crypto_tokens = tokens,
        RasMessage::bandwidthReject(m) => m.crypto_tokens = tokens,
        RasMessage::infoRequestAck(m) => m.crypto_tokens = tokens,
        RasMessage::infoRequestNak(m) => m.crypto_tokens = tokens,
        RasMessage::unknownMessageResponse(m) => m.crypto_tokens = tokens,
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn hmac_sha1_96_is_rfc_2202s_test_case_2_truncated() {
        // RFC 2202 test case 2: key "Jefe", data "what do ya want for nothing?",
        // HMAC-SHA1 = effcdf6ae5eb2fa2d27416d5f184df9c259a7c79. The key here is 20 octets:
        // "Jefe" padded with zeros is the same HMAC key (the block is zero-padded anyway).
        let mut key = [0u8; 20];
        key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            mac(&key, b"what do ya want for nothing?").to_vec(),
            hex("effcdf6ae5eb2fa2d27416d5")
        );
    }

    #[test]
    fn the_key_is_sha1_of_the_password() {
        // SHA-1("abc") from FIPS 180-1.
        assert_eq!(
            key("abc").to_vec(),
            hex("a9993e364706816aba3e25717850c26c9cd0d89d")
        );
    }

    #[test]
    fn a_sealed_message_authenticates_and_no_other_does() {
        let token = token("EP00000001", "rasgk", 1_796_278_161, 7).unwrap();
        let mut message = crate::ras::reply::unregistration_confirm(9);
        assert!(set_reply_tokens(&mut message, vec![token]));
        let mut octets = crate::ras::encode(&message).unwrap();
        let k = key("s3cret");
        assert!(seal(&mut octets, &k));
        let decoded = crate::ras::decode(&octets).unwrap();
        let RasMessage::unregistrationConfirm(ucf) = &decoded else {
            panic!("a UCF");
        };
        let read = hashed_tokens(ucf.crypto_tokens.as_deref());
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].general_id.as_deref(), Some("EP00000001"));
        assert_eq!(read[0].senders_id.as_deref(), Some("rasgk"));
        assert_eq!(read[0].time_stamp, Some(1_796_278_161));
        assert_eq!(read[0].random, Some(7));
        assert!(authenticates(&octets, &read[0].hash, &k));
        assert!(!authenticates(&octets, &read[0].hash, &key("s3creT")));
        // Any other octet changed: the hash no longer covers the message.
        let mut changed = octets.clone();
        changed[1] ^= 1;
        assert!(!authenticates(&changed, &read[0].hash, &k));
        // No placeholder: nothing to seal.
        assert!(!seal(&mut octets, &k));
    }

    #[test]
    fn tokens_with_other_oids_or_hash_lengths_are_not_procedure_i() {
        let good = token("rasgk", "2001", 5, 1).unwrap();
        let mut other_version = good.clone();
        let mut other_algorithm = good.clone();
        let mut short_hash = good.clone();
        for (t, edit) in [
            (&mut other_version, 0),
            (&mut other_algorithm, 1),
            (&mut short_hash, 2),
        ] {
            let asn::CryptoH323Token::nestedcryptoToken(h235::CryptoToken::cryptoHashedToken(h)) =
                t
            else {
                unreachable!()
            };
            match edit {
                0 => h.token_oid = ObjectIdentifier::new(&[0, 0, 8, 235, 0, 3, 1][..]).unwrap(),
                1 => {
                    h.token.algorithm_oid =
                        ObjectIdentifier::new(&[1, 2, 840, 113_549, 2, 5][..]).unwrap()
                }
                _ => h.token.hash = BitString::from_slice(&[0; 11]),
            }
        }
        let read = hashed_tokens(Some(&[good, other_version, other_algorithm, short_hash]));
        assert_eq!(read.len(), 2, "the version arc is not compared: {read:?}");
    }
}
