//! The load of every C-LAN — sockets, reservations, cap, in-service state — and an index of
//! the C-LANs that can take one more phone, ordered the way GCF choice reads them (per
//! region: priority class, then load, then configuration order). Every change keeps the
//! index in step, so finding the best C-LAN of a region costs a map lookup, not a scan, and
//! tells the `warn_sockets` table ([`Warnings`]) the new load.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::topology::ClanIdx;
use super::warnings::Warnings;
use crate::config::{Family, RegionId};

/// One C-LAN's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClanLoad {
    /// Sockets in use.
    pub sockets: u32,
    /// GCF reservations not yet turned into sockets.
    pub reserved: u32,
    /// The socket cap.
    pub cap: u32,
    /// In service?
    pub in_service: bool,
    /// Region (fixed).
    pub region: RegionId,
    /// Priority (fixed; 1 is best).
    pub priority: u8,
    /// Whether it has an IPv4 and an IPv6 address (fixed): it serves phones of those
    /// families (docs/rules.md §17).
    pub families: [bool; 2],
}

impl ClanLoad {
    /// Does it serve phones of `family`?
    pub fn serves(&self, family: Family) -> bool {
        self.families[family as usize]
    }

    /// Sockets + reservations.
    pub fn load(&self) -> u32 {
        self.sockets + self.reserved
    }

    /// Can it take one more phone?
    pub fn available(&self) -> bool {
        self.in_service && self.load() < self.cap
    }
}

/// Per priority class, the available C-LANs as (load, index), best first.
type Classes = BTreeMap<u8, BTreeSet<(u32, ClanIdx)>>;

/// Loads of all C-LANs plus the index of available ones.
#[derive(Debug, Clone, Default)]
pub struct Loads {
    clans: Vec<ClanLoad>,
    /// Per region and address family, per priority class: available C-LANs as (load,
    /// index). A dual-stack C-LAN stands under both families. A class or region left with
    /// no C-LAN keeps its empty set: every GCF moves a C-LAN's load twice (a reservation
    /// released, one made), and freeing and allocating the set each time showed in
    /// `rasgk bench`. The keys are the configuration's, so a fixed hasher will do.
    available: HashMap<(RegionId, Family), Classes, foldhash::fast::FixedState>,
    /// The `warn_sockets` thresholds and the warnings standing (none until
    /// [`Loads::set_warnings`]).
    warnings: Warnings,
    /// Counts every change, so that a reader can tell cheaply whether anything moved since
    /// it last looked (rebalancing, [`super::rebalance`]).
    generation: u64,
}

impl Loads {
    /// Loads of C-LANs starting empty.
    pub fn new(clans: impl IntoIterator<Item = ClanLoad>) -> Loads {
        let mut loads = Loads::default();
        for clan in clans {
            loads.clans.push(clan);
            loads.index(loads.clans.len() - 1);
        }
        loads
    }

    /// Sets every C-LAN's `warn_sockets` (configuration order), none raised; the current
    /// loads are judged at once.
    pub fn set_warnings(&mut self, thresholds: impl IntoIterator<Item = Option<u32>>) {
        self.warnings = Warnings::new(thresholds);
        for (idx, clan) in self.clans.iter().enumerate() {
            self.warnings.observe(idx, clan.load());
        }
    }

    /// The `warn_sockets` thresholds and the warnings standing.
    pub fn warnings(&self) -> &Warnings {
        &self.warnings
    }

    /// The same, to take crossings or carry warnings over a reload.
    pub fn warnings_mut(&mut self) -> &mut Warnings {
        &mut self.warnings
    }

    /// One C-LAN's counters.
    pub fn get(&self, idx: ClanIdx) -> &ClanLoad {
        &self.clans[idx]
    }

    /// All C-LANs' counters, in configuration order.
    pub fn all(&self) -> &[ClanLoad] {
        &self.clans
    }

    /// The best available C-LAN of a region for phones of `family`: (priority, load, index)
    /// of the least loaded C-LAN of its best priority class that has room and an address of
    /// that family.
    pub fn best_in_region(&self, region: RegionId, family: Family) -> Option<(u8, u32, ClanIdx)> {
        let classes = self.available.get(&(region, family))?;
        classes
            .iter()
            .find_map(|(&priority, set)| set.first().map(|&(load, idx)| (priority, load, idx)))
    }

    fn key(&self, idx: ClanIdx) -> (RegionId, u8, (u32, ClanIdx)) {
        let clan = &self.clans[idx];
        (clan.region, clan.priority, (clan.load(), idx))
    }

    /// The families a C-LAN serves.
    fn families(&self, idx: ClanIdx) -> impl Iterator<Item = Family> + use<> {
        let served = self.clans[idx].families;
        Family::ALL.into_iter().filter(move |&f| served[f as usize])
    }

