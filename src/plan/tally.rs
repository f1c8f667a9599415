//! What a plan records while it runs: sockets per C-LAN at every sample (kept as change
//! points, with running peaks and sums), rejects by message and reason, connections the
//! gatekeeper refused, times to service, and for each event of the timeline the phones that
//! lost service after it and when each was back. With routed calls also what the phones'
//! calls through the relay did ([`CallTally`]), routed calls per C-LAN, and for each event
//! the calls it found in progress, ended, and those placed again.

use std::collections::BTreeMap;

/// One C-LAN's sockets over the plan.
#[derive(Debug, Clone, Default)]
pub struct ClanTrace {
    /// Its name.
    pub name: String,
    /// Its region and priority, as last configured.
    pub region: u16,
    /// 1 is best.
    pub priority: u8,
    /// Its cap, as last configured.
    pub cap: u32,
    /// (virtual seconds, established sockets) where the count changed from the sample
    /// before (the first sample always).
    pub points: Vec<(f64, u32)>,
    /// The most established sockets in a sample.
    pub peak: u32,
    /// Sum of the samples, for the average.
    pub sum: u64,
    /// Samples taken while it was configured.
    pub samples: u64,
    /// Routed calls: the most in progress with a leg on it in a sample (the core's count).
    pub peak_calls: u32,
    /// The most call connections (connections calls need beyond the phones' sockets) in a
    /// sample.
    pub peak_call_connections: u32,
    /// Answered routed calls whose caller's leg was on it, as the caller saw its socket.
    pub caller_legs: u64,
    /// Answered routed calls whose callee's leg was on it: the C-LAN of the connection the
    /// Setup reached the callee on.
    pub callee_legs: u64,
}

/// For one event of the timeline.
#[derive(Debug, Clone, Default)]
pub struct EventTrace {
    /// When, virtual seconds.
    pub at_s: f64,
    /// What.
    pub label: String,
    /// Phones in service that lost it after this event (before the next).
    pub lost: u64,
    /// For each of them back in service: how long after the event, microseconds.
    pub back_after_us: Vec<u64>,
    /// Routed calls in progress when it happened (the core's), before it did anything.
    pub calls_in_progress: u32,
    /// Of them with a leg on each C-LAN: (trace, calls), those with any.
    pub calls_on: Vec<(usize, u32)>,
    /// Routed calls the event itself ended, by the core's reason.
    pub calls_ended: BTreeMap<String, u64>,
    /// Calls the callers lost after it (before the next event) before they hung up.
    pub calls_cut: u64,
    /// Of the callers that lost a call after it, those whose next routed call was answered.
    pub called_again: u64,
    /// Routed calls answered after it (before the next event).
    pub calls_answered: u64,
    /// The most routed calls on each C-LAN in a sample after it (before the next event),
    /// by trace.
    pub peak_calls: Vec<u32>,
}

/// Everything recorded.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Every C-LAN any configuration of the plan had, in order of first appearance.
    pub clans: Vec<ClanTrace>,
    /// Samples taken.
    pub samples: u64,
    /// Rejects the phones got, by message and reason (`"RRJ resourceUnavailable"`).
    pub rejects: BTreeMap<String, u64>,
    /// Connections the gatekeeper refused, by reason (`busy`), over all its lives.
    pub refused: BTreeMap<String, u64>,
    /// RCF to socket in service, microseconds: TTS phones.
    pub service_tts_us: Vec<u64>,
    /// The same for non-TTS phones.
    pub service_other_us: Vec<u64>,
    /// The timeline's events, in order.
    pub events: Vec<EventTrace>,
    /// Requests sent again after a timeout.
    pub retransmissions: u64,
    /// Datagrams the simulated loss dropped.
    pub datagrams_lost: u64,
    /// Datagrams sent, both ways.
    pub datagrams: u64,
    /// Gatekeeper-sent URQs the phones answered.
    pub urqs: u64,
    /// Calls admitted (ACF).
    pub calls: u64,
    /// Phones rebalancing moved: when (microseconds) and off which C-LAN.
    pub moves: Vec<(u64, String)>,
    /// Routed calls.
    pub routed: CallTally,
}

