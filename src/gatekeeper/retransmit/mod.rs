//! The retransmission cache (docs/rules.md §5.9): a request from the same source to the same local
//! address with the same `requestSeqNum` and the same octets within the hold time gets the
//! reply it got the first time, and changes nothing. Bounded in time and in entries
//! (`[limits] max_cached_replies`, stale slots included); when full, the oldest entry goes
//! first, and is counted. An entry holds its reply's octets as a slice of the reply arena's
//! chunks, so storing one allocates nothing.
//!
//! Entries sit in one queue in the order they were stored, which is also the order they
//! expire and are evicted in, so both ends are touched in sequence. The index beside it
//! ([`index`]) holds only serial numbers, a word each, in buckets of one cache line: a
//! gatekeeper answering 150,000 requests a second keeps its 200,000 entries, and each
//! request's lookup and store read one line of a table of 4 MB rather than an entry of a
//! queue of 19 MB. An entry that leaves the queue frees its slot by leaving: a slot whose
//! serial is below the queue's first is free. Serials run out after 2^40 stores (85 days at
//! 150,000 a second); the cache then starts over empty.
//!
//! An entry is kept to 96 octets: the local addresses (the gatekeeper's own few) are held
//! once in a table and named in entries by number, the time is nanoseconds since the cache's
//! first store, and the index rehashes a key from its entry rather than keeping its hash. At
//! the default bound the queue is then 19 MB rather than 34 MB, and every request writes two
//! cache lines of it rather than three: `rasgk bench` showed the cache's memory traffic as a
//! tenth of GRQ throughput.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Transmit;

mod index;

use index::{Index, SERIAL};

/// How long a reply is kept for retransmissions.
pub const HOLD: Duration = Duration::from_secs(10);

/// Most replies kept at once unless `[limits] max_cached_replies` says otherwise.
pub const MAX_ENTRIES: usize = 200_000;

/// Entries' room the cache keeps however empty it gets.
const KEPT_ROOM: usize = 4096;

struct Entry {
    /// Nanoseconds from the cache's epoch (its first store) to the store.
    stored: u64,
    /// The request's fingerprint.
    request: u64,
    /// The reply (to the key's source); `None` when the request got none, or when the key
    /// was stored again since.
    reply: Option<Bytes>,
    source: SocketAddr,
    /// The local address the request came to, as its number in `locals`.
    local: u32,
    /// The local address the reply is sent from, as its number in `locals`.
    reply_local: u32,
    seq: u16,
    /// The key was stored again since: this slot only waits its turn to leave the queue.
    stale: bool,
}

impl Entry {
    fn key(&self) -> Compact {
        (self.local, self.source, self.seq)
    }
}

/// (local address, source, sequence number).
type Key = (SocketAddr, SocketAddr, u16);

/// A key with its local address as a number in `locals`: what the index hashes.
type Compact = (u32, SocketAddr, u16);

/// Replies by [`Key`].
pub struct RetransmitCache {
    /// foldhash, seeded per process: keys are hashed twice a request, where SipHash cost
    /// more than the rest of the cache's work.
    hasher: foldhash::fast::RandomState,
    /// The serial of each key's newest entry.
    index: Index,
    /// Stores since the index was last rebuilt.
    since_rebuild: usize,
    /// Entries in the order they were stored: the one of serial `s` is at `s - first`.
    queue: VecDeque<Entry>,
    /// Serial of the queue's front (the first is 1).
    first: u64,
    /// Entries in the queue that are not stale: replies held.
    live: usize,
    /// Most entries (stale slots included) kept.
    max: usize,
    /// The local addresses entries name by number, and their numbers.
    locals: Vec<SocketAddr>,
    numbers: HashMap<SocketAddr, u32, foldhash::fast::FixedState>,
    /// The last local address numbered: requests come in runs from one socket.
    last: Option<(SocketAddr, u32)>,
    /// What entries' times count from.
    epoch: Option<Instant>,
    /// Replies dropped before their time to make room.
    pub evicted: u64,
}

