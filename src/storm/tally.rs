//! What the phones of one storm process did, in a form that adds up: counts, the phones' raw
//! latencies, and wall-clock times (instants do not cross processes). A multi-process storm's
//! children each send theirs to the parent as JSON; the parent adds them and reports once.
//! The socket-mode figures (`--sockets`) add up the same way; the sockets the phones held
//! in service over time add up per 100-ms slot of the wall clock.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::calls::CallTally;
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
    /// Phones that sent URQ at the end and heard no UCF in time.
    #[serde(default)]
    pub unregister_failed: usize,
    /// Phones whose attempts a rejection a retry cannot change ended, by that rejection
    /// (`"RRJ duplicateAlias"`).
    #[serde(default)]
    pub refused: BTreeMap<String, RefusedPhones>,
    /// When the first GRQ could leave, microseconds since the UNIX epoch.
    pub first_grq_unix_us: u64,
    /// When the last phone's first RCF came, microseconds since the UNIX epoch.
    pub last_rcf_unix_us: Option<u64>,
    /// When the first GRQ left, microseconds since the UNIX epoch: `first_grq_unix_us`
    /// and the time the storm took to start its phones before it.
    #[serde(default)]
    pub grq_sent_unix_us: Option<u64>,
    /// When the kernel received the last phone's first RCF, microseconds since the UNIX
    /// epoch: `last_rcf_unix_us` less the time the storm took to get round to reading it.
    #[serde(default)]
    pub rcf_heard_unix_us: Option<u64>,
    /// When the last socket came into service, microseconds since the UNIX epoch.
    #[serde(default)]
    pub last_service_unix_us: Option<u64>,
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
    /// Non-TTS phones' times to service (RCF to the empty TPKT frame), microseconds.
    pub non_tts_service_us: Vec<u64>,
    /// TTS phones' times to service, microseconds.
    pub tts_service_us: Vec<u64>,
    /// Sockets in service the phones held at the end, per C-LAN signalling address
    /// (`"ip:port"`; a TTS socket's C-LAN named by its IP alone when no RCF named a
    /// signalling address of that IP).
    pub sockets_held: BTreeMap<String, u64>,
    /// The C-LAN signalling addresses the phones' RCFs named (`callSignalAddress`), to name
    /// a TTS socket's C-LAN from the IP it came from.
    pub signal_addresses: BTreeSet<String>,
    /// Non-TTS connection attempts turned away before service (reset, refused, ended, timed
    /// out).
    pub connections_rejected: u64,
    /// Sockets in service the gatekeeper closed while the phone was registered.
    pub sockets_closed_by_gatekeeper: u64,
    /// Other socket failures, by what the system said.
    pub socket_errors: BTreeMap<String, u64>,
    /// Connections the TTS phones' listener took and handed to a TTS phone.
    pub tts_connections_accepted: u64,
    /// Connections the listener took and closed at once: to no TTS phone's address.
    pub tts_connections_closed: u64,
    /// Sockets the phones held in service, one sample a 100-ms slot from
    /// `first_grq_unix_us`.
    pub sockets_in_service_per_100ms: Vec<u64>,
    /// Routed calls (`--calls-per-s`): how the calls the phones placed went, and what
    /// their sockets heard of the calls made to them.
    #[serde(default)]
    pub routed_calls: CallTally,
}

/// Phones refused for good with one rejection: how many, and a few of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RefusedPhones {
    /// How many.
    pub phones: u64,
    /// The first few: (alias, RAS address).
    pub examples: Vec<(String, String)>,
}

impl RefusedPhones {
    /// The examples kept.
    pub const EXAMPLES: usize = 3;

