//! Property tests of the placement rules (docs/rules.md §4, §6, §7) over random topologies and
//! random arrival orders: the pure policy functions against brute-force readings of the
//! rules, and the whole core against the invariants of the loads.

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use rasgk::config::{
    AdminSettings, AglQuotas, Clan, ClanKind, Config, Family, GatekeeperSettings, Link, LinkKind,
    Region, SocketMode, TierMode, TtsRule,
};
use rasgk::gatekeeper::load::{ClanLoad, Loads};
use rasgk::gatekeeper::policy::{build_agl, choose_clan, choose_tts_clan};
use rasgk::gatekeeper::topology::{Tiers, Topology};
use rasgk::gatekeeper::Gatekeeper;
use rasgk::phone::{Answer, Phone};

const REGIONS: [u16; 5] = [1, 2, 3, 7, 12];

fn discovery() -> SocketAddr {
    "127.0.0.1:1719".parse().unwrap()
}

/// A random topology: up to 5 regions, random links, up to 14 C-LANs with small caps.
fn topology() -> impl Strategy<Value = Config> {
    let regions = proptest::sample::subsequence(REGIONS.to_vec(), 1..=REGIONS.len());
    regions.prop_flat_map(|regions| {
        let n = regions.len();
        let links = proptest::collection::vec(
            (0..n, 0..n, any::<bool>(), any::<bool>(), any::<bool>()),
            0..=8,
        );
        let clans = proptest::collection::vec(
            (0..n, 1u8..=3, 1u32..=4, proptest::bool::weighted(0.85)),
            1..=14,
        );
        let quotas = (0usize..=6, 0usize..=6, 0usize..=4, 0usize..=16);
        let tts = proptest::collection::vec((0..n, any::<bool>()), 0..=2);
        (
            Just(regions),
            links,
            clans,
            quotas,
            tts,
            any::<bool>(),
            any::<bool>(),
            any::<u64>(),
        )
            .prop_map(
                |(regions, links, clans, quotas, tts, pooled, tts_default, seed)| {
                    let mut seen = HashSet::new();
                    let links = links
                        .into_iter()
                        .filter(|&(a, b, ..)| a != b && seen.insert((a.min(b), a.max(b))))
                        .map(|(a, b, direct, agl, symmetric)| Link {
                            near: regions[a],
                            far: regions[b],
                            kind: if direct {
                                LinkKind::Direct
                            } else {
                                LinkKind::Indirect
                            },
                            agl,
                            symmetric,
                        })
                        .collect();
                    let clans = clans
                        .into_iter()
                        .enumerate()
                        .map(|(i, (r, priority, cap, in_service))| Clan {
                            name: format!("clan-{i}"),
                            region: regions[r],
                            address: SocketAddr::from(([127, 0, 1, i as u8 + 1], 1719)),
                            address6: None,
                            priority,
                            max_sockets: cap,
                            in_service,
                            kind: ClanKind::Clan,
                            node: "cm1".into(),
                            signal_port: 1720,
                            warn_sockets: None,
                        })
                        .collect();
                    let tts = tts
                        .into_iter()
                        .map(|(r, tts)| TtsRule {
                            aliases: vec![],
                            regions: vec![regions[r]],
                            tts,
                        })
                        .collect();
                    Config {
                        gatekeeper: GatekeeperSettings {
                            discovery: discovery(),
                            discovery6: None,
                            multicast: false,
                            gatekeeper_id: "rasgk".into(),
                            ttl_s: 300,
                            gcf_hold_s: 30,
                            default_region: regions[0],
                            tier_mode: if pooled {
                                TierMode::Pooled
                            } else {
                                TierMode::Ordered
                            },
                            tts_default,
                            seed: Some(seed),
                            sockets: SocketMode::Count,
                            max_setups_per_clan: 5,
                            setup: std::time::Duration::ZERO,
                            setup_timeout: std::time::Duration::from_secs(3),
                            keepalive: std::time::Duration::from_secs(60),
                            call_signalling: rasgk::config::CallSignalling::Direct,
                            call_setup_timeout: std::time::Duration::from_secs(180),
                            strict_network_map: false,
                            password_window_s: 120,
                        },
                        agl: AglQuotas {
                            home: quotas.0,
                            direct: quotas.1,
                            indirect: quotas.2,
                            max: quotas.3,
                        },
                        regions: regions
                            .iter()
                            .map(|&id| Region {
                                id,
                                name: String::new(),
                                networks: vec![format!("127.{id}.0.0/16").parse().unwrap()],
                            })
                            .collect(),
                        links,
                        clans,
                        tts,
                        admin: AdminSettings {
                            listen: "127.0.0.1:0".parse().unwrap(),
                            token: None,
                        },
                        nodes: Vec::new(),
                        trunks: Vec::new(),
                        route_groups: Vec::new(),
                        route_lists: Vec::new(),
                        route_patterns: Vec::new(),
                        passwords: Vec::new(),
                        limits: rasgk::config::Limits::default(),
                        rebalance: None,
                    }
                },
            )
    })
}

