//! From the file model to the checked [`Config`]: every check of a config file that serde
//! cannot do, each refusing with the field it concerns ("parse, don't validate").
//!
//! Sections are converted in dependency order: regions first (everything else names them),
//! then the gatekeeper (its default region, its discovery address), the AGL quotas, links,
//! C-LANs (which must not sit on the discovery address), TTS rules and the admin port.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use ipnet::IpNet;

use super::address::address;
use super::error::Fault;
use super::file::{
    AdminFile, AglFile, ClanFile, FileConfig, GatekeeperFile, LimitsFile, LinkFile, PasswordFile,
    RebalanceFile, RegionFile, TtsFile,
};
use super::model::{
    AdminSettings, AglQuotas, AliasPassword, CallSignalling, Clan, Config, Family,
    GatekeeperSettings, Limits, Link, Rebalance, Region, RegionId, SocketMode, TtsRule,
};

/// Region numbers allowed (docs/rules.md §1: "a number from 1 to 2000").
const REGION_IDS: std::ops::RangeInclusive<i64> = 1..=2000;
/// Longest `gatekeeperIdentifier` (H.225.0: BMPString of 1..128 characters).
const MAX_GATEKEEPER_ID: usize = 128;
/// Longest AGL: AlternateGK priorities are 0..=127.
const MAX_AGL: usize = 128;
/// How many region numbers an "is not defined" message lists before it stops.
const LISTED_REGIONS: usize = 20;
/// `[rebalance] moves_per_s`: from one move in 1,000 s to 1,000 moves a second.
const MOVES_PER_S: std::ops::RangeInclusive<f64> = 0.001..=1000.0;
/// The longest `[rebalance] hold_off_s`: a week.
const MAX_HOLD_OFF_S: i64 = 7 * 24 * 3600;

/// The checked configuration of a parsed file.
pub(crate) fn convert(file: FileConfig) -> Result<Config, Fault> {
    let regions = regions(&file.region)?;
    let known = KnownRegions::new(&regions);
    let gatekeeper = gatekeeper(&file.gatekeeper, &known)?;
    if gatekeeper.strict_network_map && regions.iter().all(|r| r.networks.is_empty()) {
        return Err(Fault::new(
            "gatekeeper.strict_network_map",
            "is true but no [[region]] has `networks`: every phone would be refused \
             (give the regions their networks, or leave strict_network_map out)",
        ));
    }
    let agl = agl(&file.agl)?;
    let links = links(&file.link, &known)?;
    let discoveries: Vec<SocketAddr> = std::iter::once(gatekeeper.discovery)
        .chain(gatekeeper.discovery6)
        .collect();
    let clans = clans(&file.clan, &known, &discoveries)?;
    if gatekeeper.sockets == SocketMode::Tcp {
        signal_addresses_apart(&clans)?;
    }
    let tts = tts_rules(&file.tts, &known)?;
    let admin = admin(&file.admin)?;
    let passwords = passwords(&file.password)?;
    let limits = limits(&file.limits)?;
    let rebalance = file
        .rebalance
        .as_ref()
        .map(rebalance)
        .transpose()?
        .flatten();
    let routing = super::routing::routing(
        &file.node,
        &file.trunk,
        &file.route_group,
        &file.route_list,
        &file.route_pattern,
        &clans,
    )?;
    Ok(Config {
        gatekeeper,
        agl,
        regions,
        links,
        clans,
        tts,
        admin,
        nodes: routing.nodes,
        trunks: routing.trunks,
        route_groups: routing.route_groups,
        route_lists: routing.route_lists,
        route_patterns: routing.route_patterns,
        passwords,
        limits,
        rebalance,
    })
}

/// In socket mode every C-LAN listens on its signalling address, so no two may share one.
fn signal_addresses_apart(clans: &[Clan]) -> Result<(), Fault> {
    for (i, clan) in clans.iter().enumerate() {
        let address = clan.signal_address();
        if let Some(other) = clans[..i].iter().find(|c| c.signal_address() == address) {
            return Err(Fault::new(
                format!("clan[{i}].signal_port"),
                format!(
                    "with sockets = \"tcp\" clan {:?} would listen on {address}, where clan {:?} \
                     listens already: give one of them another signal_port or IP",
                    clan.name, other.name
                ),
            ));
        }
    }
    Ok(())
}

/// The region numbers defined, for resolving references to them.
struct KnownRegions {
    ids: Vec<RegionId>,
}

