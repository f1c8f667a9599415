//! The retransmission cache's index: for each key, the serial of its newest entry in the
//! cache's queue.
//!
//! Open addressing in buckets of one cache line, eight one-word slots each. A request's
//! lookup — nearly always of a key that is not there — reads the one line its key hashes
//! to, where a general hash table read two (its control bytes, then its slots), each a cache
//! miss at 200,000 entries: `perf annotate` showed those two loads as nine tenths of a
//! lookup. The line's address depends on the key's hash alone, so the server fetches a
//! whole batch's lines ([`Index::prefetch`]) before it answers the first request of the
//! batch.
//!
//! A key's hash chooses its bucket (low bits) and tags its slot: a slot holds a serial in
//! its low 40 bits and the top 24 bits of the hash above them ([`slot_of`]), so a probe
//! tells most other keys apart without reading their entries. A slot whose serial is below
//! the queue's first has left the queue and is free, so an entry that is evicted or expires
//! costs the index nothing; serials start at 1, so a zeroed slot is free too. A key goes to
//! the first bucket of its search with a free slot (its own, then steps its hash chooses); a
//! bucket passed over full is marked, and a lookup goes on past marked buckets only. The
//! index is rebuilt from the queue when it grows, shrinks, or has too many marks.

/// Bits of a slot that hold the serial; the hash's top bits fill the rest.
const SERIAL_BITS: u32 = 40;

/// The serial part of a slot.
pub(super) const SERIAL: u64 = (1 << SERIAL_BITS) - 1;

/// Slots in a bucket: one cache line of words.
const SLOTS: usize = 8;

/// Keys held a bucket, on average, before the index grows: half full, so a bucket is full
/// (and passed over) about one insertion in fifty.
const LOAD: usize = 4;

/// The slot of serial `serial` for a key hashing to `hash`.
fn slot_of(serial: u64, hash: u64) -> u64 {
    (hash & !SERIAL) | serial
}

/// The serial a slot holds.
fn serial_of(slot: u64) -> u64 {
    slot & SERIAL
}

/// Could the slot be of a key hashing to `hash` (their top bits agree)?
fn may_be(slot: u64, hash: u64) -> bool {
    (slot ^ hash) & !SERIAL == 0
}

#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket([u64; SLOTS]);

/// Keys' newest serials; see the module documentation.
#[derive(Debug)]
pub(super) struct Index {
    /// A power of two of them.
    buckets: Vec<Bucket>,
    /// A bit a bucket: an insertion found it full and went on to the next one.
    passed: Vec<u64>,
    /// Buckets whose bit is set.
    marks: usize,
}

impl Index {
    /// An empty index with room for `keys` keys.
    pub(super) fn with_room(keys: usize) -> Index {
        let buckets = keys.div_ceil(LOAD).next_power_of_two().max(1);
        Index {
            buckets: vec![Bucket::default(); buckets],
            passed: vec![0; buckets.div_ceil(64)],
            marks: 0,
        }
    }

    /// Keys it holds before it should grow.
    pub(super) fn room(&self) -> usize {
        self.buckets.len() * LOAD
    }

    /// Buckets marked passed over.
    #[cfg(test)]
    pub(super) fn marks(&self) -> usize {
        self.marks
    }

    /// Too many buckets are marked passed over (lookups of absent keys read two lines too
    /// often): time to rebuild it.
    pub(super) fn worn(&self) -> bool {
        self.marks > self.buckets.len() / 8
    }

    /// The bucket a key hashing to `hash` starts its search at.
    fn home(&self, hash: u64) -> usize {
        hash as usize & (self.buckets.len() - 1)
    }

    /// The bucket after `bucket` in the search for a key hashing to `hash`: a step its
    /// hash's top bits choose (odd, so the search meets every bucket). Not simply the next
    /// bucket: keys that crowd one bucket would crowd its neighbours too, and each search
    /// that went on would meet them all.
    fn next(&self, bucket: usize, hash: u64) -> usize {
        let step = (hash >> SERIAL_BITS) as usize | 1;
        bucket.wrapping_add(step) & (self.buckets.len() - 1)
    }

    fn is_passed(&self, bucket: usize) -> bool {
        self.passed[bucket / 64] & 1 << (bucket % 64) != 0
    }

    fn mark_passed(&mut self, bucket: usize) {
        if !self.is_passed(bucket) {
            self.passed[bucket / 64] |= 1 << (bucket % 64);
            self.marks += 1;
        }
    }

