//! What the admin port shows of outbound trunk calls (docs/rules.md §10): the calls in progress
//! (`/api/calls`) and each trunk's calls per node (`/api/trunks`) — the configured trunks,
//! then the H.323 gateways registered as trunk members, with their prefixes.

use std::net::SocketAddr;

use super::{registry, Gatekeeper};
use crate::config::{ActiveOn, TrunkKind};

/// One call in progress (`GET /api/calls`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallView {
    /// The calling endpoint's `endpointIdentifier`.
    pub endpoint_id: String,
    /// Its `callIdentifier`, 32 hex digits.
    pub call_id: String,
    /// The digits dialled.
    pub dialled: String,
    /// The route pattern that matched.
    pub pattern: String,
    /// The route list it went through, if any.
    pub route_list: Option<String>,
    /// The trunk it leaves on.
    pub trunk: String,
    /// The phone's node.
    pub phone_node: String,
    /// The calling side's node (the phone's, or the route list's).
    pub calling_node: String,
    /// The node that places it on the trunk (the ACF's `destCallSignalAddress`).
    pub node: String,
    /// Intra-cluster hops.
    pub hops: u32,
}

/// Calls on one trunk from one node.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TrunkNodeView {
    /// The node.
    pub node: String,
    /// Calls in progress.
    pub active: u32,
    /// Calls placed since start.
    pub total: u64,
}

/// One trunk (`GET /api/trunks`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TrunkView {
    /// Its name.
    pub name: String,
    /// `sip` or `h323`.
    pub kind: TrunkKind,
    /// Its far end.
    pub address: SocketAddr,
    /// The nodes it is active on (every node when `run_on_all_nodes`).
    pub nodes: Vec<String>,
    /// `run_on_all_nodes`.
    pub run_on_all_nodes: bool,
    /// Calls at once, or `None` for no limit.
    pub max_calls: Option<u32>,
    /// Calls in progress.
    pub active: u32,
    /// Per node of the cluster, in configuration order.
    pub per_node: Vec<TrunkNodeView>,
    /// A gateway registered by RRQ: its `endpointIdentifier` (`None`: a configured trunk).
    #[serde(default)]
    pub endpoint_id: Option<String>,
    /// A registered gateway's `supportedPrefixes`: each `P` routes the numbers `P!`.
    #[serde(default)]
    pub prefixes: Vec<String>,
}

impl Gatekeeper {
    /// Every call in progress, by endpoint and `callIdentifier`: through configured trunks,
    /// then to registered gateways.
    pub fn calls(&self) -> Vec<CallView> {
        let node = |idx: usize| {
            self.config
                .nodes
                .get(idx)
                .map_or_else(String::new, |node| node.name.clone())
        };
        let mut calls: Vec<CallView> = self
            .calls
            .iter()
            .map(|(&(endpoint, call_id), call)| {
                let route = call.route;
                CallView {
                    endpoint_id: registry::endpoint_id_text(endpoint),
                    call_id: call_id.iter().map(|b| format!("{b:02x}")).collect(),
                    dialled: call.dialled.clone(),
                    pattern: self.config.route_patterns[route.pattern].pattern.clone(),
                    route_list: route
                        .route_list
                        .map(|l| self.config.route_lists[l].name.clone()),
                    trunk: self.config.trunks[route.trunk].name.clone(),
                    phone_node: node(route.phone_node),
                    calling_node: node(route.calling_node),
                    node: node(route.node),
                    hops: route.hops(),
                }
            })
            .collect();
        calls.extend(
            self.trunk_members
                .calls()
                .map(|(&(endpoint, call_id), call)| CallView {
                    endpoint_id: registry::endpoint_id_text(endpoint),
                    call_id: call_id.iter().map(|b| format!("{b:02x}")).collect(),
                    dialled: call.dialled.clone(),
                    pattern: format!("{}!", call.prefix),
                    route_list: None,
                    trunk: self
                        .trunk_members
                        .get(call.gateway)
                        .map_or_else(String::new, |member| member.name.clone()),
                    phone_node: node(call.phone_node),
                    calling_node: node(call.phone_node),
                    node: node(call.node),
                    hops: call.hops(),
                }),
        );
        calls
    }

    /// Every trunk with its calls per node: the configured ones, then the registered
    /// gateways in registration order.
    pub fn trunks(&self) -> Vec<TrunkView> {
        let mut trunks = self.configured_trunks();
        let per_node = |counts: &[crate::calls::TrunkCount]| {
            self.config
                .nodes
                .iter()
                .zip(counts)
                .map(|(node, count)| TrunkNodeView {
                    node: node.name.clone(),
                    active: count.active,
                    total: count.total,
                })
                .collect()
        };
        trunks.extend(self.trunk_members.iter().map(|(key, member)| {
            TrunkView {
                name: member.name.clone(),
                kind: TrunkKind::H323,
                address: member.address,
                nodes: self
                    .config
                    .nodes
                    .get(member.node)
                    .map(|node| node.name.clone())
                    .into_iter()
                    .collect(),
                run_on_all_nodes: false,
                max_calls: None,
                active: member.active(),
                per_node: per_node(member.per_node()),
                endpoint_id: Some(registry::endpoint_id_text(key)),
                prefixes: member.prefixes.clone(),
            }
        }));
        trunks
    }

    fn configured_trunks(&self) -> Vec<TrunkView> {
        self.config
            .trunks
            .iter()
            .enumerate()
            .map(|(t, trunk)| {
                let nodes = match &trunk.active_on {
                    ActiveOn::Nodes(nodes) => nodes.clone(),
                    ActiveOn::AllNodes => (0..self.config.nodes.len()).collect(),
                };
                TrunkView {
                    name: trunk.name.clone(),
                    kind: trunk.kind,
                    address: trunk.address,
                    nodes: nodes
                        .iter()
                        .map(|&n| self.config.nodes[n].name.clone())
                        .collect(),
                    run_on_all_nodes: trunk.active_on == ActiveOn::AllNodes,
                    max_calls: trunk.max_calls,
                    active: self.calls.active_on_trunk(t),
                    per_node: self
                        .config
                        .nodes
                        .iter()
                        .enumerate()
                        .map(|(n, node)| {
                            let count = self.calls.count(t, n);
                            TrunkNodeView {
                                node: node.name.clone(),
                                active: count.active,
                                total: count.total,
                            }
                        })
                        .collect(),
                    endpoint_id: None,
                    prefixes: Vec::new(),
                }
            })
            .collect()
    }

    /// Intra-cluster hops of every trunk call placed since start (registered gateways'
    /// included).
    pub fn call_hops_total(&self) -> u64 {
        self.calls.hops_total() + self.trunk_members.hops_total()
    }
}