impl KnownRegions {
    fn new(regions: &[Region]) -> Self {
        let mut ids: Vec<RegionId> = regions.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        KnownRegions { ids }
    }

    /// `value` as a defined region, or a fault of `field`.
    fn resolve(&self, field: &str, value: i64) -> Result<RegionId, Fault> {
        match RegionId::try_from(value) {
            Ok(id) if self.ids.binary_search(&id).is_ok() => Ok(id),
            _ => Err(Fault::new(
                field,
                format!("region {value} is not defined ({})", self.listing()),
            )),
        }
    }

    fn listing(&self) -> String {
        if self.ids.is_empty() {
            return "no [[region]] is configured".to_owned();
        }
        let mut shown: Vec<String> = self
            .ids
            .iter()
            .take(LISTED_REGIONS)
            .map(|id| id.to_string())
            .collect();
        if self.ids.len() > LISTED_REGIONS {
            shown.push(format!("… {} in all", self.ids.len()));
        }
        format!("regions: {}", shown.join(", "))
    }
}

fn regions(entries: &[RegionFile]) -> Result<Vec<Region>, Fault> {
    let mut regions: Vec<Region> = Vec::with_capacity(entries.len());
    // Network (with host bits cleared) → (region index, network index) that listed it.
    let mut networks_seen: HashMap<IpNet, (usize, usize)> = HashMap::new();
    for (i, entry) in entries.iter().enumerate() {
        let field = format!("region[{i}]");
        let id = region_id(&format!("{field}.id"), entry.id)?;
        if let Some(first) = regions.iter().position(|r| r.id == id) {
            return Err(Fault::new(
                format!("{field}.id"),
                format!("region {id} is already defined by region[{first}]"),
            ));
        }
        let mut networks = Vec::with_capacity(entry.networks.len());
        for (n, text) in entry.networks.iter().enumerate() {
            let net_field = format!("{field}.networks[{n}]");
            let net = network(&net_field, text)?;
            if let Some(&(r, m)) = networks_seen.get(&net) {
                let reason = if r == i {
                    format!("{net} is listed twice in this region (networks[{m}])")
                } else {
                    format!(
                        "{net} is already mapped to region {} by region[{r}].networks[{m}]",
                        regions[r].id
                    )
                };
                return Err(Fault::new(net_field, reason));
            }
            networks_seen.insert(net, (i, n));
            networks.push(net);
        }
        regions.push(Region {
            id,
            name: entry.name.clone(),
            networks,
        });
    }
    Ok(regions)
}

/// A region number being defined (not referenced): in range.
fn region_id(field: &str, value: i64) -> Result<RegionId, Fault> {
    if REGION_IDS.contains(&value) {
        // In range, so it fits.
        RegionId::try_from(value).map_err(|_| Fault::new(field, "region id does not fit"))
    } else {
        Err(Fault::new(
            field,
            format!(
                "region id {value} is outside {}..={}",
                REGION_IDS.start(),
                REGION_IDS.end()
            ),
        ))
    }
}

/// A CIDR network, kept with its host bits cleared so that equal networks compare equal.
fn network(field: &str, text: &str) -> Result<IpNet, Fault> {
    // A prefix too long for its family says so, rather than "not a network".
    if let Some((ip, length)) = text.split_once('/') {
        if let (Ok(ip), Ok(length)) = (ip.parse::<std::net::IpAddr>(), length.parse::<u32>()) {
            let (most, family) = match ip {
                std::net::IpAddr::V4(_) => (32, "IPv4"),
                std::net::IpAddr::V6(_) => (128, "IPv6"),
            };
            if length > most {
                return Err(Fault::new(
                    field,
                    format!(
                        "{text:?} has a prefix of {length} bits, longer than an {family} \
                         address ({most} bits)"
                    ),
                ));
            }
        }
    }
    text.parse::<IpNet>().map(|net| net.trunc()).map_err(|_| {
        Fault::new(
            field,
            format!("{text:?} is not a CIDR network such as \"10.1.0.0/16\" or \"2001:db8::/32\""),
        )
    })
}

fn at_least_one(field: &str, value: u64) -> Result<(), Fault> {
    if value == 0 {
        Err(Fault::new(field, "must be at least 1"))
    } else {
        Ok(())
    }
}

