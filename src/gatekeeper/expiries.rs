//! When registrations expire: a min-heap of (instant, key), one push per TTL granted.
//!
//! A registration is refreshed by every keep-alive, so its deadline moves far more often
//! than it is reached. Moving it only pushes a new entry; the entries it leaves behind
//! (older deadlines, or keys no longer registered) are dropped when they reach the top,
//! and the whole heap is rebuilt from the registrations when it grows past twice their
//! number. The caller keeps the top live ([`Expiries::settle`] after every change), so
//! [`Expiries::next`] is always a real deadline. 24 bytes an entry, against 56 and the node
//! slack of the shared timer set.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// Heap sizes up to which no rebuild runs.
const REBUILD_FLOOR: usize = 1024;

/// Registration deadlines, soonest first; some may be stale.
#[derive(Debug, Default)]
pub struct Expiries {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
}

impl Expiries {
    /// Notes that registration `key` expires at `at`.
    pub fn push(&mut self, at: Instant, key: u64) {
        self.heap.push(Reverse((at, key)));
    }

    /// The soonest deadline held.
    pub fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|&Reverse((at, _))| at)
    }

    /// Takes the soonest entry if it is due at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, u64)> {
        if self.next()? > now {
            return None;
        }
        self.heap.pop().map(|Reverse(entry)| entry)
    }

    /// Drops entries from the top until one is `live` (still the deadline of a
    /// registration).
    pub fn settle(&mut self, live: impl Fn(Instant, u64) -> bool) {
        while let Some(&Reverse((at, key))) = self.heap.peek() {
            if live(at, key) {
                break;
            }
            self.heap.pop();
        }
    }

    /// Too many stale entries for `registrations` live ones?
    pub fn wants_rebuild(&self, registrations: usize) -> bool {
        self.heap.len() > REBUILD_FLOOR.max(2 * registrations)
    }

    /// Holds exactly these deadlines.
    pub fn rebuild(&mut self, deadlines: impl Iterator<Item = (Instant, u64)>) {
        self.heap = deadlines.map(Reverse).collect();
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
        assert_eq!(expiries.heap.len(), live.len());
        assert!(!expiries.wants_rebuild(live.len()));
    }
}