    /// Asks the processor to bring the line a lookup of a key hashing to `hash` reads.
    pub(super) fn prefetch(&self, hash: u64) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let bucket: *const Bucket = &self.buckets[self.home(hash)];
            // SAFETY: every x86_64 processor has SSE, and a prefetch only hints: it reads
            // nothing into the program (and the address is a bucket's, in bounds anyway).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(bucket.cast()) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = hash;
    }

    /// The (bucket, slot) holding the live serial of the key hashing to `hash` for which
    /// `is_key` says yes, in a queue whose front has serial `first`.
    fn position(
        &self,
        hash: u64,
        first: u64,
        mut is_key: impl FnMut(u64) -> bool,
    ) -> Option<(usize, usize)> {
        let mut bucket = self.home(hash);
        for _ in 0..self.buckets.len() {
            for (i, &slot) in self.buckets[bucket].0.iter().enumerate() {
                if may_be(slot, hash) && serial_of(slot) >= first && is_key(serial_of(slot)) {
                    return Some((bucket, i));
                }
            }
            if !self.is_passed(bucket) {
                return None;
            }
            bucket = self.next(bucket, hash);
        }
        None
    }

    /// The live serial of the key hashing to `hash` for which `is_key` says yes.
    pub(super) fn find(
        &self,
        hash: u64,
        first: u64,
        is_key: impl FnMut(u64) -> bool,
    ) -> Option<u64> {
        self.position(hash, first, is_key)
            .map(|(bucket, i)| serial_of(self.buckets[bucket].0[i]))
    }

    /// Makes `serial` the key's newest (the key hashing to `hash`, recognised by `is_key`);
    /// the serial it replaces, if the key had one. There must be room (see [`room`](Index::room)).
    pub(super) fn put(
        &mut self,
        hash: u64,
        first: u64,
        serial: u64,
        is_key: impl FnMut(u64) -> bool,
    ) -> Option<u64> {
        if let Some((bucket, i)) = self.position(hash, first, is_key) {
            let older = serial_of(self.buckets[bucket].0[i]);
            self.buckets[bucket].0[i] = slot_of(serial, hash);
            return Some(older);
        }
        self.insert(hash, first, serial);
        None
    }

    /// Puts the serial of a key it does not hold into the first free slot of its search.
    fn insert(&mut self, hash: u64, first: u64, serial: u64) {
        let mut bucket = self.home(hash);
        for _ in 0..self.buckets.len() {
            let slots = &mut self.buckets[bucket].0;
            if let Some(free) = slots.iter_mut().find(|slot| serial_of(**slot) < first) {
                *free = slot_of(serial, hash);
                return;
            }
            self.mark_passed(bucket);
            bucket = self.next(bucket, hash);
        }
        unreachable!("the index is never more than half full");
    }

    /// An index with room for `keys` keys holding `entries` (serial, key's hash), whose keys
    /// are all different, in a queue whose front has serial `first`.
    pub(super) fn rebuilt(
        keys: usize,
        first: u64,
        entries: impl Iterator<Item = (u64, u64)>,
    ) -> Index {
        let mut index = Index::with_room(keys);
        for (serial, hash) in entries {
            index.insert(hash, first, serial);
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Keys crowded into two buckets of sixteen, put and looked up while the queue's
        /// front moves on, are found exactly where a plain map of live keys has them.
        #[test]
        fn a_crowded_index_answers_as_a_map(
            steps in proptest::collection::vec((0..40u64, 0..3u8), 1..400),
        ) {
            let hash = |key: u64| (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) & !0xF) | (key % 2);
            let mut index = Index::with_room(64);
            // Each serial's key; the queue's front.
            let mut keys: Vec<u64> = vec![u64::MAX];
            let mut first = 1;
            let mut newest: HashMap<u64, u64> = HashMap::new();
            for (key, action) in steps {
                match action {
                    0 => {
                        let serial = keys.len() as u64;
                        let older = index.put(hash(key), first, serial, |s| keys[s as usize] == key);
                        prop_assert_eq!(older, newest.insert(key, serial));
                        keys.push(key);
                    }
                    1 if first < keys.len() as u64 => {
                        let gone = keys[first as usize];
                        if newest.get(&gone) == Some(&first) {
                            newest.remove(&gone);
                        }
                        first += 1;
                    }
                    _ => {
                        let found = index.find(hash(key), first, |s| keys[s as usize] == key);
                        prop_assert_eq!(found, newest.get(&key).copied());
                    }
                }
            }
        }
    }

    #[test]
    fn a_bucket_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Bucket>(), 64);
        assert_eq!(std::mem::align_of::<Bucket>(), 64);
    }

    #[test]
    fn keys_of_a_full_bucket_go_on_and_are_found_there() {
        let mut index = Index::with_room(64);
        // Twelve keys whose hashes all start at bucket 3 (low bits), told apart by their
        // top bits (whose steps are all 1 among sixteen buckets).
        let hash = |n: u64| n << 50 | 3;
        for n in 1..=12 {
            assert_eq!(index.put(hash(n), 1, n, |s| s == n), None);
        }
        assert!(index.is_passed(3) && !index.is_passed(4));
        for n in 1..=12 {
            assert_eq!(index.find(hash(n), 1, |s| s == n), Some(n));
        }
        assert_eq!(index.find(hash(13), 1, |_| true), None);
        // Once the queue's front passes them, their slots are free again.
        assert_eq!(index.find(hash(2), 3, |s| s == 2), None);
        assert_eq!(index.put(hash(14), 3, 14, |s| s == 14), None);
        assert_eq!(index.find(hash(14), 3, |s| s == 14), Some(14));
    }

    #[test]
    fn a_key_put_again_gets_its_new_serial_in_its_old_slot() {
        let mut index = Index::with_room(8);
        let hash = 0xABCD << 40 | 5;
        assert_eq!(index.put(hash, 1, 1, |s| s == 1), None);
        assert_eq!(index.put(hash, 1, 2, |s| s == 1), Some(1));
        assert_eq!(index.find(hash, 1, |s| s == 2), Some(2));
        assert_eq!(index.find(hash, 1, |s| s == 1), None);
    }
}
