//! H.235 passwords on RAS (docs/reliability.md, "Passwords"): which requests must prove a password and
//! with which token, what the GCF selects of the mechanisms a GRQ offers, and the replies
//! secured under H.235.1.
//!
//! The rules (docs/rules.md §13.2), after what H323Plus endpoints and GnuGk do:
//!
//! - A request that carries an endpoint's identity — RRQ (full: its `terminalAlias`;
//!   lightweight: the registration it names), URQ, ARQ, DRQ, BRQ and IRR (the registration
//!   their `endpointIdentifier` names from their source) — must prove the password of each of
//!   those aliases that has a `[[password]]`. A request naming no registration is left to its
//!   handler (which answers `fullRegistrationRequired`, `notRegistered`, …).
//! - A proof is an H.235.1 procedure I token ([`crate::ras::h235_1`]: HMAC-SHA1-96 over the
//!   whole message, `sendersID` the alias or the registration's `endpointIdentifier`,
//!   `generalID`, when present, this gatekeeper's identifier) or, without one for the alias,
//!   an MD5 `cryptoEPPwdHash` ([`crate::ras::h235`]: `alias` the alias or the
//!   `endpointIdentifier`). When a procedure I token names the alias it decides: a failing
//!   one is not excused by an MD5 token beside it (H323Plus sends both until the GCF selects
//!   one). Its `timeStamp` must be within `password_window_s` of the gatekeeper's clock and
//!   not older than the newest accepted for the alias; a procedure I token's (`timeStamp`,
//!   `random`) is never accepted twice for an alias.
//! - A request that does not prove them gets its reject with `securityDenial` (RRJ, URJ, ARJ,
//!   DRJ, BRJ; INAK for an IRR that asks for an answer, none for one that does not), counted
//!   by message ([`super::Stats::security_denied`]).
//! - Replies to a request proven by procedure I carry a procedure I token under the same
//!   password: `sendersID` the gatekeeper identifier, `generalID` the endpoint as it named
//!   itself in the request — except in an RCF, whose `generalID` is the endpointIdentifier it
//!   assigns. (H.235.1 names the recipient in `generalID`; H323Plus sets the identifier an RCF
//!   assigns as its own before checking the RCF's tokens, and wants every RAS message secured
//!   once procedure I is on.) MD5 replies carry no token: H323Plus's MD5 authenticator
//!   secures requests only.
//! - The GCF to a GRQ that offers `pwdHash` with HMAC-SHA1-96 (else MD5) among its
//!   `authenticationCapability` and `algorithmOIDs` selects it in `authenticationMode` and
//!   `algorithmOID`, as GnuGk does; an H323Plus endpoint then uses that mechanism only.
//!   Nothing is selected when no alias has a password. Either mechanism is accepted
//!   whatever the GCF selected.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::Instant;

use rasn::types::ObjectIdentifier;

use super::{registry, Gatekeeper, Incoming, Reply};
use crate::config::Config;
use crate::ras::asn::{self, CryptoH323Token, RasMessage};
use crate::ras::reply::{self, ArjReason, RrjReason, UrjReason};
use crate::ras::{self, h235, h235_1, Alias, MessageKind};

/// How many procedure I `random`s of one `timeStamp` are kept per alias; a burst of more
/// requests in one second than this from one alias is refused as if replayed.
const RANDOMS_PER_SECOND: usize = 64;

/// The passwords of aliases and the newest tokens accepted for each.
#[derive(Debug, Clone, Default)]
pub(super) struct Passwords {
    secrets: HashMap<String, String>,
    /// At most one entry per alias of `secrets`.
    newest: HashMap<String, Newest>,
    window_s: u32,
    /// The `random` of the next procedure I token the gatekeeper sends.
    next_random: u32,
}

/// The newest `timeStamp` accepted for an alias, and the procedure I `random`s accepted with it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Newest {
    time_stamp: u32,
    randoms: Vec<i64>,
}

/// How a request proved the passwords of its aliases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Proof {
    /// Nothing to prove: none of its aliases has a password, or it names no registration.
    Unprotected,
    /// MD5 `cryptoEPPwdHash` tokens.
    PwdHash,
    /// An H.235.1 procedure I token: replies are secured with `key`, to the endpoint as
    /// `senders_id` named it.
    Procedure1 { key: [u8; 20], senders_id: String },
}

