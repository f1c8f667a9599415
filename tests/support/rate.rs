//! Reads of a counter (`/metrics`' moves, say) taken over wall time, and the check that what
//! they counted never came faster than a rate allows.
#![allow(dead_code)] // each test binary uses a different part of the support modules

use std::time::Instant;

/// One read: when it started, when it ended, and the count it saw.
pub type Read = (Instant, Instant, f64);

/// Panics unless, between any two reads, at most `per_s` a second were counted (one more
/// for an event on the edge of the window), and each read's count since `from` keeps the
/// same rate. The window between two reads is taken at its widest: from the start of the
/// earlier to the end of the later.
pub fn assert_never_faster(reads: &[Read], from: Instant, per_s: f64) {
    for (i, &(start_i, end_i, count_i)) in reads.iter().enumerate() {
        let allowed = per_s * (end_i - from).as_secs_f64() + 1.0;
        assert!(
            count_i <= allowed,
            "{count_i} counted in {:?} from the start",
            end_i - from
        );
        for &(_, end_j, count_j) in &reads[i + 1..] {
            let allowed = per_s * (end_j - start_i).as_secs_f64() + 1.0;
            assert!(
                count_j - count_i <= allowed,
                "{} counted in {:?}",
                count_j - count_i,
                end_j - start_i
            );
        }
    }
}
