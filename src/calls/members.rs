//! H.323 gateways registered by RRQ as trunk members (a voice gateway, or a GnuGk
//! neighbour registering as a gateway): their `supportedPrefixes` are route patterns, and the
//! calls routed to them are counted as on any trunk (docs/rules.md §10).
//!
//! A member announcing prefix `P` stands for the route pattern `P!` (`P` and one or more
//! digits). Such patterns take part in digit analysis beside the configured ones, ranked as
//! any pattern ([`super::pattern`]: the most literal characters win), configured patterns
//! first on a tie; [`best`](TrunkMembers::best) gives the rank for the caller to compare. All
//! members announcing the same prefix form one route group with circular distribution, in
//! the order they registered. The pattern points at the group directly, so the calling side
//! is the phone's node; a member is active on the node of the C-LAN it registered at, so the
//! route-local rule places the call there (*assumption*: CUCM puts a gateway in a device
//! pool's node group; a gateway registered through a C-LAN is the node's).
//!
//! Pure bookkeeping, like [`super::book`]: no I/O, no clock.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::book::{keys_of, CallKey, TrunkCount, MAX_CALLS};
use super::pattern::{DigitPattern, Specificity};
use crate::config::NodeIdx;

/// One registered gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// What `/api/trunks` names it: its first alias, or its endpoint identifier.
    pub name: String,
    /// Where calls to it go (its first `callSignalAddress`): the ACF names it.
    pub address: SocketAddr,
    /// The node it is active on.
    pub node: NodeIdx,
    /// Its `supportedPrefixes` that are route-pattern literals (digits, `*`, `#`), in order.
    pub prefixes: Vec<String>,
    /// Calls placed to it per node of the cluster.
    per_node: Vec<TrunkCount>,
}

impl Member {
    /// A member with no calls yet, of a cluster of `nodes` nodes. Prefixes that are not
    /// made of digits, `*` and `#` (nothing a dialled number can start with) are left out.
    pub fn new(
        name: String,
        address: SocketAddr,
        node: NodeIdx,
        prefixes: impl IntoIterator<Item = String>,
        nodes: usize,
    ) -> Member {
        let prefixes = prefixes
            .into_iter()
            .filter(|prefix| pattern_of(prefix).is_some())
            .collect();
        Member {
            name,
            address,
            node,
            prefixes,
            per_node: vec![TrunkCount::default(); nodes],
        }
    }

    /// Calls to it in progress.
    pub fn active(&self) -> u32 {
        self.per_node.iter().map(|count| count.active).sum()
    }

    /// Its calls from each node of the cluster.
    pub fn per_node(&self) -> &[TrunkCount] {
        &self.per_node
    }
}

/// The route pattern a prefix stands for, `P!`; `None` for a prefix that is none.
fn pattern_of(prefix: &str) -> Option<DigitPattern> {
    let literal = !prefix.is_empty()
        && prefix
            .chars()
            .all(|c| c.is_ascii_digit() || c == '*' || c == '#');
    literal
        .then(|| DigitPattern::parse(&format!("{prefix}!")).ok())
        .flatten()
}

/// A call routed to a member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberCall {
    /// The member's registry key.
    pub gateway: u64,
    /// The digits dialled.
    pub dialled: String,
    /// The prefix that matched.
    pub prefix: String,
    /// The calling phone's node (the calling side).
    pub phone_node: NodeIdx,
    /// The node that places it: the member's.
    pub node: NodeIdx,
}

impl MemberCall {
    /// Intra-cluster hops: calling node to placing node.
    pub fn hops(&self) -> u32 {
        u32::from(self.phone_node != self.node)
    }
}

/// The registered gateways and the calls routed to them.
#[derive(Debug, Clone, Default)]
pub struct TrunkMembers {
    members: BTreeMap<u64, Member>,
    calls: BTreeMap<CallKey, MemberCall>,
    /// Per prefix: the position in its group a call starts from next (circular).
    cursors: BTreeMap<String, usize>,
    hops_total: u64,
}

impl TrunkMembers {
    /// A gateway registered as `key` (again: replacing what it announced before).
    pub fn join(&mut self, key: u64, member: Member) {
        self.members.insert(key, member);
    }

    /// A gateway's registration ended: it is no member any more, and the calls routed to it
    /// end.
    pub fn leave(&mut self, key: u64) {
        if self.members.remove(&key).is_none() {
            return;
        }
        self.calls.retain(|_, call| call.gateway != key);
    }

    /// The member registered as `key`.
    pub fn get(&self, key: u64) -> Option<&Member> {
        self.members.get(&key)
    }

