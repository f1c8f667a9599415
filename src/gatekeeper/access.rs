//! Who may register (docs/rules.md §13). The sources have no rule for it; these are ours
//! (README "Reliability and security"):
//!
//! - `strict_network_map = true`: a source outside every region's `networks` gets GRJ
//!   `terminalExcluded` / RRJ `securityDenial` (RegistrationRejectReason has no
//!   `terminalExcluded`).
//! - `[[password]]`: an RRQ (full or lightweight) for an alias with a password needs a
//!   `cryptoEPPwdHash` token for that alias ([`crate::ras::h235`]) whose hash proves the
//!   secret, whose `timeStamp` is within `password_window_s` of the gatekeeper's clock, and
//!   which is not older than the newest token accepted for the alias (a captured token
//!   cannot be replayed once a newer one was used). Else RRJ `securityDenial`.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::Gatekeeper;
use crate::config::Config;
use crate::ras::asn::CryptoH323Token;
use crate::ras::{h235, Alias};

impl Gatekeeper {
    /// Is this source refused by `strict_network_map` (outside every region's networks)?
    pub(super) fn excluded(&self, from: SocketAddr) -> bool {
        self.config.gatekeeper.strict_network_map && self.config.mapped_region(from.ip()).is_none()
    }

    /// Sets the wall clock: `at` is `since_epoch` after the UNIX epoch. Password tokens'
    /// time stamps are checked against it (and the state file's expiry times are written
    /// in it). [`Gatekeeper::new`] sets it from the system clock.
    pub fn set_wall_clock(&mut self, at: Instant, since_epoch: Duration) {
        self.wall = (at, since_epoch);
    }

    /// The wall clock at `now`, as time since the UNIX epoch.
    pub fn wall_clock(&self, now: Instant) -> Duration {
        let (at, since_epoch) = self.wall;
        match now.checked_duration_since(at) {
            Some(after) => since_epoch + after,
            None => since_epoch.saturating_sub(at - now),
        }
    }

    /// Does any alias have a password?
    pub(super) fn has_passwords(&self) -> bool {
        !self.passwords.secrets.is_empty()
    }

    /// Do the request's tokens prove the passwords of those of `aliases` that have one?
    pub(super) fn authenticated(
        &mut self,
        now: Instant,
        aliases: &[Alias],
        tokens: Option<&[CryptoH323Token]>,
    ) -> bool {
        let clock = self.wall_clock(now).as_secs();
        let texts = aliases.iter().filter_map(h235::alias_text);
        match self.passwords.check(texts, tokens, clock) {
            Ok(()) => true,
            Err(denial) => {
                tracing::debug!(%denial, "securityDenial");
                false
            }
        }
    }
}

/// The passwords of aliases and the newest `timeStamp` accepted for each.
#[derive(Debug, Clone, Default)]
pub(super) struct Passwords {
    secrets: HashMap<String, String>,
    /// At most one entry per alias of `secrets`.
    newest: HashMap<String, u32>,
    window_s: u32,
}

/// Why a password check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Denial {
    /// No `cryptoEPPwdHash` token for the alias.
    Missing(String),
    /// Tokens for the alias, none proving its secret.
    Wrong(String),
    /// A proving token whose `timeStamp` is too far from the clock.
    Stale {
        alias: String,
        time_stamp: u32,
        now: u64,
    },
    /// A proving token older than one accepted before.
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
                "alias {alias:?}: token timeStamp {time_stamp} is older than one accepted \
                 ({newest}): a replay"
            ),
        }
    }
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
            .map(|(alias, &ts)| (alias.clone(), ts))
            .collect();
        renewed
    }

    /// Checks the tokens of a request for every alias of `aliases` that has a password;
    /// `now` is the gatekeeper's clock in UNIX seconds. On success the tokens' time stamps
    /// become the newest accepted.
    pub fn check<'a>(
        &mut self,
        aliases: impl IntoIterator<Item = &'a str>,
        tokens: Option<&[CryptoH323Token]>,
        now: u64,
    ) -> Result<(), Denial> {
        let protected: Vec<(&'a str, &str)> = aliases
            .into_iter()
            .filter_map(|alias| Some((alias, self.secrets.get(alias)?.as_str())))
            .collect();
        if protected.is_empty() {
            return Ok(());
        }
        let tokens = h235::pwd_hash_tokens(tokens);
        let mut accepted = Vec::with_capacity(protected.len());
        for (alias, secret) in protected {
            let mut for_alias = tokens
                .iter()
                .filter(|t| t.alias.as_deref() == Some(alias))
                .peekable();
            if for_alias.peek().is_none() {
                return Err(Denial::Missing(alias.to_string()));
            }
            let Some(token) = for_alias.find(|t| t.proves(secret)) else {
                return Err(Denial::Wrong(alias.to_string()));
            };
            if u64::from(token.time_stamp).abs_diff(now) > u64::from(self.window_s) {
                return Err(Denial::Stale {
                    alias: alias.to_string(),
                    time_stamp: token.time_stamp,
                    now,
                });
            }
            if let Some(&newest) = self.newest.get(alias) {
                if token.time_stamp < newest {
                    return Err(Denial::Replayed {
                        alias: alias.to_string(),
                        time_stamp: token.time_stamp,
                        newest,
                    });
                }
            }
            accepted.push((alias, token.time_stamp));
        }
        for (alias, time_stamp) in accepted {
            self.newest.insert(alias.to_string(), time_stamp);
        }
        Ok(())
    }
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

    const NOW: u64 = 1_767_225_600;

    #[test]
    fn only_aliases_with_a_password_are_checked() {
        let mut p = passwords();
        assert_eq!(p.check(["2002"], None, NOW), Ok(()));
        assert_eq!(
            p.check(["2002", "2001"], None, NOW),
            Err(Denial::Missing("2001".into()))
        );
    }

    #[test]
    fn right_wrong_stale_and_replayed_tokens() {
        let mut p = passwords();
        let t = NOW as u32;
        let wrong = [token("2001", "guess", t)];
        assert_eq!(
            p.check(["2001"], Some(&wrong), NOW),
            Err(Denial::Wrong("2001".into()))
        );
        let other_alias = [token("2002", "s3cret", t)];
        assert_eq!(
            p.check(["2001"], Some(&other_alias), NOW),
            Err(Denial::Missing("2001".into()))
        );
        let stale = [token("2001", "s3cret", t - 121)];
        assert!(matches!(
            p.check(["2001"], Some(&stale), NOW),
            Err(Denial::Stale { .. })
        ));
        let right = [token("2001", "s3cret", t - 120)];
        assert_eq!(p.check(["2001"], Some(&right), NOW), Ok(()));
        let newer = [token("2001", "s3cret", t + 5)];
        assert_eq!(p.check(["2001"], Some(&newer), NOW), Ok(()));
        // The one before is older than one accepted: a replay.
        assert!(matches!(
            p.check(["2001"], Some(&right), NOW),
            Err(Denial::Replayed { newest, .. }) if newest == t + 5
        ));
        // The same second again is allowed (a phone may register twice in a second).
        assert_eq!(p.check(["2001"], Some(&newer), NOW), Ok(()));
    }
}
