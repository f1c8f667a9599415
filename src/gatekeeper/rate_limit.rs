//! The per-source rate limit (docs/rules.md §12.3; §12: nothing a peer sends may grow memory or
//! work without bound): a token bucket per source IP address, refilled at `rate_per_source` tokens
//! a second up to `burst_per_source`. A datagram that finds its source's bucket empty is dropped
//! before it is even read.
//!
//! The table of buckets is bounded by `max_sources`. When it is full, a new source takes the
//! place of the oldest one, with a second chance (the CLOCK rule) for a source seen since the
//! last sweep, so that a source flooding right now keeps its empty bucket instead of being
//! forgotten and handed a full one. Keyed by IP, not port: a flood from one host does not get
//! a bucket per port.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::Instant;

use crate::config::Limits;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
    /// Seen since the eviction sweep last passed it.
    touched: bool,
}

/// The token buckets of every source seen lately.
#[derive(Debug)]
pub struct RateLimit {
    /// Tokens a second; `None`: no limit, nothing kept.
    rate: Option<f64>,
    burst: f64,
    max_sources: usize,
    /// Looked up for every datagram, keyed by whatever a peer sends from: foldhash,
    /// seeded per process (SipHash cost as much as the rest of the check).
    buckets: HashMap<IpAddr, Bucket, foldhash::fast::RandomState>,
    /// Every key of `buckets` once, in the order the sweep visits them.
    order: VecDeque<IpAddr>,
    /// Sources forgotten to make room for new ones.
    pub forgotten: u64,
}

impl RateLimit {
    /// The limit `[limits]` asks for.
    pub fn new(limits: &Limits) -> RateLimit {
        RateLimit {
            rate: limits.rate_per_source.map(f64::from),
            burst: f64::from(limits.burst_per_source.max(1)),
            max_sources: limits.max_sources.max(1),
            buckets: HashMap::default(),
            order: VecDeque::new(),
            forgotten: 0,
        }
    }

    /// The limits of a reloaded `[limits]`, keeping what is known of every source: a
    /// bucket keeps its tokens (at most the new burst), so a reload hands no flooder a full
    /// one; a smaller `max_sources` forgets sources by the usual rule until it fits. With
    /// no rate any more, nothing is kept.
    pub fn reconfigure(&mut self, limits: &Limits) {
        self.rate = limits.rate_per_source.map(f64::from);
        self.burst = f64::from(limits.burst_per_source.max(1));
        self.max_sources = limits.max_sources.max(1);
        if self.rate.is_none() {
            self.buckets.clear();
            self.order.clear();
            return;
        }
        for bucket in self.buckets.values_mut() {
            bucket.tokens = bucket.tokens.min(self.burst);
        }
        while self.buckets.len() > self.max_sources {
            self.forget_one();
        }
    }

    /// Takes a token from `source`'s bucket: `false` when it has none left (drop the
    /// datagram).
    pub fn admit(&mut self, now: Instant, source: IpAddr) -> bool {
        let Some(rate) = self.rate else {
            return true;
        };
        if let Some(bucket) = self.buckets.get_mut(&source) {
            let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
            bucket.tokens = (bucket.tokens + elapsed * rate).min(self.burst);
            bucket.at = bucket.at.max(now);
            bucket.touched = true;
            if bucket.tokens >= 1.0 {
                bucket.tokens -= 1.0;
                return true;
            }
            return false;
        }
        if self.buckets.len() >= self.max_sources {
            self.forget_one();
        }
        self.buckets.insert(
            source,
            Bucket {
                tokens: self.burst - 1.0,
                at: now,
                touched: false,
            },
        );
        self.order.push_back(source);
        true
    }

    /// Forgets the oldest source not seen since the sweep last passed it.
    fn forget_one(&mut self) {
        // Each pass over a touched source clears its mark, so this ends within one round.
        while let Some(source) = self.order.pop_front() {
            match self.buckets.get_mut(&source) {
                Some(bucket) if bucket.touched => {
                    bucket.touched = false;
                    self.order.push_back(source);
                }
                Some(_) => {
                    self.buckets.remove(&source);
                    self.forgotten += 1;
                    return;
                }
                None => {}
            }
        }
    }

    /// Sources kept track of now.
    pub fn sources(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn limits(rate: u32, burst: u32, max_sources: usize) -> Limits {
        Limits {
            rate_per_source: Some(rate),
            burst_per_source: burst,
            max_sources,
            ..Limits::default()
        }
    }

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(0x7f09_0000 + n))
    }

    #[test]
    fn a_burst_then_the_rate() {
        let mut limit = RateLimit::new(&limits(10, 5, 100));
        let t0 = Instant::now();
        let admitted = (0..100).filter(|_| limit.admit(t0, ip(1))).count();
        assert_eq!(admitted, 5);
        // 10 a second: one more every 100 ms, never more than the burst after a pause.
        assert!(!limit.admit(t0 + Duration::from_millis(50), ip(1)));
        assert!(limit.admit(t0 + Duration::from_millis(150), ip(1)));
        let later = t0 + Duration::from_secs(60);
        assert_eq!((0..100).filter(|_| limit.admit(later, ip(1))).count(), 5);
        // Another source has its own bucket.
        assert!(limit.admit(later, ip(2)));
    }

    #[test]
    fn a_new_limit_keeps_each_sources_tokens() {
        let mut limit = RateLimit::new(&limits(1, 5, 100));
        let t0 = Instant::now();
        for n in 0..10 {
            limit.admit(t0, ip(n));
        }
        // ip(0) spends its burst; then the burst is lowered to 2 and the table to 4 sources.
        while limit.admit(t0, ip(0)) {}
        limit.reconfigure(&limits(1, 2, 4));
        assert_eq!(limit.sources(), 4);
        assert!(limit.forgotten >= 6);
        // A kept source with tokens left has at most the new burst.
        let kept = *limit.buckets.keys().find(|&&s| s != ip(0)).unwrap();
        assert_eq!((0..10).filter(|_| limit.admit(t0, kept)).count(), 2);
        // No rate: nothing kept, everything admitted.
        limit.reconfigure(&Limits::default());
        assert_eq!(limit.sources(), 0);
        assert!((0..100).all(|_| limit.admit(t0, ip(0))));
    }

    #[test]
    fn no_rate_keeps_nothing() {
        let mut limit = RateLimit::new(&Limits::default());
        let t0 = Instant::now();
        assert!((0..10_000).all(|n| limit.admit(t0, ip(n % 7))));
        assert_eq!(limit.sources(), 0);
    }

    #[test]
    fn the_table_stays_bounded_and_a_flooder_keeps_its_empty_bucket() {
        let mut limit = RateLimit::new(&limits(1, 3, 64));
        let t0 = Instant::now();
        let flooder = ip(0);
        for _ in 0..3 {
            assert!(limit.admit(t0, flooder));
        }
        for n in 1..10_000 {
            // The flooder keeps sending between the newcomers.
            assert!(!limit.admit(t0, flooder), "flooder admitted again at {n}");
            limit.admit(t0, ip(n));
            assert!(limit.sources() <= 64);
        }
        assert!(limit.forgotten >= 10_000 - 64);
        assert!(limit.order.len() <= 64);
    }
}