    /// Every member with its key, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Member)> {
        self.members.iter().map(|(&key, member)| (key, member))
    }

    /// The rank of the most specific member pattern matching `digits`, if any.
    pub fn best(&self, digits: &str) -> Option<Specificity> {
        self.matching(digits).map(|(_, rank)| rank)
    }

    /// The most specific prefix matching `digits`, and its rank.
    fn matching(&self, digits: &str) -> Option<(&str, Specificity)> {
        let mut best: Option<(&str, Specificity)> = None;
        for member in self.members.values() {
            for prefix in &member.prefixes {
                let Some(pattern) = pattern_of(prefix) else {
                    continue;
                };
                let rank = pattern.specificity();
                if pattern.matches(digits) && best.is_none_or(|(_, b)| rank > b) {
                    best = Some((prefix, rank));
                }
            }
        }
        best
    }

    /// Routes `digits` from a phone on `phone_node` to the next member of the group of the
    /// most specific matching prefix (circular, in key order, so in registration order),
    /// and holds the call under `key`. `None`: no member prefix matches, or too many calls
    /// are held already.
    pub fn route(
        &mut self,
        key: CallKey,
        digits: &str,
        phone_node: NodeIdx,
    ) -> Option<(u64, &MemberCall)> {
        if self.calls.len() >= MAX_CALLS {
            return None;
        }
        let prefix = self.matching(digits)?.0.to_string();
        let group: Vec<u64> = self
            .members
            .iter()
            .filter(|(_, member)| member.prefixes.contains(&prefix))
            .map(|(&key, _)| key)
            .collect();
        let cursor = self.cursors.entry(prefix.clone()).or_default();
        let gateway = group[*cursor % group.len()];
        *cursor = (*cursor + 1) % group.len();
        let member = self.members.get_mut(&gateway)?;
        let call = MemberCall {
            gateway,
            dialled: digits.to_string(),
            prefix,
            phone_node,
            node: member.node,
        };
        if let Some(count) = member.per_node.get_mut(call.node) {
            count.active += 1;
            count.total += 1;
        }
        self.hops_total += u64::from(call.hops());
        self.calls.insert(key, call);
        self.calls.get(&key).map(|call| (gateway, call))
    }

    /// The call held under `key`.
    pub fn call(&self, key: &CallKey) -> Option<&MemberCall> {
        self.calls.get(key)
    }

    /// Ends a call (its DRQ); whether one was held under `key`.
    pub fn end(&mut self, key: &CallKey) -> bool {
        let Some(call) = self.calls.remove(key) else {
            return false;
        };
        if let Some(count) = self
            .members
            .get_mut(&call.gateway)
            .and_then(|member| member.per_node.get_mut(call.node))
        {
            count.active = count.active.saturating_sub(1);
        }
        true
    }

    /// Ends every call an endpoint placed (it unregistered or expired).
    pub fn end_all_of(&mut self, endpoint: u64) {
        let keys: Vec<CallKey> = keys_of(&self.calls, endpoint).copied().collect();
        for key in keys {
            self.end(&key);
        }
    }

    /// Does an endpoint hold a call routed to a member?
    pub fn has_calls_of(&self, endpoint: u64) -> bool {
        keys_of(&self.calls, endpoint).next().is_some()
    }

    /// Every call routed to a member, by calling endpoint and `callIdentifier`.
    pub fn calls(&self) -> impl Iterator<Item = (&CallKey, &MemberCall)> {
        self.calls.iter()
    }

    /// Intra-cluster hops of every call routed to a member since start.
    pub fn hops_total(&self) -> u64 {
        self.hops_total
    }

    /// Takes over from `old` (a reload, the nodes unchanged) the counts of the members that
    /// are still members, the calls to them whose caller `still_registered`, the cursors
    /// and the hops.
    pub fn carry_from(&mut self, old: TrunkMembers, still_registered: impl Fn(u64) -> bool) {
        for (key, member) in &mut self.members {
            if let Some(before) = old.members.get(key) {
                member.per_node.clone_from(&before.per_node);
                for count in &mut member.per_node {
                    count.active = 0;
                }
            }
        }
        for (key, call) in old.calls {
            if self.members.contains_key(&call.gateway) && still_registered(key.0) {
                if let Some(count) = self
                    .members
                    .get_mut(&call.gateway)
                    .and_then(|member| member.per_node.get_mut(call.node))
                {
                    count.active += 1;
                }
                self.calls.insert(key, call);
            }
        }
        self.cursors = old.cursors;
        self.hops_total = old.hops_total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, node: NodeIdx, prefixes: &[&str]) -> Member {
        let address = "127.0.9.1:1720".parse().unwrap();
        Member::new(
            name.into(),
            address,
            node,
            prefixes.iter().map(|p| p.to_string()),
            2,
        )
    }

    #[test]
    fn the_most_specific_prefix_wins_and_a_group_takes_turns() {
        let mut members = TrunkMembers::default();
        members.join(1, member("gw-a", 0, &["9", "0049"]));
        members.join(2, member("gw-b", 1, &["9", "x1", ""]));
        members.join(3, member("gw-c", 1, &["91"]));
        assert_eq!(
            members.get(2).unwrap().prefixes,
            ["9"],
            "not literals: left out"
        );
        assert_eq!(members.best("9"), None, "a prefix needs one more digit");
        assert_eq!(members.best("8123"), None);
        assert_eq!(members.best("9123"), Some((2, false, 0)));
        assert_eq!(members.best("9923"), Some((1, false, 0)));
        // 91…: gw-c alone.
        let (gateway, call) = members.route((7, [1; 16]), "9123", 0).unwrap();
        assert_eq!((gateway, call.node, call.hops()), (3, 1, 1));
        // 9…: gw-a, gw-b, gw-a in turn.
        let turns: Vec<u64> = (2..5u8)
            .map(|n| members.route((7, [n; 16]), "9923", 0).unwrap().0)
            .collect();
        assert_eq!(turns, [1, 2, 1]);
        assert_eq!(members.get(1).unwrap().active(), 2);
        assert_eq!(members.hops_total(), 2);
        assert!(members.end(&(7, [2; 16])));
        assert!(!members.end(&(7, [2; 16])));
        assert_eq!(members.get(1).unwrap().active(), 1);
        assert_eq!(members.get(1).unwrap().per_node()[0].total, 2);
        // A member leaving ends the calls to it; a caller leaving ends its calls.
        members.leave(3);
        assert!(members.call(&(7, [1; 16])).is_none());
        members.end_all_of(7);
        assert_eq!(members.calls().count(), 0);
        assert_eq!(members.get(1).unwrap().active(), 0);
    }
}