/// Why a password check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Denial {
    /// No token for the alias.
    Missing(String),
    /// Tokens for the alias, none proving its secret.
    Wrong(String),
    /// A procedure I token for another gatekeeper.
    OtherGatekeeper { alias: String, general_id: String },
    /// A proving token whose `timeStamp` is too far from the clock.
    Stale {
        alias: String,
        time_stamp: u32,
        now: u64,
    },
    /// A proving token older than one accepted before, or the same procedure I token again.
    Replayed {
        alias: String,
        time_stamp: u32,
        newest: u32,
    },
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::Missing(alias) => write!(f, "alias {alias:?} has a password: no token"),
            Denial::Wrong(alias) => write!(f, "alias {alias:?}: wrong password"),
            Denial::OtherGatekeeper { alias, general_id } => write!(
                f,
                "alias {alias:?}: the H.235.1 token is for gatekeeper {general_id:?}"
            ),
            Denial::Stale {
                alias,
                time_stamp,
                now,
            } => write!(
                f,
                "alias {alias:?}: token timeStamp {time_stamp} is too far from the clock ({now})"
            ),
            Denial::Replayed {
                alias,
                time_stamp,
                newest,
            } => write!(
                f,
                "alias {alias:?}: token timeStamp {time_stamp} was used before or is older \
                 than one accepted ({newest}): a replay"
            ),
        }
    }
}

/// What a request presents to prove its passwords.
pub(super) struct Presented<'a> {
    /// Its `cryptoTokens`.
    pub tokens: Option<&'a [CryptoH323Token]>,
    /// The whole message as received: a procedure I hash covers it.
    pub octets: &'a [u8],
    /// The `endpointIdentifier` of the registration it comes from, which tokens may name
    /// instead of an alias.
    pub endpoint_id: Option<String>,
    /// This gatekeeper's identifier, which a procedure I token's `generalID` must be.
    pub gatekeeper_id: &'a str,
}

impl Passwords {
    /// The passwords of a configuration.
    pub fn new(config: &Config) -> Passwords {
        Passwords {
            secrets: config
                .passwords
                .iter()
                .map(|p| (p.alias.clone(), p.secret.clone()))
                .collect(),
            newest: HashMap::new(),
            window_s: config.gatekeeper.password_window_s,
            next_random: 0,
        }
    }

    /// The passwords of a new configuration, keeping what was accepted for aliases that keep
    /// their secret.
    pub fn renewed(&self, config: &Config) -> Passwords {
        let mut renewed = Passwords::new(config);
        renewed.newest = self
            .newest
            .iter()
            .filter(|(alias, _)| renewed.secrets.get(*alias) == self.secrets.get(*alias))
            .map(|(alias, newest)| (alias.clone(), newest.clone()))
            .collect();
        renewed.next_random = self.next_random;
        renewed
    }

    /// Does any alias have a password?
    pub fn any(&self) -> bool {
        !self.secrets.is_empty()
    }

