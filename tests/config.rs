//! The config loader against the fixture files of `fixtures/config/` and the embedded
//! default.
//!
//! Every `good-*.toml` must load. Every `bad-*.toml` must be refused, and its first line,
//! `# expect: <text>`, gives text the error must contain; the error must also name the file.

mod support;

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use support::fixtures::file_name;

use rasgk::config::{self, ClanKind, Config, LinkKind, SocketMode, TierMode};

fn fixtures() -> PathBuf {
    support::fixtures::folder("config")
}

/// The fixture files whose names start with `prefix`, sorted.
fn fixture_files(prefix: &str) -> Vec<PathBuf> {
    support::fixtures::toml_files("config", prefix)
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("an IP address")
}

#[test]
fn every_good_fixture_loads() {
    let files = fixture_files("good-");
    assert!(files.len() >= 3, "good fixtures: {files:?}");
    for path in files {
        if let Err(e) = config::load(&path) {
            panic!("{} should load: {e}", file_name(&path));
        }
    }
}

#[test]
fn every_bad_fixture_is_refused_with_its_expected_error() {
    let files = fixture_files("bad-");
    assert!(files.len() >= 30, "bad fixtures: {}", files.len());
    let mut failures = Vec::new();
    for path in &files {
        let name = file_name(path);
        let text = std::fs::read_to_string(path).expect("fixture is readable");
        let expect = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("# expect: "))
            .unwrap_or_else(|| panic!("{name}: first line must be '# expect: <text>'"));
        match config::load(path) {
            Ok(_) => failures.push(format!("{name}: loaded, expected an error with {expect:?}")),
            Err(e) => {
                let shown = e.to_string();
                if !shown.contains(expect) {
                    failures.push(format!("{name}: {shown:?} does not contain {expect:?}"));
                }
                if !shown.contains(name) {
                    failures.push(format!("{name}: {shown:?} does not name the file"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_fixtures_each_test_a_different_error() {
    let mut expects: Vec<String> = fixture_files("bad-")
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path).expect("fixture is readable");
            text.lines().next().unwrap_or("").to_owned()
        })
        .collect();
    let all = expects.len();
    expects.sort();
    expects.dedup();
    assert_eq!(expects.len(), all, "two bad fixtures expect the same error");
}

#[test]
fn errors_name_the_precise_field() {
    let text = "[[region]]\nid = 1\n\n\
                [[clan]]\nname = \"a\"\nregion = 1\naddress = \"127.0.1.1:1719\"\n\n\
                [[clan]]\nname = \"b\"\nregion = 9\naddress = \"127.0.1.2:1719\"\n";
    let e = config::from_toml(text, "rasgk.toml").expect_err("region 9 is not defined");
    assert_eq!(e.origin(), "rasgk.toml");
    assert_eq!(e.field(), "clan[1].region");
    assert_eq!(e.reason(), "region 9 is not defined (regions: 1)");
    assert_eq!(
        e.to_string(),
        "rasgk.toml: clan[1].region: region 9 is not defined (regions: 1)"
    );

    let unknown = text.replace("region = 9", "region = 1\nregoin = 2");
    let e = config::from_toml(&unknown, "rasgk.toml").expect_err("unknown key");
    assert_eq!(e.field, "clan[1].regoin");
    assert!(e.reason.contains("unknown field `regoin`"), "{e}");
    assert!(e.reason.contains("line 12"), "{e}");
}

#[test]
fn load_and_from_toml_agree() {
    let path = fixtures().join("good-every-key.toml");
    let text = std::fs::read_to_string(&path).expect("fixture is readable");
    let loaded = config::load(&path).expect("loads");
    assert_eq!(config::from_toml(&text, "x").expect("parses"), loaded);
}

#[test]
fn every_key_is_read() {
    let c = config::load(&fixtures().join("good-every-key.toml")).expect("loads");
    let gk = &c.gatekeeper;
    assert_eq!(gk.discovery.to_string(), "[::1]:1719");
    assert!(gk.multicast);
    assert_eq!(gk.gatekeeper_id, "gk-ħq");
    assert_eq!((gk.ttl_s, gk.gcf_hold_s, gk.default_region), (60, 5, 20));
    assert_eq!(gk.tier_mode, TierMode::Pooled);
    assert!(gk.tts_default);
    assert_eq!(gk.seed, Some(u64::MAX));
    assert_eq!(gk.sockets, SocketMode::Tcp);
    assert_eq!(gk.max_setups_per_clan, 2);
    assert_eq!(gk.setup, Duration::from_millis(20));
    assert_eq!(gk.setup_timeout, Duration::from_millis(1500));
    assert_eq!(gk.keepalive, Duration::from_secs(15));
    assert_eq!(gk.call_signalling, config::CallSignalling::Routed);
    assert_eq!(gk.call_setup_timeout, Duration::from_secs(30));
    assert!(gk.strict_network_map);
    assert_eq!(gk.password_window_s, 30);
    let passwords: Vec<(&str, &str)> = c
        .passwords
        .iter()
        .map(|p| (p.alias.as_str(), p.secret.as_str()))
        .collect();
    assert_eq!(passwords, [("2001", "pässwörd"), ("Zoë", "x")]);
    let limits = &c.limits;
    assert_eq!(limits.rate_per_source, Some(50));
    assert_eq!(limits.burst_per_source, 7);
    assert_eq!(
        (
            limits.max_sources,
            limits.max_reservations,
            limits.max_cached_replies
        ),
        (1000, 2000, 3000)
    );
    assert_eq!(limits.reflection_ratio, 4);
    assert_eq!(limits.max_frame_octets, 4096);
    let rebalance = c.rebalance.expect("[rebalance] enabled");
    assert_eq!(rebalance.tolerance, 12);
    assert_eq!(rebalance.moves_per_s, 0.25);
    assert_eq!(rebalance.hold_off, Duration::from_secs(900));
    assert_eq!(rebalance.interval(), Duration::from_secs(4));
    assert_eq!(
        (c.agl.max, c.agl.home, c.agl.direct, c.agl.indirect),
        (128, 100, 20, 8)
    );
    let pe = c.clan("core-pe").expect("core-pe");
    assert_eq!(
        (pe.priority, pe.max_sockets, pe.in_service, pe.kind),
        (255, u32::MAX, true, ClanKind::Pe)
    );
    assert_eq!(pe.node, "cm2");
    assert_eq!(pe.signal_address().to_string(), "[::1]:11720");
    let edge = c.clan("edge-a").expect("edge-a");
    assert_eq!(edge.signal_port, 1720);
    assert_eq!(edge.address.to_string(), "10.0.0.1:1719");
    assert_eq!(
        edge.address6.map(|a| a.to_string()).as_deref(),
        Some("[2001:db8:2000::1]:1719")
    );
    // An IPv6 address in `address` is the C-LAN's IPv6 address.
    assert_eq!(pe.address6, Some(pe.address));
    assert_eq!(
        c.gatekeeper.discovery6.map(|a| a.to_string()).as_deref(),
        Some("127.0.0.9:1719")
    );
    assert!(!c.clan("core-a").expect("core-a").in_service);
    assert_eq!(c.tts[0].aliases, ["5*", "6??9", "*room*"]);
    assert!(!c.tts[0].tts);
    assert!(c.tts[1].tts && c.tts[1].aliases.is_empty());
    assert_eq!(c.admin.listen.to_string(), "[::1]:7001");
    assert_eq!(c.admin.token.as_deref(), Some("s3cret"));
    // Longest prefix wins: 10.20.30.0/24 (region 2000) inside 10.20.0.0/16 (region 20).
    assert_eq!(c.mapped_region(ip("10.20.30.4")), Some(2000));
    assert_eq!(c.mapped_region(ip("10.20.31.4")), Some(20));
    assert_eq!(c.mapped_region(ip("2001:db8:20::77")), Some(20));
    assert_eq!(c.mapped_region(ip("192.0.2.1")), None);
}

#[test]
fn minimal_file_takes_the_defaults() {
    let c = config::load(&fixtures().join("good-minimal.toml")).expect("loads");
    assert_eq!(c.gatekeeper.discovery.to_string(), "127.0.0.1:1719");
    assert_eq!(c.gatekeeper.gatekeeper_id, "rasgk");
    assert_eq!(c.gatekeeper.seed, None);
    assert_eq!(c.agl.max, 16);
    assert_eq!(c.admin.listen.to_string(), "127.0.0.1:7000");
    let clan = &c.clans[0];
    assert_eq!(
        (clan.priority, clan.max_sockets, clan.in_service),
        (1, 480, true)
    );
    assert_eq!((clan.kind, clan.node.as_str()), (ClanKind::Clan, "cm1"));
}

fn default_config() -> Config {
    config::from_toml(config::DEFAULT_TOML, "default.toml").expect("the embedded default parses")
}

#[test]
fn embedded_default_topology() {
    let c = default_config();
    assert_eq!(c, config::embedded_default());
    assert_eq!(c.gatekeeper.discovery.to_string(), "127.0.0.1:1719");
    assert_eq!(c.admin.listen.to_string(), "127.0.0.1:7000");
    assert_eq!(c.gatekeeper.seed, Some(7));

    let regions: Vec<(u16, &str)> = c.regions.iter().map(|r| (r.id, r.name.as_str())).collect();
    assert_eq!(regions, [(1, "hq"), (2, "branch"), (3, "remote")]);
    assert_eq!(c.mapped_region(ip("127.2.3.4")), Some(2));
    assert_eq!(c.mapped_region(ip("127.1.0.9")), Some(1));
    assert_eq!(c.mapped_region(ip("127.3.200.1")), Some(3));
    assert_eq!(c.mapped_region(ip("127.0.0.1")), None);

    let links: Vec<(u16, u16, LinkKind, bool, bool)> = c
        .links
        .iter()
        .map(|l| (l.near, l.far, l.kind, l.agl, l.symmetric))
        .collect();
    assert_eq!(
        links,
        [
            (1, 2, LinkKind::Direct, false, true),
            (2, 3, LinkKind::Direct, false, true),
            (1, 3, LinkKind::Indirect, true, true),
        ]
    );

    assert!(c.clans.len() >= 8, "{} C-LANs", c.clans.len());
    for region in 1..=3 {
        assert!(
            c.clans.iter().filter(|clan| clan.region == region).count() >= 2,
            "region {region} has fewer than two C-LANs"
        );
    }
    let pe = c.clan("pe-1").expect("pe-1");
    assert_eq!((pe.kind, pe.max_sockets), (ClanKind::Pe, 240));
    // Every C-LAN address is loopback, so the default runs without network set-up.
    assert!(c.clans.iter().all(|clan| clan.address.ip().is_loopback()));
    assert_eq!(c.tts.len(), 1);
    assert_eq!(c.tts[0].aliases, ["5*"]);
}

#[test]
fn embedded_default_shows_every_key_of_the_schema() {
    let keys = [
        "[gatekeeper]",
        "discovery =",
        "multicast =",
        "gatekeeper_id =",
        "ttl_s =",
        "gcf_hold_s =",
        "default_region =",
        "tier_mode =",
        "tts_default =",
        "seed =",
        "sockets =",
        "max_setups_per_clan =",
        "strict_network_map =",
        "password_window_s =",
        "[[password]]",
        "secret =",
        "[agl]",
        "max =",
        "home =",
        "direct =",
        "indirect =",
        "[[region]]",
        "id =",
        "name =",
        "networks =",
        "[[link]]",
        "regions =",
        "kind =",
        "agl =",
        "symmetric =",
        "[[clan]]",
        "region =",
        "address =",
        "priority =",
        "max_sockets =",
        "in_service =",
        "node =",
        "[[tts]]",
        "aliases =",
        "tts =",
        "[admin]",
        "listen =",
        "token =",
        "[limits]",
        "rate_per_source =",
        "burst_per_source =",
        "max_sources =",
        "max_reservations =",
        "max_cached_replies =",
        "reflection_ratio =",
    ];
    let missing: Vec<&str> = keys
        .iter()
        .copied()
        .filter(|key| !config::DEFAULT_TOML.contains(key))
        .collect();
    assert!(missing.is_empty(), "default.toml lacks {missing:?}");
}

#[test]
fn calls_fixture_resolves_every_reference() {
    use rasgk::config::{ActiveOn, Distribution, RouteTarget, TrunkKind};
    let c = config::load(&fixtures().join("good-calls.toml")).expect("good-calls.toml loads");
    let nodes: Vec<(&str, u32)> = c.nodes.iter().map(|n| (n.name.as_str(), n.id)).collect();
    assert_eq!(nodes, [("cm1", 1), ("cm2", 2)]);
    assert_eq!(
        c.nodes[1].address.map(|a| a.to_string()).as_deref(),
        Some("127.0.100.2:1720")
    );
    assert_eq!(c.trunks[0].kind, TrunkKind::Sip);
    assert_eq!(c.trunks[0].active_on, ActiveOn::Nodes(vec![0, 1]));
    assert_eq!(c.trunks[0].max_calls, None);
    assert_eq!(c.trunks[1].kind, TrunkKind::H323);
    assert_eq!(c.trunks[1].active_on, ActiveOn::AllNodes);
    assert_eq!(c.trunks[1].max_calls, Some(23));
    assert_eq!(c.route_groups[0].trunks, [0, 1]);
    assert_eq!(c.route_groups[0].distribution, Distribution::TopDown);
    assert_eq!(c.route_lists[0].route_groups, [0]);
    assert_eq!(c.route_lists[0].active_on, ActiveOn::Nodes(vec![1, 0]));
    assert_eq!(c.route_patterns[0].target, RouteTarget::RouteList(0));
    assert_eq!(c.route_patterns[1].target, RouteTarget::Trunk(1));
}

#[test]
fn nodes_are_implied_by_the_clans_when_none_is_given() {
    let c = default_config();
    assert!(!c.nodes.is_empty());
    assert!(c.nodes.iter().all(|n| n.address.is_none()));
    for clan in &c.clans {
        assert!(c.node_index(&clan.node).is_some(), "{}", clan.node);
    }
}

#[test]
fn route_group_distribution_defaults_to_circular_as_in_cucm() {
    let text = std::fs::read_to_string(fixtures().join("good-calls.toml")).expect("readable");
    let text = text.replace("distribution = \"top-down\"\n", "");
    let c = config::from_toml(&text, "t.toml").expect("valid without distribution");
    assert_eq!(
        c.route_groups[0].distribution,
        rasgk::config::Distribution::Circular
    );
}