    fn add(&mut self, other: RefusedPhones) {
        self.phones += other.phones;
        let room = Self::EXAMPLES.saturating_sub(self.examples.len());
        self.examples.extend(other.examples.into_iter().take(room));
    }
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
            if let Some(sent) = outcome.first_grq_sent {
                let sent = micros(sent);
                tally.grq_sent_unix_us = Some(tally.grq_sent_unix_us.map_or(sent, |f| f.min(sent)));
            }
            if let Some(heard) = outcome.first_rcf_heard {
                let heard = micros(heard);
                tally.rcf_heard_unix_us = tally.rcf_heard_unix_us.max(Some(heard));
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
            tally.unregister_failed += usize::from(outcome.unregister_failed);
            if let Some(refused) = &outcome.refused {
                tally
                    .refused
                    .entry(refused.reject.clone())
                    .or_default()
                    .add(RefusedPhones {
                        phones: 1,
                        examples: vec![(refused.alias.clone(), refused.phone.to_string())],
                    });
            }
            tally.calls += outcome.calls.len() as u64;
            tally.calls_refused += outcome.calls_refused;
            if let Some(address) = outcome.call_signal_address {
                tally.signal_addresses.insert(address.to_string());
            }
            let sockets = &outcome.sockets;
            if let Some(at) = sockets.last_in_service {
                tally.last_service_unix_us = tally.last_service_unix_us.max(Some(micros(at)));
            }
            let service: Vec<u64> = sockets
                .times_to_service
                .iter()
                .map(|&t| micros(t))
                .collect();
            if *tts {
                tally.tts_service_us.extend(service);
            } else {
                tally.non_tts_service_us.extend(service);
            }
            if let Some(peer) = sockets.held_at_end {
                // A TTS socket comes from the C-LAN's IP and any port: named by the IP
                // until resolved.
                let key = if *tts {
                    peer.ip().to_string()
                } else {
                    peer.to_string()
                };
                *tally.sockets_held.entry(key).or_insert(0) += 1;
            }
            tally.routed_calls.add(outcome.routed.clone());
            tally.routed_calls.hear(&sockets.heard);
            tally.connections_rejected += sockets.rejected;
            tally.sockets_closed_by_gatekeeper += sockets.closed_by_gatekeeper;
            for error in &sockets.errors {
                *tally.socket_errors.entry(error.clone()).or_insert(0) += 1;
            }
        }
        tally.name_sockets_by_signal_address();
        tally
    }

    /// Renames the sockets held that are named by an IP alone with the one signalling
    /// address of that IP an RCF named, when there is exactly one.
    fn name_sockets_by_signal_address(&mut self) {
        let known: Vec<SocketAddr> = self
            .signal_addresses
            .iter()
            .filter_map(|a| a.parse().ok())
            .collect();
        let by_ip: Vec<(String, u64)> = self
            .sockets_held
            .iter()
            .filter(|(key, _)| key.parse::<IpAddr>().is_ok())
            .map(|(key, n)| (key.clone(), *n))
            .collect();
        for (ip, n) in by_ip {
            let mut of_ip = known.iter().filter(|a| a.ip().to_string() == ip);
            if let (Some(address), None) = (of_ip.next(), of_ip.next()) {
                self.sockets_held.remove(&ip);
                *self.sockets_held.entry(address.to_string()).or_insert(0) += n;
            }
        }
    }

    /// Phones that held no socket in service at the end (registered or not).
    pub fn phones_without_socket(&self) -> usize {
        let held: u64 = self.sockets_held.values().sum();
        self.phones
            .saturating_sub(usize::try_from(held).unwrap_or(usize::MAX))
    }

    /// Times to service of TTS, non-TTS, and all phones, as HDR histograms of microseconds.
    pub fn service_histograms(&self) -> [hdrhistogram::Histogram<u64>; 3] {
        let tts = histogram_of(&self.tts_service_us);
        let non_tts = histogram_of(&self.non_tts_service_us);
        let mut all = tts.clone();
        let _ = all.add(&non_tts);
        [tts, non_tts, all]
    }

    /// Adds another process's tally: counts summed, latencies pooled, the earliest first GRQ
    /// and the latest last RCF kept.
    pub fn add(&mut self, other: Tally) {
        let first = if self.phones == 0 {
            other.first_grq_unix_us
        } else {
            self.first_grq_unix_us.min(other.first_grq_unix_us)
        };
        let in_service = add_slots(
            (
                std::mem::take(&mut self.sockets_in_service_per_100ms),
                self.first_grq_unix_us,
            ),
            (other.sockets_in_service_per_100ms, other.first_grq_unix_us),
            first,
        );
        self.phones += other.phones;
        self.registered += other.registered;
        add_counts(&mut self.rejected, other.rejected);
        self.retransmissions += other.retransmissions;
        self.dropped += other.dropped;
        self.gatekeeper_urqs += other.gatekeeper_urqs;
        self.unregistered += other.unregistered;
        self.unregister_failed += other.unregister_failed;
        for (reject, phones) in other.refused {
            self.refused.entry(reject).or_default().add(phones);
        }
        self.first_grq_unix_us = first;
        self.last_rcf_unix_us = match (self.last_rcf_unix_us, other.last_rcf_unix_us) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.grq_sent_unix_us = match (self.grq_sent_unix_us, other.grq_sent_unix_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.rcf_heard_unix_us = self.rcf_heard_unix_us.max(other.rcf_heard_unix_us);
        self.last_service_unix_us = self.last_service_unix_us.max(other.last_service_unix_us);
        self.latencies_us.extend(other.latencies_us);
        add_counts(&mut self.registered_at, other.registered_at);
        add_counts(&mut self.phone_clans, other.phone_clans);
        self.calls += other.calls;
        self.calls_refused += other.calls_refused;
        add_counts(&mut self.calls_per_node, other.calls_per_node);
        self.non_tts_service_us.extend(other.non_tts_service_us);
        self.tts_service_us.extend(other.tts_service_us);
        add_counts(&mut self.sockets_held, other.sockets_held);
        self.signal_addresses.extend(other.signal_addresses);
        self.connections_rejected += other.connections_rejected;
        self.sockets_closed_by_gatekeeper += other.sockets_closed_by_gatekeeper;
        add_counts(&mut self.socket_errors, other.socket_errors);
        self.tts_connections_accepted += other.tts_connections_accepted;
        self.tts_connections_closed += other.tts_connections_closed;
        self.sockets_in_service_per_100ms = in_service;
        self.routed_calls.add(other.routed_calls);
        self.name_sockets_by_signal_address();
    }

    /// From the first GRQ to the last socket in service, seconds (socket mode).
    pub fn service_s(&self) -> Option<f64> {
        let last = self.last_service_unix_us?;
        Some(last.saturating_sub(self.first_grq_unix_us) as f64 / 1e6)
    }

    /// From the first GRQ to the last first RCF, seconds (0 when nobody registered): from
    /// the moment the first GRQ left to the moment the kernel received the last RCF, as a
    /// real phone would hear it (see [`super::stamp`]), where the phones noted both; else
    /// from the storm's start to the moment the last RCF was read.
    pub fn registration_s(&self) -> f64 {
        match (self.grq_sent_unix_us, self.rcf_heard_unix_us) {
            (Some(first), Some(last)) if last > first => (last - first) as f64 / 1e6,
            _ => self.last_rcf_unix_us.map_or(0.0, |last| {
                last.saturating_sub(self.first_grq_unix_us) as f64 / 1e6
            }),
        }
    }

    /// The latencies as an HDR histogram of microseconds.
    pub fn histogram(&self) -> hdrhistogram::Histogram<u64> {
        histogram_of(&self.latencies_us)
    }
}

