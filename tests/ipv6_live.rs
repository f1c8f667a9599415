//! IPv6 end to end: `rasgk serve` with `fixtures/lab/ipv6.toml` against `rasgk storm --ipv6`
//! (and an IPv4 storm beside it), with real sockets, on loopback inside a network namespace of
//! the test's own ([`support::netns`]: `fd00::/16` routed to `lo`, the gatekeeper's addresses
//! assigned). Outside judges: a hand model of the rules (docs/rules.md §2–§7, §17) for every
//! phone's C-LAN and AGL, tshark for every address the phones were sent, and the OS's count
//! of TCP connections (`/proc/net/tcp6`) for the sockets.
//!
//! Each outer test re-runs its `_inside` twin in a namespace; the twins are `#[ignore]`d and
//! do nothing outside one.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rasgk::config::{Config, Family};
use rasgk::gatekeeper::ClanView;
use support::lab::{self, StormChild};
use support::netns;
use support::server::Served;
use support::tcp::{self, ESTABLISHED};
use support::tshark::{self, Frame};

/// The lab's file.
fn lab_path() -> PathBuf {
    PathBuf::from(format!(
        "{}/fixtures/lab/ipv6.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// The lab as the gatekeeper reads it: its C-LANs' names, regions and addresses.
fn lab_config() -> Config {
    rasgk::config::load(&lab_path()).expect("fixtures/lab/ipv6.toml loads")
}

/// `rasgk serve` on the lab, its IPv6 addresses assigned to `lo` first (as a host would).
fn serve(config: &Config) -> Served {
    let mut own: BTreeSet<IpAddr> = config
        .clans
        .iter()
        .filter_map(|c| c.address6)
        .map(|a| a.ip())
        .collect();
    own.extend(config.gatekeeper.discovery6.map(|a| a.ip()));
    own.insert(config.admin.listen.ip());
    let own: Vec<String> = own
        .iter()
        .filter(|ip| ip.is_ipv6())
        .map(IpAddr::to_string)
        .collect();
    netns::assign(&own.iter().map(String::as_str).collect::<Vec<_>>());
    let path = lab_path();
    Served::start(&["--config", path.to_str().unwrap()], config.admin.listen)
}

/// `rasgk storm --sockets` of `phones` phones of `regions`, half TTS (IPv6 with `ipv6`, at
/// the lab's `discovery6`, extensions of their own), reading the admin port over IPv6 by a
/// URL with its host in brackets, in the background.
fn storm(config: &Config, ipv6: bool, phones: usize, regions: &str, more: &[&str]) -> StormChild {
    let target = match ipv6 {
        true => config
            .gatekeeper
            .discovery6
            .expect("the lab has discovery6"),
        false => config.gatekeeper.discovery,
    };
    let admin = format!("http://{}/", config.admin.listen);
    let family: &[&str] = match ipv6 {
        true => &["--ipv6", "--from", "61000", "--tts-from", "51000"],
        false => &["--from", "60000", "--tts-from", "50000"],
    };
    let more = [family, more].concat();
    lab::storm_against(&target.to_string(), &admin, phones, "0.5", regions, &more)
}

/// The lab's links by hand (fixtures/lab/ipv6.toml: 1—2, 2—3, 3—4 direct; 4—5 indirect with
/// agl): a home region's direct regions and its indirect regions offered, ascending
/// (docs/rules.md §2.3).
fn tiers(home: u8) -> (&'static [u8], &'static [u8]) {
    match home {
        1 => (&[2], &[]),
        2 => (&[1, 3], &[]),
        3 => (&[2, 4], &[]),
        4 => (&[3], &[5]),
        5 => (&[], &[4]),
        other => panic!("no region {other} in the lab"),
    }
}

/// A phone's home region as `rasgk storm` numbers it: 127.R.x.y, or fd00:0:R::x:y with R in
/// decimal digits.
fn home_of(ip: IpAddr) -> u8 {
    match ip {
        IpAddr::V4(ip) => ip.octets()[1],
        IpAddr::V6(ip) => format!("{:x}", ip.segments()[2])
            .parse()
            .unwrap_or_else(|_| panic!("{ip} is no storm phone's address")),
    }
}

/// The names, in configuration order, of the C-LANs of `regions` with an address of
/// `family`.
fn serving(config: &Config, regions: &[u8], family: Family) -> Vec<String> {
    config
        .clans
        .iter()
        .filter(|c| regions.iter().any(|&r| u16::from(r) == c.region) && c.serves(family))
        .map(|c| c.name.clone())
        .collect()
}

/// Whether `list` is `of` started somewhere and wrapped round (docs/rules.md §6.1: a random
/// start in the group's list).
fn is_rotation(list: &[String], of: &[String]) -> bool {
    list.len() == of.len()
        && (of.is_empty() || (0..of.len()).any(|k| of[k..].iter().chain(&of[..k]).eq(list.iter())))
}

/// The AGL the rules give a phone of `home` and `family` when every C-LAN is in service and
/// none is full, as its three groups (home, direct, indirect; each a rotation of its list).
/// The lab's groups are all within the quotas (6, 6, 4).
fn agl_groups(config: &Config, home: u8, family: Family) -> [Vec<String>; 3] {
    let (direct, indirect) = tiers(home);
    [
        serving(config, &[home], family),
        serving(config, direct, family),
        serving(config, indirect, family),
    ]
}

/// One registration as `/api/registrations` shows it.
struct Registration {
    ip: IpAddr,
    region: u8,
    tts: bool,
    clan: Option<String>,
    registered_via: String,
    agl: Vec<String>,
    socket: String,
}

fn registrations(served: &Served) -> Vec<Registration> {
    let all = served.get_json("/api/registrations");
    all.as_array()
        .expect("an array")
        .iter()
        .map(|r| {
            let ras: SocketAddr = r["ras_address"].as_str().unwrap().parse().unwrap();
            Registration {
                ip: ras.ip(),
                region: r["region"].as_u64().unwrap() as u8,
                tts: r["tts"].as_bool().unwrap(),
                clan: r["clan"].as_str().map(str::to_string),
                registered_via: r["registered_via"].as_str().unwrap().to_string(),
                agl: r["agl"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_str().unwrap().to_string())
                    .collect(),
                socket: r["socket"].as_str().unwrap_or("").to_string(),
            }
        })
        .collect()
}

/// Checks one registration against the rules' model; what was off, if anything.
fn off_the_model(config: &Config, r: &Registration) -> Option<String> {
    let family = Family::of(r.ip);
    let home = home_of(r.ip);
    let says = |what: String| Some(format!("{} ({family:?}, region {home}): {what}", r.ip));
    if r.region != home {
        return says(format!("home region {} (docs/rules.md §2.1)", r.region));
    }
    let clan = r.clan.as_deref().unwrap_or("none");
    let of_family = |name: &str| {
        config
            .clans
            .iter()
            .any(|c| c.name == name && c.serves(family))
    };
    if !of_family(clan) || !of_family(&r.registered_via) {
        return says(format!(
            "socket on {clan}, registered at {}: a C-LAN without an address of its family \
             (docs/rules.md §17)",
            r.registered_via
        ));
    }
    // The AGL: its groups in order, each a rotation of the group's C-LANs of its family.
    let groups = agl_groups(config, home, family);
    let mut rest = r.agl.as_slice();
    for (group, names) in ["home", "direct", "indirect"].iter().zip(&groups) {
        let (these, after) = rest.split_at(names.len().min(rest.len()));
        if !is_rotation(these, names) {
            return says(format!(
                "AGL {:?}: its {group} group is not a rotation of {names:?} \
                 (docs/rules.md §6.1, §17)",
                r.agl
            ));
        }
        rest = after;
    }
    if !rest.is_empty() {
        return says(format!("AGL {:?} has more than its groups", r.agl));
    }
    if r.tts {
        // docs/rules.md §7.1: an AGL entry of the home or direct regions (the lab has room
        // there).
        let first_group = groups[0].len() + groups[1].len();
        if !r.agl[..first_group].iter().any(|n| n == clan) {
            return says(format!(
                "TTS socket on {clan}, not among its AGL's home and direct entries {:?}",
                &r.agl[..first_group]
            ));
        }
    } else if r.registered_via != clan || !groups[0].iter().any(|n| n == clan) {
        // docs/rules.md §4.1 and §5.4: the GCF names a C-LAN of the home region (it has
        // room), and the socket stays where the RRQ went.
        return says(format!(
            "non-TTS socket on {clan}, registered at {}: not one C-LAN of {:?}",
            r.registered_via, groups[0]
        ));
    }
    if r.socket != "established" {
        return says(format!("socket {}", r.socket));
    }
    None
}

/// Every C-LAN as `/api/clans` shows it.
fn clan_views(served: &Served) -> Vec<ClanView> {
    serde_json::from_value(served.get_json("/api/clans")).expect("/api/clans is C-LAN views")
}

/// (name, region, load = sockets + reservations) of every C-LAN, from `/api/clans`.
fn loads(served: &Served) -> Vec<(String, u8, u64)> {
    clan_views(served)
        .into_iter()
        .map(|c| (c.name, c.region as u8, u64::from(c.sockets + c.reserved)))
        .collect()
}

/// The first of `names` with the least load (ties to the earlier one): the choice of
/// docs/rules.md §4.1 and §7.1 when every C-LAN has priority 1, as the lab's do.
fn least_loaded(names: &[String], loads: &[(String, u8, u64)]) -> Option<String> {
    let load = |name: &String| loads.iter().find(|l| &l.0 == name).map(|l| l.2);
    names.iter().min_by_key(|n| load(n)).cloned()
}

/// The gatekeeper's dry run (`/api/placement`) for a new phone of `region` and `family`,
/// TTS or not, held against the model worked out from the loads the admin port shows; the
/// loads are read before and after, and the question asked again until they held still.
fn placement_matches_the_model(served: &Served, config: &Config, region: u8, family: Family) {
    let ip = match family {
        Family::V4 => format!("127.{region}.200.1"),
        Family::V6 => format!("fd00:0:{region}::200:1"),
    };
    for _ in 0..50 {
        let before = loads(served);
        let ask = |alias: &str| served.get_json(&format!("/api/placement?ip={ip}&alias={alias}"));
        let (plain, tts) = (ask("69999"), ask("59999"));
        if loads(served) != before {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let groups = agl_groups(config, region, family);
        let gcf = least_loaded(&groups[0], &before);
        let what = format!("a new {family:?} phone of region {region}");
        assert_eq!(plain["region"], region, "{what}: {plain}");
        assert_eq!(plain["tts"], false, "{what}");
        assert_eq!(
            plain["gcf"].as_str(),
            gcf.as_deref(),
            "{what}: GCF (docs/rules.md §4.1)"
        );
        assert_eq!(
            plain["socket"], plain["gcf"],
            "{what}: its socket (docs/rules.md §5.4)"
        );
        assert_eq!(tts["tts"], true, "{what}, TTS");
        let agl: Vec<String> = serde_json::from_value(tts["agl"].clone()).unwrap();
        let registration = Registration {
            ip: ip.parse().unwrap(),
            region,
            tts: true,
            clan: tts["socket"].as_str().map(str::to_string),
            registered_via: tts["gcf"].as_str().unwrap_or("").to_string(),
            agl: agl.clone(),
            socket: "established".into(),
        };
        if let Some(off) = off_the_model(config, &registration) {
            panic!("{what}, TTS: {off}");
        }
        let first_group = groups[0].len() + groups[1].len();
        assert_eq!(
            tts["socket"].as_str(),
            least_loaded(&agl[..first_group], &before).as_deref(),
            "{what}, TTS: its socket on the least loaded AGL entry of home and direct \
             regions (docs/rules.md §7.1): {tts}"
        );
        return;
    }
    panic!("the admin port's loads never held still");
}

/// A frame's IP source and destination, from its `Internet Protocol Version N` line.
fn ends(frame: &Frame) -> (IpAddr, IpAddr) {
    let line = frame
        .lines
        .iter()
        .find(|l| l.depth == 0 && l.text.starts_with("Internet Protocol Version"))
        .unwrap_or_else(|| panic!("frame {} has no IP header", frame.number));
    let (_, addresses) = line.text.split_once(", Src: ").unwrap();
    let (src, dst) = addresses.split_once(", Dst: ").unwrap();
    (src.parse().unwrap(), dst.parse().unwrap())
}

/// The (ip, port) tshark shows for the TransportAddress whose line starts with `label`
/// among `lines`, with the alternative it names (`ip6Address (3)`, `ipAddress (0)`).
fn transport(lines: &[&support::tshark::Line], label: &str) -> (String, IpAddr, u16) {
    let head = lines
        .iter()
        .find(|l| l.starts_with_label(label))
        .and_then(|l| l.label_value())
        .map(|(_, v)| v.to_string())
        .unwrap_or_else(|| panic!("no {label}"));
    let inner = tshark::subtree_of(lines, label);
    let ip = tshark::values_of(inner.iter().copied(), "ip");
    let port = tshark::values_of(inner.iter().copied(), "port");
    let (Some(ip), Some(port)) = (ip.first(), port.first()) else {
        panic!("{label} {head} has no ip and port")
    };
    (head, ip.parse().unwrap(), port.parse().unwrap())
}

/// The messages [`tshark_checks`] checked, by kind.
#[derive(Debug, Default)]
struct Checked {
    gcfs: usize,
    rcfs: usize,
    alternate_gks: usize,
    acfs: usize,
}

/// What tshark shows of the addresses the gatekeeper sent the phones of `record`: each GCF's
/// rasAddress, each RCF's callSignalAddress and every AlternateGK's rasAddress, each routed
/// ACF's destCallSignalAddress, held against the C-LANs' addresses of the phones' family and
/// each phone's registration; no address of the other family anywhere.
fn tshark_checks(
    config: &Config,
    record: &std::path::Path,
    family: Family,
    registered: &BTreeMap<IpAddr, &Registration>,
) -> Checked {
    let decoded = tshark::decode(record, &[]);
    assert!(!decoded.frames.is_empty(), "{}", decoded.stderr);
    let address_of = |name: &str| {
        let clan = config.clans.iter().find(|c| c.name == name).unwrap();
        clan.ras_address(family).unwrap().ip()
    };
    let clans_of_family: BTreeSet<IpAddr> = config
        .clans
        .iter()
        .filter_map(|c| c.ras_address(family))
        .map(|a| a.ip())
        .collect();
    let (alternative, other) = match family {
        Family::V4 => ("ipAddress (0)", "ip6Address"),
        Family::V6 => ("ip6Address (3)", "ipAddress"),
    };
    let mut checked = Checked::default();
    for frame in &decoded.frames {
        let whose = |what: &str| format!("frame {} ({what}):\n{}", frame.number, frame.text());
        assert!(
            frame.malformed().is_empty(),
            "{}",
            whose(&format!("{:?}", frame.malformed()))
        );
        assert!(
            !frame.lines.iter().any(|l| l.text.contains(other)),
            "{}",
            whose(&format!("an {other} for a {family:?} phone"))
        );
        let (src, dst) = ends(frame);
        let lines: Vec<&support::tshark::Line> = frame.lines.iter().collect();
        match frame.ras_message().as_deref() {
            Some("gatekeeperConfirm") => {
                checked.gcfs += 1;
                let (head, ip, port) = transport(&lines, "rasAddress");
                let home = home_of(dst);
                assert_eq!(head, alternative, "{}", whose("GCF rasAddress"));
                let home_clans: Vec<IpAddr> = serving(config, &[home], family)
                    .iter()
                    .map(|n| address_of(n))
                    .collect();
                assert!(
                    home_clans.contains(&ip) && port == 1719,
                    "{}",
                    whose(&format!(
                        "GCF names {ip}:{port}, not one of {home_clans:?} (docs/rules.md §4.1)"
                    ))
                );
            }
            Some("registrationConfirm") => {
                checked.rcfs += 1;
                let signal = tshark::subtree_of(&lines, "callSignalAddress");
                let (head, ip, port) = transport(&signal, "TransportAddress");
                assert_eq!(head, alternative, "{}", whose("RCF callSignalAddress"));
                assert_eq!(
                    (ip, port),
                    (src, 1720),
                    "{}",
                    whose("the RCF's C-LAN's signalling address (docs/rules.md §5.5)")
                );
                // Every AlternateGK, in order: the registration's AGL in its family.
                let agl = tshark::subtree_of(&lines, "alternateGatekeeper");
                let mut ips = Vec::new();
                for item in 0.. {
                    let entry = tshark::subtree_of(&agl, &format!("Item {item}"));
                    if entry.is_empty() {
                        break;
                    }
                    let (head, ip, port) = transport(&entry, "rasAddress");
                    assert_eq!(
                        head,
                        alternative,
                        "{}",
                        whose("an AlternateGK's rasAddress")
                    );
                    assert!(
                        clans_of_family.contains(&ip) && port == 1719,
                        "{}",
                        whose(&format!("AlternateGK {ip}:{port}"))
                    );
                    ips.push(ip);
                }
                checked.alternate_gks += ips.len();
                let registration = registered
                    .get(&dst)
                    .unwrap_or_else(|| panic!("{}", whose("an RCF to a phone not registered")));
                let expected: Vec<IpAddr> =
                    registration.agl.iter().map(|n| address_of(n)).collect();
                assert_eq!(
                    ips,
                    expected,
                    "{}",
                    whose("the AGL /api/registrations shows")
                );
            }
            Some("admissionConfirm") => {
                checked.acfs += 1;
                let (head, ip, port) = transport(&lines, "destCallSignalAddress");
                assert_eq!(head, alternative, "{}", whose("ACF destCallSignalAddress"));
                // Routed (docs/rules.md §8.7): the C-LAN holding the caller's socket, its
                // signalling port.
                let caller = registered
                    .get(&dst)
                    .unwrap_or_else(|| panic!("{}", whose("an ACF to a phone not registered")));
                let clan = caller.clan.as_deref().expect("the caller holds a socket");
                assert_eq!(
                    (ip, port),
                    (address_of(clan), 1720),
                    "{}",
                    whose("the caller's C-LAN's signalling address")
                );
            }
            _ => {}
        }
    }
    checked
}

/// Routed calls each storm of the first test places.
const CALLS: usize = 40;

netns::tests! {
    ipv4_and_ipv6_phones_register_through_one_gatekeeper_each_over_its_family:
        ipv4_and_ipv6_phones_register_through_one_gatekeeper_inside => both_families_register;
    two_thousand_ipv6_phones_hold_a_socket_each_as_the_os_counts_them_and_call_each_other:
        two_thousand_ipv6_phones_hold_a_socket_each_inside => two_thousand_ipv6_phones;
    an_ipv6_storm_without_its_prefix_routed_to_lo_says_what_the_host_lacks:
        an_ipv6_storm_without_its_prefix_routed_to_lo_inside => a_storm_without_the_route;
}

fn both_families_register() {
    let Some(_) =
        tshark::require_tshark("ipv4_and_ipv6_phones_register_through_one_gatekeeper_inside")
    else {
        return;
    };
    let started = Instant::now();
    let config = lab_config();
    let mut served = serve(&config);
    let dir = std::env::temp_dir().join(format!("rasgk-ipv6-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (record6, record4) = (dir.join("ipv6.pcap"), dir.join("ipv4.pcap"));
    let per_storm = 450;
    // A few routed calls in each storm, once its phones are in service: their ACFs too.
    let calls = CALLS.to_string();
    let hold = [
        "--duration",
        "8",
        "--calls-per-s",
        "50",
        "--call-total",
        &calls,
        "--call-s",
        "0.5",
    ];
    let v6 = storm(
        &config,
        true,
        per_storm,
        "3,4,5",
        &[&["--record", record6.to_str().unwrap()], &hold[..]].concat(),
    );
    let v4 = storm(
        &config,
        false,
        per_storm,
        "1,2,3",
        &[&["--record", record4.to_str().unwrap()], &hold[..]].concat(),
    );
    // Every phone of both storms in service, then the model while they hold.
    lab::until(
        Duration::from_secs(40),
        "every phone of both storms in service",
        || {
            let all = registrations(&served);
            all.len() == 2 * per_storm && all.iter().all(|r| r.socket == "established")
        },
    );
    let all = registrations(&served);
    let off: Vec<String> = all
        .iter()
        .filter_map(|r| off_the_model(&config, r))
        .collect();
    assert!(
        off.is_empty(),
        "{} placements off the model: {off:#?}",
        off.len()
    );
    let families: BTreeMap<(Family, u8), usize> = all.iter().fold(BTreeMap::new(), |mut m, r| {
        *m.entry((Family::of(r.ip), r.region)).or_default() += 1;
        m
    });
    let expected: BTreeMap<(Family, u8), usize> = [
        ((Family::V4, 1), 150),
        ((Family::V4, 2), 150),
        ((Family::V4, 3), 150),
        ((Family::V6, 3), 150),
        ((Family::V6, 4), 150),
        ((Family::V6, 5), 150),
    ]
    .into();
    assert_eq!(families, expected, "phones per family and region");
    // The dual-stack C-LAN holds phones of both families, counted once.
    let dual: BTreeSet<Family> = all
        .iter()
        .filter(|r| r.clan.as_deref() == Some("dual-3"))
        .map(|r| Family::of(r.ip))
        .collect();
    assert_eq!(dual, [Family::V4, Family::V6].into(), "dual-3 serves both");
    for (family, region) in expected.keys() {
        placement_matches_the_model(&served, &config, *region, *family);
    }
    let by_ip: BTreeMap<IpAddr, &Registration> = all.iter().map(|r| (r.ip, r)).collect();
    let reports = [
        lab::report(v6, Duration::from_secs(60)),
        lab::report(v4, Duration::from_secs(60)),
    ];
    for report in &reports {
        assert_eq!(report["registered"], per_storm, "{report}");
        assert_eq!(report["phones_without_socket"], 0);
        assert_eq!(report["routed_calls"]["connected"], CALLS);
    }
    // The IPv6 storm's report names its C-LANs by their IPv6 signalling addresses — or, for
    // a C-LAN that holds only TTS sockets of this storm (no RCF named its signalling
    // address: dual-3 when region 3's IPv6 non-TTS phones all land on v6-3, which depends
    // on how the two storms interleave), by its IPv6 address alone (storm/tally.rs).
    let held = reports[0]["sockets_held"].as_object().unwrap();
    assert!(
        held.keys().all(|k| {
            k.parse::<SocketAddr>().is_ok_and(|a| a.is_ipv6())
                || k.parse::<IpAddr>().is_ok_and(|a| a.is_ipv6())
        }),
        "{held:?}"
    );
    for (record, family) in [(&record6, Family::V6), (&record4, Family::V4)] {
        let checked = tshark_checks(&config, record, family, &by_ip);
        assert!(
            checked.gcfs >= per_storm && checked.rcfs >= per_storm && checked.acfs >= CALLS,
            "{family:?} storm: {checked:?}"
        );
        eprintln!("tshark, {family:?} storm: {checked:?}, every address of its family");
    }
    eprintln!("{:.1} s", started.elapsed().as_secs_f64());
    std::fs::remove_dir_all(&dir).ok();
    served.stop();
}

/// Established connections per C-LAN as the OS shows them on its addresses of either family
/// (`/proc/net/tcp` and `/proc/net/tcp6`), and as the admin port counts them, read when the
/// admin port's figures held still around the OS's.
fn os_and_admin(
    served: &Served,
    config: &Config,
) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let ips: Vec<(String, Vec<IpAddr>)> = config
        .clans
        .iter()
        .map(|c| (c.name.clone(), c.ras_addresses().map(|a| a.ip()).collect()))
        .collect();
    let every_ip: Vec<IpAddr> = ips.iter().flat_map(|(_, ips)| ips.clone()).collect();
    let admin = || -> BTreeMap<String, u64> {
        clan_views(served)
            .into_iter()
            .map(|c| (c.name, u64::from(c.established)))
            .collect()
    };
    for _ in 0..50 {
        let before = admin();
        let os = tcp::count_by_local_ip_steady(&every_ip, ESTABLISHED);
        if admin() == before {
            let os = ips
                .iter()
                .map(|(name, ips)| (name.clone(), ips.iter().map(|ip| os[ip] as u64).sum()))
                .collect();
            return (os, before);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the admin port's figures never held still");
}

fn two_thousand_ipv6_phones() {
    let started = Instant::now();
    let phones = 2_000;
    let config = lab_config();
    let mut served = serve(&config);
    let child = storm(
        &config,
        true,
        phones,
        "3,4,5",
        &[
            "--processes",
            "2",
            "--duration",
            "4",
            // Routed calls between the IPv6 phones, once every phone is in service.
            "--calls-per-s",
            "100",
            "--call-total",
            "200",
            "--call-s",
            "1",
        ],
    );
    let (os, admin) = loop {
        let all = registrations(&served);
        if all.len() == phones && all.iter().all(|r| r.socket == "established") {
            break os_and_admin(&served, &config);
        }
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "not every phone in service: {} registered",
            all.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        os, admin,
        "the OS's connections per C-LAN are the admin port's"
    );
    assert_eq!(admin.values().sum::<u64>(), phones as u64);
    for name in ["v4-1a", "v4-1b", "v4-2a", "v4-2b", "v4-3"] {
        assert_eq!(admin[name], 0, "{name} has no IPv6 address");
    }
    let report = lab::report(child, Duration::from_secs(60));
    assert_eq!(report["registered"], phones);
    assert_eq!(report["phones_without_socket"], 0);
    let calls = &report["routed_calls"];
    assert_eq!(
        (&calls["placed"], &calls["connected"], &calls["failed"]),
        (&200.into(), &200.into(), &serde_json::json!({})),
        "every routed call between IPv6 phones connected: {calls}"
    );
    // The report's sockets, by the C-LAN of each IPv6 signalling address.
    let by_address: BTreeMap<String, String> = config
        .clans
        .iter()
        .filter_map(|c| Some((c.signal_address_of(Family::V6)?.to_string(), c.name.clone())))
        .collect();
    let held = lab::held_by_clan(&report, |address| {
        by_address.get(address).cloned().unwrap_or_else(|| {
            panic!("the report names {address}, no C-LAN's IPv6 signalling address")
        })
    });
    assert_eq!(
        held,
        lab::nonzero(&admin),
        "the report's sockets are the OS's"
    );
    eprintln!(
        "{phones} IPv6 phones in service, {} sockets as the OS, the admin port and the report \
         count them; time to service {}; {:.1} s",
        admin.values().sum::<u64>(),
        report["time_to_service_ms"],
        started.elapsed().as_secs_f64()
    );
    served.stop();
}

fn a_storm_without_the_route() {
    netns::ip(&["-6", "route", "del", "local", netns::PREFIX, "dev", "lo"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rasgk"))
        .args(["storm", "--ipv6", "--target", "[::1]:1719", "--phones", "2"])
        .args(["--regions", "7", "--give-up-s", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("phone address fd00:0:7::1:1 is not an address of this host")
            && stderr.contains("ip -6 route add local fd00::/16 dev lo"),
        "{stderr}"
    );
}
