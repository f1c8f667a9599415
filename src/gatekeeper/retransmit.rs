//! The retransmission cache (domain.md §2): a request from the same source to the same local
//! address with the same `requestSeqNum` and the same octets within the hold time gets the
//! reply it got the first time, and changes nothing. Bounded in time and in entries
//! (`[limits] max_cached_replies`, the queue that orders them included); when full, the
//! oldest entry goes first, and is counted. An entry holds its reply's octets as a slice of
//! the reply arena's chunks, so storing one allocates nothing.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Transmit;

/// How long a reply is kept for retransmissions.
pub const HOLD: Duration = Duration::from_secs(10);

/// Most replies kept at once unless `[limits] max_cached_replies` says otherwise.
pub const MAX_ENTRIES: usize = 200_000;

/// Entries' room the cache keeps however empty it gets.
const KEPT_ROOM: usize = 4096;

struct Entry {
    request: u64,
    /// Which store made it: tells its queue slot from stale ones of the same key, even
    /// when they were stored at the same instant.
    serial: u64,
    /// The reply (sent from this local address to the key's source); `None` when the
    /// request got none.
    reply: Option<(SocketAddr, Bytes)>,
}

/// (local address, source, sequence number).
type Key = (SocketAddr, SocketAddr, u16);

/// Replies by [`Key`].
pub struct RetransmitCache {
    /// foldhash, seeded per process: a key is 70 octets hashed up to three times a request,
    /// where SipHash cost more than the rest of the cache's work.
    entries: HashMap<Key, Entry, foldhash::fast::RandomState>,
    /// Keys in the order they were stored, with the serial of that store; a slot is stale
    /// when its key was stored again since.
    order: VecDeque<(Instant, u64, Key)>,
    /// Serial of the next store.
    serial: u64,
    /// Most entries (and queue slots) kept.
    max: usize,
    /// Replies dropped before their time to make room.
    pub evicted: u64,
}

impl Default for RetransmitCache {
    fn default() -> RetransmitCache {
        RetransmitCache::new(MAX_ENTRIES)
    }
}

/// A fingerprint of a request's octets (the same in every run, so replays are planned alike).
pub fn fingerprint(datagram: &[u8]) -> u64 {
    foldhash::fast::FixedState::default().hash_one(datagram)
}

impl RetransmitCache {
    /// An empty cache of at most `max` replies (at least 1).
    pub fn new(max: usize) -> RetransmitCache {
        RetransmitCache {
            entries: HashMap::default(),
            order: VecDeque::new(),
            serial: 0,
            max: max.max(1),
            evicted: 0,
        }
    }

    /// The reply to an earlier identical request (none when it got none), if it is still
    /// held.
    pub fn lookup(&self, key: Key, request: u64) -> Option<Vec<Transmit>> {
        let entry = self.entries.get(&key).filter(|e| e.request == request)?;
        Some(
            entry
                .reply
                .iter()
                .map(|(local, payload)| Transmit {
                    local: *local,
                    to: key.1,
                    payload: payload.clone(),
                })
                .collect(),
        )
    }

    /// Keeps the reply to a request (sent to the key's source).
    pub fn store(&mut self, now: Instant, key: Key, request: u64, reply: Option<&Transmit>) {
        self.expire(now);
        while self.order.len() >= self.max {
            if self.pop_oldest() {
                self.evicted += 1;
            }
        }
        self.serial += 1;
        self.entries.insert(
            key,
            Entry {
                request,
                serial: self.serial,
                reply: reply.map(|t| (t.local, t.payload.clone())),
            },
        );
        self.order.push_back((now, self.serial, key));
    }

    /// Drops the oldest queue slot: `true` when it still held a reply.
    fn pop_oldest(&mut self) -> bool {
        let Some((_, serial, key)) = self.order.pop_front() else {
            return false;
        };
        match self.entries.entry(key) {
            std::collections::hash_map::Entry::Occupied(entry) if entry.get().serial == serial => {
                entry.remove();
                true
            }
            _ => false,
        }
    }

    /// Drops replies older than [`HOLD`]. After a storm has passed, the table and the queue
    /// give back the room they grew to (held at most twice what is left, and never for
    /// fewer than [`KEPT_ROOM`] entries), so a gatekeeper with 100,000 phones does not keep
    /// 200,000 empty slots for the rest of its life.
    pub fn expire(&mut self, now: Instant) {
        let mut expired = false;
        while let Some(&(stored, _, _)) = self.order.front() {
            if now.saturating_duration_since(stored) < HOLD {
                break;
            }
            self.pop_oldest();
            expired = true;
        }
        if expired && self.entries.capacity() > KEPT_ROOM.max(4 * self.entries.len()) {
            self.entries
                .shrink_to(KEPT_ROOM.max(2 * self.entries.len()));
        }
        if expired && self.order.capacity() > KEPT_ROOM.max(4 * self.order.len()) {
            self.order.shrink_to(KEPT_ROOM.max(2 * self.order.len()));
        }
    }

    /// When the oldest reply expires.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.order.front().map(|&(stored, _, _)| stored + HOLD)
    }

    /// Replies held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Nothing held?
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seq_stored_again_and_again_stays_bounded() {
        let mut cache = RetransmitCache::default();
        let now = Instant::now();
        let local: SocketAddr = "127.0.0.1:1719".parse().unwrap();
        let from: SocketAddr = "127.1.0.1:5000".parse().unwrap();
        for request in 0..(MAX_ENTRIES as u64 + 1000) {
            cache.store(now, (local, from, 7), request, None);
        }
        assert_eq!(cache.len(), 1);
        assert!(cache.order.len() <= MAX_ENTRIES);
        assert!(cache
            .lookup((local, from, 7), MAX_ENTRIES as u64 + 999)
            .is_some());
        assert!(cache.lookup((local, from, 7), 0).is_none());
        cache.expire(now + HOLD);
        assert!(cache.is_empty());
        assert_eq!(cache.evicted, 0, "only stale slots made room");
    }

    #[test]
    fn a_full_cache_drops_and_counts_the_oldest() {
        let mut cache = RetransmitCache::new(3);
        let now = Instant::now();
        let local: SocketAddr = "127.0.0.1:1719".parse().unwrap();
        let from = |n: u16| SocketAddr::from(([127, 1, 0, 1], n));
        for n in 0..5 {
            cache.store(now, (local, from(n), 1), 0, None);
        }
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.evicted, 2);
        assert!(cache.lookup((local, from(1), 1), 0).is_none());
        assert!(cache.lookup((local, from(2), 1), 0).is_some());
    }

    #[test]
    fn an_emptied_cache_gives_its_room_back() {
        let mut cache = RetransmitCache::default();
        let now = Instant::now();
        let local: SocketAddr = "127.0.0.1:1719".parse().unwrap();
        for port in 0..50_000u16 {
            let from = SocketAddr::from(([127, 1, 0, 1], port));
            cache.store(now, (local, from, 1), 0, None);
        }
        assert!(cache.entries.capacity() >= 50_000);
        cache.expire(now + HOLD);
        assert!(cache.is_empty());
        assert!(
            cache.entries.capacity() < 2 * KEPT_ROOM,
            "{}",
            cache.entries.capacity()
        );
        assert!(
            cache.order.capacity() < 2 * KEPT_ROOM,
            "{}",
            cache.order.capacity()
        );
    }
}
