//! When registrations expire: the (instant, key) of every TTL granted, soonest first.
//!
//! A registration is refreshed by every keep-alive, so its deadline moves far more often
//! than it is reached. Moving it only pushes a new entry; the entries it leaves behind
//! (older deadlines, or keys no longer registered) are dropped when they reach the top,
//! and the whole set is rebuilt from the registrations when it grows past twice their
//! number. The caller keeps the top live ([`Expiries::settle`] after every change), so
//! [`Expiries::next`] is always a real deadline. 16 bytes an entry (the instant as
//! nanoseconds from the first one held, and the key), against 56 and the node slack of the
//! shared timer set.
//!
//! Deadlines are mostly pushed in the order they come due (one TTL for every phone, and
//! time only goes forward), so an entry that sorts after every one pushed before it goes
//! to the back of a queue, and only the others to a min-heap: pushing and dropping an
//! entry of the queue costs no sifting through a heap of the size of the registry, which
//! was a tenth of a keep-alive's work. The soonest entry is the lesser of the two fronts,
//! so entries come out in exactly the order one heap would give.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

/// Entry counts up to which no rebuild runs.
const REBUILD_FLOOR: usize = 1024;

/// An entry: its instant as [`Expiries::since`] writes it, and the key. Ordered as
/// `(Instant, u64)` would be.
type Entry = (u64, u64);

/// Where nanoseconds from the epoch start: an instant before it is below, one after above.
const BIAS: i128 = 1 << 63;

/// Registration deadlines, soonest first; some may be stale.
#[derive(Debug, Default)]
pub struct Expiries {
    /// What entries' instants count from: the first one pushed.
    epoch: Option<Instant>,
    /// Entries each pushed after every other it holds, so in order.
    in_order: VecDeque<Entry>,
    /// The rest.
    heap: BinaryHeap<Reverse<Entry>>,
}

impl Expiries {
    /// `at` as nanoseconds from `epoch`, biased so that the order is that of the instants
    /// (saturating some 292 years either side).
    fn since(epoch: Instant, at: Instant) -> u64 {
        let nanos = match at.checked_duration_since(epoch) {
            Some(after) => BIAS + after.as_nanos() as i128,
            None => BIAS - epoch.duration_since(at).as_nanos() as i128,
        };
        nanos.clamp(0, i128::from(u64::MAX)) as u64
    }

    /// The instant of an entry.
    fn instant(&self, (nanos, key): Entry) -> (Instant, u64) {
        let epoch = self.epoch.unwrap_or_else(Instant::now);
        let at = match i128::from(nanos) - BIAS {
            after @ 0.. => epoch.checked_add(Duration::from_nanos(after as u64)),
            before => epoch.checked_sub(Duration::from_nanos(before.unsigned_abs() as u64)),
        };
        (at.unwrap_or(epoch), key)
    }

    /// The entry of `at` (its first instant the epoch).
    fn entry(&mut self, at: Instant, key: u64) -> Entry {
        (Self::since(*self.epoch.get_or_insert(at), at), key)
    }

    /// Notes that registration `key` expires at `at`.
    pub fn push(&mut self, at: Instant, key: u64) {
        let entry = self.entry(at, key);
        if self.in_order.back().is_none_or(|&last| entry >= last) {
            self.in_order.push_back(entry);
        } else {
            self.heap.push(Reverse(entry));
        }
    }

    /// The soonest entry.
    pub fn first(&self) -> Option<(Instant, u64)> {
        self.soonest().map(|(entry, _)| self.instant(entry))
    }

    /// The key of the soonest entry.
    pub fn first_key(&self) -> Option<u64> {
        self.first().map(|(_, key)| key)
    }

    /// The soonest entry, and whether it is the queue's.
    fn soonest(&self) -> Option<(Entry, bool)> {
        let queued = self.in_order.front().copied();
        let heaped = self.heap.peek().map(|&Reverse(entry)| entry);
        match (queued, heaped) {
            (Some(queued), Some(heaped)) if heaped < queued => Some((heaped, false)),
            (Some(queued), _) => Some((queued, true)),
            (None, heaped) => heaped.map(|entry| (entry, false)),
        }
    }

    /// Drops the soonest entry.
    fn pop_first(&mut self, queued: bool) {
        if queued {
            self.in_order.pop_front();
        } else {
            self.heap.pop();
        }
    }

