//! What the phones of one storm process did, in a form that adds up: counts, the phones' raw
//! latencies, and wall-clock times (instants do not cross processes). A multi-process storm's
//! children each send theirs to the parent as JSON; the parent adds them and reports once.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::life::Outcome;

/// One process's phones, added up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// Phones simulated.
    pub phones: usize,
    /// Phones that registered (each counted once).
    pub registered: usize,
    /// Rejects received, by message and reason.
    pub rejected: BTreeMap<String, u64>,
    /// Requests sent again after a timeout.
    pub retransmissions: u64,
    /// Datagrams the simulated loss dropped.
    pub dropped: u64,
    /// Gatekeeper-sent URQs the phones answered.
    pub gatekeeper_urqs: u64,
    /// Phones that unregistered at the end.
    pub unregistered: usize,
    /// When the first GRQ could leave, microseconds since the UNIX epoch.
    pub first_grq_unix_us: u64,
    /// When the last phone's first RCF came, microseconds since the UNIX epoch.
    pub last_rcf_unix_us: Option<u64>,
    /// Each registered phone's first GRQ to first RCF, microseconds.
    pub latencies_us: Vec<u64>,
    /// Phones registered at each C-LAN address, as the phones saw it.
    pub registered_at: BTreeMap<String, u64>,
    /// Non-TTS phones per C-LAN they registered at (the load when no admin port answers).
    pub phone_clans: BTreeMap<String, u64>,
    /// Calls that got an ACF.
    pub calls: u64,
    /// Calls refused.
    pub calls_refused: u64,
    /// ACFs per `destCallSignalAddress`.
    pub calls_per_node: BTreeMap<String, u64>,
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

fn add_counts(into: &mut BTreeMap<String, u64>, from: BTreeMap<String, u64>) {
    for (key, n) in from {
        *into.entry(key).or_insert(0) += n;
    }
}

impl Tally {
    /// The outcomes of phones that started at `started`, which was `started_wall` since the
    /// UNIX epoch. `outcomes` holds each phone's TTS flag beside its outcome.
    pub(super) fn of(
        outcomes: &[(bool, Outcome)],
        started: Instant,
        started_wall: Duration,
    ) -> Tally {
        let mut tally = Tally {
            phones: outcomes.len(),
            first_grq_unix_us: micros(started_wall),
            ..Tally::default()
        };
        for (tts, outcome) in outcomes {
            if let Some(latency) = outcome.latency {
                tally.latencies_us.push(micros(latency));
            }
            if let Some(at) = outcome.registered_at {
                let at = micros(started_wall + at.duration_since(started));
                tally.last_rcf_unix_us = Some(tally.last_rcf_unix_us.map_or(at, |l| l.max(at)));
            }
            for reject in &outcome.rejects {
                *tally.rejected.entry(reject.clone()).or_insert(0) += 1;
            }
            if let (true, Some(clan)) = (outcome.registered, outcome.clan) {
                *tally.registered_at.entry(clan.to_string()).or_insert(0) += 1;
                if !tts {
                    *tally.phone_clans.entry(clan.to_string()).or_insert(0) += 1;
                }
            }
            for dest in &outcome.calls {
                *tally.calls_per_node.entry(dest.to_string()).or_insert(0) += 1;
            }
            tally.registered += usize::from(outcome.registered);
            tally.retransmissions += outcome.retransmissions;
            tally.dropped += outcome.dropped;
            tally.gatekeeper_urqs += outcome.urqs;
            tally.unregistered += usize::from(outcome.unregistered);
            tally.calls += outcome.calls.len() as u64;
            tally.calls_refused += outcome.calls_refused;
        }
        tally
    }

    /// Adds another process's tally: counts summed, latencies pooled, the earliest first GRQ
    /// and the latest last RCF kept.
    pub fn add(&mut self, other: Tally) {
        let first = if self.phones == 0 {
            other.first_grq_unix_us
        } else {
            self.first_grq_unix_us.min(other.first_grq_unix_us)
        };
        self.phones += other.phones;
        self.registered += other.registered;
        add_counts(&mut self.rejected, other.rejected);
        self.retransmissions += other.retransmissions;
        self.dropped += other.dropped;
        self.gatekeeper_urqs += other.gatekeeper_urqs;
        self.unregistered += other.unregistered;
        self.first_grq_unix_us = first;
        self.last_rcf_unix_us = match (self.last_rcf_unix_us, other.last_rcf_unix_us) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.latencies_us.extend(other.latencies_us);
        add_counts(&mut self.registered_at, other.registered_at);
        add_counts(&mut self.phone_clans, other.phone_clans);
        self.calls += other.calls;
        self.calls_refused += other.calls_refused;
        add_counts(&mut self.calls_per_node, other.calls_per_node);
    }

    /// From the first GRQ to the last first RCF, seconds (0 when nobody registered).
    pub fn registration_s(&self) -> f64 {
        self.last_rcf_unix_us.map_or(0.0, |last| {
            last.saturating_sub(self.first_grq_unix_us) as f64 / 1e6
        })
    }

    /// The latencies as an HDR histogram of microseconds.
    pub fn histogram(&self) -> hdrhistogram::Histogram<u64> {
        let mut histogram = hdrhistogram::Histogram::<u64>::new(3).expect("3 significant digits");
        for &latency in &self.latencies_us {
            let _ = histogram.record(latency);
        }
        histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(first: u64, last: Option<u64>, latencies: &[u64]) -> Tally {
        Tally {
            phones: latencies.len() + 1,
            registered: latencies.len(),
            first_grq_unix_us: first,
            last_rcf_unix_us: last,
            latencies_us: latencies.to_vec(),
            rejected: [("GRJ resourceUnavailable".to_string(), 1)].into(),
            ..Tally::default()
        }
    }

    #[test]
    fn adding_keeps_the_widest_window_and_every_latency() {
        let mut sum = Tally::default();
        sum.add(tally(2_000_000, Some(3_500_000), &[10, 20]));
        sum.add(tally(1_000_000, Some(3_000_000), &[30]));
        sum.add(tally(1_500_000, None, &[]));
        assert_eq!(sum.phones, 6);
        assert_eq!(sum.registered, 3);
        assert_eq!(sum.first_grq_unix_us, 1_000_000);
        assert_eq!(sum.last_rcf_unix_us, Some(3_500_000));
        assert!((sum.registration_s() - 2.5).abs() < 1e-9);
        assert_eq!(sum.rejected["GRJ resourceUnavailable"], 3);
        assert_eq!(sum.histogram().len(), 3);
        assert_eq!(sum.histogram().max(), 30);
    }

    #[test]
    fn nobody_registered_is_no_time() {
        assert_eq!(tally(5, None, &[]).registration_s(), 0.0);
    }
}
