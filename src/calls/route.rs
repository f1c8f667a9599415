//! Which trunk and which node: the calling node, route-group distribution and the
//! route-local rule, as pure functions of the configuration and a random generator.

use rand::Rng;

use crate::config::{
    ActiveOn, Config, Distribution, NodeIdx, RouteGroup, RouteListIdx, RouteTarget, Trunk, TrunkIdx,
};

/// Where one call goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The route pattern that matched (index in the configuration).
    pub pattern: usize,
    /// The route list it went through, if any.
    pub route_list: Option<RouteListIdx>,
    /// The trunk chosen.
    pub trunk: TrunkIdx,
    /// The phone's node.
    pub phone_node: NodeIdx,
    /// The calling side's node: the phone's for a trunk, the route list's otherwise.
    pub calling_node: NodeIdx,
    /// The node that places the call on the trunk.
    pub node: NodeIdx,
}

impl Route {
    /// Intra-cluster hops: phone node to route-list node, and calling node to placing node.
    pub fn hops(&self) -> u32 {
        let to_list = self.route_list.is_some() && self.phone_node != self.calling_node;
        u32::from(to_list) + u32::from(self.calling_node != self.node)
    }
}

/// The calling side's node: the phone's when the pattern points at a trunk; a route list's
/// first node otherwise, or the phone's when the route list runs on all nodes.
pub fn calling_node(config: &Config, target: RouteTarget, phone_node: NodeIdx) -> NodeIdx {
    match target {
        RouteTarget::Trunk(_) => phone_node,
        RouteTarget::RouteList(list) => match config.route_lists.get(list).map(|l| &l.active_on) {
            Some(ActiveOn::Nodes(nodes)) => nodes.first().copied().unwrap_or(phone_node),
            Some(ActiveOn::AllNodes) | None => phone_node,
        },
    }
}

/// Route local: the calling node when the trunk is active there (or on all nodes); else a
/// node the trunk is active on, uniformly at random.
pub fn route_local(trunk: &Trunk, calling: NodeIdx, rng: &mut impl Rng) -> NodeIdx {
    match &trunk.active_on {
        ActiveOn::AllNodes => calling,
        ActiveOn::Nodes(nodes) if nodes.contains(&calling) || nodes.is_empty() => calling,
        ActiveOn::Nodes(nodes) => nodes[rng.random_range(0..nodes.len())],
    }
}

/// The trunk a route group gives, as (position in the group, trunk): top-down tries from the
/// first trunk, circular from position `start`; the first one not `busy` wins.
pub fn pick_trunk(
    group: &RouteGroup,
    start: usize,
    busy: impl Fn(TrunkIdx) -> bool,
) -> Option<(usize, TrunkIdx)> {
    let len = group.trunks.len();
    if len == 0 {
        return None;
    }
    let first = match group.distribution {
        Distribution::TopDown => 0,
        Distribution::Circular => start % len,
    };
    (0..len)
        .map(|step| (first + step) % len)
        .map(|position| (position, group.trunks[position]))
        .find(|&(_, trunk)| !busy(trunk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{RouteGroup, TrunkKind};
    use rand::SeedableRng;

    fn trunk(active_on: ActiveOn) -> Trunk {
        Trunk {
            name: "t".into(),
            kind: TrunkKind::Sip,
            active_on,
            address: "127.0.9.1:5060".parse().unwrap(),
            max_calls: None,
        }
    }

    #[test]
    fn route_local_prefers_the_calling_node() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        assert_eq!(
            route_local(&trunk(ActiveOn::Nodes(vec![0, 3])), 0, &mut rng),
            0
        );
        assert_eq!(route_local(&trunk(ActiveOn::AllNodes), 2, &mut rng), 2);
        for _ in 0..50 {
            let node = route_local(&trunk(ActiveOn::Nodes(vec![0, 3])), 1, &mut rng);
            assert!(node == 0 || node == 3);
        }
    }

    #[test]
    fn distribution() {
        let group = |distribution| RouteGroup {
            name: "g".into(),
            trunks: vec![5, 6, 7],
            distribution,
        };
        let top = group(Distribution::TopDown);
        assert_eq!(pick_trunk(&top, 2, |_| false), Some((0, 5)));
        assert_eq!(pick_trunk(&top, 0, |t| t == 5), Some((1, 6)));
        let circ = group(Distribution::Circular);
        assert_eq!(pick_trunk(&circ, 2, |_| false), Some((2, 7)));
        assert_eq!(pick_trunk(&circ, 2, |t| t == 7), Some((0, 5)));
        assert_eq!(pick_trunk(&circ, 1, |_| true), None);
    }
}
