//! The retransmission cache (domain.md §2): a request from the same source with the same
//! `requestSeqNum` and the same octets within the hold time gets the reply it got the first
//! time, and changes nothing. Bounded in time and in entries; the oldest entry goes first.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::Transmit;

/// How long a reply is kept for retransmissions.
pub const HOLD: Duration = Duration::from_secs(10);

/// Most replies kept at once.
pub const MAX_ENTRIES: usize = 200_000;

struct Entry {
    request: u64,
    stored: Instant,
    replies: Vec<Transmit>,
}

/// Replies by (source, sequence number).
#[derive(Default)]
pub struct RetransmitCache {
    entries: HashMap<(SocketAddr, u16), Entry>,
    order: VecDeque<(Instant, SocketAddr, u16)>,
}

/// A fingerprint of a request's octets.
pub fn fingerprint(datagram: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    datagram.hash(&mut hasher);
    hasher.finish()
}

impl RetransmitCache {
    /// The replies to an earlier identical request, if it is still held.
    pub fn lookup(&self, from: SocketAddr, seq: u16, request: u64) -> Option<&[Transmit]> {
        self.entries
            .get(&(from, seq))
            .filter(|entry| entry.request == request)
            .map(|entry| &entry.replies[..])
    }

    /// Keeps the replies to a request.
    pub fn store(
        &mut self,
        now: Instant,
        from: SocketAddr,
        seq: u16,
        request: u64,
        replies: Vec<Transmit>,
    ) {
        self.expire(now);
        while self.entries.len() >= MAX_ENTRIES {
            if !self.pop_oldest() {
                break;
            }
        }
        self.entries.insert(
            (from, seq),
            Entry {
                request,
                stored: now,
                replies,
            },
        );
        self.order.push_back((now, from, seq));
    }

    fn pop_oldest(&mut self) -> bool {
        let Some((stored, from, seq)) = self.order.pop_front() else {
            return false;
        };
        if self.entries.get(&(from, seq)).map(|e| e.stored) == Some(stored) {
            self.entries.remove(&(from, seq));
        }
        true
    }

    /// Drops replies older than [`HOLD`].
    pub fn expire(&mut self, now: Instant) {
        while let Some(&(stored, _, _)) = self.order.front() {
            if now.saturating_duration_since(stored) < HOLD {
                break;
            }
            self.pop_oldest();
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