    fn unindex(&mut self, idx: ClanIdx) {
        let (region, priority, entry) = self.key(idx);
        for family in self.families(idx) {
            if let Some(set) = self
                .available
                .get_mut(&(region, family))
                .and_then(|classes| classes.get_mut(&priority))
            {
                set.remove(&entry);
            }
        }
    }

    fn index(&mut self, idx: ClanIdx) {
        if self.clans[idx].available() {
            let (region, priority, entry) = self.key(idx);
            for family in self.families(idx) {
                self.available
                    .entry((region, family))
                    .or_default()
                    .entry(priority)
                    .or_default()
                    .insert(entry);
            }
        }
    }

    /// How many changes there have been: equal on two reads, nothing changed between them.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn change(&mut self, idx: ClanIdx, f: impl FnOnce(&mut ClanLoad)) {
        self.generation += 1;
        self.unindex(idx);
        f(&mut self.clans[idx]);
        self.index(idx);
        self.warnings.observe(idx, self.clans[idx].load());
    }

    /// One more reservation.
    pub fn reserve(&mut self, idx: ClanIdx) {
        self.change(idx, |c| c.reserved += 1);
    }

    /// One reservation fewer.
    pub fn release(&mut self, idx: ClanIdx) {
        self.change(idx, |c| c.reserved = c.reserved.saturating_sub(1));
    }

    /// One more socket.
    pub fn add_socket(&mut self, idx: ClanIdx) {
        self.change(idx, |c| c.sockets += 1);
    }

    /// A reservation becomes a socket.
    pub fn reservation_to_socket(&mut self, idx: ClanIdx) {
        self.change(idx, |c| {
            c.reserved = c.reserved.saturating_sub(1);
            c.sockets += 1;
        });
    }

    /// One socket fewer.
    pub fn remove_socket(&mut self, idx: ClanIdx) {
        self.change(idx, |c| c.sockets = c.sockets.saturating_sub(1));
    }

    /// Into or out of service.
    pub fn set_in_service(&mut self, idx: ClanIdx, in_service: bool) {
        self.change(idx, |c| c.in_service = in_service);
    }

    /// A new cap (≥ 1); a cap below the load only stops new work.
    pub fn set_cap(&mut self, idx: ClanIdx, cap: u32) {
        self.change(idx, |c| c.cap = cap.max(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clan(region: RegionId, priority: u8, cap: u32) -> ClanLoad {
        ClanLoad {
            sockets: 0,
            reserved: 0,
            cap,
            in_service: true,
            region,
            priority,
            families: [true, false],
        }
    }

    #[test]
    fn best_is_least_loaded_of_the_best_class() {
        let mut loads = Loads::new([clan(1, 2, 9), clan(1, 1, 2), clan(1, 1, 2), clan(2, 1, 9)]);
        assert_eq!(loads.best_in_region(1, Family::V4), Some((1, 0, 1)));
        loads.add_socket(1);
        assert_eq!(loads.best_in_region(1, Family::V4), Some((1, 0, 2)));
        loads.reserve(2);
        loads.reserve(2);
        assert_eq!(loads.best_in_region(1, Family::V4), Some((1, 1, 1)));
        loads.add_socket(1);
        // Both priority-1 C-LANs are full: the class falls back to priority 2.
        assert_eq!(loads.best_in_region(1, Family::V4), Some((2, 0, 0)));
        loads.set_in_service(0, false);
        assert_eq!(loads.best_in_region(1, Family::V4), None);
        loads.release(2);
        assert_eq!(loads.best_in_region(1, Family::V4), Some((1, 1, 2)));
        assert_eq!(loads.best_in_region(3, Family::V4), None);
    }

    #[test]
    fn a_family_sees_only_the_clans_with_an_address_of_it() {
        let with = |families| ClanLoad {
            families,
            ..clan(1, 1, 5)
        };
        let mut loads = Loads::new([with([true, false]), with([false, true]), with([true, true])]);
        assert_eq!(loads.best_in_region(1, Family::V4), Some((1, 0, 0)));
        assert_eq!(loads.best_in_region(1, Family::V6), Some((1, 0, 1)));
        // The dual-stack C-LAN: one load for both families.
        loads.add_socket(0);
        loads.add_socket(1);
        assert_eq!(loads.best_in_region(1, Family::V4), Some((1, 0, 2)));
        assert_eq!(loads.best_in_region(1, Family::V6), Some((1, 0, 2)));
        loads.add_socket(2);
        loads.add_socket(2);
        assert_eq!(loads.best_in_region(1, Family::V4), Some((1, 1, 0)));
        assert_eq!(loads.best_in_region(1, Family::V6), Some((1, 1, 1)));
        loads.set_in_service(1, false);
        assert_eq!(loads.best_in_region(1, Family::V6), Some((1, 2, 2)));
    }
}