/// What the phones' routed calls did (docs/rules.md §16.2), and the core's counts of them.
#[derive(Debug, Clone, Default)]
pub struct CallTally {
    /// Did the gatekeeper relay calls at any time of the plan (`call_signalling =
    /// "routed"`)?
    pub relayed: bool,
    /// Setups the callers sent.
    pub placed: u64,
    /// Calls to another phone placed as trunk calls are (ARQ, hold, DRQ, no Setup), by why:
    /// the caller had no socket in service, or its ACF was not routed.
    pub as_today: BTreeMap<String, u64>,
    /// Calls the callers lost before hanging up (a Release Complete of the gatekeeper's,
    /// their socket closed, their registration gone).
    pub cut: u64,
    /// Setup sent to Connect read, as each caller saw it, microseconds.
    pub setup_to_connect_us: Vec<u64>,
    /// The core's counts of earlier lives of the gatekeeper (before restarts).
    pub earlier: RoutedCounts,
    /// Samples where the core had fewer routed calls on a C-LAN than the calls its phones
    /// had answered and not yet ended with a leg there (as the phones' connections say).
    /// None without events; an event that ends calls may leave a few, while the Release
    /// Completes are on their way to the callers.
    pub below_answered: u64,
    /// Samples where the core had more routed calls on a C-LAN than the phones' answered
    /// calls there and every call not settled (placed and not answered, or released and
    /// the Release Complete not yet arrived) could make.
    pub above_placed: u64,
}

/// The core's counters of routed calls that a plan reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoutedCounts {
    /// Setups that made a call.
    pub setups: u64,
    /// Calls the callee answered.
    pub connected: u64,
    /// Calls that ended, and Setups that made none, by reason.
    pub ended: BTreeMap<String, u64>,
    /// Of those, before the callee answered.
    pub failed: BTreeMap<String, u64>,
    /// Call connections accepted or opened.
    pub call_connections: u64,
}

impl RoutedCounts {
    /// The core's counters, as a plan keeps them.
    pub fn of(stats: &crate::gatekeeper::CallStats) -> RoutedCounts {
        let named = |map: &BTreeMap<crate::gatekeeper::CallEnd, u64>| {
            map.iter()
                .map(|(reason, &count)| (reason.name().to_string(), count))
                .collect()
        };
        RoutedCounts {
            setups: stats.setups,
            connected: stats.connected,
            ended: named(&stats.ended),
            failed: named(&stats.failed),
            call_connections: stats.call_connections,
        }
    }

    /// These and `other` together.
    pub fn plus(&self, other: &RoutedCounts) -> RoutedCounts {
        let add = |a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>| {
            let mut sum = a.clone();
            for (reason, count) in b {
                *sum.entry(reason.clone()).or_default() += count;
            }
            sum
        };
        RoutedCounts {
            setups: self.setups + other.setups,
            connected: self.connected + other.connected,
            ended: add(&self.ended, &other.ended),
            failed: add(&self.failed, &other.failed),
            call_connections: self.call_connections + other.call_connections,
        }
    }
}

impl Tally {
    /// Takes one sample of the established sockets of the C-LANs at `at_s`; `index` maps
    /// the running configuration's C-LANs to traces.
    pub fn sample(&mut self, at_s: f64, index: &[usize], established: impl Iterator<Item = u32>) {
        self.samples += 1;
        for (&trace, value) in index.iter().zip(established) {
            let clan = &mut self.clans[trace];
            if clan.points.last().is_none_or(|&(_, last)| last != value) {
                clan.points.push((at_s, value));
            }
            clan.peak = clan.peak.max(value);
            clan.sum += u64::from(value);
            clan.samples += 1;
        }
    }

    /// Takes one sample of the routed calls (`calls`) and, when read, call connections
    /// (`call_connections`) of the running configuration's C-LANs; `event` is the last event
    /// of the timeline that has happened.
    pub fn sample_calls(
        &mut self,
        index: &[usize],
        calls: &[u32],
        call_connections: Option<&[u32]>,
        event: Option<usize>,
    ) {
        for (i, (&trace, &value)) in index.iter().zip(calls).enumerate() {
            let clan = &mut self.clans[trace];
            clan.peak_calls = clan.peak_calls.max(value);
            if let Some(&connections) = call_connections.and_then(|c| c.get(i)) {
                clan.peak_call_connections = clan.peak_call_connections.max(connections);
            }
            if let Some(event) = event {
                let peaks = &mut self.events[event].peak_calls;
                if peaks.len() <= trace {
                    peaks.resize(trace + 1, 0);
                }
                peaks[trace] = peaks[trace].max(value);
            }
        }
    }

    /// A C-LAN no longer configured (removed by a reload) reads 0 from `at_s`.
    pub fn gone(&mut self, at_s: f64, trace: usize) {
        let clan = &mut self.clans[trace];
        if clan.points.last().is_some_and(|&(_, last)| last != 0) {
            clan.points.push((at_s, 0));
        }
    }

    /// Counts a reject.
    pub fn reject(&mut self, what: String) {
        *self.rejects.entry(what).or_default() += 1;
    }
}