fn gatekeeper(gk: &GatekeeperFile, known: &KnownRegions) -> Result<GatekeeperSettings, Fault> {
    let discovery = address("gatekeeper.discovery", &gk.discovery)?;
    let discovery6 = gk
        .discovery6
        .as_deref()
        .map(|text| address("gatekeeper.discovery6", text))
        .transpose()?;
    if let Some(second) = discovery6 {
        if Family::of(second.ip()) == Family::of(discovery.ip()) {
            return Err(Fault::new(
                "gatekeeper.discovery6",
                format!(
                    "{second} is of the same family as discovery ({discovery}); discovery6 is \
                     the discovery address of the other family (IPv6 beside IPv4), so that \
                     phones of both can find the gatekeeper"
                ),
            ));
        }
    }
    gatekeeper_id(&gk.gatekeeper_id)?;
    at_least_one("gatekeeper.ttl_s", gk.ttl_s.into())?;
    at_least_one("gatekeeper.gcf_hold_s", gk.gcf_hold_s.into())?;
    let default_region = known.resolve("gatekeeper.default_region", gk.default_region)?;
    at_least_one("gatekeeper.password_window_s", gk.password_window_s.into())?;
    at_least_one(
        "gatekeeper.max_setups_per_clan",
        gk.max_setups_per_clan.into(),
    )?;
    at_least_one("gatekeeper.setup_timeout_ms", gk.setup_timeout_ms.into())?;
    at_least_one("gatekeeper.keepalive_s", gk.keepalive_s.into())?;
    at_least_one(
        "gatekeeper.call_setup_timeout_s",
        gk.call_setup_timeout_s.into(),
    )?;
    if gk.call_signalling == CallSignalling::Routed && gk.sockets != SocketMode::Tcp {
        return Err(Fault::new(
            "gatekeeper.call_signalling",
            "is \"routed\", which needs sockets = \"tcp\": routed calls run over the C-LANs' \
             real signalling connections (set sockets = \"tcp\", or call_signalling = \"direct\")",
        ));
    }
    Ok(GatekeeperSettings {
        discovery,
        discovery6,
        multicast: gk.multicast,
        gatekeeper_id: gk.gatekeeper_id.clone(),
        ttl_s: gk.ttl_s,
        gcf_hold_s: gk.gcf_hold_s,
        default_region,
        tier_mode: gk.tier_mode,
        tts_default: gk.tts_default,
        seed: gk.seed,
        sockets: gk.sockets,
        max_setups_per_clan: gk.max_setups_per_clan,
        setup: Duration::from_millis(gk.setup_ms.into()),
        setup_timeout: Duration::from_millis(gk.setup_timeout_ms.into()),
        keepalive: Duration::from_secs(gk.keepalive_s.into()),
        call_signalling: gk.call_signalling,
        call_setup_timeout: Duration::from_secs(gk.call_setup_timeout_s.into()),
        strict_network_map: gk.strict_network_map,
        password_window_s: gk.password_window_s,
    })
}