    /// Checks what a request presents for every alias of `aliases` that has a password;
    /// `now` is the gatekeeper's clock in UNIX seconds. On success the tokens' time stamps
    /// become the newest accepted.
    pub fn check<'a>(
        &mut self,
        aliases: impl IntoIterator<Item = &'a str>,
        presented: &Presented<'_>,
        now: u64,
    ) -> Result<Proof, Denial> {
        let protected: Vec<(&'a str, &str)> = aliases
            .into_iter()
            .filter_map(|alias| Some((alias, self.secrets.get(alias)?.as_str())))
            .collect();
        if protected.is_empty() {
            return Ok(Proof::Unprotected);
        }
        let hashed = h235_1::hashed_tokens(presented.tokens);
        let pwd_hashes = h235::pwd_hash_tokens(presented.tokens);
        let endpoint_id = presented.endpoint_id.as_deref();
        let mut proof = Proof::PwdHash;
        let mut accepted = Vec::with_capacity(protected.len());
        for (alias, secret) in protected {
            let names_it =
                |name: Option<&str>| name.is_some() && (name == Some(alias) || name == endpoint_id);
            let mut procedure1 = hashed
                .iter()
                .filter(|t| names_it(t.senders_id.as_deref()))
                .peekable();
            let (time_stamp, random) = if procedure1.peek().is_some() {
                let key = h235_1::key(secret);
                let Some((token, time_stamp)) = procedure1.find_map(|t| {
                    let time_stamp = t.time_stamp?;
                    h235_1::authenticates(presented.octets, &t.hash, &key)
                        .then_some((t, time_stamp))
                }) else {
                    return Err(Denial::Wrong(alias.to_string()));
                };
                if let Some(general_id) = &token.general_id {
                    if general_id != presented.gatekeeper_id {
                        return Err(Denial::OtherGatekeeper {
                            alias: alias.to_string(),
                            general_id: general_id.clone(),
                        });
                    }
                }
                if proof == Proof::PwdHash {
                    proof = Proof::Procedure1 {
                        key,
                        senders_id: token.senders_id.clone().unwrap_or_default(),
                    };
                }
                (time_stamp, token.random)
            } else {
                let mut md5 = pwd_hashes
                    .iter()
                    .filter(|t| names_it(t.alias.as_deref()))
                    .peekable();
                if md5.peek().is_none() {
                    return Err(Denial::Missing(alias.to_string()));
                }
                let Some(token) = md5.find(|t| t.proves(secret)) else {
                    return Err(Denial::Wrong(alias.to_string()));
                };
                (token.time_stamp, None)
            };
            self.fresh(alias, time_stamp, random, now)?;
            accepted.push((alias, time_stamp, random));
        }
        for (alias, time_stamp, random) in accepted {
            let newest = self.newest.entry(alias.to_string()).or_default();
            if time_stamp > newest.time_stamp {
                *newest = Newest {
                    time_stamp,
                    randoms: Vec::new(),
                };
            }
            newest.randoms.extend(random);
        }
        Ok(proof)
    }

    /// Is a token of `alias` at `time_stamp` (with a procedure I `random`) within the window
    /// and no replay?
    fn fresh(
        &self,
        alias: &str,
        time_stamp: u32,
        random: Option<i64>,
        now: u64,
    ) -> Result<(), Denial> {
        if u64::from(time_stamp).abs_diff(now) > u64::from(self.window_s) {
            return Err(Denial::Stale {
                alias: alias.to_string(),
                time_stamp,
                now,
            });
        }
        let Some(newest) = self.newest.get(alias) else {
            return Ok(());
        };
        let replayed = time_stamp < newest.time_stamp
            || (time_stamp == newest.time_stamp
                && random.is_some_and(|random| {
                    newest.randoms.contains(&random) || newest.randoms.len() >= RANDOMS_PER_SECOND
                }));
        if replayed {
            return Err(Denial::Replayed {
                alias: alias.to_string(),
                time_stamp,
                newest: newest.time_stamp,
            });
        }
        Ok(())
    }

    /// The `random` of the next procedure I token sent.
    fn next_random(&mut self) -> u32 {
        self.next_random = self.next_random.wrapping_add(1);
        self.next_random
    }
}

/// The `authenticationMode` and `algorithmOID` a GCF selects of what a GRQ offers: `pwdHash`
/// with HMAC-SHA1-96 when it offers both, else `pwdHash` with MD5, else nothing. As GnuGk,
/// any offered mechanism goes with any offered algorithm (the two lists are not paired).
pub(super) fn selection(
    grq: &asn::GatekeeperRequest,
) -> Option<(asn::h235::AuthenticationMechanism, ObjectIdentifier)> {
    let pwd_hash = grq
        .authentication_capability
        .iter()
        .flatten()
        .any(|m| matches!(m, asn::h235::AuthenticationMechanism::pwdHash(())));
    if !pwd_hash {
        return None;
    }
    let offered = grq.algorithm_oids.as_deref().unwrap_or_default();
    [&h235_1::HMAC_SHA1_96_OID[..], &h235::MD5_OID[..]]
        .into_iter()
        .find_map(|want| offered.iter().find(|oid| oid.as_ref() == want).cloned())
        .map(|oid| (asn::h235::AuthenticationMechanism::pwdHash(()), oid))
}

