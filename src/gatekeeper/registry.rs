//! The registered endpoints, found by key, by RAS source address and by alias.
//!
//! An endpoint's key is a counter; its `endpointIdentifier` is the key written in hex
//! (`EP0000002A`), so a lightweight RRQ or URQ finds its registration without a text index.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Instant;

use super::agls::Agl;
use super::topology::ClanIdx;
use crate::config::RegionId;
use crate::ras::reply::EndpointId;
use crate::ras::Alias;

/// One registered endpoint.
#[derive(Debug, Clone)]
pub struct Registration {
    /// Its `endpointIdentifier`.
    pub endpoint_id: EndpointId,
    /// `terminalAlias`.
    pub aliases: Vec<Alias>,
    /// Where its RAS datagrams come from (replies go here).
    pub source: SocketAddr,
    /// `rasAddress` of its RRQ (or the source when it gave none).
    pub ras_address: SocketAddr,
    /// `callSignalAddress` of its RRQ.
    pub call_signal_address: Vec<SocketAddr>,
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

/// [`endpoint_id_text`] as UTF-16BE octets, without allocating: the octets and how many of
/// them are used.
pub fn endpoint_id_octets(key: u64) -> ([u8; 36], usize) {
    let mut octets = [0u8; 36];
    let digits = (16 - key.leading_zeros() as usize / 4).max(8);
    let text = b"EP".iter().copied().chain(
        (0..digits)
            .rev()
            .map(|place| b"0123456789ABCDEF"[((key >> (4 * place)) & 0xF) as usize]),
    );
    let mut len = 0;
    for character in text {
        octets[len + 1] = character;
        len += 2;
    }
    (octets, len)
}

/// The key an `endpointIdentifier` given as UTF-16BE octets names, if it is one of ours
/// (read without building its text).
pub fn key_of_octets(octets: &[u8]) -> Option<u64> {
    let mut text = [0u8; 18];
    if octets.len() > 2 * text.len() || !octets.len().is_multiple_of(2) {
        return None;
    }
    for (character, pair) in text.iter_mut().zip(octets.chunks_exact(2)) {
        if pair[0] != 0 || !pair[1].is_ascii() {
            return None;
        }
        *character = pair[1];
    }
    key_of(std::str::from_utf8(&text[..octets.len() / 2]).ok()?)
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
        assert_eq!(key_of_octets(&[0, b'E', 0, b'P', 0, b'2']), None);
        assert_eq!(key_of_octets(&[0, b'E', 1, b'P']), None);
        assert_eq!(key_of_octets(&[0; 40]), None);
        for key in [0, 1, 42, 0xFFFF_FFFF, 0x1_0000_0000, u64::MAX] {
            let (octets, len) = endpoint_id_octets(key);
            assert_eq!(key_of_octets(&octets[..len]), Some(key));
            let utf16: Vec<u8> = endpoint_id_text(key)
                .encode_utf16()
                .flat_map(u16::to_be_bytes)
                .collect();
            assert_eq!(&octets[..len], &utf16[..], "{key:X}");
        }
    }
}