impl Default for RetransmitCache {
    fn default() -> RetransmitCache {
        RetransmitCache::new(MAX_ENTRIES)
    }
}

/// Nanoseconds from `epoch` to `now` (0 when `now` is earlier).
fn nanos_between(epoch: Instant, now: Instant) -> u64 {
    now.saturating_duration_since(epoch).as_nanos() as u64
}

/// A fingerprint of a request's octets (the same in every run, so replays are planned alike).
pub fn fingerprint(datagram: &[u8]) -> u64 {
    foldhash::fast::FixedState::default().hash_one(datagram)
}

impl RetransmitCache {
    /// An empty cache of at most `max` replies (at least 1).
    pub fn new(max: usize) -> RetransmitCache {
        RetransmitCache {
            hasher: foldhash::fast::RandomState::default(),
            index: Index::with_room(0),
            since_rebuild: 0,
            queue: VecDeque::new(),
            first: 1,
            live: 0,
            max: max.max(1),
            locals: Vec::new(),
            numbers: HashMap::default(),
            last: None,
            epoch: None,
            evicted: 0,
        }
    }

    /// The number of local address `local`, if it has one.
    fn known_number(&self, local: SocketAddr) -> Option<u32> {
        match self.last {
            Some((last, number)) if last == local => Some(number),
            _ => self.numbers.get(&local).copied(),
        }
    }

    /// [`known_number`](RetransmitCache::known_number), remembered as the last one.
    fn number(&mut self, local: SocketAddr) -> Option<u32> {
        let number = self.known_number(local)?;
        self.last = Some((local, number));
        Some(number)
    }

    /// The number of local address `local`, given one if it has none.
    fn number_or_new(&mut self, local: SocketAddr) -> u32 {
        if let Some(number) = self.number(local) {
            return number;
        }
        let number = self.locals.len() as u32;
        self.locals.push(local);
        self.numbers.insert(local, number);
        self.last = Some((local, number));
        number
    }

    /// Nanoseconds from the epoch to `now` (0 before it), the epoch set at `now` if there
    /// is none yet.
    fn since_epoch(&mut self, now: Instant) -> u64 {
        let epoch = *self.epoch.get_or_insert(now);
        nanos_between(epoch, now)
    }

    /// When an entry stored at `stored` expires.
    fn expiry(&self, stored: u64) -> Option<Instant> {
        Some(self.epoch? + Duration::from_nanos(stored) + HOLD)
    }

    /// The entry of serial `serial`.
    fn entry(&self, serial: u64) -> &Entry {
        &self.queue[(serial - self.first) as usize]
    }

    /// The serial of `key`'s newest entry.
    fn newest(&self, key: &Compact) -> Option<u64> {
        let (first, queue) = (self.first, &self.queue);
        self.index.find(self.hasher.hash_one(key), first, |serial| {
            queue[(serial - first) as usize].key() == *key
        })
    }

    /// Asks the processor to fetch the memory a [`lookup`](RetransmitCache::lookup) of
    /// `key` reads, so that a batch of requests waits for it once rather than once each.
    pub fn prefetch(&self, key: Key) {
        if let Some(number) = self.known_number(key.0) {
            self.index
                .prefetch(self.hasher.hash_one((number, key.1, key.2)));
        }
    }

    /// The reply to an earlier identical request (none when it got none), if it is still
    /// held.
    pub fn lookup(&mut self, key: Key, request: u64) -> Option<Vec<Transmit>> {
        let key = (self.number(key.0)?, key.1, key.2);
        let serial = self.newest(&key)?;
        let entry = Some(self.entry(serial)).filter(|e| e.request == request)?;
        Some(
            entry
                .reply
                .iter()
                .map(|payload| Transmit {
                    local: self.locals[entry.reply_local as usize],
                    to: key.1,
                    payload: payload.clone(),
                })
                .collect(),
        )
    }