/// Random loads on a topology's C-LANs (sockets + reservations up to the cap, sometimes
/// over it after a cap change).
fn loads_of(config: &Config, fill: &[(u32, u32)]) -> Loads {
    Loads::new(config.clans.iter().enumerate().map(|(i, clan)| {
        let (sockets, reserved) = fill.get(i).copied().unwrap_or((0, 0));
        ClanLoad {
            sockets: sockets % (clan.max_sockets + 2),
            reserved: reserved % 2,
            cap: clan.max_sockets,
            in_service: clan.in_service,
            region: clan.region,
            priority: clan.priority,
            families: [true, false],
        }
    }))
}

/// The tiers of docs/rules.md §2.3 read straight from the links, for comparison.
fn tiers_by_hand(config: &Config, home: u16) -> (Vec<u16>, Vec<u16>) {
    let reaches = |link: &Link| {
        if link.near == home {
            Some(link.far)
        } else if link.symmetric && link.far == home {
            Some(link.near)
        } else {
            None
        }
    };
    let mut direct: Vec<u16> = config
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::Direct)
        .filter_map(reaches)
        .collect();
    direct.sort_unstable();
    direct.dedup();
    let mut indirect: Vec<u16> = config
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::Indirect && l.agl)
        .filter_map(reaches)
        .filter(|r| !direct.contains(r))
        .collect();
    indirect.sort_unstable();
    indirect.dedup();
    (direct, indirect)
}

/// docs/rules.md §4 by brute force: tier by tier; in a region (or a pooled tier) the best priority
/// class with a candidate, then least loaded, then configuration order.
fn choose_by_hand(config: &Config, loads: &Loads, home: u16) -> Option<usize> {
    let (direct, indirect) = tiers_by_hand(config, home);
    let best = |regions: &[u16]| {
        (0..config.clans.len())
            .filter(|&i| regions.contains(&loads.get(i).region) && loads.get(i).available())
            .min_by_key(|&i| (loads.get(i).priority, loads.get(i).load(), i))
    };
    for tier in [vec![home], direct, indirect] {
        let pick = match config.gatekeeper.tier_mode {
            TierMode::Pooled => best(&tier),
            TierMode::Ordered => tier.iter().find_map(|&r| best(&[r])),
        };
        if pick.is_some() {
            return pick;
        }
    }
    None
}

