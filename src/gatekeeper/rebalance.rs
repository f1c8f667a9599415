//! Opt-in rebalancing (docs/rules.md §9.2, `[rebalance]`): moving phones, one at a time, off a
//! C-LAN that stands more than `tolerance` above the least loaded available C-LAN of its
//! region and priority class. Avaya never does this; without the table nothing here runs and
//! no timer is armed.
//!
//! ```text
//!   loads changed (a datagram, a timer, an admin change) ──▶ wake: a check is due at
//!       max(now, last check + 1/moves_per_s)
//!   poll_timeout() reaches it ──▶ handle_timeout ──▶ step: the worst imbalance first; its
//!       heavy C-LAN's newest registration not in a call and not held off gets a URQ
//!       (`reregistrationRequired`) whose AGL leads with the light C-LAN, where a place is
//!       reserved for it as a GCF would
//! ```
//!
//! A move changes the loads, so the next check follows 1/`moves_per_s` later, and so on
//! until the class is within `tolerance`; a check that finds every class within it arms
//! nothing. Checks — and so moves — are never closer than 1/`moves_per_s` (rounded up to the
//! nanosecond), all driven by the `now` the core is given. "Load" is the figure GCF choice
//! reads (docs/rules.md §4.1): sockets plus reservations, as [`Loads`] keeps it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::events::{Ending, Event};
use super::load::Loads;
use super::topology::ClanIdx;
use super::{registry, Gatekeeper, Transmit};
use crate::config::{Rebalance, RegionId};
use crate::ras::reply::UrqReason;

/// Most phones held off at once. Full, no phone is moved until one's hold-off runs out, so
/// that a phone is never moved twice within `hold_off_s` (the table fills only when
/// `moves_per_s` × `hold_off_s` is larger than this).
pub const MAX_HELD_OFF: usize = 100_000;

/// One move, as `/api/rebalance` and the dashboard show the last one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RebalanceMove {
    /// The phone's `endpointIdentifier` (it forgets it with the URQ; the next RCF may name
    /// another).
    pub endpoint_id: String,
    /// Its first alias, if it has one.
    pub alias: Option<String>,
    /// Its RAS address: what the hold-off is kept by, since it outlives the registration.
    pub ras_address: SocketAddr,
    /// The C-LAN it was moved off.
    pub from: String,
    /// The C-LAN its URQ's AGL leads with.
    pub to: String,
    /// Milliseconds since the UNIX epoch.
    pub at_ms: u64,
}

/// What `GET /api/rebalance` shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RebalanceView {
    /// Is rebalancing on (`[rebalance]` given and not `enabled = false`)?
    pub enabled: bool,
    /// `tolerance` (0 when off).
    pub tolerance: u32,
    /// `moves_per_s` (0 when off).
    pub moves_per_s: f64,
    /// `hold_off_s` (0 when off).
    pub hold_off_s: u64,
    /// Moves since start, carried over reloads.
    pub moves: u64,
    /// Moves by the C-LAN they were made off.
    pub moves_from: BTreeMap<String, u64>,
    /// Phones held off now.
    pub held_off: usize,
    /// The last move, if any.
    pub last_move: Option<RebalanceMove>,
}

/// The rebalancing state of a gatekeeper: its settings, when the next check is due, and
/// the phones held off (by RAS address).
#[derive(Debug, Default, Clone)]
pub(super) struct Rebalancer {
    settings: Option<Rebalance>,
    /// When the next check runs; `None`: nothing to check until the loads change.
    due: Option<Instant>,
    /// When the last check ran: the next is at least 1/`moves_per_s` later.
    last_check: Option<Instant>,
    /// The loads' generation the last check (or wake) saw.
    seen: u64,
    /// The latest instant the core was given (for changes that come without one).
    latest: Option<Instant>,
    /// Held off until, by RAS address, and the same by time for pruning.
    held: HashMap<SocketAddr, Instant>,
    held_by_time: BTreeSet<(Instant, SocketAddr)>,
    last_move: Option<RebalanceMove>,
}

/// A C-LAN standing more than the tolerance above the lightest available C-LAN of its class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imbalance {
    /// The heavier C-LAN.
    pub heavy: ClanIdx,
    /// The least loaded available C-LAN of its region and priority class (ties: the first
    /// configured).
    pub light: ClanIdx,
    /// How far beyond the tolerance the heavy one stands.
    pub excess: u32,
}

/// Every C-LAN in service whose load stands more than `tolerance` above the least loaded
/// available C-LAN of its region and priority class, worst first (ties: configuration
/// order). Only in-service C-LANs count as heavy; only available ones (in service, below
/// the cap) as light, since a phone can only go where there is room.
pub fn imbalances(loads: &Loads, tolerance: u32) -> Vec<Imbalance> {
    let clans = loads.all();
    let mut lightest: BTreeMap<(RegionId, u8), ClanIdx> = BTreeMap::new();
    for (idx, clan) in clans.iter().enumerate() {
        if !clan.available() {
            continue;
        }
        let entry = lightest.entry((clan.region, clan.priority)).or_insert(idx);
        if clan.load() < clans[*entry].load() {
            *entry = idx;
        }
    }
    let mut found: Vec<Imbalance> = clans
        .iter()
        .enumerate()
        .filter(|(_, clan)| clan.in_service)
        .filter_map(|(heavy, clan)| {
            let light = *lightest.get(&(clan.region, clan.priority))?;
            let excess = clan
                .load()
                .checked_sub(clans[light].load().saturating_add(tolerance))?;
            (excess > 0).then_some(Imbalance {
                heavy,
                light,
                excess,
            })
        })
        .collect();
    found.sort_by_key(|i| (std::cmp::Reverse(i.excess), i.heavy));
    found
}