/// Who a request says it is, for the password check.
enum Claimant {
    /// Nobody the check knows: no password to prove.
    Nobody,
    /// A full RRQ's aliases.
    Aliases(Vec<Alias>),
    /// The registration of this key.
    Registration(u64),
}

impl Gatekeeper {
    /// Does any alias have a password?
    pub(super) fn has_passwords(&self) -> bool {
        self.passwords.any()
    }

    /// The registration of `key`, if it is registered from `from`.
    fn registration_from(&self, key: Option<u64>, from: SocketAddr) -> Option<u64> {
        key.filter(|&key| self.registry.get(key).is_some_and(|r| r.source == from))
    }

    fn claimant(&self, from: SocketAddr, incoming: Incoming<'_>) -> Claimant {
        let registered = |id: &asn::EndpointIdentifier| {
            self.registration_from(registry::key_of_units(&id.0), from)
        };
        let key = match incoming {
            Incoming::Grq(_) => None,
            Incoming::KeepAlive(keep_alive) => {
                self.registration_from(registry::key_of_octets(keep_alive.endpoint_id), from)
            }
            Incoming::FullRegistration(rrq) => {
                return Claimant::Aliases(rrq.aliases.clone().collect())
            }
            Incoming::Message(message) => match message {
                RasMessage::registrationRequest(rrq) if rrq.keep_alive == Some(true) => {
                    rrq.endpoint_identifier.as_ref().and_then(registered)
                }
                RasMessage::registrationRequest(rrq) => {
                    let aliases = rrq.terminal_alias.iter().flatten();
                    return Claimant::Aliases(aliases.map(Alias::from_asn).collect());
                }
                RasMessage::unregistrationRequest(urq) => match &urq.endpoint_identifier {
                    Some(id) => registered(id),
                    None => self.registry.by_source(from),
                },
                RasMessage::admissionRequest(arq) => registered(&arq.endpoint_identifier),
                RasMessage::disengageRequest(drq) => registered(&drq.endpoint_identifier),
                RasMessage::bandwidthRequest(brq) => registered(&brq.endpoint_identifier),
                RasMessage::infoRequestResponse(irr) => registered(&irr.endpoint_identifier),
                _ => None,
            },
        };
        key.map_or(Claimant::Nobody, Claimant::Registration)
    }

    /// Checks the passwords a request must prove (nothing when no alias has one). `Err` holds
    /// the answer to a request that failed: its reject with `securityDenial`, or nothing.
    pub(super) fn prove(
        &mut self,
        now: Instant,
        from: SocketAddr,
        incoming: Incoming<'_>,
        octets: &[u8],
    ) -> Result<Proof, Option<Reply>> {
        if !self.has_passwords() {
            return Ok(Proof::Unprotected);
        }
        let (aliases, endpoint_id) = match self.claimant(from, incoming) {
            Claimant::Nobody => return Ok(Proof::Unprotected),
            Claimant::Aliases(mut aliases) => {
                aliases.dedup();
                (aliases, None)
            }
            Claimant::Registration(key) => match self.registry.get(key) {
                Some(registration) => (
                    registration.aliases.to_vec(),
                    Some(registry::endpoint_id_text(key)),
                ),
                None => return Ok(Proof::Unprotected),
            },
        };
        let tokens = match incoming {
            Incoming::Message(message) => h235_1::request_tokens(message),
            // The hand-written reader takes no request with tokens.
            _ => None,
        };
        let presented = Presented {
            tokens,
            octets,
            endpoint_id,
            gatekeeper_id: &self.config.gatekeeper.gatekeeper_id,
        };
        let clock = self.wall_clock(now).as_secs();
        let texts = aliases.iter().filter_map(h235::alias_text);
        match self.passwords.check(texts, &presented, clock) {
            Ok(proof) => Ok(proof),
            Err(denial) => {
                tracing::debug!(%denial, "securityDenial");
                Err(self.deny(incoming))
            }
        }
    }

