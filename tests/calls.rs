//! Outbound trunk calls (docs/rules.md §10) in virtual time: phones registered at C-LANs on
//! cluster nodes send ARQs for dialled numbers; the ACF names the node that places the call.
//! The three use cases of Cisco's document on CUCM node selection, the random spread among
//! remote nodes, "run on all nodes", route-group distribution, ARJ and DRQ.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Instant;

use rasgk::config;
use rasgk::gatekeeper::{Gatekeeper, TrunkView};
use rasgk::phone::{Answer, Phone};
use rasgk::ras::request::{self, Arq, Call};
use rasgk::ras::{self, Alias, RasMessage};

const DISCOVERY: &str = "127.0.0.1:1719";

fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap()
}

/// The signalling address of node `n` in these tests.
fn node_address(n: u8) -> SocketAddr {
    SocketAddr::from(([127, 0, 100, n], 1720))
}

/// Four nodes cm1..cm4; region r (127.r.0.0/16) has one C-LAN, on node cm<r>, for r in
/// `regions`. `routing` is appended.
fn topology(regions: &[u8], routing: &str) -> String {
    let mut text = String::from("[gatekeeper]\nseed = 11\n");
    for n in 1..=4u8 {
        text += &format!(
            "[[node]]\nname = \"cm{n}\"\nid = {n}\naddress = \"{}\"\n",
            node_address(n)
        );
    }
    for &r in regions {
        text += &format!(
            "[[region]]\nid = {r}\nnetworks = [\"127.{r}.0.0/16\"]\n\
             [[clan]]\nname = \"clan-{r}\"\nregion = {r}\naddress = \"127.0.{r}.1:1719\"\n\
             node = \"cm{r}\"\n"
        );
    }
    text + routing
}

/// What an ARQ got.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Admission {
    Confirm(SocketAddr),
    Reject(String),
}

struct Lab {
    gatekeeper: Gatekeeper,
    now: Instant,
    next_call: u64,
}

impl Lab {
    fn new(toml: &str) -> Lab {
        let config = config::from_toml(toml, "calls.toml").unwrap_or_else(|e| panic!("{e}"));
        Lab {
            gatekeeper: Gatekeeper::new(config).unwrap(),
            now: Instant::now(),
            next_call: 0,
        }
    }

    fn ask(&mut self, local: SocketAddr, phone: &mut Phone, datagram: &[u8]) -> RasMessage {
        let out = self
            .gatekeeper
            .handle(self.now, local, phone.ras_address, datagram);
        assert_eq!(out.len(), 1, "one reply expected, got {out:?}");
        let message = ras::decode(&out[0].payload).unwrap();
        phone.learn(&Answer::from_message(&message));
        message
    }

    /// A phone of region `region` registered (GRQ, GCF, RRQ, RCF); returns it and its C-LAN.
    fn phone(&mut self, region: u8, n: u8) -> (Phone, SocketAddr) {
        let mut phone = Phone::extension(
            60_000 + u32::from(region) * 256 + u32::from(n),
            SocketAddr::from(([127, region, 0, n], 5000)),
        );
        let grq = phone.grq();
        let clan = match Answer::from_message(&self.ask(addr(DISCOVERY), &mut phone, &grq)) {
            Answer::Gcf {
                ras_address: Some(clan),
                ..
            } => clan,
            other => panic!("GCF expected, got {other:?}"),
        };
        let rrq = phone.rrq();
        match Answer::from_message(&self.ask(clan, &mut phone, &rrq)) {
            Answer::Rcf { .. } => (phone, clan),
            other => panic!("RCF expected, got {other:?}"),
        }
    }

    /// A new call's identity.
    fn new_call(&mut self) -> Call {
        self.next_call += 1;
        let mut call_id = [0u8; 16];
        call_id[..8].copy_from_slice(&self.next_call.to_be_bytes());
        Call {
            call_reference_value: (self.next_call % 65_536) as u16,
            conference_id: call_id,
            call_id,
        }
    }