    /// Keeps the reply to a request (sent to the key's source).
    pub fn store(&mut self, now: Instant, key: Key, request: u64, reply: Option<&Transmit>) {
        self.expire(now);
        while self.queue.len() >= self.max {
            if self.pop_oldest() {
                self.evicted += 1;
            }
        }
        if self.first + self.queue.len() as u64 > SERIAL {
            // Serials have run out (after 2^40 stores): start over empty, the replies
            // held counted as evicted.
            self.evicted += self.live as u64;
            self.index = Index::with_room(0);
            self.queue.clear();
            (self.first, self.live) = (1, 0);
        }
        self.since_rebuild += 1;
        if self.live >= self.index.room() {
            self.rebuild(2 * self.index.room());
        } else if self.index.worn() && self.since_rebuild >= self.index.room() {
            // At most one rebuild (a pass over the queue) per room's worth of stores.
            self.rebuild(self.index.room());
        }
        let stored = self.since_epoch(now);
        let key = (self.number_or_new(key.0), key.1, key.2);
        let reply_local = reply.map_or(key.0, |t| self.number_or_new(t.local));
        let hash = self.hasher.hash_one(key);
        let serial = self.first + self.queue.len() as u64;
        let (first, queue) = (self.first, &mut self.queue);
        let older = self.index.put(hash, first, serial, |s| {
            queue[(s - first) as usize].key() == key
        });
        match older {
            Some(older) => {
                // The older entry stays in the queue as a stale slot, its reply let go.
                let older = &mut queue[(older - first) as usize];
                older.reply = None;
                older.stale = true;
            }
            None => self.live += 1,
        }
        self.queue.push_back(Entry {
            stored,
            request,
            reply: reply.map(|t| t.payload.clone()),
            source: key.1,
            local: key.0,
            reply_local,
            seq: key.2,
            stale: false,
        });
    }

    /// A new index with room for `keys` keys, holding every live entry's serial.
    fn rebuild(&mut self, keys: usize) {
        self.since_rebuild = 0;
        let first = self.first;
        let live = (first..).zip(&self.queue).filter(|(_, entry)| !entry.stale);
        let hashes = live.map(|(serial, entry)| (serial, self.hasher.hash_one(entry.key())));
        self.index = Index::rebuilt(keys, first, hashes);
    }

    /// A new bound (`[limits] max_cached_replies` changed by a reload): at most `max` entries
    /// (at least 1) from now on; the oldest beyond it go at once, counted as evicted.
    pub fn set_max(&mut self, max: usize) {
        self.max = max.max(1);
        while self.queue.len() > self.max {
            if self.pop_oldest() {
                self.evicted += 1;
            }
        }
    }

    /// Drops the oldest queue slot: `true` when it still held a reply. Its serial stays in
    /// the index, where it marks its slot free.
    fn pop_oldest(&mut self) -> bool {
        let Some(entry) = self.queue.pop_front() else {
            return false;
        };
        self.first += 1;
        if !entry.stale {
            self.live -= 1;
        }
        !entry.stale
    }

    /// Drops replies older than [`HOLD`]. After a storm has passed, the index and the queue
    /// give back the room they grew to (held at most twice what is left, and never for
    /// fewer than [`KEPT_ROOM`] entries), so a gatekeeper with 100,000 phones does not keep
    /// 200,000 empty slots for the rest of its life.
    pub fn expire(&mut self, now: Instant) {
        let mut expired = false;
        let Some(epoch) = self.epoch else {
            return;
        };
        let held = nanos_between(epoch, now);
        let hold = HOLD.as_nanos() as u64;
        while let Some(entry) = self.queue.front() {
            if held.saturating_sub(entry.stored) < hold {
                break;
            }
            self.pop_oldest();
            expired = true;
        }
        // Twice the room it is shrunk to: the index's room after a rebuild for n keys can be
        // up to 2n (its buckets are a power of two), and a threshold below that would
        // rebuild it again at every expiry.
        if expired && self.index.room() > 2 * KEPT_ROOM.max(4 * self.live) {
            self.rebuild(KEPT_ROOM.max(2 * self.live));
        }
        if expired && self.queue.capacity() > KEPT_ROOM.max(4 * self.queue.len()) {
            self.queue.shrink_to(KEPT_ROOM.max(2 * self.queue.len()));
        }
    }

