//! The calls in progress and what they count: [`Calls`] routes a call (digit analysis, route
//! list, route group, route local), keeps it by endpoint and `callIdentifier` until its DRQ,
//! and counts calls per trunk and node and intra-cluster hops.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::pattern::{best_match, DigitPattern, Specificity};
use super::route::{calling_node, pick_trunk, route_local, Route};
use crate::config::{Config, NodeIdx, RouteTarget, TrunkIdx};

/// Most calls held at once, whatever the trunks allow: a peer sending ARQs without DRQs
/// cannot grow memory without bound.
pub const MAX_CALLS: usize = 100_000;

/// A call: the endpoint's registry key and its `callIdentifier`.
pub type CallKey = (u64, [u8; 16]);

/// The keys of `endpoint`'s calls in a map by [`CallKey`], in `callIdentifier` order: how
/// [`Calls`] and [`TrunkMembers`](super::TrunkMembers) find one endpoint's calls.
pub(super) fn keys_of<V>(
    calls: &BTreeMap<CallKey, V>,
    endpoint: u64,
) -> impl Iterator<Item = &CallKey> {
    calls
        .range((endpoint, [0; 16])..=(endpoint, [0xFF; 16]))
        .map(|(key, _)| key)
}

/// Why a call cannot be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRoute {
    /// No route pattern matches the dialled digits (ARJ `calledPartyNotRegistered`).
    NoPattern,
    /// Every trunk the pattern leads to is busy (ARJ `resourceUnavailable`).
    AllBusy,
}

/// One call in progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveCall {
    /// The digits dialled.
    pub dialled: String,
    /// Where it went.
    pub route: Route,
}

/// Calls on one trunk from one node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrunkCount {
    /// In progress now.
    pub active: u32,
    /// Placed since start.
    pub total: u64,
}

/// The calls in progress, the counts, the circular cursors and the generator of the
/// route-local draws.
#[derive(Debug, Clone)]
pub struct Calls {
    /// The route patterns that parse, with their index in the configuration.
    patterns: Vec<DigitPattern>,
    pattern_index: Vec<usize>,
    calls: BTreeMap<CallKey, ActiveCall>,
    /// `[trunk][node]`.
    counts: Vec<Vec<TrunkCount>>,
    /// Per route group: the position a circular group starts from next.
    cursors: Vec<usize>,
    hops_total: u64,
    rng: ChaCha8Rng,
}

