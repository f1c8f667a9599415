//! The call-routing sections of the config file (docs/rules.md §10): `[[node]]`, `[[trunk]]`,
//! `[[route_group]]`, `[[route_list]]` and `[[route_pattern]]`, checked in that order, each
//! naming only what the sections before it define.
//!
//! When no `[[node]]` is given, the nodes are the ones the C-LANs name, with no signalling
//! address; an ACF for a trunk call needs the placing node's address, so trunks, route lists
//! and route patterns are then refused.

use std::net::SocketAddr;

use super::address::address;
use super::error::Fault;
use super::file::{NodeFile, RouteGroupFile, RouteListFile, RoutePatternFile, TrunkFile};
use super::model::{
    ActiveOn, Clan, Node, NodeIdx, RouteGroup, RouteList, RoutePattern, RouteTarget, Trunk,
};

/// The checked routing sections.
pub(crate) struct Routing {
    pub nodes: Vec<Node>,
    pub trunks: Vec<Trunk>,
    pub route_groups: Vec<RouteGroup>,
    pub route_lists: Vec<RouteList>,
    pub route_patterns: Vec<RoutePattern>,
}

/// Checks the routing sections against the C-LANs already checked.
pub(crate) fn routing(
    nodes: &[NodeFile],
    trunks: &[TrunkFile],
    groups: &[RouteGroupFile],
    lists: &[RouteListFile],
    patterns: &[RoutePatternFile],
    clans: &[Clan],
) -> Result<Routing, Fault> {
    let nodes = if nodes.is_empty() {
        if let Some(section) = [
            (!trunks.is_empty()).then_some("trunk"),
            (!groups.is_empty()).then_some("route_group"),
            (!lists.is_empty()).then_some("route_list"),
            (!patterns.is_empty()).then_some("route_pattern"),
        ]
        .into_iter()
        .flatten()
        .next()
        {
            return Err(Fault::new(
                section,
                "outbound call routing needs [[node]] entries with a signalling `address`: \
                 an ACF names the address of the node that places the call",
            ));
        }
        implied_nodes(clans)
    } else {
        let nodes = defined_nodes(nodes)?;
        for (i, clan) in clans.iter().enumerate() {
            if !nodes.iter().any(|n| n.name == clan.node) {
                return Err(Fault::new(
                    format!("clan[{i}].node"),
                    format!(
                        "node {:?} is not defined ({})",
                        clan.node,
                        listing(nodes.iter().map(|n| n.name.as_str()), "[[node]]")
                    ),
                ));
            }
        }
        nodes
    };
    let trunks = check_trunks(trunks, &nodes)?;
    let route_groups = check_groups(groups, &trunks)?;
    let route_lists = check_lists(lists, &route_groups, &nodes)?;
    let route_patterns = check_patterns(patterns, &trunks, &route_lists)?;
    Ok(Routing {
        nodes,
        trunks,
        route_groups,
        route_lists,
        route_patterns,
    })
}

/// `"names: a, b"`, or `"no [[section]] is configured"`.
fn listing<'a>(names: impl Iterator<Item = &'a str>, section: &str) -> String {
    let names: Vec<String> = names.take(20).map(|n| format!("{n:?}")).collect();
    if names.is_empty() {
        format!("no {section} is configured")
    } else {
        format!("defined: {}", names.join(", "))
    }
}

/// The nodes the C-LANs name, in order of first mention, numbered from 1.
fn implied_nodes(clans: &[Clan]) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::new();
    for clan in clans {
        if !nodes.iter().any(|n| n.name == clan.node) {
            nodes.push(Node {
                name: clan.node.clone(),
                id: u32::try_from(nodes.len() + 1).unwrap_or(u32::MAX),
                address: None,
            });
        }
    }
    nodes
}

fn defined_nodes(entries: &[NodeFile]) -> Result<Vec<Node>, Fault> {
    let mut nodes: Vec<Node> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |key: &str| format!("node[{i}].{key}");
        unique_name(
            &field("name"),
            &entry.name,
            "node",
            nodes.iter().map(|n| &n.name),
        )?;
        let id = u32::try_from(entry.id)
            .ok()
            .filter(|&id| id >= 1)
            .ok_or_else(|| {
                Fault::new(
                    field("id"),
                    format!("{} is not a node id (1..={})", entry.id, u32::MAX),
                )
            })?;
        if let Some(first) = nodes.iter().position(|n| n.id == id) {
            return Err(Fault::new(
                field("id"),
                format!("node id {id} is already the id of node[{first}]"),
            ));
        }
        let address = signalling_address(&field("address"), &entry.address, "a node")?;
        if let Some(first) = nodes.iter().position(|n| n.address == Some(address)) {
            return Err(Fault::new(
                field("address"),
                format!("{address} is already the address of node[{first}]"),
            ));
        }
        nodes.push(Node {
            name: entry.name.clone(),
            id,
            address: Some(address),
        });
    }
    Ok(nodes)
}