    fn arq(&mut self, clan: SocketAddr, phone: &mut Phone, dialled: &str, call: Call) -> Admission {
        let seq = phone.next_seq();
        let endpoint_id = phone.endpoint_id.clone().expect("registered");
        let destination = [Alias::dialled_digits(dialled).unwrap()];
        let source = phone.aliases.clone();
        let arq = ras::encode(&request::admission_request(&Arq {
            request_seq_num: seq,
            endpoint_id: &endpoint_id,
            destination: &destination,
            source: &source,
            call,
            band_width: 1280,
            answer_call: false,
        }))
        .unwrap();
        match self.ask(clan, phone, &arq) {
            RasMessage::admissionConfirm(acf) => Admission::Confirm(
                ras::socket_addr(&acf.dest_call_signal_address).expect("an IP address"),
            ),
            RasMessage::admissionReject(arj) => {
                let text = format!("{:?}", arj.reject_reason);
                Admission::Reject(text.split('(').next().unwrap_or_default().to_owned())
            }
            other => panic!("ACF or ARJ expected, got {other:?}"),
        }
    }

    /// An ARQ for a new call that must be confirmed; returns the node address.
    fn call(&mut self, clan: SocketAddr, phone: &mut Phone, dialled: &str) -> (SocketAddr, Call) {
        let call = self.new_call();
        match self.arq(clan, phone, dialled, call) {
            Admission::Confirm(address) => (address, call),
            other => panic!("ACF expected for {dialled}, got {other:?}"),
        }
    }

    fn drq(&mut self, clan: SocketAddr, phone: &mut Phone, call: Call) {
        let seq = phone.next_seq();
        let endpoint_id = phone.endpoint_id.clone().expect("registered");
        let drq = ras::encode(&request::disengage_request(seq, &endpoint_id, call)).unwrap();
        match self.ask(clan, phone, &drq) {
            RasMessage::disengageConfirm(_) => {}
            other => panic!("DCF expected, got {other:?}"),
        }
    }

    fn trunk(&self, name: &str) -> TrunkView {
        self.gatekeeper
            .trunks()
            .into_iter()
            .find(|t| t.name == name)
            .unwrap()
    }

    /// (node, calls placed since start) of a trunk, only nodes with calls.
    fn totals(&self, name: &str) -> BTreeMap<String, u64> {
        self.trunk(name)
            .per_node
            .into_iter()
            .filter(|n| n.total > 0)
            .map(|n| (n.node, n.total))
            .collect()
    }

    /// The trunk of the one call in progress.
    fn trunk_of_only_call(&self) -> String {
        let calls = self.gatekeeper.calls();
        assert_eq!(calls.len(), 1, "{calls:?}");
        calls[0].trunk.clone()
    }
}

fn counts(addresses: &[SocketAddr]) -> BTreeMap<SocketAddr, usize> {
    let mut counts = BTreeMap::new();
    for &a in addresses {
        *counts.entry(a).or_insert(0) += 1;
    }
    counts
}

/// Use case 1: phone on node 1, no route list, the pattern points straight at a SIP trunk
/// active on nodes 1 and 4: node 1 places every call (route local, no random choice).
#[test]
fn use_case_1_trunk_active_on_the_phones_node() {
    let mut lab = Lab::new(&topology(
        &[1],
        r#"
        [[trunk]]
        name = "sip-1-4"
        kind = "sip"
        nodes = ["cm1", "cm4"]
        address = "127.0.200.1:5060"
        [[route_pattern]]
        pattern = "9.!"
        trunk = "sip-1-4"
        "#,
    ));
    let (mut phone, clan) = lab.phone(1, 1);
    let nodes: Vec<SocketAddr> = (0..200)
        .map(|i| lab.call(clan, &mut phone, &format!("9555{i:04}")).0)
        .collect();
    assert_eq!(counts(&nodes), BTreeMap::from([(node_address(1), 200)]));
    assert_eq!(lab.totals("sip-1-4"), BTreeMap::from([("cm1".into(), 200)]));
    assert_eq!(lab.gatekeeper.call_hops_total(), 0);
}

