//! What a plan records while it runs: sockets per C-LAN at every sample (kept as change
//! points, with running peaks and sums), rejects by message and reason, connections the
//! gatekeeper refused, times to service, and for each event of the timeline the phones that
//! lost service after it and when each was back.

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