/// An address that goes on the wire: parsed, not a wildcard, not port 0.
fn signalling_address(field: &str, text: &str, what: &str) -> Result<SocketAddr, Fault> {
    let address = address(field, text)?;
    if address.ip().is_unspecified() || address.port() == 0 {
        return Err(Fault::new(
            field,
            format!(
                "{address} is not an address calls can be sent to; {what}'s address needs a \
                 real IP and port (H.225.0 call signalling is 1720)"
            ),
        ));
    }
    Ok(address)
}

fn unique_name<'a>(
    field: &str,
    name: &str,
    what: &str,
    mut taken: impl Iterator<Item = &'a String>,
) -> Result<(), Fault> {
    if name.is_empty() {
        return Err(Fault::new(
            field,
            format!("is empty; a {what} needs a name"),
        ));
    }
    if taken.any(|n| n == name) {
        return Err(Fault::new(
            field,
            format!("{name:?} is already the name of another {what}"),
        ));
    }
    Ok(())
}

/// `nodes` / `run_on_all_nodes` of a trunk or route list: exactly one of them.
fn active_on(
    field: impl Fn(&str) -> String,
    nodes: Option<&[String]>,
    run_on_all_nodes: bool,
    known: &[Node],
) -> Result<ActiveOn, Fault> {
    match (nodes, run_on_all_nodes) {
        (Some(_), true) => Err(Fault::new(
            field("run_on_all_nodes"),
            "is true and `nodes` is given too; give one of them (run on all nodes \
             overrides the node group, so `nodes` would mean nothing)",
        )),
        (None, true) => Ok(ActiveOn::AllNodes),
        (None, false) | (Some([]), false) => Err(Fault::new(
            field("nodes"),
            "no node is given; list the nodes it is active on, or set run_on_all_nodes = true",
        )),
        (Some(names), false) => {
            let mut resolved: Vec<NodeIdx> = Vec::with_capacity(names.len());
            for (n, name) in names.iter().enumerate() {
                let idx = known
                    .iter()
                    .position(|node| &node.name == name)
                    .ok_or_else(|| {
                        Fault::new(
                            field(&format!("nodes[{n}]")),
                            format!(
                                "node {name:?} is not defined ({})",
                                listing(known.iter().map(|n| n.name.as_str()), "[[node]]")
                            ),
                        )
                    })?;
                if resolved.contains(&idx) {
                    return Err(Fault::new(
                        field(&format!("nodes[{n}]")),
                        format!("node {name:?} is listed twice"),
                    ));
                }
                resolved.push(idx);
            }
            Ok(ActiveOn::Nodes(resolved))
        }
    }
}

fn check_trunks(entries: &[TrunkFile], nodes: &[Node]) -> Result<Vec<Trunk>, Fault> {
    let mut trunks: Vec<Trunk> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |key: &str| format!("trunk[{i}].{key}");
        unique_name(
            &field("name"),
            &entry.name,
            "trunk",
            trunks.iter().map(|t| &t.name),
        )?;
        let active_on = active_on(field, entry.nodes.as_deref(), entry.run_on_all_nodes, nodes)?;
        let address = signalling_address(&field("address"), &entry.address, "a trunk")?;
        if entry.max_calls == Some(0) {
            return Err(Fault::new(
                field("max_calls"),
                "must be at least 1; leave it out for no limit",
            ));
        }
        trunks.push(Trunk {
            name: entry.name.clone(),
            kind: entry.kind,
            active_on,
            address,
            max_calls: entry.max_calls,
        });
    }
    Ok(trunks)
}

