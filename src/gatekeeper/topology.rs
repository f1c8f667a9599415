//! The fixed shape of the system, worked out once from the configuration: which regions each
//! region reaches directly and indirectly (the tiers of docs/rules.md §2.3), and which C-LANs
//! belong to each tier, in configuration order (the arrays an AGL is cut from, docs/rules.md §6.1).

use std::collections::{BTreeSet, HashMap};

use foldhash::fast::FixedState;
use std::net::SocketAddr;

use crate::config::{Config, LinkKind, RegionId};

/// A C-LAN's index in configuration order.
pub type ClanIdx = usize;

/// The regions a phone of one home region may be served from, tier by tier.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tiers {
    /// The home region.
    pub home: RegionId,
    /// Directly linked regions, ascending.
    pub direct: Vec<RegionId>,
    /// Indirectly linked regions with `agl = true`, ascending (none also direct).
    pub indirect: Vec<RegionId>,
    /// C-LANs of each group (home, direct, indirect), in configuration order.
    pub group_clans: [Vec<ClanIdx>; 3],
}

impl Tiers {
    /// The three groups of regions in order, the home region alone first.
    pub fn groups(&self) -> [&[RegionId]; 3] {
        [
            std::slice::from_ref(&self.home),
            &self.direct,
            &self.indirect,
        ]
    }

    /// Which group (0 home, 1 direct, 2 indirect) a region is in, if any.
    pub fn group_of(&self, region: RegionId) -> Option<usize> {
        if region == self.home {
            Some(0)
        } else if self.direct.binary_search(&region).is_ok() {
            Some(1)
        } else if self.indirect.binary_search(&region).is_ok() {
            Some(2)
        } else {
            None
        }
    }
}

/// Regions, links and C-LANs as the policy reads them.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Region of each C-LAN.
    pub clan_region: Vec<RegionId>,
    /// Priority of each C-LAN (1 is best).
    pub clan_priority: Vec<u8>,
    /// C-LAN of each RAS address (read for every RRQ; the keys are the configuration's, so
    /// a fixed hasher will do).
    pub clan_at: HashMap<SocketAddr, ClanIdx, FixedState>,
    /// Tiers of every defined region, by region id (read for every GRQ).
    tiers: HashMap<RegionId, Tiers, FixedState>,
}

impl Topology {
    /// Works out tiers and groups from a checked configuration.
    pub fn new(config: &Config) -> Topology {
        let clan_region: Vec<RegionId> = config.clans.iter().map(|c| c.region).collect();
        let clan_priority = config.clans.iter().map(|c| c.priority).collect();
        // Every RAS address of each C-LAN: a dual-stack board is reached at both.
        let clan_at = config
            .clans
            .iter()
            .enumerate()
            .flat_map(|(idx, clan)| clan.ras_addresses().map(move |address| (address, idx)))
            .collect();
        let mut tiers = HashMap::default();
        for region in &config.regions {
            tiers.insert(region.id, Self::tiers_of(config, region.id, &clan_region));
        }
        Topology {
            clan_region,
            clan_priority,
            clan_at,
            tiers,
        }
    }

    fn tiers_of(config: &Config, home: RegionId, clan_region: &[RegionId]) -> Tiers {
        let mut direct = BTreeSet::new();
        let mut indirect = BTreeSet::new();
        for link in &config.links {
            let far = if link.near == home {
                link.far
            } else if link.symmetric && link.far == home {
                link.near
            } else {
                continue;
            };
            match link.kind {
                LinkKind::Direct => {
                    direct.insert(far);
                }
                LinkKind::Indirect if link.agl => {
                    indirect.insert(far);
                }
                LinkKind::Indirect => {}
            }
        }
        let indirect: BTreeSet<_> = indirect.difference(&direct).copied().collect();
        let mut tiers = Tiers {
            home,
            direct: direct.into_iter().collect(),
            indirect: indirect.into_iter().collect(),
            group_clans: Default::default(),
        };
        for (idx, &region) in clan_region.iter().enumerate() {
            if let Some(group) = tiers.group_of(region) {
                tiers.group_clans[group].push(idx);
            }
        }
        tiers
    }

    /// The tiers of a home region; a region without configuration has only itself, with no
    /// C-LANs.
    pub fn tiers(&self, home: RegionId) -> std::borrow::Cow<'_, Tiers> {
        match self.tiers.get(&home) {
            Some(tiers) => std::borrow::Cow::Borrowed(tiers),
            None => std::borrow::Cow::Owned(Tiers {
                home,
                ..Tiers::default()
            }),
        }
    }

    /// Number of C-LANs.
    pub fn clan_count(&self) -> usize {
        self.clan_region.len()
    }
}
