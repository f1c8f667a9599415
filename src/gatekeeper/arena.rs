//! Where the octets of replies live: large shared chunks, each reply a slice of one.
//!
//! Every reply is kept for the retransmission hold (10 s) and sent once or more, so a storm
//! of 100,000 registrations would otherwise leave 200,000 small heap blocks (and as many
//! reference-count headers) scattered between the registrations' own, freed all together
//! ten seconds later — holes the allocator cannot give back. Here a reply is copied into
//! the current chunk and handed out as a [`Bytes`] slice of it: no allocation per reply,
//! and a chunk is freed whole once the last reply in it is dropped. Replies expire in the
//! order they were made, so chunks do too.

use bytes::{Bytes, BytesMut};

/// Octets of one chunk: large enough for the allocator to map it on its own (and unmap it
/// when freed), small enough that a quiet gatekeeper holds little.
pub const CHUNK: usize = 256 * 1024;

/// The chunk replies are being copied into.
#[derive(Debug, Default)]
pub struct Arena {
    chunk: BytesMut,
}

impl Arena {
    /// `octets` as a slice of the current chunk (a new chunk when it has no room).
    pub fn copy(&mut self, octets: &[u8]) -> Bytes {
        if self.chunk.capacity() - self.chunk.len() < octets.len() {
            self.chunk = BytesMut::with_capacity(CHUNK.max(octets.len()));
        }
        self.chunk.extend_from_slice(octets);
        self.chunk.split().freeze()
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
}