/// Use case 2: phone on node 1, route list on node 2, SIP trunk active on nodes 2 and 4:
/// node 2 places every call; each call hops once (phone's node to the route list's).
#[test]
fn use_case_2_trunk_active_on_the_route_lists_node() {
    let mut lab = Lab::new(&topology(
        &[1],
        r#"
        [[trunk]]
        name = "sip-2-4"
        kind = "sip"
        nodes = ["cm2", "cm4"]
        address = "127.0.200.1:5060"
        [[route_group]]
        name = "rg"
        trunks = ["sip-2-4"]
        [[route_list]]
        name = "rl"
        route_groups = ["rg"]
        nodes = ["cm2", "cm3"]
        [[route_pattern]]
        pattern = "9.!"
        route_list = "rl"
        "#,
    ));
    let (mut phone, clan) = lab.phone(1, 1);
    let nodes: Vec<SocketAddr> = (0..200)
        .map(|i| lab.call(clan, &mut phone, &format!("9555{i:04}")).0)
        .collect();
    assert_eq!(counts(&nodes), BTreeMap::from([(node_address(2), 200)]));
    assert_eq!(lab.gatekeeper.call_hops_total(), 200);
    let call = &lab.gatekeeper.calls()[0];
    assert_eq!(
        (
            call.phone_node.as_str(),
            call.calling_node.as_str(),
            call.node.as_str()
        ),
        ("cm1", "cm2", "cm2")
    );
}

/// Use case 3: phone on node 1, route list on node 2, H.323 gateway active on nodes 1 and 4:
/// not local to the route list, so the node is drawn among 1 and 4, and both are used.
#[test]
fn use_case_3_gateway_not_on_the_route_lists_node_is_spread() {
    let mut lab = Lab::new(&topology(
        &[1],
        r#"
        [[trunk]]
        name = "gw-1-4"
        kind = "h323"
        nodes = ["cm1", "cm4"]
        address = "127.0.200.2:1720"
        [[route_group]]
        name = "rg"
        trunks = ["gw-1-4"]
        [[route_list]]
        name = "rl"
        route_groups = ["rg"]
        nodes = ["cm2"]
        [[route_pattern]]
        pattern = "9.!"
        route_list = "rl"
        "#,
    ));
    let (mut phone, clan) = lab.phone(1, 1);
    let nodes: Vec<SocketAddr> = (0..200)
        .map(|i| lab.call(clan, &mut phone, &format!("9555{i:04}")).0)
        .collect();
    let seen = counts(&nodes);
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        [node_address(1), node_address(4)],
        "{seen:?}"
    );
    assert!(seen.values().all(|&n| n >= 50), "both nodes used: {seen:?}");
    // Every call: phone → route list (cm1 → cm2), route list → placing node (cm2 → cm1|cm4).
    assert_eq!(lab.gatekeeper.call_hops_total(), 400);
}

/// The route-local draw is uniform: a trunk on three nodes, none the calling node, 20,000
/// calls; Pearson's chi-square against equal thirds, 2 degrees of freedom, must stay below
/// 13.816 (the critical value for p = 0.001).
#[test]
fn random_choice_among_remote_nodes_is_uniform() {
    let mut lab = Lab::new(&topology(
        &[1],
        r#"
        [[trunk]]
        name = "sip-2-3-4"
        kind = "sip"
        nodes = ["cm2", "cm3", "cm4"]
        address = "127.0.200.1:5060"
        [[route_pattern]]
        pattern = "9.!"
        trunk = "sip-2-3-4"
        "#,
    ));
    let (mut phone, clan) = lab.phone(1, 1);
    const CALLS: usize = 20_000;
    let nodes: Vec<SocketAddr> = (0..CALLS)
        .map(|_| lab.call(clan, &mut phone, "95551234").0)
        .collect();
    let seen = counts(&nodes);
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        [node_address(2), node_address(3), node_address(4)]
    );
    let expected = CALLS as f64 / 3.0;
    let chi_square: f64 = seen
        .values()
        .map(|&observed| (observed as f64 - expected).powi(2) / expected)
        .sum();
    const CRITICAL_DF2_P001: f64 = 13.816;
    assert!(
        chi_square < CRITICAL_DF2_P001,
        "chi-square {chi_square:.3} ≥ {CRITICAL_DF2_P001} (df 2): {seen:?}"
    );
    let totals = lab.totals("sip-2-3-4");
    assert_eq!(totals.values().sum::<u64>(), CALLS as u64);
    eprintln!("20,000 calls over cm2/cm3/cm4: {totals:?}, chi-square {chi_square:.3} (df 2)");
}