impl Rebalancer {
    /// The state for `settings` (`None`: off).
    pub fn new(settings: Option<Rebalance>) -> Rebalancer {
        Rebalancer {
            settings,
            ..Rebalancer::default()
        }
    }

    /// When the next check runs, if one is armed.
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Notes that the loads may have changed (or a phone may have become movable): arms a
    /// check at `now`, or 1/`moves_per_s` after the last one. Nothing when off.
    pub fn wake(&mut self, now: Instant) {
        self.latest = Some(self.latest.map_or(now, |latest| latest.max(now)));
        let Some(settings) = self.settings else {
            return;
        };
        let earliest = self
            .last_check
            .map_or(now, |last| (last + settings.interval()).max(now));
        self.due = Some(self.due.map_or(earliest, |due| due.min(earliest)));
    }

    /// Is `source` held off at `now`?
    fn held_off(&self, source: SocketAddr, now: Instant) -> bool {
        self.held.get(&source).is_some_and(|&until| until > now)
    }

    /// Forgets the hold-offs that have run out.
    fn prune(&mut self, now: Instant) {
        while let Some(&(until, source)) = self.held_by_time.first() {
            if until > now {
                break;
            }
            self.held_by_time.pop_first();
            if self.held.get(&source) == Some(&until) {
                self.held.remove(&source);
            }
        }
    }

    /// Holds `source` off until `until`.
    fn hold_off(&mut self, source: SocketAddr, until: Instant) {
        if let Some(old) = self.held.insert(source, until) {
            self.held_by_time.remove(&(old, source));
        }
        self.held_by_time.insert((until, source));
    }

    /// The same state under new settings (a reload): the hold-offs, the last check and the
    /// last move carry over.
    pub fn reconfigured(&self, settings: Option<Rebalance>) -> Rebalancer {
        Rebalancer {
            settings,
            due: None,
            ..self.clone()
        }
    }
}

impl Gatekeeper {
    /// Arms a rebalancing check when the loads changed since the last look (cheap: one
    /// comparison; nothing when rebalancing is off).
    pub(super) fn notice_loads(&mut self, now: Instant) {
        let generation = self.loads.generation();
        if self.rebalance.seen != generation {
            self.rebalance.seen = generation;
            self.rebalance.wake(now);
        }
    }

    /// [`notice_loads`](Gatekeeper::notice_loads) for a change made without a time (a cap):
    /// at the latest instant the core was given.
    pub(super) fn notice_loads_untimed(&mut self) {
        if let Some(now) = self.rebalance.latest {
            self.notice_loads(now);
        }
    }

    /// Something other than the loads may let a phone move now (a call ended).
    pub(super) fn wake_rebalance(&mut self, now: Instant) {
        self.rebalance.wake(now);
    }

    /// Runs the check due at `now`, if any: at most one move (docs/rules.md §9.2).
    pub(super) fn rebalance_due(&mut self, now: Instant) -> Option<Transmit> {
        if self.rebalance.due.is_none_or(|due| due > now) {
            return None;
        }
        self.rebalance.due = None;
        let settings = self.rebalance.settings?;
        self.rebalance.last_check = Some(now);
        self.rebalance.seen = self.loads.generation();
        self.rebalance.prune(now);
        let found = imbalances(&self.loads, settings.tolerance);
        if found.is_empty() {
            return None;
        }
        if self.rebalance.held.len() >= MAX_HELD_OFF {
            // Full: wait for the first hold-off to run out rather than forget one early.
            self.rebalance.due = self.rebalance.held_by_time.first().map(|&(until, _)| until);
            return None;
        }
        // One pass over the registrations: per heavy C-LAN, the newest phone that may move,
        // and when the first one held off may.
        let heavy: Vec<ClanIdx> = found.iter().map(|i| i.heavy).collect();
        let mut movable: HashMap<ClanIdx, u64> = HashMap::new();
        let mut held_until: Option<Instant> = None;
        for (key, registration) in self.registry.iter_any_order() {
            let Some(clan) = registration.socket.filter(|clan| heavy.contains(clan)) else {
                continue;
            };
            // Only towards a C-LAN with an address of the phone's family (docs/rules.md §17).
            let family = registration.family();
            let reachable = found
                .iter()
                .find(|i| i.heavy == clan)
                .is_some_and(|i| self.loads.get(i.light).serves(family));
            if !reachable {
                continue;
            }
            if self.calls.has_calls_of(key) || self.trunk_members.has_calls_of(key) {
                continue;
            }
            if self.rebalance.held_off(registration.source, now) {
                let until = self.rebalance.held[&registration.source];
                held_until = Some(held_until.map_or(until, |at| at.min(until)));
                continue;
            }
            let newest = movable.entry(clan).or_insert(key);
            *newest = (*newest).max(key);
        }
        let chosen = found
            .iter()
            .find_map(|i| Some((*movable.get(&i.heavy)?, i.heavy, i.light)));
        let Some((key, from, to)) = chosen else {
            // Every phone that could move is in a call (its DRQ wakes the next check) or
            // held off: look again when the first hold-off runs out.
            self.rebalance.due = held_until.map(|until| until.max(now + settings.interval()));
            return None;
        };
        self.move_phone(now, key, from, to, settings.hold_off)
    }