    /// The answer to a request that did not prove its passwords, counted.
    fn deny(&mut self, incoming: Incoming<'_>) -> Option<Reply> {
        let (kind, seq) = match incoming {
            Incoming::Grq(discovery) => (MessageKind::Grq, discovery.seq),
            Incoming::KeepAlive(keep_alive) => (MessageKind::Rrq, keep_alive.seq),
            Incoming::FullRegistration(rrq) => (MessageKind::Rrq, rrq.seq),
            Incoming::Message(message) => (ras::kind(message), ras::request_seq_num(message)),
        };
        self.stats.security_denied[kind as usize] += 1;
        let (name, message) = match incoming {
            Incoming::Message(RasMessage::unregistrationRequest(_)) => (
                "URJ",
                reply::unregistration_reject(seq, UrjReason::SecurityDenial),
            ),
            Incoming::Message(RasMessage::admissionRequest(_)) => (
                "ARJ",
                reply::admission_reject(seq, ArjReason::SecurityDenial),
            ),
            Incoming::Message(RasMessage::disengageRequest(_)) => {
                ("DRJ", reply::disengage_reject_security_denial(seq))
            }
            Incoming::Message(RasMessage::bandwidthRequest(_)) => {
                ("BRJ", reply::bandwidth_reject_security_denial(seq))
            }
            // H.225.0 answers an IRR only when it asks.
            Incoming::Message(RasMessage::infoRequestResponse(irr)) => {
                if irr.need_response != Some(true) {
                    return None;
                }
                ("INAK", reply::info_request_nak_security_denial(seq))
            }
            _ => (
                "RRJ",
                reply::registration_reject(
                    seq,
                    &self.gatekeeper_id,
                    &RrjReason::SecurityDenial,
                    None,
                ),
            ),
        };
        self.note_reject(name, "securityDenial");
        Some(message.into())
    }

    /// The reply to a request proven by `proof`: under procedure I, with its token (sealed
    /// when it is encoded); otherwise as it is.
    pub(super) fn secured(&mut self, now: Instant, reply: Reply, proof: Proof) -> Reply {
        let Proof::Procedure1 { key, senders_id } = proof else {
            return reply;
        };
        let mut message = match reply {
            Reply::Message(message) | Reply::Sealed(message, _) => *message,
            Reply::Octets(kind, octets) => match ras::decode(&octets) {
                Ok(message) => message,
                Err(error) => {
                    self.stats.encode_failures += 1;
                    tracing::error!(%error, "a hand-written reply does not decode");
                    return Reply::Octets(kind, octets);
                }
            },
        };
        // H323Plus takes the identifier an RCF assigns as its own before checking the RCF.
        let general_id = match &message {
            RasMessage::registrationConfirm(rcf) => {
                reply::EndpointId::from_asn(&rcf.endpoint_identifier).text()
            }
            _ => senders_id,
        };
        let time_stamp = u32::try_from(self.wall_clock(now).as_secs()).unwrap_or(u32::MAX);
        let random = self.passwords.next_random();
        let gatekeeper_id = &self.config.gatekeeper.gatekeeper_id;
        // An identifier that cannot go into a token (the endpoint's was read from the wire,
        // so it fits) or a reply without cryptoTokens: sent as it is.
        let token = h235_1::token(&general_id, gatekeeper_id, time_stamp, random);
        match token.map(|token| h235_1::set_reply_tokens(&mut message, vec![token])) {
            Ok(true) => Reply::Sealed(Box::new(message), key),
            _ => message.into(),
        }
    }

    /// The reply to a GRQ: a GCF selecting one of the mechanisms it offers ([`selection`])
    /// when aliases have passwords.
    pub(super) fn with_selection(&mut self, grq: &asn::GatekeeperRequest, reply: Reply) -> Reply {
        let Some((mode, algorithm)) = self.has_passwords().then(|| selection(grq)).flatten() else {
            return reply;
        };
        let mut message = match reply {
            Reply::Octets(MessageKind::Gcf, octets) => match ras::decode(&octets) {
                Ok(message) => message,
                Err(_) => return Reply::Octets(MessageKind::Gcf, octets),
            },
            Reply::Message(message) => *message,
            other => return other,
        };
        if let RasMessage::gatekeeperConfirm(gcf) = &mut message {
            tracing::debug!(algorithm = %oid_text(&algorithm), "GCF selects pwdHash");
            gcf.authentication_mode = Some(mode);
            gcf.algorithm_oid = Some(algorithm);
        }
        message.into()
    }
}