impl Calls {
    /// No calls yet. The route-local draws come from their own ChaCha8 stream of `seed`, so
    /// they do not shift the AGL offsets drawn from the core's generator.
    pub fn new(config: &Config, seed: u64) -> Calls {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(1);
        // A checked configuration's patterns all parse; a hand-built one's that do not are
        // left out rather than shifting the indices of the others.
        let (pattern_index, patterns) = config
            .route_patterns
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((i, DigitPattern::parse(&p.pattern).ok()?)))
            .unzip();
        Calls {
            patterns,
            pattern_index,
            calls: BTreeMap::new(),
            counts: vec![vec![TrunkCount::default(); config.nodes.len()]; config.trunks.len()],
            cursors: vec![0; config.route_groups.len()],
            hops_total: 0,
            rng,
        }
    }

    /// The rank of the most specific configured route pattern matching `digits`, if any
    /// (to weigh it against the patterns of registered gateways, [`super::members`]).
    pub fn best_rank(&self, digits: &str) -> Option<Specificity> {
        let found = best_match(&self.patterns, digits)?;
        Some(self.patterns[found].specificity())
    }

    /// Calls on `trunk` now.
    pub fn active_on_trunk(&self, trunk: TrunkIdx) -> u32 {
        self.counts
            .get(trunk)
            .map_or(0, |nodes| nodes.iter().map(|c| c.active).sum())
    }

    fn busy(&self, config: &Config, trunk: TrunkIdx) -> bool {
        match config.trunks.get(trunk).and_then(|t| t.max_calls) {
            Some(max) => self.active_on_trunk(trunk) >= max,
            None => false,
        }
    }

    /// Routes a call from a phone on `phone_node` to `digits`: which pattern, trunk and
    /// node. Moves a circular group's cursor and draws from the generator, but holds no call
    /// until [`begin`](Calls::begin).
    pub fn route(
        &mut self,
        config: &Config,
        digits: &str,
        phone_node: NodeIdx,
    ) -> Result<Route, NoRoute> {
        if self.calls.len() >= MAX_CALLS {
            return Err(NoRoute::AllBusy);
        }
        let found = best_match(&self.patterns, digits).ok_or(NoRoute::NoPattern)?;
        let pattern = self.pattern_index[found];
        let target = config.route_patterns[pattern].target;
        let calling = calling_node(config, target, phone_node);
        let (trunk, route_list) = match target {
            RouteTarget::Trunk(trunk) => {
                if self.busy(config, trunk) {
                    return Err(NoRoute::AllBusy);
                }
                (trunk, None)
            }
            RouteTarget::RouteList(list) => {
                let groups = config
                    .route_lists
                    .get(list)
                    .map(|l| l.route_groups.clone())
                    .unwrap_or_default();
                let mut found = None;
                for group in groups {
                    let (Some(members), Some(&start)) =
                        (config.route_groups.get(group), self.cursors.get(group))
                    else {
                        continue;
                    };
                    if let Some((position, trunk)) =
                        pick_trunk(members, start, |t| self.busy(config, t))
                    {
                        self.cursors[group] = (position + 1) % members.trunks.len();
                        found = Some(trunk);
                        break;
                    }
                }
                (found.ok_or(NoRoute::AllBusy)?, Some(list))
            }
        };
        let trunk_config = config.trunks.get(trunk).ok_or(NoRoute::AllBusy)?;
        let node = route_local(trunk_config, calling, &mut self.rng);
        Ok(Route {
            pattern,
            route_list,
            trunk,
            phone_node,
            calling_node: calling,
            node,
        })
    }

    /// Holds a routed call and counts it; a call already held under `key` stays as it was.
    pub fn begin(&mut self, key: CallKey, dialled: &str, route: Route) {
        if self.calls.contains_key(&key) {
            return;
        }
        if let Some(count) = self
            .counts
            .get_mut(route.trunk)
            .and_then(|nodes| nodes.get_mut(route.node))
        {
            count.active += 1;
            count.total += 1;
        }
        self.hops_total += u64::from(route.hops());
        self.calls.insert(
            key,
            ActiveCall {
                dialled: dialled.to_owned(),
                route,
            },
        );
    }

    /// The call held under `key`.
    pub fn get(&self, key: &CallKey) -> Option<&ActiveCall> {
        self.calls.get(key)
    }

    /// Ends a call (its DRQ); returns it, or `None` when none is held under `key`.
    pub fn end(&mut self, key: &CallKey) -> Option<ActiveCall> {
        let call = self.calls.remove(key)?;
        if let Some(count) = self
            .counts
            .get_mut(call.route.trunk)
            .and_then(|nodes| nodes.get_mut(call.route.node))
        {
            count.active = count.active.saturating_sub(1);
        }
        Some(call)
    }

    /// Ends every call of an endpoint (it unregistered or expired).
    pub fn end_all_of(&mut self, endpoint: u64) {
        let keys: Vec<CallKey> = keys_of(&self.calls, endpoint).copied().collect();
        for key in keys {
            self.end(&key);
        }
    }

    /// Does an endpoint hold a call?
    pub fn has_calls_of(&self, endpoint: u64) -> bool {
        keys_of(&self.calls, endpoint).next().is_some()
    }

    /// Every call in progress, by endpoint and `callIdentifier`.
    pub fn iter(&self) -> impl Iterator<Item = (&CallKey, &ActiveCall)> {
        self.calls.iter()
    }

    /// Calls in progress.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// No call in progress?
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The count of `trunk` from `node`.
    pub fn count(&self, trunk: TrunkIdx, node: NodeIdx) -> TrunkCount {
        self.counts
            .get(trunk)
            .and_then(|nodes| nodes.get(node))
            .copied()
            .unwrap_or_default()
    }

    /// Intra-cluster hops of every call placed since start.
    pub fn hops_total(&self) -> u64 {
        self.hops_total
    }
}
