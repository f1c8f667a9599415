//! The process's allocator settings: what lets a gatekeeper give memory back after a storm.
//!
//! glibc serves blocks of 128 KiB and more with their own mappings, unmapped when freed —
//! until the first such block is freed, after which it raises that threshold to the freed
//! block's size, and the next blocks of that size come from the heap, where freeing them
//! between live data returns nothing to the system. The reply arena's chunks
//! ([`crate::gatekeeper`]) are exactly such blocks, freed a retransmission hold after they
//! fill. Setting the threshold once keeps it where it is, so every chunk is mapped on its
//! own and unmapped when its last reply expires.

/// Fixes glibc's mmap threshold at 128 KiB (its default) so it no longer moves. Elsewhere
/// (other C libraries, other systems) nothing is needed and nothing is done.
pub fn keep_large_blocks_mapped() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a tuning parameter of the C allocator; it is safe to call
    // at any time, from any thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
