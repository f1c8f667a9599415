//! What the admin port shows of calls: outbound trunk calls (docs/rules.md §10) and routed
//! calls between registered phones (docs/rules.md §8.7) in progress (`/api/calls`), and each
//! trunk's calls per node (`/api/trunks`) — the configured trunks, then the H.323 gateways
//! registered as trunk members, with their prefixes.

use std::net::SocketAddr;
use std::time::Instant;

use super::relay::CallState;
use super::signalling::ConnectionId;
use super::{registry, Gatekeeper};
use crate::config::{ActiveOn, TrunkKind};

/// One entry of `GET /api/calls`: a trunk call or a routed call, told apart by `kind`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CallEntry {
    /// An outbound call through a trunk (docs/rules.md §10).
    Trunk(CallView),
    /// A call between registered phones whose signalling the gatekeeper relays
    /// (docs/rules.md §8.7).
    Routed(RoutedCallView),
}

/// One leg of a routed call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LegView {
    /// The C-LAN of its connection (for a callee leg not up yet, the C-LAN it is set up
    /// on).
    pub clan: String,
    /// Its connection (`None`: the callee's connection is being set up).
    pub connection: Option<ConnectionId>,
    /// Its call reference value on that connection.
    pub call_reference: Option<u16>,
}

/// A routed call in progress.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RoutedCallView {
    /// Its number (events name calls by it).
    pub call: u64,
    /// Its `callIdentifier`, 32 hex digits.
    pub call_id: String,
    /// The caller's `endpointIdentifier`.
    pub caller: String,
    /// The caller's first alias, if any.
    pub caller_alias: Option<String>,
    /// The callee's `endpointIdentifier`.
    pub callee: String,
    /// The callee's first alias, if any.
    pub callee_alias: Option<String>,
    /// The caller's leg.
    pub caller_leg: LegView,
    /// The callee's leg.
    pub callee_leg: LegView,
    /// `setup`, `proceeding`, `alerting` or `connected`.
    pub state: CallState,
    /// From the Setup to the Connect, milliseconds (once answered).
    pub setup_to_connect_ms: Option<f64>,
    /// Since the Setup, seconds.
    pub age_s: f64,
    /// Since the Connect, seconds (once answered).
    pub duration_s: Option<f64>,
}

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

    /// What `/api/calls` lists as of `now`: the trunk calls, then the routed calls.
    pub fn call_entries(&self, now: Instant) -> Vec<CallEntry> {
        let trunk = self.calls().into_iter().map(CallEntry::Trunk);
        let routed = self.routed_calls(now).into_iter().map(CallEntry::Routed);
        trunk.chain(routed).collect()
    }

    /// Every routed call in progress (docs/rules.md §8.7), oldest first, as of `now`.
    pub fn routed_calls(&self, now: Instant) -> Vec<RoutedCallView> {
        let name = |idx: usize| {
            self.config
                .clans
                .get(idx)
                .map_or_else(String::new, |clan| clan.name.clone())
        };
        let alias = |key: u64| {
            self.registry
                .get(key)
                .and_then(|r| r.aliases.first())
                .map(|alias| alias.to_string())
        };
        let mut calls: Vec<_> = self.relay.calls.iter().collect();
        calls.sort_unstable_by_key(|(no, _)| **no);
        calls
            .into_iter()
            .map(|(no, call)| RoutedCallView {
                call: no.0,
                call_id: call
                    .call_identifier
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
                caller: registry::endpoint_id_text(call.caller),
                caller_alias: alias(call.caller),
                callee: registry::endpoint_id_text(call.callee),
                callee_alias: alias(call.callee),
                caller_leg: LegView {
                    clan: name(call.caller_leg.clan),
                    connection: Some(call.caller_leg.connection),
                    call_reference: Some(call.caller_leg.crv),
                },
                callee_leg: LegView {
                    clan: name(call.callee_leg.map_or(call.callee_clan, |l| l.clan)),
                    connection: call.callee_leg.map(|l| l.connection),
                    call_reference: call.callee_leg.map(|l| l.crv),
                },
                state: call.state,
                setup_to_connect_ms: call
                    .connected_at
                    .map(|at| at.saturating_duration_since(call.setup_at).as_secs_f64() * 1e3),
                age_s: now.saturating_duration_since(call.setup_at).as_secs_f64(),
                duration_s: call
                    .connected_at
                    .map(|at| now.saturating_duration_since(at).as_secs_f64()),
            })
            .collect()
    }

    /// Routed calls in progress.
    pub fn routed_calls_active(&self) -> usize {
        self.relay.calls.len()
    }

    /// Routed calls in progress with a leg on each C-LAN (a call with both legs on one
    /// C-LAN counted once), in configuration order.
    pub fn routed_calls_per_clan(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.config.clans.len()];
        for call in self.relay.calls.values() {
            let callee = call.callee_leg.map_or(call.callee_clan, |l| l.clan);
            counts[call.caller_leg.clan] += 1;
            if callee != call.caller_leg.clan {
                counts[callee] += 1;
            }
        }
        counts
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