/// Resolves a list of names against `known`: each defined, each once, at least one.
fn members(
    field: &str,
    names: &[String],
    what: &str,
    known: &[&str],
    section: &str,
) -> Result<Vec<usize>, Fault> {
    if names.is_empty() {
        return Err(Fault::new(
            field,
            format!("is empty; it needs at least one {what}"),
        ));
    }
    let mut resolved: Vec<usize> = Vec::with_capacity(names.len());
    for (n, name) in names.iter().enumerate() {
        let idx = known.iter().position(|k| k == name).ok_or_else(|| {
            Fault::new(
                format!("{field}[{n}]"),
                format!(
                    "{what} {name:?} is not defined ({})",
                    listing(known.iter().copied(), section)
                ),
            )
        })?;
        if resolved.contains(&idx) {
            return Err(Fault::new(
                format!("{field}[{n}]"),
                format!("{what} {name:?} is listed twice"),
            ));
        }
        resolved.push(idx);
    }
    Ok(resolved)
}

fn check_groups(entries: &[RouteGroupFile], trunks: &[Trunk]) -> Result<Vec<RouteGroup>, Fault> {
    let known: Vec<&str> = trunks.iter().map(|t| t.name.as_str()).collect();
    let mut groups: Vec<RouteGroup> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |key: &str| format!("route_group[{i}].{key}");
        unique_name(
            &field("name"),
            &entry.name,
            "route group",
            groups.iter().map(|g| &g.name),
        )?;
        let trunks = members(
            &field("trunks"),
            &entry.trunks,
            "trunk",
            &known,
            "[[trunk]]",
        )?;
        groups.push(RouteGroup {
            name: entry.name.clone(),
            trunks,
            distribution: entry.distribution,
        });
    }
    Ok(groups)
}

fn check_lists(
    entries: &[RouteListFile],
    groups: &[RouteGroup],
    nodes: &[Node],
) -> Result<Vec<RouteList>, Fault> {
    let known: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
    let mut lists: Vec<RouteList> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |key: &str| format!("route_list[{i}].{key}");
        unique_name(
            &field("name"),
            &entry.name,
            "route list",
            lists.iter().map(|l| &l.name),
        )?;
        let route_groups = members(
            &field("route_groups"),
            &entry.route_groups,
            "route group",
            &known,
            "[[route_group]]",
        )?;
        let active_on = active_on(field, entry.nodes.as_deref(), entry.run_on_all_nodes, nodes)?;
        lists.push(RouteList {
            name: entry.name.clone(),
            route_groups,
            active_on,
        });
    }
    Ok(lists)
}

fn check_patterns(
    entries: &[RoutePatternFile],
    trunks: &[Trunk],
    lists: &[RouteList],
) -> Result<Vec<RoutePattern>, Fault> {
    let mut patterns: Vec<RoutePattern> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |key: &str| format!("route_pattern[{i}].{key}");
        crate::calls::DigitPattern::parse(&entry.pattern)
            .map_err(|reason| Fault::new(field("pattern"), reason))?;
        if let Some(first) = patterns.iter().position(|p| p.pattern == entry.pattern) {
            return Err(Fault::new(
                field("pattern"),
                format!(
                    "{:?} is already the pattern of route_pattern[{first}]",
                    entry.pattern
                ),
            ));
        }
        let target = match (&entry.trunk, &entry.route_list) {
            (Some(trunk), None) => {
                let known: Vec<&str> = trunks.iter().map(|t| t.name.as_str()).collect();
                let idx = known.iter().position(|k| k == trunk).ok_or_else(|| {
                    Fault::new(
                        field("trunk"),
                        format!(
                            "trunk {trunk:?} is not defined ({})",
                            listing(known.iter().copied(), "[[trunk]]")
                        ),
                    )
                })?;
                RouteTarget::Trunk(idx)
            }
            (None, Some(list)) => {
                let known: Vec<&str> = lists.iter().map(|l| l.name.as_str()).collect();
                let idx = known.iter().position(|k| k == list).ok_or_else(|| {
                    Fault::new(
                        field("route_list"),
                        format!(
                            "route list {list:?} is not defined ({})",
                            listing(known.iter().copied(), "[[route_list]]")
                        ),
                    )
                })?;
                RouteTarget::RouteList(idx)
            }
            _ => {
                return Err(Fault::new(
                    format!("route_pattern[{i}]"),
                    "needs exactly one of `trunk` or `route_list`",
                ))
            }
        };
        patterns.push(RoutePattern {
            pattern: entry.pattern.clone(),
            target,
        });
    }
    Ok(patterns)
}