/// The same seed gives the same nodes, call for call.
#[test]
fn runs_are_reproducible() {
    let routing = r#"
        [[trunk]]
        name = "sip-2-3-4"
        kind = "sip"
        nodes = ["cm2", "cm3", "cm4"]
        address = "127.0.200.1:5060"
        [[route_pattern]]
        pattern = "9.!"
        trunk = "sip-2-3-4"
    "#;
    let run = || {
        let mut lab = Lab::new(&topology(&[1], routing));
        let (mut phone, clan) = lab.phone(1, 1);
        (0..100)
            .map(|_| lab.call(clan, &mut phone, "95551234").0)
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

/// `run_on_all_nodes` on the trunk (pattern straight at it) and on both route list and
/// trunk: every call leaves from the phone's own node, with no hop.
#[test]
fn run_on_all_nodes_places_calls_on_the_phones_node() {
    let mut lab = Lab::new(&topology(
        &[1, 3],
        r#"
        [[trunk]]
        name = "sip-all"
        kind = "sip"
        run_on_all_nodes = true
        address = "127.0.200.1:5060"
        [[route_group]]
        name = "rg"
        trunks = ["sip-all"]
        [[route_list]]
        name = "rl-all"
        route_groups = ["rg"]
        run_on_all_nodes = true
        [[route_pattern]]
        pattern = "9.!"
        trunk = "sip-all"
        [[route_pattern]]
        pattern = "8.!"
        route_list = "rl-all"
        "#,
    ));
    let (mut on_1, clan_1) = lab.phone(1, 1);
    let (mut on_3, clan_3) = lab.phone(3, 1);
    for i in 0..50 {
        for prefix in ["9", "8"] {
            let dialled = format!("{prefix}555{i:04}");
            assert_eq!(lab.call(clan_1, &mut on_1, &dialled).0, node_address(1));
            assert_eq!(lab.call(clan_3, &mut on_3, &dialled).0, node_address(3));
        }
    }
    assert_eq!(lab.gatekeeper.call_hops_total(), 0);
    assert_eq!(
        lab.totals("sip-all"),
        BTreeMap::from([("cm1".into(), 100), ("cm3".into(), 100)])
    );
}

/// A route list on one node with a trunk on all nodes: the route list's node places the
/// calls (route local), one hop from a phone elsewhere.
#[test]
fn route_list_on_one_node_with_a_trunk_on_all_nodes() {
    let mut lab = Lab::new(&topology(
        &[1],
        r#"
        [[trunk]]
        name = "sip-all"
        kind = "sip"
        run_on_all_nodes = true
        address = "127.0.200.1:5060"
        [[route_group]]
        name = "rg"
        trunks = ["sip-all"]
        [[route_list]]
        name = "rl"
        route_groups = ["rg"]
        nodes = ["cm3"]
        [[route_pattern]]
        pattern = "9.!"
        route_list = "rl"
        "#,
    ));
    let (mut phone, clan) = lab.phone(1, 1);
    for _ in 0..20 {
        assert_eq!(lab.call(clan, &mut phone, "90").0, node_address(3));
    }
    assert_eq!(lab.gatekeeper.call_hops_total(), 20);
}

/// Three trunks of one capacity each in a route group, all on the phone's node.
fn group_lab(distribution: &str) -> Lab {
    let mut routing = String::new();
    for name in ["a", "b", "c"] {
        routing += &format!(
            "[[trunk]]\nname = \"{name}\"\nkind = \"sip\"\nnodes = [\"cm1\"]\n\
             address = \"127.0.200.1:5060\"\nmax_calls = 1\n"
        );
    }
    routing += &format!(
        "[[route_group]]\nname = \"rg\"\ntrunks = [\"a\", \"b\", \"c\"]\n\
         distribution = \"{distribution}\"\n\
         [[route_list]]\nname = \"rl\"\nroute_groups = [\"rg\"]\nnodes = [\"cm1\"]\n\
         [[route_pattern]]\npattern = \"9.!\"\nroute_list = \"rl\"\n"
    );
    Lab::new(&topology(&[1], &routing))
}

/// Top-down: every call starts at the first trunk; the next is used only while the ones
/// before it are busy; all busy: ARJ `resourceUnavailable`.
#[test]
fn top_down_starts_at_the_first_trunk_every_time() {
    let mut lab = group_lab("top-down");
    let (mut phone, clan) = lab.phone(1, 1);
    for _ in 0..5 {
        let (_, call) = lab.call(clan, &mut phone, "9100");
        assert_eq!(lab.trunk_of_only_call(), "a");
        lab.drq(clan, &mut phone, call);
    }
    let (_, first) = lab.call(clan, &mut phone, "9100");
    let (_, second) = lab.call(clan, &mut phone, "9100");
    let (_, _third) = lab.call(clan, &mut phone, "9100");
    let busy: Vec<u32> = ["a", "b", "c"]
        .iter()
        .map(|t| lab.trunk(t).active)
        .collect();
    assert_eq!(busy, [1, 1, 1]);
    let call = lab.new_call();
    assert_eq!(
        lab.arq(clan, &mut phone, "9100", call),
        Admission::Reject("resourceUnavailable".into())
    );
    // Free b: the next call goes to b, the first non-busy trunk in order.
    lab.drq(clan, &mut phone, second);
    let (_, again) = lab.call(clan, &mut phone, "9100");
    assert_eq!(lab.trunk("b").active, 1);
    lab.drq(clan, &mut phone, again);
    lab.drq(clan, &mut phone, first);
    assert_eq!(lab.trunk("a").active, 0);
    let (_, _) = lab.call(clan, &mut phone, "9100");
    assert_eq!(lab.trunk("a").active, 1, "a free again: top-down takes a");
}

/// Circular: the starting trunk moves on by one each call, even when every trunk is free.
#[test]
fn circular_rotates_the_starting_trunk() {
    let mut lab = group_lab("circular");
    let (mut phone, clan) = lab.phone(1, 1);
    let mut used = Vec::new();
    for _ in 0..7 {
        let (_, call) = lab.call(clan, &mut phone, "9100");
        used.push(lab.trunk_of_only_call());
        lab.drq(clan, &mut phone, call);
    }
    assert_eq!(used, ["a", "b", "c", "a", "b", "c", "a"]);
    // With b busy, the rotation skips it.
    let (_, held) = lab.call(clan, &mut phone, "9100"); // b
    assert_eq!(lab.trunk("b").active, 1);
    let (_, c) = lab.call(clan, &mut phone, "9100"); // c
    lab.drq(clan, &mut phone, c);
    let (_, a) = lab.call(clan, &mut phone, "9100"); // a
    lab.drq(clan, &mut phone, a);
    let (_, skip) = lab.call(clan, &mut phone, "9100"); // b busy → c
    assert_eq!(lab.trunk("c").active, 1);
    lab.drq(clan, &mut phone, skip);
    lab.drq(clan, &mut phone, held);
}

/// A second route group is used only when every trunk of the first is busy.
#[test]
fn route_list_tries_its_route_groups_in_order() {
    let mut lab = Lab::new(&topology(
        &[1],
        r#"
        [[trunk]]
        name = "first"
        kind = "sip"
        nodes = ["cm1"]
        address = "127.0.200.1:5060"
        max_calls = 1
        [[trunk]]
        name = "backup"
        kind = "h323"
        nodes = ["cm1"]
        address = "127.0.200.2:1720"
        [[route_group]]
        name = "rg-1"
        trunks = ["first"]
        [[route_group]]
        name = "rg-2"
        trunks = ["backup"]
        [[route_list]]
        name = "rl"
        route_groups = ["rg-1", "rg-2"]
        nodes = ["cm1"]
        [[route_pattern]]
        pattern = "9.!"
        route_list = "rl"
        "#,
    ));
    let (mut phone, clan) = lab.phone(1, 1);
    lab.call(clan, &mut phone, "91");
    lab.call(clan, &mut phone, "92");
    assert_eq!(
        (lab.trunk("first").active, lab.trunk("backup").active),
        (1, 1)
    );
}

const TWO_PATTERNS: &str = r#"
    [[trunk]]
    name = "local"
    kind = "sip"
    nodes = ["cm1"]
    address = "127.0.200.1:5060"
    max_calls = 1
    [[trunk]]
    name = "long"
    kind = "sip"
    nodes = ["cm2"]
    address = "127.0.200.2:5060"
    [[route_pattern]]
    pattern = "9.!"
    trunk = "long"
    [[route_pattern]]
    pattern = "9.1XXX"
    trunk = "local"
"#;

/// The most specific pattern wins; no pattern: ARJ `calledPartyNotRegistered`; a busy trunk
/// straight from a pattern: ARJ `resourceUnavailable`; DRQ ends the call's count.
#[test]
fn arj_cases_and_drq_ending_the_count() {
    let mut lab = Lab::new(&topology(&[1], TWO_PATTERNS));
    let (mut phone, clan) = lab.phone(1, 1);
    let call = lab.new_call();
    assert_eq!(
        lab.arq(clan, &mut phone, "81234", call),
        Admission::Reject("calledPartyNotRegistered".into())
    );
    let (node, local_call) = lab.call(clan, &mut phone, "91234");
    assert_eq!(node, node_address(1));
    assert_eq!(lab.trunk_of_only_call(), "local");
    let call = lab.new_call();
    assert_eq!(
        lab.arq(clan, &mut phone, "91235", call),
        Admission::Reject("resourceUnavailable".into())
    );
    // The longer number matches only 9.! and goes to node 2 (not local, drawn among [cm2]).
    let (node, long_call) = lab.call(clan, &mut phone, "912345");
    assert_eq!(node, node_address(2));
    assert_eq!(lab.gatekeeper.calls().len(), 2);

    lab.drq(clan, &mut phone, local_call);
    let local = lab.trunk("local");
    assert_eq!((local.active, local.per_node[0].total), (0, 1));
    assert_eq!(lab.call(clan, &mut phone, "91235").0, node_address(1));
    lab.drq(clan, &mut phone, long_call);
    assert_eq!(lab.trunk("long").active, 0);
    assert_eq!(lab.gatekeeper.calls().len(), 1);
    let rejects = &lab.gatekeeper.stats().rejects;
    assert!(
        format!("{rejects:?}").contains("resourceUnavailable"),
        "{rejects:?}"
    );
}

/// The same call asked again with a new ARQ gets the same node and is counted once; a DRQ
/// for a call never admitted still gets DCF.
#[test]
fn a_call_is_counted_once() {
    let mut lab = Lab::new(&topology(&[1], TWO_PATTERNS));
    let (mut phone, clan) = lab.phone(1, 1);
    let call = lab.new_call();
    assert_eq!(
        lab.arq(clan, &mut phone, "95550000", call),
        Admission::Confirm(node_address(2))
    );
    assert_eq!(
        lab.arq(clan, &mut phone, "95550000", call),
        Admission::Confirm(node_address(2))
    );
    assert_eq!(lab.trunk("long").per_node[1].total, 1);
    let stray = lab.new_call();
    lab.drq(clan, &mut phone, stray);
    assert_eq!(lab.trunk("long").active, 1);
}

/// A registered alias is still answered with that endpoint's address, even when a pattern
/// would match it; a phone that unregisters ends its calls.
#[test]
fn registered_aliases_first_and_unregistering_ends_calls() {
    let mut lab = Lab::new(&topology(
        &[1],
        r#"
        [[trunk]]
        name = "all"
        kind = "sip"
        nodes = ["cm2"]
        address = "127.0.200.1:5060"
        [[route_pattern]]
        pattern = "!"
        trunk = "all"
        "#,
    ));
    let (mut caller, clan) = lab.phone(1, 1);
    let (callee, _) = lab.phone(1, 2);
    let number = callee.aliases[0].to_string();
    assert_eq!(
        lab.call(clan, &mut caller, &number).0,
        callee.call_signal_address
    );
    assert!(lab.gatekeeper.calls().is_empty());
    lab.call(clan, &mut caller, "0044");
    assert_eq!(lab.trunk("all").active, 1);
    let urq = caller.urq();
    lab.ask(clan, &mut caller, &urq);
    assert_eq!(lab.trunk("all").active, 0);
    assert!(lab.gatekeeper.calls().is_empty());
}

/// An ARQ from an unregistered source is refused, and nothing is counted.
#[test]
fn unregistered_caller_is_refused() {
    let mut lab = Lab::new(&topology(&[1], TWO_PATTERNS));
    let (mut phone, clan) = lab.phone(1, 1);
    let mut stranger = phone.clone();
    stranger.ras_address = addr("127.1.9.9:5000");
    let call = lab.new_call();
    assert_eq!(
        lab.arq(clan, &mut stranger, "91234", call),
        Admission::Reject("callerNotRegistered".into())
    );
    assert!(lab.gatekeeper.calls().is_empty());
    let _ = &mut phone;
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    /// Any dialled number gets ACF or ARJ, and the counts stay consistent with the calls held.
    #[test]
    fn any_dialled_number_gets_acf_or_arj(numbers in proptest::collection::vec("[0-9*#,]{1,128}", 1..20)) {
        let mut lab = Lab::new(&topology(&[1], &format!("{TWO_PATTERNS}
            [[route_group]]
            name = \"rg\"
            trunks = [\"local\", \"long\"]
            [[route_list]]
            name = \"rl\"
            route_groups = [\"rg\"]
            nodes = [\"cm3\"]
            [[route_pattern]]
            pattern = \"*X!#\"
            route_list = \"rl\"
        ")));
        let (mut phone, clan) = lab.phone(1, 1);
        for number in &numbers {
            let call = lab.new_call();
            match lab.arq(clan, &mut phone, number, call) {
                Admission::Confirm(address) => {
                    proptest::prop_assert!((1..=4).any(|n| node_address(n) == address));
                }
                Admission::Reject(reason) => proptest::prop_assert!(
                    reason == "calledPartyNotRegistered" || reason == "resourceUnavailable",
                    "{reason}"
                ),
            }
        }
        let active: u32 = lab.gatekeeper.trunks().iter().map(|t| t.active).sum();
        proptest::prop_assert_eq!(active as usize, lab.gatekeeper.calls().len());
    }
}

/// Two nodes' C-LANs (regions 1 and 2) and a configured SIP trunk for `9.!` on cm2.
const WITH_SIP: &str = r#"
    [[trunk]]
    name = "sip"
    kind = "sip"
    nodes = ["cm2"]
    address = "127.0.200.1:5060"
    [[route_pattern]]
    pattern = "9.!"
    trunk = "sip"
"#;

/// An H.323 gateway of region 2 (127.2.0.N) named `name`, announcing `prefixes`,
/// registered by GRQ and RRQ: it takes no reservation and no socket.
fn register_gateway(lab: &mut Lab, n: u8, name: &str, prefixes: &[&str]) -> Phone {
    let mut gateway = Phone::new(
        vec![Alias::h323_id(name).unwrap()],
        SocketAddr::from(([127, 2, 0, n], 5000)),
    );
    gateway.gateway = true;
    gateway.prefixes = prefixes
        .iter()
        .map(|p| Alias::dialled_digits(p).unwrap())
        .collect();
    let grq = gateway.grq();
    let clan = match Answer::from_message(&lab.ask(addr(DISCOVERY), &mut gateway, &grq)) {
        Answer::Gcf {
            ras_address: Some(clan),
            ..
        } => clan,
        other => panic!("GCF expected, got {other:?}"),
    };
    let reserved: u32 = lab.gatekeeper.clans().iter().map(|c| c.reserved).sum();
    assert_eq!(reserved, 0, "a gateway's GCF reserves nothing");
    let rrq = gateway.rrq();
    match Answer::from_message(&lab.ask(clan, &mut gateway, &rrq)) {
        Answer::Rcf { .. } => gateway,
        other => panic!("RCF expected, got {other:?}"),
    }
}

/// A gateway registered by RRQ is a trunk member: `/api/trunks` lists it with its
/// prefixes, ARQs for its prefixes (more specific than the configured `9.!`) get its call
/// signalling address, members of one prefix take turns, DRQ and its unregistration end
/// the counts — and it never holds a C-LAN socket, in count mode or socket mode.
#[test]
fn a_registered_gateway_is_a_trunk_for_its_prefixes() {
    for sockets in ["count", "tcp"] {
        let toml = topology(&[1, 2], WITH_SIP)
            .replace("seed = 11", &format!("seed = 11\nsockets = {sockets:?}"));
        let mut lab = Lab::new(&toml);
        let (mut phone, clan) = lab.phone(1, 1);
        let mut gateway = register_gateway(&mut lab, 50, "gw-lab", &["9044", "0049"]);
        let held: u32 = lab.gatekeeper.clans().iter().map(|c| c.sockets).sum();
        assert_eq!(held, 1, "{sockets}: only the phone holds a socket");
        let registration = lab
            .gatekeeper
            .registrations()
            .into_iter()
            .find(|r| r.aliases == ["h323-ID:gw-lab"])
            .unwrap();
        assert_eq!(registration.clan, None, "{sockets}");
        assert!(!registration.tts);

        let trunk = lab.trunk("gw-lab");
        assert_eq!(trunk.prefixes, ["9044", "0049"]);
        assert_eq!(
            trunk.endpoint_id.as_deref(),
            Some(registration.endpoint_id.as_str())
        );
        assert_eq!(
            trunk.nodes,
            ["cm2"],
            "the node of the C-LAN it registered at"
        );
        assert_eq!(trunk.address, gateway.call_signal_address);
        assert_eq!(lab.trunk("sip").endpoint_id, None);

        // Its prefixes route to it; `9.!` still takes the rest; a bare prefix is no number.
        let (to, first) = lab.call(clan, &mut phone, "9044301234");
        assert_eq!(to, gateway.call_signal_address);
        assert_eq!(lab.call(clan, &mut phone, "00493012").0, to);
        assert_eq!(lab.call(clan, &mut phone, "95551234").0, node_address(2));
        let call = lab.new_call();
        assert_eq!(
            lab.arq(clan, &mut phone, "0049", call),
            Admission::Reject("calledPartyNotRegistered".into())
        );
        let trunk = lab.trunk("gw-lab");
        assert_eq!((trunk.active, trunk.per_node[1].total), (2, 2));
        let calls = lab.gatekeeper.calls();
        let to_gateway = calls.iter().find(|c| c.dialled == "9044301234").unwrap();
        assert_eq!(
            (to_gateway.trunk.as_str(), to_gateway.pattern.as_str()),
            ("gw-lab", "9044!")
        );
        assert_eq!(
            (to_gateway.node.as_str(), to_gateway.hops),
            ("cm2", 1),
            "route local: the gateway's node, one hop from the phone's"
        );
        assert_eq!(
            lab.gatekeeper.call_hops_total(),
            3,
            "two to the gateway, one to sip"
        );

        // A second member of 9044 takes turns with the first.
        let second = register_gateway(&mut lab, 51, "gw-two", &["9044"]);
        let turns: Vec<SocketAddr> = (0..4)
            .map(|i| lab.call(clan, &mut phone, &format!("904477{i}")).0)
            .collect();
        let (a, b) = (gateway.call_signal_address, second.call_signal_address);
        assert_eq!(turns, [a, b, a, b], "circular, in registration order");

        // DRQ ends a call's count; the gateway unregistering leaves the trunks, ends the
        // calls to it, and 9044 numbers go to the member left.
        lab.drq(clan, &mut phone, first);
        assert_eq!(lab.trunk("gw-lab").active, 3);
        let urq = gateway.urq();
        assert!(matches!(
            Answer::from_message(&lab.ask(clan_of(&lab, "clan-2"), &mut gateway, &urq)),
            Answer::Ucf { .. }
        ));
        assert!(lab.gatekeeper.trunks().iter().all(|t| t.name != "gw-lab"));
        assert!(lab.gatekeeper.calls().iter().all(|c| c.trunk != "gw-lab"));
        assert_eq!(lab.call(clan, &mut phone, "90449").0, b);
        let call = lab.new_call();
        assert_eq!(
            lab.arq(clan, &mut phone, "00491", call),
            Admission::Reject("calledPartyNotRegistered".into())
        );
        let held: u32 = lab.gatekeeper.clans().iter().map(|c| c.sockets).sum();
        assert_eq!(held, 1, "{sockets}");

        // A restart from the state file keeps the member and its prefixes.
        let state = lab.gatekeeper.snapshot_state(lab.now);
        let config = config::from_toml(&toml, "calls.toml").unwrap();
        let wall = std::time::Duration::from_secs(1_704_067_200);
        let (restarted, _) = Gatekeeper::restore(config, &state, lab.now, wall).unwrap();
        lab.gatekeeper = restarted;
        assert_eq!(lab.trunk("gw-two").prefixes, ["9044"]);
        assert_eq!(lab.call(clan, &mut phone, "904412").0, b);
        let held: u32 = lab.gatekeeper.clans().iter().map(|c| c.sockets).sum();
        assert_eq!(held, 1, "{sockets}: restored, the gateway holds no place");
    }
}

fn clan_of(lab: &Lab, name: &str) -> SocketAddr {
    lab.gatekeeper
        .clans()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap()
        .address
}
