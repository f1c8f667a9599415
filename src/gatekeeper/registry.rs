//! The registered endpoints, found by key, by RAS source address and by alias.
//!
//! An endpoint's key is a counter; its `endpointIdentifier` is the key written in hex
//! (`EP0000002A`), so a lightweight RRQ or URQ finds its registration without a text index,
//! and a registration does not store its identifier: it is written from the key when a
//! message or a view needs it ([`endpoint_id`]). A registration is kept small, since a
//! gatekeeper holds 100,000 of them: its aliases in a boxed slice, its call signalling
//! address inline when it has only one ([`CallSignalAddresses`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::Deref;
use std::time::Instant;

use super::agls::Agl;
use super::topology::ClanIdx;
use crate::config::RegionId;
use crate::ras::reply::EndpointId;
use crate::ras::Alias;

/// One registered endpoint.
#[derive(Debug, Clone)]
pub struct Registration {
    /// `terminalAlias`.
    pub aliases: Box<[Alias]>,
    /// Where its RAS datagrams come from (replies go here).
    pub source: SocketAddr,
    /// `rasAddress` of its RRQ (or the source when it gave none).
    pub ras_address: SocketAddr,
    /// `callSignalAddress` of its RRQ.
    pub call_signal_address: CallSignalAddresses,
    /// `terminalType` has `gateway`.
    pub gateway: bool,
    /// Home region.
    pub region: RegionId,
    /// A TTS phone?
    pub tts: bool,
    /// The C-LAN its full RRQ arrived at.
    pub registered_via: ClanIdx,
    /// The C-LAN holding its socket; `None` for a TTS phone still waiting for one.
    pub socket: Option<ClanIdx>,
    /// The AGL sent in its RCF.
    pub agl: Agl,
    /// Granted time to live, seconds.
    pub ttl_s: u32,
    /// When it expires unless refreshed.
    pub expires: Instant,
}

/// The `callSignalAddress` list of a registration: nearly always one address, held inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallSignalAddresses {
    /// The one address.
    One(SocketAddr),
    /// None, or more than one.
    Many(Box<[SocketAddr]>),
}

impl From<Vec<SocketAddr>> for CallSignalAddresses {
    fn from(addresses: Vec<SocketAddr>) -> Self {
        match addresses[..] {
            [one] => CallSignalAddresses::One(one),
            _ => CallSignalAddresses::Many(addresses.into_boxed_slice()),
        }
    }
}

impl Deref for CallSignalAddresses {
    type Target = [SocketAddr];

    fn deref(&self) -> &[SocketAddr] {
        match self {
            CallSignalAddresses::One(one) => std::slice::from_ref(one),
            CallSignalAddresses::Many(many) => many,
        }
    }
}

/// All registrations.
#[derive(Debug, Default)]
pub struct Registry {
    by_key: HashMap<u64, Registration>,
    by_source: HashMap<SocketAddr, u64>,
    by_alias: HashMap<Alias, u64>,
    next_key: u64,
}

/// The `endpointIdentifier` text of a key.
pub fn endpoint_id_text(key: u64) -> String {
    format!("EP{key:08X}")
}

/// The `endpointIdentifier` of a key.
pub fn endpoint_id(key: u64) -> EndpointId {
    EndpointId::new(&endpoint_id_text(key)).expect("EP + hex digits is a valid endpointIdentifier")
}

/// The key an `endpointIdentifier` text names, if it is one of ours.
pub fn key_of(endpoint_id: &str) -> Option<u64> {
    let hex = endpoint_id.strip_prefix("EP")?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    // Only the exact text we hand out: no other spelling of the same number.
    let key = u64::from_str_radix(hex, 16).ok()?;
    (endpoint_id_text(key) == endpoint_id).then_some(key)
}

impl Registry {
    /// A key for a new registration.
    pub fn new_key(&mut self) -> u64 {
        self.next_key += 1;
        self.next_key
    }

    /// The key the next registration will get, less one: every key handed out so far is at
    /// most this.
    pub fn last_key(&self) -> u64 {
        self.next_key
    }

    /// Makes sure keys up to `key` are never handed out again (after a restore).
    pub fn skip_past(&mut self, key: u64) {
        self.next_key = self.next_key.max(key);
    }

    /// Number of registrations.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// No registrations?
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// A registration by key.
    pub fn get(&self, key: u64) -> Option<&Registration> {
        self.by_key.get(&key)
    }

    /// A registration by key, to change (not its source or aliases).
    pub fn get_mut(&mut self, key: u64) -> Option<&mut Registration> {
        self.by_key.get_mut(&key)
    }

    /// The key of the registration from this RAS source.
    pub fn by_source(&self, source: SocketAddr) -> Option<u64> {
        self.by_source.get(&source).copied()
    }

    /// The key of the registration holding this alias.
    pub fn by_alias(&self, alias: &Alias) -> Option<u64> {
        self.by_alias.get(alias).copied()
    }

    /// Stores a registration under `key`, replacing any under the same key.
    pub fn insert(&mut self, key: u64, registration: Registration) {
        self.remove(key);
        self.by_source.insert(registration.source, key);
        for alias in &registration.aliases {
            self.by_alias.insert(alias.clone(), key);
        }
        self.by_key.insert(key, registration);
    }

    /// Removes and returns a registration.
    pub fn remove(&mut self, key: u64) -> Option<Registration> {
        let registration = self.by_key.remove(&key)?;
        if self.by_source.get(&registration.source) == Some(&key) {
            self.by_source.remove(&registration.source);
        }
        for alias in &registration.aliases {
            if self.by_alias.get(alias) == Some(&key) {
                self.by_alias.remove(alias);
            }
        }
        Some(registration)
    }

    /// All registrations with their keys, in key order (oldest first).
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Registration)> {
        let mut keys: Vec<u64> = self.by_key.keys().copied().collect();
        keys.sort_unstable();
        keys.into_iter().map(move |key| (key, &self.by_key[&key]))
    }

    /// Keys of the registrations whose socket is on a C-LAN, oldest first.
    pub fn with_socket_on(&self, clan: ClanIdx) -> Vec<u64> {
        let mut keys: Vec<u64> = self
            .by_key
            .iter()
            .filter(|(_, r)| r.socket == Some(clan))
            .map(|(&k, _)| k)
            .collect();
        keys.sort_unstable();
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_ids_name_their_key() {
        assert_eq!(endpoint_id_text(42), "EP0000002A");
        assert_eq!(key_of("EP0000002A"), Some(42));
        assert_eq!(key_of(&endpoint_id_text(u64::MAX)), Some(u64::MAX));
        assert_eq!(key_of("EP2A"), None);
        assert_eq!(key_of("EP0000002a"), None);
        assert_eq!(key_of("XX0000002A"), None);
        assert_eq!(key_of("EP+000002A"), None);
        assert_eq!(key_of("EP00000000000000000000002A"), None);
        assert_eq!(endpoint_id(42).text(), "EP0000002A");
    }

    #[test]
    fn one_call_signal_address_is_held_inline() {
        let one: SocketAddr = "127.0.0.1:1720".parse().unwrap();
        let two: SocketAddr = "127.0.0.2:1720".parse().unwrap();
        let single = CallSignalAddresses::from(vec![one]);
        assert_eq!(single, CallSignalAddresses::One(one));
        assert_eq!(&single[..], &[one]);
        assert_eq!(&CallSignalAddresses::from(vec![one, two])[..], &[one, two]);
        assert!(CallSignalAddresses::from(Vec::new()).is_empty());
    }
}
