//! Avaya's "number of C-LAN sockets before warning" (docs/rules.md §9.3): per C-LAN an optional
//! `warn_sockets`. When a C-LAN's load (sockets + reservations, what its cap holds) reaches
//! it, the warning is *raised* — once; it is *cleared* — once — when the load falls below
//! `warn_sockets` minus a hysteresis, so a C-LAN whose load wavers around the threshold does
//! not raise it again at every phone.
//!
//! The hysteresis is 5 % of the threshold, at least one socket ([`hysteresis`]): with
//! `warn_sockets = 400` the warning is raised at load 400 and cleared below 380. Avaya
//! documents no hysteresis for this alarm; the rule is ours (docs/rules.md §9.3).
//!
//! [`Loads`](super::load::Loads) tells this table every load change; the crossings wait in
//! a bounded queue until the gatekeeper turns them into events and log lines
//! ([`Gatekeeper::drain_events`](super::Gatekeeper::drain_events)).

use std::collections::VecDeque;

use super::topology::ClanIdx;

/// Most crossings kept undrained (the planner and replay never drain them); older ones are
/// dropped.
const MAX_PENDING: usize = 4096;

/// How far below `warn_sockets` the load must fall to clear the warning: 5 %, at least 1
/// (0 for a threshold of 1, which clears when the C-LAN is empty).
pub fn hysteresis(warn_sockets: u32) -> u32 {
    (warn_sockets / 20)
        .max(1)
        .min(warn_sockets.saturating_sub(1))
}

/// A warning raised or cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossing {
    /// The C-LAN.
    pub clan: ClanIdx,
    /// Raised (the load reached the threshold) or cleared (it fell below the threshold minus
    /// the hysteresis).
    pub raised: bool,
    /// The load that crossed.
    pub load: u32,
    /// The C-LAN's `warn_sockets`.
    pub warn_sockets: u32,
}

/// One C-LAN's threshold and whether its warning stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Threshold {
    warn_sockets: Option<u32>,
    raised: bool,
}

/// The thresholds of every C-LAN, and the crossings not yet reported.
#[derive(Debug, Clone, Default)]
pub struct Warnings {
    clans: Vec<Threshold>,
    pending: VecDeque<Crossing>,
}

impl Warnings {
    /// Thresholds in configuration order (`None`: that C-LAN never warns), none raised.
    pub fn new(thresholds: impl IntoIterator<Item = Option<u32>>) -> Warnings {
        Warnings {
            clans: thresholds
                .into_iter()
                .map(|warn_sockets| Threshold {
                    warn_sockets,
                    raised: false,
                })
                .collect(),
            pending: VecDeque::new(),
        }
    }

    /// The load of `clan` is now `load`: raises or clears its warning when that crosses.
    pub fn observe(&mut self, clan: ClanIdx, load: u32) {
        let Some(threshold) = self.clans.get_mut(clan) else {
            return;
        };
        let Some(warn_sockets) = threshold.warn_sockets else {
            return;
        };
        let crossed = if threshold.raised {
            load < warn_sockets.saturating_sub(hysteresis(warn_sockets))
        } else {
            load >= warn_sockets
        };
        if !crossed {
            return;
        }
        threshold.raised = !threshold.raised;
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(Crossing {
            clan,
            raised: threshold.raised,
            load,
            warn_sockets,
        });
    }

    /// The threshold of `clan`.
    pub fn warn_sockets(&self, clan: ClanIdx) -> Option<u32> {
        self.clans.get(clan).and_then(|t| t.warn_sockets)
    }

    /// Does `clan`'s warning stand?
    pub fn raised(&self, clan: ClanIdx) -> bool {
        self.clans.get(clan).is_some_and(|t| t.raised)
    }

    /// C-LANs whose warning stands.
    pub fn raised_count(&self) -> usize {
        self.clans.iter().filter(|t| t.raised).count()
    }

    /// Takes the crossings not yet reported, oldest first.
    pub fn take_crossings(&mut self) -> Vec<Crossing> {
        self.pending.drain(..).collect()
    }

    /// Carries a warning over from a previous life of the gatekeeper (a reload): `clan`'s
    /// warning stands as it did (`raised`), then its current `load` is judged from there, so
    /// that only a real crossing — a threshold the reload changed, a load outside the
    /// hysteresis band — is reported. Crossings found while the state was rebuilt are
    /// dropped first by [`Warnings::forget_crossings`].
    pub fn carry(&mut self, clan: ClanIdx, raised: bool, load: u32) {
        if let Some(threshold) = self.clans.get_mut(clan) {
            threshold.raised = raised && threshold.warn_sockets.is_some();
            self.observe(clan, load);
        }
    }

    /// Drops the crossings not yet reported.
    pub fn forget_crossings(&mut self) {
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raised_once_at_the_threshold_cleared_once_below_the_hysteresis() {
        let mut warnings = Warnings::new([Some(40), None]);
        assert_eq!(hysteresis(40), 2);
        let mut crossings = Vec::new();
        // Up to 41, down to 38 (inside the band), up to 40 again, down to 37, up to 40.
        let loads = (1..=41)
            .chain((38..41).rev())
            .chain(39..=40)
            .chain((37..40).rev())
            .chain(38..=40);
        for load in loads {
            warnings.observe(0, load);
            warnings.observe(1, load);
            crossings.extend(warnings.take_crossings());
        }
        let seen: Vec<(bool, u32)> = crossings.iter().map(|c| (c.raised, c.load)).collect();
        assert_eq!(seen, [(true, 40), (false, 37), (true, 40)]);
        assert!(crossings
            .iter()
            .all(|c| c.clan == 0 && c.warn_sockets == 40));
        assert!(warnings.raised(0));
        assert!(!warnings.raised(1));
        assert_eq!(warnings.raised_count(), 1);
    }

    #[test]
    fn a_carried_warning_is_judged_from_where_it_stood() {
        let mut warnings = Warnings::new([Some(40), Some(40), Some(40)]);
        // Load 39 after a reload: inside the band. Raised before: stays, no crossing; not
        // raised before: nothing either.
        warnings.carry(0, true, 39);
        warnings.carry(1, false, 39);
        // Raised before, now far below (the reload raised the threshold... or load fell).
        warnings.carry(2, true, 10);
        let crossings = warnings.take_crossings();
        assert_eq!(crossings.len(), 1);
        assert_eq!((crossings[0].clan, crossings[0].raised), (2, false));
        assert!(warnings.raised(0));
        assert!(!warnings.raised(1));
    }

    #[test]
    fn a_threshold_of_one_clears_at_zero() {
        let mut warnings = Warnings::new([Some(1)]);
        warnings.observe(0, 1);
        warnings.observe(0, 0);
        let seen: Vec<bool> = warnings.take_crossings().iter().map(|c| c.raised).collect();
        assert_eq!(seen, [true, false]);
    }
}
