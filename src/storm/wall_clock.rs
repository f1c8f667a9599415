//! The storm's wall clock: times that cross processes (when the shards start), the kernel's
//! receive timestamps ([`super::stamp`]) and pcap time are all read on it. It sits below
//! every part of the storm that reads it, so none of them needs another for the time.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wall clock, since the UNIX epoch (what crosses processes, and pcap time).
pub(super) fn wall_time() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}
