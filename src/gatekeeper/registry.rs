//! The registered endpoints, found by key, by RAS source address and by alias.
//!
//! An endpoint's key is a counter; its `endpointIdentifier` is the key written in hex
//! (`EP0000002A`), so a lightweight RRQ or URQ finds its registration without a text index,
//! and a registration does not store its identifier: it is written from the key when a
//! message or a view needs it ([`endpoint_id`]). A registration is kept small, since a
//! gatekeeper holds 100,000 of them: its aliases packed into a few octets held inline
//! ([`PackedAliases`]), its RAS and call signalling addresses as two ports when they are on
//! its source's host ([`EndpointAddresses`]).
//!
//! An endpoint keeps its identifier: a full RRQ that carries one of ours takes it back when
//! no other endpoint holds it (see `Gatekeeper::full_registration`), and
//! [`skip_past`](Registry::skip_past) keeps the counter past every identifier taken back,
//! so a new endpoint never gets one that is held — nor, through the state file's
//! `last_key`, after a restart.

use std::hash::{BuildHasher, Hash};

use foldhash::fast::RandomState;
use std::net::SocketAddr;
use std::time::Instant;

use hashbrown::HashTable;

use super::agls::Agl;
pub use super::endpoint_addresses::{CallSignalAddresses, EndpointAddresses};
use super::topology::ClanIdx;
use crate::config::RegionId;
use crate::ras::avaya::AvayaEndpoint;
use crate::ras::reply::EndpointId;
use crate::ras::{Alias, AliasView, PackedAliases, Utf16};

/// One registered endpoint.
#[derive(Debug, Clone)]
pub struct Registration {
    /// `terminalAlias`.
    pub aliases: PackedAliases,
    /// Where its RAS datagrams come from (replies go here).
    pub source: SocketAddr,
    /// `rasAddress` of its RRQ (or the source when it gave none) and its
    /// `callSignalAddress`: see [`Registration::ras_address`] and
    /// [`Registration::call_signal_address`].
    pub addresses: EndpointAddresses,
    /// `terminalType` has `gateway`.
    pub gateway: bool,
    /// Its RRQ's `nonStandardData` marks an Avaya endpoint: what it said of itself.
    pub avaya: Option<AvayaEndpoint>,
    /// Home region.
    pub region: RegionId,
    /// A TTS phone?
    pub tts: bool,
    /// Its full RRQ asked for the service frame ([`crate::ras::service_frame`]): in socket
    /// mode it gets one when its socket is in service, and its RCFs confirm the feature.
    pub service_frame: bool,
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

impl Registration {
    /// The address family it is served over: that of its RAS source (docs/rules.md §17).
    pub fn family(&self) -> crate::config::Family {
        crate::config::Family::of(self.source.ip())
    }

    /// `rasAddress` of its RRQ (or the source when it gave none).
    pub fn ras_address(&self) -> SocketAddr {
        self.addresses.ras_address(self.source)
    }

    /// `callSignalAddress` of its RRQ.
    pub fn call_signal_address(&self) -> CallSignalAddresses {
        self.addresses.call_signal_address(self.source)
    }
}

/// All registrations, in a slab: a registration keeps its slot while it lives and a freed
/// slot is reused, so the storage is one `Vec` whose untouched end costs no memory. The
/// indices by key, RAS source and alias hold slot numbers only and compare against the
/// stored registration, so no alias or address is stored twice.
#[derive(Debug, Default)]
pub struct Registry {
    slots: Vec<Slot>,
    /// Slots without a registration, to be used again.
    free: Vec<u32>,
    by_key: HashTable<u32>,
    by_source: HashTable<u32>,
    /// A slot and the position of the alias in its registration's aliases.
    by_alias: HashTable<(u32, u32)>,
    /// foldhash, seeded per process (as the retransmission cache's).
    hasher: RandomState,
    next_key: u64,
}

/// A registration's place in the slab.
#[derive(Debug)]
struct Slot {
    key: u64,
    /// `None` while the slot is free.
    registration: Option<Registration>,
}

/// The slots of the slab, read by the indices.
#[derive(Clone, Copy)]
struct Slots<'a>(&'a [Slot]);