    /// When the oldest reply expires.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.expiry(self.queue.front()?.stored)
    }

    /// Replies held.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Nothing held?
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    /// What the cache holds, the plain way: the newest store of each key, and the order of
    /// all stores.
    #[derive(Default)]
    struct Model {
        newest: HashMap<Key, (u64, u64, Option<u8>)>,
        order: VecDeque<(Instant, u64, Key)>,
        serial: u64,
        evicted: u64,
    }

    impl Model {
        fn pop(&mut self) -> bool {
            let Some((_, serial, key)) = self.order.pop_front() else {
                return false;
            };
            let live = self.newest.get(&key).is_some_and(|e| e.0 == serial);
            if live {
                self.newest.remove(&key);
            }
            live
        }

        fn store(&mut self, now: Instant, max: usize, key: Key, request: u64, reply: Option<u8>) {
            while self.order.front().is_some_and(|e| now - e.0 >= HOLD) {
                self.pop();
            }
            while self.order.len() >= max {
                if self.pop() {
                    self.evicted += 1;
                }
            }
            self.serial += 1;
            self.newest.insert(key, (self.serial, request, reply));
            self.order.push_back((now, self.serial, key));
        }
    }

    proptest! {
        /// Stores and lookups of a few keys, with time passing and a small bound, answer as
        /// the model does, and evict as many replies.
        #[test]
        fn the_cache_answers_as_the_plain_model(
            steps in proptest::collection::vec((0..6u16, 0..3u64, any::<bool>(), 0..4000u64), 1..300),
            max in 1..8usize,
        ) {
            let start = Instant::now();
            let mut now = start;
            let local: SocketAddr = "127.0.0.1:1719".parse().unwrap();
            let from = SocketAddr::from(([127, 1, 0, 1], 5000));
            let mut cache = RetransmitCache::new(max);
            let mut model = Model::default();
            for (seq, request, store, advance_ms) in steps {
                now += Duration::from_millis(advance_ms);
                let key = (local, from, seq);
                if store {
                    let payload = Bytes::from(vec![seq as u8; 3]);
                    let reply = (request != 0).then(|| Transmit { local, to: from, payload });
                    cache.store(now, key, request, reply.as_ref());
                    model.store(now, max, key, request, reply.map(|_| seq as u8));
                } else {
                    cache.expire(now);
                    while model.order.front().is_some_and(|e| now - e.0 >= HOLD) {
                        model.pop();
                    }
                    let got = cache.lookup(key, request).map(|t| t.iter().map(|t| t.payload[0]).collect::<Vec<_>>());
                    let want = model.newest.get(&key).filter(|e| e.1 == request).map(|e| e.2.into_iter().collect::<Vec<_>>());
                    prop_assert_eq!(got, want);
                }
                prop_assert_eq!(cache.len(), model.newest.len());
                prop_assert_eq!(cache.evicted, model.evicted);
            }
        }
    }

    #[test]
    fn an_entry_is_kept_to_96_octets() {
        assert!(
            std::mem::size_of::<Entry>() <= 96,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }

    #[test]
    fn a_reply_sent_from_another_local_address_is_resent_from_it() {
        let mut cache = RetransmitCache::default();
        let now = Instant::now();
        let multicast: SocketAddr = "224.0.1.41:1718".parse().unwrap();
        let discovery: SocketAddr = "127.0.0.1:1719".parse().unwrap();
        let from: SocketAddr = "127.1.0.1:5000".parse().unwrap();
        let payload = Bytes::from_static(b"GCF");
        let reply = Transmit {
            local: discovery,
            to: from,
            payload,
        };
        cache.store(now, (multicast, from, 3), 9, Some(&reply));
        let again = cache.lookup((multicast, from, 3), 9).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!((again[0].local, again[0].to), (discovery, from));
        assert!(cache.lookup((discovery, from, 3), 9).is_none());
        assert_eq!(cache.next_expiry(), Some(now + HOLD));
    }

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
        assert!(cache.queue.len() <= MAX_ENTRIES);
        assert!(cache
            .lookup((local, from, 7), MAX_ENTRIES as u64 + 999)
            .is_some());
        assert!(cache.lookup((local, from, 7), 0).is_none());
        cache.expire(now + HOLD);
        assert!(cache.is_empty());
        assert_eq!(cache.evicted, 0, "only stale slots made room");
    }

    #[test]
    fn entries_that_leave_the_queue_leave_their_room_in_the_index() {
        let mut cache = RetransmitCache::new(1000);
        let now = Instant::now();
        let local: SocketAddr = "127.0.0.1:1719".parse().unwrap();
        for n in 0..200_000u32 {
            let from = SocketAddr::from(([127, 1, (n >> 16) as u8, 1], n as u16));
            cache.store(now, (local, from, 1), 0, None);
        }
        assert_eq!(cache.len(), 1000);
        assert_eq!(cache.evicted, 199_000);
        assert!(
            cache.index.room() <= 4 * 1000,
            "room for {} keys for 1,000 replies",
            cache.index.room()
        );
    }

    #[test]
    fn serials_that_run_out_start_the_cache_over() {
        let mut cache = RetransmitCache::new(10);
        let now = Instant::now();
        let local: SocketAddr = "127.0.0.1:1719".parse().unwrap();
        let from = |n: u16| SocketAddr::from(([127, 1, 0, 1], n));
        cache.first = SERIAL - 1;
        cache.store(now, (local, from(1), 1), 7, None);
        cache.store(now, (local, from(2), 1), 8, None);
        assert!(cache.lookup((local, from(2), 1), 8).is_some());
        // The third store would be serial 2^40: the cache starts over with it alone.
        cache.store(now, (local, from(3), 1), 9, None);
        assert_eq!((cache.first, cache.len(), cache.evicted), (1, 1, 2));
        assert!(cache.lookup((local, from(2), 1), 8).is_none());
        assert!(cache.lookup((local, from(3), 1), 9).is_some());
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
        assert!(cache.index.room() >= 50_000);
        cache.expire(now + HOLD);
        assert!(cache.is_empty());
        assert!(cache.index.room() < 2 * KEPT_ROOM, "{}", cache.index.room());
        assert!(
            cache.queue.capacity() < 2 * KEPT_ROOM,
            "{}",
            cache.queue.capacity()
        );
    }

    #[test]
    fn phones_numbering_their_requests_in_turn_do_not_wear_the_index() {
        // 64 phones at the bound of 200,000 replies, each numbering its requests in turn:
        // full buckets stay rare, and the index is not rebuilt over and over.
        let mut cache = RetransmitCache::default();
        let start = Instant::now();
        let local: SocketAddr = "127.0.60.254:1719".parse().unwrap();
        for i in 0..400_000u64 {
            let from = SocketAddr::from(([127, 1, 180, 1 + (i % 64) as u8], 40_000));
            let key = (local, from, (i / 64) as u16);
            assert!(cache.lookup(key, 1).is_none());
            cache.store(start + Duration::from_micros(i * 7), key, 1, None);
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
        assert!(
            cache.index.marks() * 16 <= cache.index.room() / 4,
            "{} of {} buckets passed over full",
            cache.index.marks(),
            cache.index.room() / 4
        );
    }
}