/// An OID in dotted form.
fn oid_text(oid: &ObjectIdentifier) -> String {
    let arcs: &[u32] = oid.as_ref();
    arcs.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ras::Alias;

    fn passwords() -> Passwords {
        let config = crate::config::from_toml(
            "[[region]]\nid = 1\n[[clan]]\nname = \"a\"\nregion = 1\naddress = \"10.0.0.1:1719\"\n\
             [[password]]\nalias = \"2001\"\nsecret = \"s3cret\"\n",
            "t.toml",
        )
        .expect("valid");
        Passwords::new(&config)
    }

    fn token(alias: &str, secret: &str, time_stamp: u32) -> CryptoH323Token {
        let alias = Alias::dialled_digits(alias).expect("digits");
        h235::ep_pwd_hash(&alias, secret, time_stamp).expect("a token")
    }

    fn md5<'a>(tokens: &'a [CryptoH323Token]) -> Presented<'a> {
        Presented {
            tokens: Some(tokens),
            octets: &[],
            endpoint_id: None,
            gatekeeper_id: "rasgk",
        }
    }

    const NOW: u64 = 1_767_225_600;

    #[test]
    fn only_aliases_with_a_password_are_checked() {
        let mut p = passwords();
        let none = Presented {
            tokens: None,
            octets: &[],
            endpoint_id: None,
            gatekeeper_id: "rasgk",
        };
        assert_eq!(p.check(["2002"], &none, NOW), Ok(Proof::Unprotected));
        assert_eq!(
            p.check(["2002", "2001"], &none, NOW),
            Err(Denial::Missing("2001".into()))
        );
    }

    #[test]
    fn right_wrong_stale_and_replayed_md5_tokens() {
        let mut p = passwords();
        let t = NOW as u32;
        let wrong = [token("2001", "guess", t)];
        assert_eq!(
            p.check(["2001"], &md5(&wrong), NOW),
            Err(Denial::Wrong("2001".into()))
        );
        let other_alias = [token("2002", "s3cret", t)];
        assert_eq!(
            p.check(["2001"], &md5(&other_alias), NOW),
            Err(Denial::Missing("2001".into()))
        );
        let stale = [token("2001", "s3cret", t - 121)];
        assert!(matches!(
            p.check(["2001"], &md5(&stale), NOW),
            Err(Denial::Stale { .. })
        ));
        let right = [token("2001", "s3cret", t - 120)];
        assert_eq!(p.check(["2001"], &md5(&right), NOW), Ok(Proof::PwdHash));
        let newer = [token("2001", "s3cret", t + 5)];
        assert_eq!(p.check(["2001"], &md5(&newer), NOW), Ok(Proof::PwdHash));
        // The one before is older than one accepted: a replay.
        assert!(matches!(
            p.check(["2001"], &md5(&right), NOW),
            Err(Denial::Replayed { newest, .. }) if newest == t + 5
        ));
        // The same second again is allowed (a phone may register twice in a second).
        assert_eq!(p.check(["2001"], &md5(&newer), NOW), Ok(Proof::PwdHash));
    }

    #[test]
    fn an_md5_token_may_name_the_registration_instead_of_the_alias() {
        let mut p = passwords();
        let by_id = [
            h235::ep_pwd_hash(&Alias::H323Id("EP00000001".into()), "s3cret", NOW as u32).unwrap(),
        ];
        let mut presented = md5(&by_id);
        assert_eq!(
            p.check(["2001"], &presented, NOW),
            Err(Denial::Missing("2001".into()))
        );
        presented.endpoint_id = Some("EP00000001".into());
        assert_eq!(p.check(["2001"], &presented, NOW), Ok(Proof::PwdHash));
    }

    /// A UCF-shaped message carrying a procedure I token from `senders_id`, sealed with
    /// `secret`: any message does, the hash covers whatever it is.
    fn sealed(senders_id: &str, general_id: &str, secret: &str, random: u32) -> Vec<u8> {
        let token = h235_1::token(general_id, senders_id, NOW as u32, random).unwrap();
        let mut message = reply::unregistration_confirm(1);
        h235_1::set_reply_tokens(&mut message, vec![token]);
        let mut octets = ras::encode(&message).unwrap();
        assert!(h235_1::seal(&mut octets, &h235_1::key(secret)));
        octets
    }

    fn procedure1_check(
        p: &mut Passwords,
        octets: &[u8],
        md5_too: Option<&str>,
    ) -> Result<Proof, Denial> {
        let RasMessage::unregistrationConfirm(ucf) = ras::decode(octets).unwrap() else {
            unreachable!()
        };
        let mut tokens = ucf.crypto_tokens.unwrap();
        if let Some(secret) = md5_too {
            tokens.push(token("2001", secret, NOW as u32));
        }
        let presented = Presented {
            tokens: Some(&tokens),
            octets,
            endpoint_id: Some("EP00000001".into()),
            gatekeeper_id: "rasgk",
        };
        p.check(["2001"], &presented, NOW)
    }

    #[test]
    fn a_procedure_i_token_proves_the_whole_message_and_is_used_once() {
        let mut p = passwords();
        let right = sealed("2001", "rasgk", "s3cret", 1);
        let Ok(Proof::Procedure1 { key, senders_id }) = procedure1_check(&mut p, &right, None)
        else {
            panic!("accepted under procedure I");
        };
        assert_eq!(key, h235_1::key("s3cret"));
        assert_eq!(senders_id, "2001");
        // The same token again (the same message): a replay.
        assert!(matches!(
            procedure1_check(&mut p, &right, None),
            Err(Denial::Replayed { .. })
        ));
        // Another random in the same second, naming the registration: accepted.
        let by_id = sealed("EP00000001", "rasgk", "s3cret", 2);
        assert!(matches!(
            procedure1_check(&mut p, &by_id, None),
            Ok(Proof::Procedure1 { .. })
        ));
        // A wrong HMAC is not excused by a right MD5 token beside it.
        let wrong = sealed("2001", "rasgk", "guess", 3);
        assert_eq!(
            procedure1_check(&mut p, &wrong, Some("s3cret")),
            Err(Denial::Wrong("2001".into()))
        );
        // For another gatekeeper.
        let elsewhere = sealed("2001", "other-gk", "s3cret", 4);
        assert!(matches!(
            procedure1_check(&mut p, &elsewhere, None),
            Err(Denial::OtherGatekeeper { .. })
        ));
        // One octet of the message changed: the hash no longer covers it.
        let mut changed = sealed("2001", "rasgk", "s3cret", 5);
        changed[1] ^= 0x01;
        assert!(procedure1_check(&mut p, &changed, None).is_err());
    }

    #[test]
    fn a_grq_offering_hmac_sha1_96_gets_it_selected_else_md5_else_nothing() {
        let mut grq = match crate::ras::request::gatekeeper_request(
            1,
            "10.0.0.1:1719".parse().unwrap(),
            &[],
            None,
        ) {
            RasMessage::gatekeeperRequest(grq) => grq,
            _ => unreachable!(),
        };
        let oid = |arcs: &'static [u32]| ObjectIdentifier::new(arcs).unwrap();
        assert_eq!(selection(&grq), None);
        grq.authentication_capability = Some(vec![
            asn::h235::AuthenticationMechanism::pwdSymEnc(()),
            asn::h235::AuthenticationMechanism::pwdHash(()),
        ]);
        grq.algorithm_oids = Some(vec![oid(&h235::MD5_OID), oid(&h235_1::HMAC_SHA1_96_OID)]);
        let (_, chosen) = selection(&grq).unwrap();
        assert_eq!(oid_text(&chosen), "0.0.8.235.0.2.6");
        grq.algorithm_oids = Some(vec![oid(&h235::MD5_OID)]);
        assert_eq!(oid_text(&selection(&grq).unwrap().1), "1.2.840.113549.2.5");
        grq.authentication_capability =
            Some(vec![asn::h235::AuthenticationMechanism::pwdSymEnc(())]);
        assert_eq!(selection(&grq), None, "no pwdHash offered");
    }
}