impl<'a> Slots<'a> {
    fn key(self, slot: u32) -> u64 {
        self.0[slot as usize].key
    }

    fn registration(self, slot: u32) -> &'a Registration {
        self.0[slot as usize]
            .registration
            .as_ref()
            .expect("the indices name only slots in use")
    }

    fn source(self, slot: u32) -> SocketAddr {
        self.registration(slot).source
    }

    fn alias(self, (slot, at): (u32, u32)) -> Option<AliasView<'a>> {
        self.registration(slot).aliases.get(at as usize)
    }
}

/// The `endpointIdentifier` text of a key.
pub fn endpoint_id_text(key: u64) -> String {
    format!("EP{key:08X}")
}

/// The `endpointIdentifier` of a key.
pub fn endpoint_id(key: u64) -> EndpointId {
    EndpointId::new(&endpoint_id_text(key)).expect("EP + hex digits is a valid endpointIdentifier")
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

/// The key an `endpointIdentifier` given as UTF-16BE octets names, if it is one of ours.
pub fn key_of_octets(octets: &[u8]) -> Option<u64> {
    let mut units = [0u16; 18];
    if octets.len() > 2 * units.len() || !octets.len().is_multiple_of(2) {
        return None;
    }
    for (unit, pair) in units.iter_mut().zip(octets.chunks_exact(2)) {
        *unit = u16::from_be_bytes([pair[0], pair[1]]);
    }
    key_of_units(&units[..octets.len() / 2])
}

/// The key an `endpointIdentifier` as a request carries it names, if it is one of ours.
pub fn key_of_utf16(id: Utf16<'_>) -> Option<u64> {
    let mut units = [0u16; 18];
    let mut len = 0;
    for unit in id.units() {
        *units.get_mut(len)? = unit;
        len += 1;
    }
    key_of_units(&units[..len])
}

/// The largest key an endpoint may bring back in a full RRQ and keep: identifiers of up to
/// eight hex digits (`EPFFFFFFFF`), all rasgk hands out before 2^32 registrations. A
/// larger one is not taken (the endpoint gets a new one), so that a forged identifier
/// cannot run the key counter to its end.
pub const MAX_KEPT_KEY: u64 = 0xFFFF_FFFF;

/// The key an `endpointIdentifier` text names, if it is one of ours.
pub fn key_of(endpoint_id: &str) -> Option<u64> {
    let units: Vec<u16> = endpoint_id.encode_utf16().collect();
    key_of_units(&units)
}

/// The key an `endpointIdentifier` of these UTF-16 code units names, if it is one of ours:
/// read and compared with what [`endpoint_id_octets`] writes, without building a text.
pub fn key_of_units(units: &[u16]) -> Option<u64> {
    let hex = units.strip_prefix(&[u16::from(b'E'), u16::from(b'P')])?;
    if hex.len() > 16 {
        return None;
    }
    let mut key = 0u64;
    for &unit in hex {
        key = key << 4 | u64::from(char::from_u32(u32::from(unit))?.to_digit(16)?);
    }
    // Only the exact text we hand out: no other spelling of the same number.
    let (canonical, len) = endpoint_id_octets(key);
    let same = len == 2 * units.len()
        && canonical[..len]
            .chunks_exact(2)
            .zip(units)
            .all(|(pair, &unit)| u16::from_be_bytes([pair[0], pair[1]]) == unit);
    same.then_some(key)
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

    fn hash(&self, value: impl Hash) -> u64 {
        self.hasher.hash_one(value)
    }

    fn slot_of(&self, key: u64) -> Option<u32> {
        let slots = Slots(&self.slots);
        let found = self
            .by_key
            .find(self.hash(key), |&slot| slots.key(slot) == key);
        found.copied()
    }

    /// A registration by key.
    pub fn get(&self, key: u64) -> Option<&Registration> {
        let slot = self.slot_of(key)?;
        Some(Slots(&self.slots).registration(slot))
    }

    /// A registration by key, to change (not its source or aliases).
    pub fn get_mut(&mut self, key: u64) -> Option<&mut Registration> {
        let slot = self.slot_of(key)?;
        self.slots[slot as usize].registration.as_mut()
    }

    /// The key of the registration from this RAS source.
    pub fn by_source(&self, source: SocketAddr) -> Option<u64> {
        let slots = Slots(&self.slots);
        let found = self
            .by_source
            .find(self.hash(source), |&slot| slots.source(slot) == source);
        found.map(|&slot| slots.key(slot))
    }

    /// The key of the registration holding this alias.
    pub fn by_alias(&self, alias: &Alias) -> Option<u64> {
        let slots = Slots(&self.slots);
        let alias = alias.view();
        let found = self
            .by_alias
            .find(self.hash(alias), |&entry| slots.alias(entry) == Some(alias));
        found.map(|&(slot, _)| slots.key(slot))
    }

    /// Stores a registration under `key`, replacing any under the same key. Its source and
    /// aliases name it from now on, even where another registration held them.
    pub fn insert(&mut self, key: u64, registration: Registration) {
        self.remove(key);
        let source_hash = self.hash(registration.source);
        let alias_hashes: Vec<u64> = registration.aliases.iter().map(|a| self.hash(a)).collect();
        let key_hash = self.hash(key);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot {
                key,
                registration: None,
            });
            u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 registrations")
        });
        self.slots[slot as usize] = Slot {
            key,
            registration: Some(registration),
        };
        let hasher = &self.hasher;
        let slots = Slots(&self.slots);
        self.by_key
            .insert_unique(key_hash, slot, |&slot| hasher.hash_one(slots.key(slot)));
        let source = slots.source(slot);
        match self
            .by_source
            .find_mut(source_hash, |&other| slots.source(other) == source)
        {
            Some(holder) => *holder = slot,
            None => {
                self.by_source.insert_unique(source_hash, slot, |&slot| {
                    hasher.hash_one(slots.source(slot))
                });
            }
        }
        for (at, hash) in (0..).zip(alias_hashes) {
            let alias = slots.alias((slot, at));
            match self
                .by_alias
                .find_mut(hash, |&other| slots.alias(other) == alias)
            {
                Some(holder) => *holder = (slot, at),
                None => {
                    self.by_alias.insert_unique(hash, (slot, at), |&entry| {
                        slots.alias(entry).map_or(0, |alias| hasher.hash_one(alias))
                    });
                }
            }
        }
    }

    /// Removes and returns a registration.
    pub fn remove(&mut self, key: u64) -> Option<Registration> {
        let slot = self.slot_of(key)?;
        let slots = Slots(&self.slots);
        let registration = slots.registration(slot);
        let key_hash = self.hash(key);
        let source_hash = self.hash(registration.source);
        if let Ok(entry) = self.by_key.find_entry(key_hash, |&other| other == slot) {
            entry.remove();
        }
        if let Ok(entry) = self
            .by_source
            .find_entry(source_hash, |&other| other == slot)
        {
            entry.remove();
        }
        for alias in &registration.aliases {
            let hash = self.hasher.hash_one(alias);
            let held_here = |&(other, at): &(u32, u32)| {
                other == slot && slots.alias((other, at)) == Some(alias)
            };
            if let Ok(entry) = self.by_alias.find_entry(hash, held_here) {
                entry.remove();
            }
        }
        self.free.push(slot);
        self.slots[slot as usize].registration.take()
    }

    /// All registrations with their keys, in key order (oldest first).
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Registration)> {
        let mut held: Vec<(u64, &Registration)> = self.iter_any_order().collect();
        held.sort_unstable_by_key(|&(key, _)| key);
        held.into_iter()
    }

    /// All registrations with their keys, in no particular order.
    pub fn iter_any_order(&self) -> impl Iterator<Item = (u64, &Registration)> {
        self.slots
            .iter()
            .filter_map(|slot| Some((slot.key, slot.registration.as_ref()?)))
    }

    /// Keys of the registrations whose socket is on a C-LAN, oldest first.
    pub fn with_socket_on(&self, clan: ClanIdx) -> Vec<u64> {
        let mut keys: Vec<u64> = self
            .slots
            .iter()
            .filter(|slot| {
                slot.registration
                    .as_ref()
                    .is_some_and(|r| r.socket == Some(clan))
            })
            .map(|slot| slot.key)
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
        assert_eq!(endpoint_id(42).text(), "EP0000002A");
    }

    fn registration(source: &str, aliases: &[&str]) -> Registration {
        let source: SocketAddr = source.parse().unwrap();
        Registration {
            aliases: PackedAliases::new(
                aliases
                    .iter()
                    .map(|a| AliasView::H323Id(Alias::h323_id(a).map(|_| *a).unwrap())),
            ),
            source,
            addresses: EndpointAddresses::new(source, source, vec![source].into()),
            gateway: false,
            avaya: None,
            region: 1,
            tts: false,
            service_frame: false,
            registered_via: 0,
            socket: Some(0),
            agl: Agl::from(vec![0]),
            ttl_s: 60,
            expires: Instant::now(),
        }
    }

    #[test]
    fn registrations_are_found_by_key_source_and_alias_until_removed() {
        let mut registry = Registry::default();
        let alias = |text: &str| Alias::h323_id(text).unwrap();
        for key in 1..=1_000u64 {
            let source = format!("127.0.{}.{}:1719", key / 250, key % 250);
            let a = format!("a{key}");
            registry.insert(key, registration(&source, &[&a, "x", &a]));
        }
        assert_eq!(registry.len(), 1_000);
        assert_eq!(registry.by_alias(&alias("a7")), Some(7));
        assert_eq!(
            registry.by_alias(&alias("x")),
            Some(1_000),
            "the newest holder"
        );
        assert_eq!(
            registry.by_source("127.0.0.7:1719".parse().unwrap()),
            Some(7)
        );
        for key in (1..=1_000u64).filter(|key| key % 2 == 0) {
            assert!(registry.remove(key).is_some());
        }
        assert!(registry.remove(2).is_none());
        assert_eq!(registry.len(), 500);
        assert_eq!(registry.by_alias(&alias("a8")), None);
        assert_eq!(registry.by_alias(&alias("x")), None, "its holder is gone");
        assert_eq!(registry.by_source("127.0.0.8:1719".parse().unwrap()), None);
        // Freed slots are used again; the order stays that of the keys.
        registry.insert(2_000, registration("127.0.9.9:1719", &["b"]));
        registry.insert(1_001, registration("127.0.0.7:1719", &["a7"]));
        assert_eq!(registry.slots.len(), 1_000);
        assert_eq!(
            registry.by_source("127.0.0.7:1719".parse().unwrap()),
            Some(1_001)
        );
        assert_eq!(registry.by_alias(&alias("a7")), Some(1_001));
        assert_eq!(registry.get(7).map(|r| r.aliases.len()), Some(3));
        registry.remove(7);
        assert_eq!(
            registry.by_alias(&alias("a7")),
            Some(1_001),
            "held by another now"
        );
        let keys: Vec<u64> = registry.iter().map(|(key, _)| key).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 501);
        assert_eq!(registry.with_socket_on(0).len(), 501);
        assert_eq!(registry.get(2_000).map(|r| r.ttl_s), Some(60));
    }
}