    /// The soonest deadline held.
    pub fn next(&self) -> Option<Instant> {
        self.first().map(|(at, _)| at)
    }

    /// Takes the soonest entry if it is due at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, u64)> {
        let (entry, queued) = self.soonest()?;
        if entry.0 > Self::since(self.epoch?, now) {
            return None;
        }
        self.pop_first(queued);
        Some(self.instant(entry))
    }

    /// Drops entries from the top until one is `live` (still the deadline of a
    /// registration).
    pub fn settle(&mut self, live: impl Fn(Instant, u64) -> bool) {
        while let Some((entry, queued)) = self.soonest() {
            let (at, key) = self.instant(entry);
            if live(at, key) {
                break;
            }
            self.pop_first(queued);
        }
    }

    /// Entries held, stale ones included.
    fn len(&self) -> usize {
        self.in_order.len() + self.heap.len()
    }

    /// Too many stale entries for `registrations` live ones?
    pub fn wants_rebuild(&self, registrations: usize) -> bool {
        self.len() > REBUILD_FLOOR.max(2 * registrations)
    }

    /// Holds exactly these deadlines.
    pub fn rebuild(&mut self, deadlines: impl Iterator<Item = (Instant, u64)>) {
        let mut sorted: Vec<Entry> = deadlines.map(|(at, key)| self.entry(at, key)).collect();
        sorted.sort_unstable();
        self.in_order = sorted.into();
        self.heap.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::time::Duration;

    #[test]
    fn moved_deadlines_leave_stale_entries_that_never_surface() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut live: HashMap<u64, Instant> = HashMap::new();
        let mut expiries = Expiries::default();
        for key in 0..10 {
            live.insert(key, at(10 + key));
            expiries.push(at(10 + key), key);
        }
        // Key 0 is refreshed, key 1 goes away.
        live.insert(0, at(100));
        expiries.push(at(100), 0);
        live.remove(&1);
        expiries.settle(|when, key| live.get(&key) == Some(&when));
        assert_eq!(expiries.next(), Some(at(12)));
        assert_eq!(expiries.pop_due(at(11)), None);
        assert_eq!(expiries.pop_due(at(12)), Some((at(12), 2)));
        expiries.rebuild(live.iter().map(|(&key, &when)| (when, key)));
        assert_eq!(expiries.len(), live.len());
        assert!(!expiries.wants_rebuild(live.len()));
    }

    #[test]
    fn deadlines_before_the_first_come_back_exactly() {
        let start = Instant::now() + Duration::from_secs(1000);
        let mut expiries = Expiries::default();
        let late = start + Duration::new(3600, 123_456_789);
        let early = start - Duration::new(500, 7);
        expiries.push(late, 1);
        expiries.push(early, 2);
        expiries.push(start, 3);
        assert_eq!(expiries.first(), Some((early, 2)));
        assert_eq!(expiries.pop_due(early - Duration::from_nanos(1)), None);
        assert_eq!(expiries.pop_due(early), Some((early, 2)));
        assert_eq!(expiries.pop_due(late), Some((start, 3)));
        assert_eq!(expiries.pop_due(late), Some((late, 1)));
        assert_eq!(expiries.next(), None);
    }

    #[test]
    fn entries_come_out_in_the_order_one_heap_gives() {
        let start = Instant::now();
        let mut expiries = Expiries::default();
        let mut heap = BinaryHeap::new();
        // Mostly in order, now and then earlier, with ties of instant and of entry.
        let mut x: u64 = 7;
        for step in 0..5000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let back = if x >> 60 == 0 { (x >> 20) % 500 } else { 0 };
            let at = start + Duration::from_millis(step.saturating_sub(back) / 3);
            let key = (x >> 33) % 50;
            expiries.push(at, key);
            heap.push(Reverse((at, key)));
            if x.is_multiple_of(3) {
                let now = start + Duration::from_millis(step / 4);
                let due = heap.peek().is_some_and(|&Reverse((when, _))| when <= now);
                let expected = if due {
                    heap.pop().map(|Reverse(entry)| entry)
                } else {
                    None
                };
                assert_eq!(expiries.pop_due(now), expected);
            }
            assert_eq!(expiries.next(), heap.peek().map(|&Reverse((when, _))| when));
        }
        assert_eq!(expiries.len(), heap.len());
    }
}