fn tier_of(tiers: &Tiers, region: u16) -> usize {
    tiers
        .group_of(region)
        .expect("an AGL entry lies in one of the phone's tiers")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// GCF choice is exactly the brute-force reading of docs/rules.md §4: a lower tier only when no
    /// higher tier has room, and within a region the least loaded C-LAN of the best priority class.
    #[test]
    fn gcf_choice_follows_the_tiers(
        config in topology(),
        fill in proptest::collection::vec((0u32..6, 0u32..2), 14),
        home_index in 0usize..5,
    ) {
        let topology = Topology::new(&config);
        let loads = loads_of(&config, &fill);
        let home = config.regions[home_index % config.regions.len()].id;
        let tiers = topology.tiers(home);
        let (direct, indirect) = tiers_by_hand(&config, home);
        prop_assert_eq!(&tiers.direct, &direct);
        prop_assert_eq!(&tiers.indirect, &indirect);
        let chosen = choose_clan(&tiers, &loads, config.gatekeeper.tier_mode, Family::V4);
        prop_assert_eq!(chosen, choose_by_hand(&config, &loads, home));
        if let Some(idx) = chosen {
            prop_assert!(loads.get(idx).available());
        }
    }

    /// AGL entries: distinct, in service, not full, grouped home → direct → indirect, each
    /// group a cyclic run of that group's eligible array, within quotas and `max`.
    #[test]
    fn agl_is_cyclic_runs_within_quotas(
        config in topology(),
        fill in proptest::collection::vec((0u32..6, 0u32..2), 14),
        home_index in 0usize..5,
        seed in any::<u64>(),
    ) {
        let topology = Topology::new(&config);
        let loads = loads_of(&config, &fill);
        let home = config.regions[home_index % config.regions.len()].id;
        let tiers = topology.tiers(home);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let agl = build_agl(&tiers, &loads, &config.agl, Family::V4, &mut rng);
        prop_assert!(agl.len() <= config.agl.max);
        let distinct: HashSet<_> = agl.iter().collect();
        prop_assert_eq!(distinct.len(), agl.len(), "AGL entries repeat: {:?}", agl);
        let groups: Vec<usize> = agl.iter().map(|&i| tier_of(&tiers, loads.get(i).region)).collect();
        prop_assert!(groups.windows(2).all(|w| w[0] <= w[1]), "groups out of order: {:?}", groups);
        let quotas = [config.agl.home, config.agl.direct, config.agl.indirect];
        let mut taken = 0;
        for (group, &quota) in quotas.iter().enumerate() {
            let entries: Vec<usize> = agl.iter().copied().filter(|&i| tier_of(&tiers, loads.get(i).region) == group).collect();
            let eligible: Vec<usize> = tiers.group_clans[group].iter().copied().filter(|&i| loads.get(i).available()).collect();
            let want = quota.min(config.agl.max - taken).min(eligible.len());
            prop_assert_eq!(entries.len(), want, "group {} length", group);
            if let Some(&first) = entries.first() {
                let start = eligible.iter().position(|&i| i == first).unwrap();
                for (k, &entry) in entries.iter().enumerate() {
                    prop_assert_eq!(entry, eligible[(start + k) % eligible.len()]);
                }
            }
            taken += entries.len();
        }
    }

    /// The TTS socket goes to an AGL entry: home/direct entries before indirect ones, then best
    /// priority class, least loaded, AGL order.
    #[test]
    fn tts_socket_follows_section_4(
        config in topology(),
        fill in proptest::collection::vec((0u32..6, 0u32..2), 14),
        home_index in 0usize..5,
        seed in any::<u64>(),
        extra in proptest::collection::vec((0u32..6, 0u32..2), 14),
    ) {
        let topology = Topology::new(&config);
        let home = config.regions[home_index % config.regions.len()].id;
        let tiers = topology.tiers(home);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let agl = build_agl(&tiers, &loads_of(&config, &fill), &config.agl, Family::V4, &mut rng);
        // Loads move on between the RCF and the socket set-up.
        let loads = loads_of(&config, &extra);
        let chosen = choose_tts_clan(&tiers, &loads, &agl);
        let by_hand = [true, false].into_iter().find_map(|near| {
            agl.iter().enumerate()
                .filter(|&(_, &i)| (tier_of(&tiers, loads.get(i).region) < 2) == near && loads.get(i).available())
                .min_by_key(|&(pos, &i)| (loads.get(i).priority, loads.get(i).load(), pos))
                .map(|(_, &i)| i)
        });
        prop_assert_eq!(chosen, by_hand);
        if let Some(idx) = chosen {
            prop_assert!(agl.contains(&idx));
        }
    }

    /// The whole core under random arrivals: caps are never exceeded, each load is the sum
    /// of its sockets and reservations, and every socket belongs to one registration.
    #[test]
    fn core_keeps_loads_consistent(
        config in topology(),
        steps in proptest::collection::vec((0u8..8, 0usize..40, 0usize..16, 0u64..40), 1..120),
    ) {
        let mut gatekeeper = Gatekeeper::new(config.clone()).unwrap();
        let t0 = Instant::now();
        let mut now = t0;
        let mut phones: Vec<Phone> = (0..40)
            .map(|i| {
                let region = config.regions[i % config.regions.len()].id;
                let ip = Ipv4Addr::new(127, region as u8, 0, i as u8 + 1);
                Phone::extension(50_000 + i as u32, SocketAddr::new(IpAddr::V4(ip), 5000))
            })
            .collect();
        let mut gcf_target: Vec<Option<SocketAddr>> = vec![None; 40];
        for (op, p, c, dt) in steps {
            now += Duration::from_secs(dt);
            let _ = gatekeeper.handle_timeout(now);
            let phone = &mut phones[p];
            let clan_address = config.clans[c % config.clans.len()].address;
            let out = match op {
                0 | 1 => gatekeeper.handle(now, discovery(), phone.ras_address, &phone.grq()),
                2 | 3 => {
                    let at = gcf_target[p].unwrap_or(clan_address);
                    gatekeeper.handle(now, at, phone.ras_address, &phone.rrq())
                }
                4 => gatekeeper.handle(now, clan_address, phone.ras_address, &phone.rrq()),
                5 => match phone.keep_alive() {
                    Some(rrq) => gatekeeper.handle(now, clan_address, phone.ras_address, &rrq),
                    None => Vec::new(),
                },
                6 => gatekeeper.handle(now, clan_address, phone.ras_address, &phone.urq()),
                _ => {
                    let clan = c % config.clans.len();
                    let in_service = gatekeeper.clans()[clan].in_service;
                    gatekeeper.set_in_service(now, clan, !in_service)
                }
            };
            for transmit in out {
                let answer = Answer::read(&transmit.payload).unwrap();
                if let Answer::Gcf { ras_address, .. } = &answer {
                    gcf_target[p] = *ras_address;
                }
                if let Some(phone) = phones.iter_mut().find(|ph| ph.ras_address == transmit.to) {
                    phone.learn(&answer);
                }
            }
            let clans = gatekeeper.clans();
            let registrations = gatekeeper.registrations();
            for clan in &clans {
                prop_assert!(clan.sockets + clan.reserved <= clan.max_sockets,
                    "{} over its cap: {} + {} > {}", clan.name, clan.sockets, clan.reserved, clan.max_sockets);
                if !clan.in_service {
                    prop_assert_eq!(clan.sockets + clan.reserved, 0, "{} out of service with load", &clan.name);
                }
                let holders = registrations.iter().filter(|r| r.clan.as_deref() == Some(&clan.name)).count();
                prop_assert_eq!(holders as u32, clan.sockets, "{} sockets vs holders", &clan.name);
            }
            let sockets: u32 = clans.iter().map(|c| c.sockets).sum();
            let holding = registrations.iter().filter(|r| r.clan.is_some()).count();
            prop_assert_eq!(sockets as usize, holding);
            for registration in &registrations {
                if let (true, Some(clan)) = (registration.tts, &registration.clan) {
                    prop_assert!(registration.agl.contains(clan), "TTS socket outside the AGL");
                }
            }
        }
    }
}
