//! The rules of docs/rules.md §4, §6 and §7 as pure functions of the topology and the loads:
//! which C-LAN goes into a GCF, which C-LANs make up an AGL, and which AGL entry gets a TTS
//! phone's socket. Nothing here changes state; the random AGL offsets come from the caller's
//! generator, so a seeded run is reproducible.

use rand::Rng;

use super::load::Loads;
use super::topology::{ClanIdx, Tiers};
use crate::config::{AglQuotas, Family, TierMode};

/// The C-LAN a GCF names (docs/rules.md §4.1, §4.2): the first tier with a candidate; within it, by
/// `mode`, the first region in order with one (`Ordered`) or the best across the tier (`Pooled`);
/// within a region the least loaded C-LAN of the best priority class, ties by configuration order.
/// `None`: no C-LAN anywhere has room (GRJ `resourceUnavailable`). Only C-LANs with an
/// address of the phone's `family` count (docs/rules.md §17).
pub fn choose_clan(
    tiers: &Tiers,
    loads: &Loads,
    mode: TierMode,
    family: Family,
) -> Option<ClanIdx> {
    for regions in tiers.groups() {
        let best = match mode {
            TierMode::Ordered => regions
                .iter()
                .find_map(|&r| loads.best_in_region(r, family)),
            TierMode::Pooled => regions
                .iter()
                .filter_map(|&r| loads.best_in_region(r, family))
                .min(),
        };
        if let Some((_, _, idx)) = best {
            return Some(idx);
        }
    }
    None
}

/// The AGL of a phone (docs/rules.md §6.1): for each group (home, direct, indirect) the C-LANs that
/// can take a phone, in configuration order, cut cyclically from a random offset, up to the group's
/// quota and the total `max`; only C-LANs with an address of the phone's `family`.
pub fn build_agl(
    tiers: &Tiers,
    loads: &Loads,
    quotas: &AglQuotas,
    family: Family,
    rng: &mut impl Rng,
) -> Vec<ClanIdx> {
    let mut agl = Vec::with_capacity(quotas.max);
    let group_quotas = [quotas.home, quotas.direct, quotas.indirect];
    for (clans, quota) in tiers.group_clans.iter().zip(group_quotas) {
        let room = quotas.max.saturating_sub(agl.len()).min(quota);
        if room == 0 {
            continue;
        }
        // The group's eligible C-LANs, read twice rather than collected: this runs for
        // every full RRQ.
        let eligible = || {
            clans
                .iter()
                .copied()
                .filter(|&idx| loads.get(idx).available() && loads.get(idx).serves(family))
        };
        let count = eligible().count();
        if count == 0 {
            continue;
        }
        // `take` of them in order, from `start` on, wrapping around.
        let start = rng.random_range(0..count);
        let take = room.min(count);
        agl.extend(eligible().skip(start).take(take));
        agl.extend(eligible().take((start + take).saturating_sub(count)));
    }
    agl
}

/// The C-LAN of a TTS phone's socket (docs/rules.md §7.1): among its AGL entries that can take a
/// phone, first the home- and direct-region ones, then the indirect-region ones; within a group the
/// best priority class, then the least loaded, then AGL order. `None`: no entry has room now.
pub fn choose_tts_clan(tiers: &Tiers, loads: &Loads, agl: &[ClanIdx]) -> Option<ClanIdx> {
    choose_tts_clan_except(tiers, loads, agl, &[])
}

/// [`choose_tts_clan`] among the AGL entries not in `tried` (socket mode: the C-LANs whose
/// connection attempt already failed in this round).
pub fn choose_tts_clan_except(
    tiers: &Tiers,
    loads: &Loads,
    agl: &[ClanIdx],
    tried: &[ClanIdx],
) -> Option<ClanIdx> {
    let near = |idx: ClanIdx| matches!(tiers.group_of(loads.get(idx).region), Some(0 | 1));
    for want_near in [true, false] {
        let best = agl
            .iter()
            .enumerate()
            .filter(|&(_, &idx)| {
                near(idx) == want_near && loads.get(idx).available() && !tried.contains(&idx)
            })
            .min_by_key(|&(position, &idx)| {
                let clan = loads.get(idx);
                (clan.priority, clan.load(), position)
            });
        if let Some((_, &idx)) = best {
            return Some(idx);
        }
    }
    None
}