/// An HDR histogram of microseconds.
pub(super) fn histogram_of(values_us: &[u64]) -> hdrhistogram::Histogram<u64> {
    let mut histogram = hdrhistogram::Histogram::<u64>::new(3).expect("3 significant digits");
    for &value in values_us {
        let _ = histogram.record(value);
    }
    histogram
}

/// Microseconds in a slot of the sockets in service.
const SLOT_US: u64 = 100_000;

/// Two series of 100-ms slots, each from its own start (microseconds since the epoch), added
/// slot by slot of the wall clock into one from `first` (the earlier start). Each slot goes
/// to the nearest slot of the sum; a series is 0 where it has no sample.
fn add_slots(a: (Vec<u64>, u64), b: (Vec<u64>, u64), first: u64) -> Vec<u64> {
    let offset = |start: u64| (start.saturating_sub(first) + SLOT_US / 2) / SLOT_US;
    let mut sum: Vec<u64> = Vec::new();
    for (series, start) in [a, b] {
        let offset = usize::try_from(offset(start)).unwrap_or(usize::MAX);
        if series.is_empty() {
            continue;
        }
        if sum.len() < offset + series.len() {
            sum.resize(offset + series.len(), 0);
        }
        for (slot, n) in series.into_iter().enumerate() {
            sum[offset + slot] += n;
        }
    }
    sum
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
    fn sockets_in_service_add_up_per_slot_of_the_wall_clock() {
        let mut sum = Tally::default();
        let mut one = tally(1_000_000, None, &[]);
        one.sockets_in_service_per_100ms = vec![0, 2, 4];
        let mut two = tally(1_200_000, None, &[]);
        two.sockets_in_service_per_100ms = vec![1, 1, 3];
        sum.add(one);
        sum.add(two);
        assert_eq!(sum.sockets_in_service_per_100ms, vec![0, 2, 5, 1, 3]);
    }

    #[test]
    fn tts_sockets_are_named_by_the_signalling_address_of_their_ip() {
        let mut one = Tally {
            phones: 3,
            sockets_held: [("127.0.30.11".to_string(), 2)].into(),
            ..Tally::default()
        };
        let two = Tally {
            phones: 2,
            sockets_held: [("127.0.30.11:1720".to_string(), 1)].into(),
            signal_addresses: ["127.0.30.11:1720".to_string()].into(),
            ..Tally::default()
        };
        one.name_sockets_by_signal_address();
        assert_eq!(one.sockets_held["127.0.30.11"], 2, "no address known yet");
        one.add(two);
        assert_eq!(
            one.sockets_held,
            [("127.0.30.11:1720".to_string(), 3)].into()
        );
        assert_eq!(one.phones_without_socket(), 2);
    }

    #[test]
    fn nobody_registered_is_no_time() {
        assert_eq!(tally(5, None, &[]).registration_s(), 0.0);
    }
}