    /// Moves one phone off `from` towards `to`: unregisters it, reserves its place on `to`
    /// (as a GCF would, for `gcf_hold_s`), holds it off, and sends the URQ whose AGL leads with
    /// `to`, followed by the rest of its AGL that can take it, without `from`.
    fn move_phone(
        &mut self,
        now: Instant,
        key: u64,
        from: ClanIdx,
        to: ClanIdx,
        hold_off: Duration,
    ) -> Option<Transmit> {
        let registration = self.unregister(now, key, Ending::Rebalanced)?;
        let source = registration.source;
        self.hold_place(now, source, to);
        self.rebalance.hold_off(source, now + hold_off);
        let mut agl = vec![to];
        agl.extend(
            registration
                .agl
                .iter()
                .copied()
                .filter(|&clan| clan != from && clan != to && self.loads.get(clan).available()),
            // (The rest of its AGL is of its family already.)
        );
        agl.truncate(self.config.agl.max.max(1));
        let (from_name, to_name) = (self.clan_name(from), self.clan_name(to));
        *self
            .stats
            .rebalance_moves
            .entry(from_name.clone())
            .or_default() += 1;
        let endpoint_id = registry::endpoint_id_text(key);
        let alias = registration.aliases.first().map(|alias| alias.to_string());
        tracing::info!(
            endpoint = %endpoint_id, from = %from_name, to = %to_name,
            "rebalancing: phone moved off {from_name} towards {to_name}"
        );
        self.rebalance.last_move = Some(RebalanceMove {
            endpoint_id: endpoint_id.clone(),
            alias: alias.clone(),
            ras_address: source,
            from: from_name.clone(),
            to: to_name.clone(),
            at_ms: u64::try_from(self.wall_clock(now).as_millis()).unwrap_or(u64::MAX),
        });
        self.events.push(Event::Rebalanced {
            endpoint_id,
            alias,
            from: from_name,
            to: to_name,
        });
        let reason = UrqReason::ReregistrationRequired;
        self.send_urq(now, (key, &registration), reason, &agl)
    }

    /// What rebalancing is set to and has done (`GET /api/rebalance`, `/metrics`).
    pub fn rebalance(&self) -> RebalanceView {
        let settings = self.rebalance.settings;
        RebalanceView {
            enabled: settings.is_some(),
            tolerance: settings.map_or(0, |s| s.tolerance),
            moves_per_s: settings.map_or(0.0, |s| s.moves_per_s),
            hold_off_s: settings.map_or(0, |s| s.hold_off.as_secs()),
            moves: self.stats.rebalance_moves.values().sum(),
            moves_from: self.stats.rebalance_moves.clone(),
            held_off: self.rebalance.held.len(),
            last_move: self.rebalance.last_move.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gatekeeper::load::ClanLoad;

    fn clan(region: RegionId, priority: u8, sockets: u32) -> ClanLoad {
        ClanLoad {
            families: [true, false],
            sockets,
            reserved: 0,
            cap: 100,
            in_service: true,
            region,
            priority,
        }
    }

    #[test]
    fn only_a_class_apart_by_more_than_the_tolerance_is_imbalanced() {
        // Region 1, priority 1: 10, 4, 7; priority 2: 0 (another class); region 2: 30, 0.
        let mut loads = Loads::new([
            clan(1, 1, 10),
            clan(1, 1, 4),
            clan(1, 1, 7),
            clan(1, 2, 0),
            clan(2, 1, 30),
            clan(2, 1, 0),
        ]);
        assert_eq!(
            imbalances(&loads, 3),
            [
                Imbalance {
                    heavy: 4,
                    light: 5,
                    excess: 27
                },
                Imbalance {
                    heavy: 0,
                    light: 1,
                    excess: 3
                },
            ]
        );
        assert_eq!(imbalances(&loads, 30), []);
        // The lightest out of service: the next lightest available one is the light one.
        loads.set_in_service(5, false);
        loads.set_in_service(1, false);
        assert_eq!(
            imbalances(&loads, 2),
            [Imbalance {
                heavy: 0,
                light: 2,
                excess: 1
            }]
        );
        // A full C-LAN takes nobody: it is never the light one.
        loads.set_cap(2, 7);
        assert_eq!(imbalances(&loads, 2), []);
    }
}
