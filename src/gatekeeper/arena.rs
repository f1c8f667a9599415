//! Where the octets of replies live: large shared chunks, each reply a slice of one.
//!
//! Every reply is kept for the retransmission hold (10 s) and sent once or more, so a storm
//! of 100,000 registrations would otherwise leave 200,000 small heap blocks (and as many
//! reference-count headers) scattered between the registrations' own, freed all together
//! ten seconds later — holes the allocator cannot give back. Here a reply is copied into
//! the current chunk and handed out as a [`Bytes`] slice of it: no allocation per reply,
//! and a chunk is freed whole once the last reply in it is dropped. Replies expire in the
//! order they were made, so chunks do too.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};

/// Octets of one chunk: large enough for the allocator to map it on its own (and unmap it
/// when freed), small enough that a quiet gatekeeper holds little.
pub const CHUNK: usize = 256 * 1024;

/// Spent chunks whose replies have all gone that are kept to be written again, at most:
/// the rest are freed (and unmapped) when [`Arena::trim`] finds them.
pub const SPARE: usize = 2;

/// The chunk replies are being copied into, and the chunks filled before it.
#[derive(Debug, Default)]
pub struct Arena {
    chunk: BytesMut,
    /// Full chunks, oldest first, each still shared with the replies cut from it. The
    /// oldest is the first whose replies all expire; once they have, it is written again
    /// rather than freed and a new chunk mapped: under a steady load every new chunk was a
    /// fresh mapping, a page fault a page as replies filled it and an unmapping when its
    /// last reply went, some 3 % of the gatekeeper's time answering keep-alives.
    spent: VecDeque<BytesMut>,
    /// Has a chunk been made (`chunk` is one)?
    started: bool,
}

impl Arena {
    /// `octets` as a slice of the current chunk (a new chunk when it has no room).
    pub fn copy(&mut self, octets: &[u8]) -> Bytes {
        if self.chunk.capacity() - self.chunk.len() < octets.len() {
            let next = self.next_chunk(octets.len());
            let full = std::mem::replace(&mut self.chunk, next);
            // A new arena's first handle holds no chunk: nothing to keep.
            if std::mem::replace(&mut self.started, true) {
                self.spent.push_back(full);
            }
        }
        self.chunk.extend_from_slice(octets);
        self.chunk.split().freeze()
    }

    /// A chunk with room for `len` octets: the oldest spent one when its replies have all
    /// gone, else a new one.
    fn next_chunk(&mut self, len: usize) -> BytesMut {
        if len <= CHUNK {
            if let Some(oldest) = self.spent.front_mut() {
                if oldest.try_reclaim(CHUNK) {
                    let mut reused = self.spent.pop_front().expect("the front was just seen");
                    reused.clear();
                    return reused;
                }
            }
        }
        BytesMut::with_capacity(CHUNK.max(len))
    }

    /// Frees the oldest spent chunks whose replies have all gone, keeping [`SPARE`] of
    /// them: after a storm the memory its replies took goes back to the system as they
    /// expire (the gatekeeper's timer path calls this, after the retransmission cache's
    /// expiry).
    pub fn trim(&mut self) {
        let mut idle = 0;
        while idle < self.spent.len() && self.spent[idle].try_reclaim(CHUNK) {
            idle += 1;
        }
        if idle > SPARE {
            self.spent.drain(..idle - SPARE);
        }
    }

    /// Chunks held besides the current one (spent, in use or idle), for tests.
    #[cfg(test)]
    fn spent(&self) -> usize {
        self.spent.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_slices_of_one_chunk_until_it_is_full() {
        let mut arena = Arena::default();
        let first = arena.copy(b"GCF");
        let second = arena.copy(b"RCF with an AGL");
        assert_eq!(&first[..], b"GCF");
        assert_eq!(&second[..], b"RCF with an AGL");
        // Adjacent in the same chunk.
        assert_eq!(first.as_ptr().wrapping_add(3), second.as_ptr());
        let big = vec![7u8; CHUNK];
        let third = arena.copy(&big);
        assert_eq!(third.len(), CHUNK);
        assert_ne!(second.as_ptr().wrapping_add(15), third.as_ptr());
        // What was handed out stays as it was.
        assert_eq!(&first[..], b"GCF");
        drop((first, second));
        assert_eq!(&arena.copy(b"x")[..], b"x");
    }

    #[test]
    fn a_spent_chunk_is_written_again_once_its_replies_are_gone_and_idle_ones_are_freed() {
        let mut arena = Arena::default();
        let reply = vec![1u8; CHUNK / 4];
        // Four replies fill the first chunk; the fifth starts a second.
        let first: Vec<Bytes> = (0..4).map(|_| arena.copy(&reply)).collect();
        let fifth = arena.copy(&reply);
        assert_eq!(arena.spent(), 1);
        let first_chunk = first[0].as_ptr();
        assert_ne!(fifth.as_ptr(), first_chunk);
        // The first chunk's replies are still held: a third chunk is new.
        let more: Vec<Bytes> = (0..3).map(|_| arena.copy(&reply)).collect();
        let third = arena.copy(&reply);
        assert_ne!(third.as_ptr(), first_chunk);
        assert_eq!(arena.spent(), 2);
        // They expire: the next chunk is the first one again, from its start.
        drop(first);
        let again: Vec<Bytes> = (0..4).map(|_| arena.copy(&reply)).collect();
        assert_eq!(again[3].as_ptr(), first_chunk);
        assert!(again.iter().all(|b| b[..] == reply[..]));
        assert_eq!(&fifth[..], &reply[..], "a live reply is never written over");
        assert!(more.iter().all(|b| b[..] == reply[..]));
        // Every reply gone: trimming keeps SPARE idle chunks and frees the rest.
        drop((fifth, more, third, again));
        for _ in 0..8 {
            arena.copy(&reply);
        }
        arena.trim();
        assert_eq!(arena.spent(), SPARE);
    }
}