/// The `gatekeeperIdentifier` is a BMPString of 1..128 characters.
fn gatekeeper_id(id: &str) -> Result<(), Fault> {
    const FIELD: &str = "gatekeeper.gatekeeper_id";
    let length = id.chars().count();
    if length == 0 {
        return Err(Fault::new(FIELD, "is empty; it needs 1 to 128 characters"));
    }
    if length > MAX_GATEKEEPER_ID {
        return Err(Fault::new(
            FIELD,
            format!("has {length} characters; at most {MAX_GATEKEEPER_ID} are allowed"),
        ));
    }
    if let Some(c) = id.chars().find(|&c| u32::from(c) > 0xFFFF) {
        return Err(Fault::new(
            FIELD,
            format!(
                "character U+{:04X} is outside the Basic Multilingual Plane \
                 (gatekeeperIdentifier is a BMPString)",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

fn agl(agl: &AglFile) -> Result<AglQuotas, Fault> {
    if agl.max > MAX_AGL {
        return Err(Fault::new(
            "agl.max",
            format!(
                "{} is more than {MAX_AGL} (AlternateGK priorities are 0..=127)",
                agl.max
            ),
        ));
    }
    Ok(AglQuotas {
        max: agl.max,
        home: agl.home,
        direct: agl.direct,
        indirect: agl.indirect,
    })
}

fn links(entries: &[LinkFile], known: &KnownRegions) -> Result<Vec<Link>, Fault> {
    let mut links: Vec<Link> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = format!("link[{i}].regions");
        let [near, far] = entry.regions[..] else {
            return Err(Fault::new(
                field,
                format!(
                    "a link joins exactly two regions, not {}",
                    entry.regions.len()
                ),
            ));
        };
        if near == far {
            return Err(Fault::new(
                field,
                format!("a link joins two different regions, not {near} and {far}"),
            ));
        }
        let near = known.resolve(&format!("{field}[0]"), near)?;
        let far = known.resolve(&format!("{field}[1]"), far)?;
        let link = Link {
            near,
            far,
            kind: entry.kind,
            agl: entry.agl,
            symmetric: entry.symmetric,
        };
        if let Some(first) = links.iter().position(|l| duplicates(l, &link)) {
            return Err(Fault::new(
                field,
                format!("regions {near} and {far} are already linked by link[{first}]"),
            ));
        }
        links.push(link);
    }
    Ok(links)
}

/// Whether two links say something about the same direction: the same pair in the same
/// order, or in either order when either holds both ways. (Two one-way links in opposite
/// directions are how a pair gets different kinds or `agl` each way.)
fn duplicates(a: &Link, b: &Link) -> bool {
    let same = a.near == b.near && a.far == b.far;
    let reversed = a.near == b.far && a.far == b.near;
    same || (reversed && (a.symmetric || b.symmetric))
}

/// A C-LAN's RAS addresses (docs/rules.md §17): `address` (IPv4, or IPv6 for a board that
/// has no IPv4 address), `address6` (IPv6), or both; at least one. The primary address and
/// the IPv6 one, if any.
fn clan_addresses(
    field: impl Fn(&str) -> String,
    entry: &ClanFile,
) -> Result<(SocketAddr, Option<SocketAddr>), Fault> {
    let given = entry
        .address
        .as_deref()
        .map(|text| address(&field("address"), text))
        .transpose()?;
    let given6 = entry
        .address6
        .as_deref()
        .map(|text| address(&field("address6"), text))
        .transpose()?;
    if let Some(six) = given6 {
        if !six.is_ipv6() {
            return Err(Fault::new(
                field("address6"),
                format!(
                    "{six} is an IPv4 address; address6 takes the C-LAN's IPv6 address, such \
                     as \"[fd00::1]:1719\" (an IPv4 address goes in address)"
                ),
            ));
        }
    }
    match (given, given6) {
        (None, None) => Err(Fault::new(
            field("address"),
            format!(
                "clan {:?} has neither address (IPv4) nor address6 (IPv6); a C-LAN needs at \
                 least one",
                entry.name
            ),
        )),
        (Some(address), Some(_)) if address.is_ipv6() => Err(Fault::new(
            field("address6"),
            format!(
                "clan {:?} has an IPv6 address in address ({address}) already; one board has \
                 one address of each family: give its IPv4 address in address, or leave \
                 address6 out",
                entry.name
            ),
        )),
        (Some(address), six) => Ok((address, six.or(address.is_ipv6().then_some(address)))),
        (None, Some(six)) => Ok((six, Some(six))),
    }
}

fn clans(
    entries: &[ClanFile],
    known: &KnownRegions,
    discoveries: &[SocketAddr],
) -> Result<Vec<Clan>, Fault> {
    if entries.is_empty() {
        return Err(Fault::new(
            "clan",
            "no [[clan]] is configured; the gatekeeper needs at least one C-LAN",
        ));
    }
    let mut clans: Vec<Clan> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = |key: &str| format!("clan[{i}].{key}");
        if entry.name.is_empty() {
            return Err(Fault::new(field("name"), "is empty; a C-LAN needs a name"));
        }
        if let Some(first) = clans.iter().position(|c| c.name == entry.name) {
            return Err(Fault::new(
                field("name"),
                format!("{:?} is already the name of clan[{first}]", entry.name),
            ));
        }
        let region = known.resolve(&field("region"), entry.region)?;
        let (primary, address6) = clan_addresses(field, entry)?;
        for address in std::iter::once(primary).chain(address6.filter(|&a| a != primary)) {
            // The field it came from: address6 unless it is the one `address` gave.
            let given_as = if entry.address.is_some() && address == primary {
                "address"
            } else {
                "address6"
            };
            clan_address_apart(&field(given_as), address, &entry.name, &clans, discoveries)?;
        }
        if entry.priority == 0 {
            return Err(Fault::new(
                field("priority"),
                "must be at least 1 (1 is the best)",
            ));
        }
        at_least_one(&field("max_sockets"), entry.max_sockets.into())?;
        at_least_one(&field("signal_port"), entry.signal_port.into())?;
        if let Some(warn) = entry.warn_sockets {
            if warn == 0 || warn > entry.max_sockets {
                return Err(Fault::new(
                    field("warn_sockets"),
                    format!(
                        "is {warn}; it must be 1 to max_sockets ({}), or left out for no \
                         warning",
                        entry.max_sockets
                    ),
                ));
            }
        }
        if entry.node.is_empty() {
            return Err(Fault::new(
                field("node"),
                "is empty; leave it out for the default node \"cm1\"",
            ));
        }
        clans.push(Clan {
            name: entry.name.clone(),
            region,
            address: primary,
            address6,
            priority: entry.priority,
            max_sockets: entry.max_sockets,
            in_service: entry.in_service,
            kind: entry.kind,
            node: entry.node.clone(),
            signal_port: entry.signal_port,
            warn_sockets: entry.warn_sockets,
        });
    }
    Ok(clans)
}

/// One RAS address of a C-LAN (the field `field`): reachable (no wildcard, a real port), not a
/// discovery address, and no other C-LAN's.
fn clan_address_apart(
    field: &str,
    address: SocketAddr,
    name: &str,
    clans: &[Clan],
    discoveries: &[SocketAddr],
) -> Result<(), Fault> {
    if address.ip().is_unspecified() {
        return Err(Fault::new(
            field,
            format!(
                "{address} is a wildcard address; a C-LAN's address is sent to phones in GCF, \
                 so it must be one they can reach"
            ),
        ));
    }
    if address.port() == 0 {
        return Err(Fault::new(
            field,
            format!(
                "{address} has port 0; a C-LAN's address is sent to phones in GCF, so it needs \
                 its real port (RAS is 1719)"
            ),
        ));
    }
    if discoveries.contains(&address) {
        return Err(Fault::new(
            field,
            format!(
                "{address} of clan {name:?} is a discovery address (gatekeeper.discovery or \
                 discovery6), which is not a C-LAN"
            ),
        ));
    }
    if let Some(other) = clans
        .iter()
        .find(|c| c.ras_addresses().any(|a| a == address))
    {
        return Err(Fault::new(
            field,
            format!(
                "{address} of clan {name:?} is already an address of clan {:?}",
                other.name
            ),
        ));
    }
    Ok(())
}

fn tts_rules(entries: &[TtsFile], known: &KnownRegions) -> Result<Vec<TtsRule>, Fault> {
    let mut rules = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let aliases = entry.aliases.clone().unwrap_or_default();
        let wanted = entry.regions.as_deref().unwrap_or_default();
        if aliases.is_empty() && wanted.is_empty() {
            return Err(Fault::new(
                format!("tts[{i}]"),
                "a rule needs `aliases` or `regions` (for all phones, set gatekeeper.tts_default)",
            ));
        }
        if let Some(n) = aliases.iter().position(String::is_empty) {
            return Err(Fault::new(
                format!("tts[{i}].aliases[{n}]"),
                "an empty pattern matches no alias; use \"*\" for any alias",
            ));
        }
        let regions = wanted
            .iter()
            .enumerate()
            .map(|(n, &r)| known.resolve(&format!("tts[{i}].regions[{n}]"), r))
            .collect::<Result<Vec<_>, _>>()?;
        rules.push(TtsRule {
            aliases,
            regions,
            tts: entry.tts,
        });
    }
    Ok(rules)
}

/// A password or alias text the H.235 ClearToken can hold: 1..=127 characters of the BMP,
/// no NUL (the hash adds one).
fn token_text(field: &str, text: &str) -> Result<(), Fault> {
    let max = crate::ras::h235::MAX_TEXT;
    let length = text.chars().count();
    if length == 0 {
        return Err(Fault::new(field, "is empty"));
    }
    if length > max {
        return Err(Fault::new(
            field,
            format!("has {length} characters; at most {max} fit the H.235 token"),
        ));
    }
    if let Some(c) = text.chars().find(|&c| c == '\0' || u32::from(c) >= 0xFFFE) {
        return Err(Fault::new(
            field,
            format!(
                "character U+{:04X} cannot be hashed (the H.235 token holds BMPStrings \
                 without NUL)",
                u32::from(c)
            ),
        ));
    }
    Ok(())
}

fn passwords(entries: &[PasswordFile]) -> Result<Vec<AliasPassword>, Fault> {
    let mut passwords: Vec<AliasPassword> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        token_text(&format!("password[{i}].alias"), &entry.alias)?;
        if let Some(first) = passwords.iter().position(|p| p.alias == entry.alias) {
            return Err(Fault::new(
                format!("password[{i}].alias"),
                format!(
                    "{:?} already has a password (password[{first}])",
                    entry.alias
                ),
            ));
        }
        token_text(&format!("password[{i}].secret"), &entry.secret)?;
        passwords.push(AliasPassword {
            alias: entry.alias.clone(),
            secret: entry.secret.clone(),
        });
    }
    Ok(passwords)
}

fn admin(admin: &AdminFile) -> Result<AdminSettings, Fault> {
    let listen = address("admin.listen", &admin.listen)?;
    if admin.token.as_deref() == Some("") {
        return Err(Fault::new(
            "admin.token",
            "is empty; leave it out to allow changes without a token",
        ));
    }
    // Without a token anyone who reaches the admin port may take C-LANs out of service;
    // off loopback that is anyone on the network.
    if !listen.ip().to_canonical().is_loopback() && admin.token.is_none() {
        return Err(Fault::new(
            "admin.listen",
            format!(
                "{listen} ([admin] listen) is not a loopback address and [admin] token is not \
                 set: an admin port other hosts can reach needs [admin] token = \"…\" \
                 (changes then need `Authorization: Bearer …`), or listen on 127.0.0.1"
            ),
        ));
    }
    Ok(AdminSettings {
        listen,
        token: admin.token.clone(),
    })
}

fn limits(limits: &LimitsFile) -> Result<Limits, Fault> {
    for (field, value) in [
        ("limits.burst_per_source", limits.burst_per_source),
        ("limits.max_sources", limits.max_sources),
        ("limits.max_reservations", limits.max_reservations),
        ("limits.max_cached_replies", limits.max_cached_replies),
        ("limits.reflection_ratio", limits.reflection_ratio),
    ] {
        at_least_one(field, value.into())?;
    }
    // u32 → usize cannot fail on the 32- and 64-bit targets rasgk builds for.
    let size = |value: u32| usize::try_from(value).unwrap_or(usize::MAX);
    Ok(Limits {
        rate_per_source: (limits.rate_per_source > 0).then_some(limits.rate_per_source),
        burst_per_source: limits.burst_per_source,
        max_sources: size(limits.max_sources),
        max_reservations: size(limits.max_reservations),
        max_cached_replies: size(limits.max_cached_replies),
        reflection_ratio: size(limits.reflection_ratio),
        max_frame_octets: u16::try_from(limits.max_frame_octets)
            .ok()
            .filter(|&octets| octets >= 4)
            .ok_or_else(|| {
                Fault::new(
                    "limits.max_frame_octets",
                    format!(
                        "{} is outside 4..=65535 (a TPKT frame's length, its 4-octet header \
                         included)",
                        limits.max_frame_octets
                    ),
                )
            })?,
    })
}

/// `[rebalance]`, checked even when `enabled = false` (so that switching it on later cannot
/// fail); `None` when it is switched off.
fn rebalance(table: &RebalanceFile) -> Result<Option<Rebalance>, Fault> {
    let tolerance = u32::try_from(table.tolerance)
        .ok()
        .filter(|&tolerance| tolerance >= 1)
        .ok_or_else(|| {
            Fault::new(
                "rebalance.tolerance",
                format!(
                    "is {}; it must be at least 1 (and at most {}): how many sockets a \
                     C-LAN may stand above the lightest of its class",
                    table.tolerance,
                    u32::MAX
                ),
            )
        })?;
    if !MOVES_PER_S.contains(&table.moves_per_s) {
        return Err(Fault::new(
            "rebalance.moves_per_s",
            format!(
                "is {}; it must be more than 0: from {} to {} moves a second (0.5 is one move \
                 every 2 s)",
                table.moves_per_s,
                MOVES_PER_S.start(),
                MOVES_PER_S.end()
            ),
        ));
    }
    let hold_off_s = u64::try_from(table.hold_off_s)
        .ok()
        .filter(|&seconds| seconds <= MAX_HOLD_OFF_S as u64)
        .ok_or_else(|| {
            Fault::new(
                "rebalance.hold_off_s",
                format!(
                    "is {}; it must be 0 to {MAX_HOLD_OFF_S} seconds (a week): how long a \
                     phone moved is left where it went",
                    table.hold_off_s
                ),
            )
        })?;
    Ok(table.enabled.then_some(Rebalance {
        tolerance,
        moves_per_s: table.moves_per_s,
        hold_off: Duration::from_secs(hold_off_s),
    }))
}

#[cfg(test)]
mod tests {
    use crate::config::{from_toml, ClanKind, ConfigError, LinkKind};

    const BASE: &str = r#"
        [[region]]
        id = 1
        networks = ["10.1.0.0/16"]
        [[region]]
        id = 2
        networks = ["10.2.0.0/16"]
        [[region]]
        id = 3
        [[clan]]
        name = "a"
        region = 1
        address = "10.1.0.1:1719"
    "#;

    fn with(extra: &str) -> Result<crate::config::Config, ConfigError> {
        from_toml(&format!("{BASE}\n{extra}"), "t.toml")
    }

    fn refused(extra: &str) -> ConfigError {
        with(extra).expect_err("the config is refused")
    }

    #[test]
    fn base_converts() {
        let config = with("").expect("base config is valid");
        assert_eq!(config.regions.len(), 3);
        assert_eq!(config.clans[0].kind, ClanKind::Clan);
        assert_eq!(config.gatekeeper.default_region, 1);
    }

    #[test]
    fn clan_with_unknown_region_names_index_and_lists_regions() {
        let e = refused("[[clan]]\nname = \"b\"\nregion = 9\naddress = \"10.1.0.2:1719\"\n");
        assert_eq!(e.field, "clan[1].region");
        assert_eq!(e.reason, "region 9 is not defined (regions: 1, 2, 3)");
        assert_eq!(
            e.to_string(),
            "t.toml: clan[1].region: region 9 is not defined (regions: 1, 2, 3)"
        );
    }

    #[test]
    fn duplicate_clan_address_names_both_clans() {
        let e = refused("[[clan]]\nname = \"b\"\nregion = 1\naddress = \"10.1.0.1:1719\"\n");
        assert_eq!(e.field, "clan[1].address");
        assert!(
            e.reason
                .contains("10.1.0.1:1719 of clan \"b\" is already an address of clan \"a\""),
            "{e}"
        );
    }

    #[test]
    fn networks_compare_without_host_bits() {
        let e = refused("[[region]]\nid = 4\nnetworks = [\"10.1.7.7/16\"]\n");
        assert_eq!(e.field, "region[3].networks[0]");
        assert!(e.reason.contains("region[0].networks[0]"), "{e}");
        let config = with("").expect("valid");
        assert_eq!(config.regions[0].networks[0].to_string(), "10.1.0.0/16");
    }

    #[test]
    fn ipv6_addresses_and_networks() {
        let config = with(
            "[[region]]\nid = 4\nnetworks = [\"2001:db8::/32\"]\n\
             [[clan]]\nname = \"v6\"\nregion = 4\naddress = \"[2001:db8::1]:1719\"\n",
        )
        .expect("IPv6 is accepted");
        assert_eq!(config.clans[1].address.to_string(), "[2001:db8::1]:1719");
        assert_eq!(
            config.mapped_region("2001:db8::9".parse().expect("ip")),
            Some(4)
        );
    }

    #[test]
    fn reversed_link_is_a_duplicate_unless_both_are_one_way() {
        let e = refused(
            "[[link]]\nregions = [1, 2]\nkind = \"direct\"\n\
             [[link]]\nregions = [2, 1]\nkind = \"indirect\"\n",
        );
        assert_eq!(e.field, "link[1].regions");
        assert!(e.reason.contains("already linked by link[0]"), "{e}");
        let config = with(
            "[[link]]\nregions = [1, 2]\nkind = \"direct\"\nsymmetric = false\n\
             [[link]]\nregions = [2, 1]\nkind = \"indirect\"\nsymmetric = false\n",
        )
        .expect("two one-way links in opposite directions");
        assert_eq!(config.links[1].kind, LinkKind::Indirect);
        assert!(!config.links[1].symmetric);
    }

    #[test]
    fn link_region_faults() {
        let e = refused("[[link]]\nregions = [1]\nkind = \"direct\"\n");
        assert!(e.reason.contains("exactly two regions, not 1"), "{e}");
        let e = refused("[[link]]\nregions = [2, 2]\nkind = \"direct\"\n");
        assert!(e.reason.contains("two different regions"), "{e}");
        let e = refused("[[link]]\nregions = [1, 7]\nkind = \"direct\"\n");
        assert_eq!(e.field, "link[0].regions[1]");
    }

    #[test]
    fn tts_rules() {
        let config = with("[[tts]]\nregions = [2]\ntts = false\n").expect("valid");
        assert_eq!(config.tts[0].regions, vec![2]);
        assert!(config.tts[0].aliases.is_empty());
        let e = refused("[[tts]]\naliases = []\n");
        assert_eq!(e.field, "tts[0]");
        let e = refused("[[tts]]\naliases = [\"5*\", \"\"]\n");
        assert_eq!(e.field, "tts[0].aliases[1]");
        let e = refused("[[tts]]\nregions = [1, 0]\n");
        assert_eq!(e.field, "tts[0].regions[1]");
    }

    #[test]
    fn gatekeeper_id_limits_count_characters() {
        let id = "é".repeat(128);
        let config = with(&format!("[gatekeeper]\ngatekeeper_id = \"{id}\"\n")).expect("128");
        assert_eq!(config.gatekeeper.gatekeeper_id.chars().count(), 128);
        let e = refused(&format!("[gatekeeper]\ngatekeeper_id = \"{id}x\"\n"));
        assert!(e.reason.contains("129 characters"), "{e}");
        let e = refused("[gatekeeper]\ngatekeeper_id = \"gk😀\"\n");
        assert!(e.reason.contains("U+1F600"), "{e}");
    }

    #[test]
    fn region_list_is_bounded() {
        let many: String = (10..60)
            .map(|id| format!("[[region]]\nid = {id}\n"))
            .collect();
        let e = refused(&format!("{many}[gatekeeper]\ndefault_region = 9\n"));
        assert!(e.reason.contains("… 53 in all"), "{e}");
        assert!(e.reason.len() < 200, "{e}");
    }

    #[test]
    fn rebalance_values_are_checked_and_named() {
        let config = with("[rebalance]\ntolerance = 2\nmoves_per_s = 0.5\n").expect("valid");
        let rebalance = config.rebalance.expect("on");
        assert_eq!(rebalance.tolerance, 2);
        assert_eq!(rebalance.hold_off.as_secs(), 600);
        assert_eq!(rebalance.interval().as_secs(), 2);
        let off = "[rebalance]\nenabled = false\ntolerance = 2\nmoves_per_s = 1\n";
        assert_eq!(with(off).expect("valid").rebalance, None);
        for (table, field) in [
            ("tolerance = 0\nmoves_per_s = 1", "rebalance.tolerance"),
            ("tolerance = -3\nmoves_per_s = 1", "rebalance.tolerance"),
            (
                "tolerance = 5000000000\nmoves_per_s = 1",
                "rebalance.tolerance",
            ),
            ("tolerance = 1\nmoves_per_s = 0", "rebalance.moves_per_s"),
            ("tolerance = 1\nmoves_per_s = -1.5", "rebalance.moves_per_s"),
            ("tolerance = 1\nmoves_per_s = nan", "rebalance.moves_per_s"),
            ("tolerance = 1\nmoves_per_s = inf", "rebalance.moves_per_s"),
            (
                "tolerance = 1\nmoves_per_s = 1\nhold_off_s = -1",
                "rebalance.hold_off_s",
            ),
            (
                "tolerance = 1\nmoves_per_s = 1\nhold_off_s = 99999999",
                "rebalance.hold_off_s",
            ),
            // Checked while switched off, too.
            (
                "enabled = false\ntolerance = 0\nmoves_per_s = 1",
                "rebalance.tolerance",
            ),
        ] {
            let e = refused(&format!("[rebalance]\n{table}\n"));
            assert_eq!(e.field, field, "{table}: {e}");
        }
    }

    #[test]
    fn huge_numbers_are_refused_not_wrapped() {
        let e = refused("[[clan]]\nname = \"b\"\nregion = 65537\naddress = \"10.1.0.2:1719\"\n");
        assert_eq!(e.field, "clan[1].region");
        let e = refused("[[region]]\nid = 65537\n");
        assert_eq!(e.field, "region[3].id");
        let e = refused(
            "[[clan]]\nname = \"b\"\nregion = 1\naddress = \"10.1.0.2:1719\"\npriority = 256\n",
        );
        assert_eq!(e.field, "clan[1].priority");
    }
}
