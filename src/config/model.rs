//! The checked configuration the gatekeeper runs on.
//!
//! Every value here has passed [`super::load`]'s checks: region ids exist, C-LAN names and
//! addresses are unique, caps and quotas are in range. The core never re-checks them.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ipnet::IpNet;

/// A network region number, 1..=2000.
pub type RegionId = u16;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `[gatekeeper]`.
    pub gatekeeper: GatekeeperSettings,
    /// `[agl]`.
    pub agl: AglQuotas,
    /// `[[region]]`, in configuration order.
    pub regions: Vec<Region>,
    /// `[[link]]`, in configuration order.
    pub links: Vec<Link>,
    /// `[[clan]]`, in configuration order (the order that breaks ties).
    pub clans: Vec<Clan>,
    /// `[[tts]]`, first match wins.
    pub tts: Vec<TtsRule>,
    /// `[admin]`.
    pub admin: AdminSettings,
    /// `[[node]]`, in configuration order; when none is given, the nodes the C-LANs name,
    /// in order of first mention, without a signalling address.
    pub nodes: Vec<Node>,
    /// `[[trunk]]`, in configuration order.
    pub trunks: Vec<Trunk>,
    /// `[[route_group]]`, in configuration order.
    pub route_groups: Vec<RouteGroup>,
    /// `[[route_list]]`, in configuration order.
    pub route_lists: Vec<RouteList>,
    /// `[[route_pattern]]`, in configuration order (the order that breaks ties).
    pub route_patterns: Vec<RoutePattern>,
    /// `[[password]]`: aliases that must prove a password (H.235.1 procedure I or the MD5
    /// `cryptoEPPwdHash`) on every request naming them; each alias once.
    pub passwords: Vec<AliasPassword>,
    /// `[limits]`.
    pub limits: Limits,
    /// `[rebalance]`: moving phones off a crowded C-LAN (docs/rules.md §9.2); `None` (no
    /// table, or `enabled = false`) is Avaya's behaviour: nobody is moved.
    pub rebalance: Option<Rebalance>,
}

/// `[rebalance]`: when one C-LAN carries more than `tolerance` above the least loaded
/// available C-LAN of its region and priority class, phones are moved off it one at a time
/// (docs/rules.md §9.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rebalance {
    /// How far (sockets and reservations) a C-LAN may stand above the lightest of its class
    /// before a phone is moved off it, ≥ 1.
    pub tolerance: u32,
    /// Moves a second at most, 0.001..=1000 (fractional: 0.5 is one move every 2 s).
    pub moves_per_s: f64,
    /// A phone moved is not moved again for this long.
    pub hold_off: Duration,
}

impl Rebalance {
    /// The least time between two moves: 1/`moves_per_s`, rounded up to the nanosecond so
    /// that no window of one second ever holds more than `moves_per_s` moves.
    pub fn interval(&self) -> Duration {
        Duration::from_nanos((1e9 / self.moves_per_s).ceil() as u64)
    }
}

/// `[[password]]`: an alias and its secret, each 1..=127 characters of the BMP without NUL
/// (the hashed BMPStrings hold 128 with the terminating NUL).
#[derive(Clone, PartialEq, Eq)]
pub struct AliasPassword {
    /// The alias's text: the digits of a dialledDigits alias, the name of an h323-ID, ….
    pub alias: String,
    /// The password.
    pub secret: String,
}

impl std::fmt::Debug for AliasPassword {
    // The secret stays out of logs and panics.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AliasPassword")
            .field("alias", &self.alias)
            .field("secret", &"…")
            .finish()
    }
}

/// `[limits]`: the bounds on what peers can make the gatekeeper hold and send (docs/rules.md §12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// RAS datagrams per second one source IP may send; `None`: no rate limit.
    pub rate_per_source: Option<u32>,
    /// Datagrams a source may send at once before its rate applies, ≥ 1.
    pub burst_per_source: u32,
    /// Sources the rate limit keeps track of at once, ≥ 1 (the oldest idle one is forgotten
    /// first).
    pub max_sources: usize,
    /// GCF reservations held at once, ≥ 1 (the oldest is dropped first).
    pub max_reservations: usize,
    /// Replies held for retransmissions, ≥ 1 (the oldest is dropped first).
    pub max_cached_replies: usize,
    /// A reply to a source without a registration is at most this many times the octets of
    /// its request, ≥ 1.
    pub reflection_ratio: usize,
    /// Socket mode: the longest TPKT frame a phone may send on its signalling socket,
    /// octets with the 4-octet header, 4..=65535; a longer one closes the socket.
    pub max_frame_octets: u16,
}

impl Default for Limits {
    /// What a file without `[limits]` gets.
    fn default() -> Limits {
        Limits {
            rate_per_source: None,
            burst_per_source: 20,
            max_sources: 65_536,
            max_reservations: 100_000,
            max_cached_replies: 200_000,
            reflection_ratio: 3,
            max_frame_octets: 16_384,
        }
    }
}

/// How GCF choice walks the regions of a tier (docs/rules.md §4.1, §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TierMode {
    /// The first region of the tier, in order, that has a candidate wins.
    Ordered,
    /// All regions of a tier are pooled; the least loaded C-LAN across them wins.
    Pooled,
}

/// How phones' sockets are kept (docs/rules.md §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SocketMode {
    /// Sockets are only counted.
    Count,
    /// Real TCP signalling connections.
    Tcp,
}

/// Where phones' call signalling goes (docs/rules.md §8.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallSignalling {
    /// The ACF names the callee: call signalling goes endpoint to endpoint.
    Direct,
    /// The ACF names the caller's C-LAN (`gatekeeperRouted`): the gatekeeper relays every
    /// Q.931 message over the C-LANs' sockets. Needs `sockets = "tcp"`.
    Routed,
}

/// `[gatekeeper]`.
#[derive(Debug, Clone, PartialEq)]
pub struct GatekeeperSettings {
    /// Where GRQs arrive (unicast). Never a C-LAN's address.
    pub discovery: SocketAddr,
    /// A second discovery address of the other family than `discovery` (IPv6 phones' beside
    /// IPv4 phones'), if any.
    pub discovery6: Option<SocketAddr>,
    /// Also answer GRQ on 224.0.1.41:1718.
    pub multicast: bool,
    /// The `gatekeeperIdentifier`, 1–128 characters.
    pub gatekeeper_id: String,
    /// Granted `timeToLive`, seconds, ≥ 1.
    pub ttl_s: u32,
    /// Life of a GCF reservation, seconds, ≥ 1.
    pub gcf_hold_s: u32,
    /// Region of phones the network map does not cover (when they sent to the discovery
    /// address); an existing region.
    pub default_region: RegionId,
    /// How a tier's regions are walked.
    pub tier_mode: TierMode,
    /// Whether phones no `[[tts]]` rule matches are TTS.
    pub tts_default: bool,
    /// Seed of the AGL offsets; `None` seeds from the clock at start.
    pub seed: Option<u64>,
    /// Counted or real TCP sockets.
    pub sockets: SocketMode,
    /// Socket establishments in progress at once per C-LAN, ≥ 1 (Avaya: 5).
    pub max_setups_per_clan: u32,
    /// Socket mode: how long one socket establishment occupies its C-LAN after the
    /// connection is up (the C-LAN's and the call server's work per socket).
    pub setup: Duration,
    /// Socket mode: a TTS connection attempt not established by then moves on, ≥ 1 ms.
    pub setup_timeout: Duration,
    /// Socket mode: TCP keep-alive on every signalling socket, probing after this much
    /// silence and as often again (three probes unanswered close it), ≥ 1 s.
    pub keepalive: Duration,
    /// Direct or gatekeeper-routed call signalling.
    pub call_signalling: CallSignalling,
    /// Routed calls: a callee that has not answered (Connect) by then is released
    /// `noAnswer`, ≥ 1 s.
    pub call_setup_timeout: Duration,
    /// Refuse phones outside the IP network map (GRJ `terminalExcluded`, RRJ
    /// `securityDenial`) instead of giving them a region by where they sent.
    pub strict_network_map: bool,
    /// How far a password token's `timeStamp` may be from the gatekeeper's clock, seconds,
    /// ≥ 1.
    pub password_window_s: u32,
}

/// `[agl]`: how many entries each group contributes, and the total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AglQuotas {
    /// Total entries, 0..=128 (priorities 0..=127).
    pub max: usize,
    /// Entries from the home region.
    pub home: usize,
    /// Entries from directly linked regions.
    pub direct: usize,
    /// Entries from indirectly linked regions with `agl = true`.
    pub indirect: usize,
}

/// `[[region]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// 1..=2000, unique.
    pub id: RegionId,
    /// A label for people; may be empty.
    pub name: String,
    /// The IP network map entries of this region.
    pub networks: Vec<IpNet>,
}

/// Whether a linked region is reached directly or through another region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// Directly connected.
    Direct,
    /// Reached through another region.
    Indirect,
}

/// `[[link]]`: `near`'s phones may use `far`'s C-LANs (and the reverse when `symmetric`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// The first region of `regions`.
    pub near: RegionId,
    /// The second region of `regions`; never equal to `near`.
    pub far: RegionId,
    /// Direct or indirect.
    pub kind: LinkKind,
    /// May the far region's C-LANs be offered (GCF tier 3 and the AGL's indirect group)?
    /// Direct links are always offered; the flag matters for indirect links.
    pub agl: bool,
    /// Does the link hold both ways (the default)?
    pub symmetric: bool,
}

/// Whether an interface is a C-LAN board or the server's Processor Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClanKind {
    /// A C-LAN board.
    Clan,
    /// Processor Ethernet.
    Pe,
}

/// An IP address family: a phone is served over the family it used, by the C-LANs that have
/// an address of it (docs/rules.md §17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum Family {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl Family {
    /// The family of an address (an IPv4-mapped IPv6 address is IPv4).
    pub fn of(ip: std::net::IpAddr) -> Family {
        match ip.to_canonical() {
            std::net::IpAddr::V4(_) => Family::V4,
            std::net::IpAddr::V6(_) => Family::V6,
        }
    }

    /// Both families, IPv4 first.
    pub const ALL: [Family; 2] = [Family::V4, Family::V6];
}

/// `[[clan]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Clan {
    /// Unique name.
    pub name: String,
    /// An existing region.
    pub region: RegionId,
    /// Its RAS address: the IPv4 one, or the IPv6 one of a C-LAN that has no IPv4 address;
    /// unique, never a discovery address.
    pub address: SocketAddr,
    /// Its IPv6 RAS address, if it has one (a dual-stack board has both, one place count
    /// for the two); equal to `address` for a C-LAN with IPv6 alone.
    pub address6: Option<SocketAddr>,
    /// 1 is best; ≥ 1.
    pub priority: u8,
    /// Socket cap, ≥ 1 (default 480).
    pub max_sockets: u32,
    /// In service at start.
    pub in_service: bool,
    /// C-LAN or PE.
    pub kind: ClanKind,
    /// The cluster node it belongs to (`"cm1"` when not given).
    pub node: String,
    /// The TCP port of its call signalling on its own IP (default 1720): where it listens
    /// in socket mode, and the `callSignalAddress` of its RCFs in either mode.
    pub signal_port: u16,
    /// Avaya's "number of C-LAN sockets before warning": a load that raises a warning (an
    /// event and a log line) once, cleared when the load falls back below it by a
    /// hysteresis (`gatekeeper::warnings`); 1..=`max_sockets`; `None`: no warning.
    pub warn_sockets: Option<u32>,
}

impl Clan {
    /// Its call signalling address: its IP, `signal_port`.
    pub fn signal_address(&self) -> SocketAddr {
        SocketAddr::new(self.address.ip(), self.signal_port)
    }

    /// Its RAS address of `family`, if it has one.
    pub fn ras_address(&self, family: Family) -> Option<SocketAddr> {
        match family {
            Family::V4 => self.address.is_ipv4().then_some(self.address),
            Family::V6 => self.address6,
        }
    }

    /// Its call signalling address of `family`, if it has an address of it.
    pub fn signal_address_of(&self, family: Family) -> Option<SocketAddr> {
        self.ras_address(family)
            .map(|address| SocketAddr::new(address.ip(), self.signal_port))
    }

    /// Does it serve phones of `family`?
    pub fn serves(&self, family: Family) -> bool {
        self.ras_address(family).is_some()
    }

    /// Every RAS address it has: `address`, then the IPv6 one of a dual-stack board.
    pub fn ras_addresses(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        std::iter::once(self.address).chain(self.address6.filter(|&a| a != self.address))
    }

    /// Every call signalling address it has, in the order of [`Clan::ras_addresses`].
    pub fn signal_addresses(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.ras_addresses()
            .map(|address| SocketAddr::new(address.ip(), self.signal_port))
    }
}

/// `[[tts]]`: which phones are TTS. A rule matches when every list it has matches (an alias
/// pattern matches any of the phone's aliases; the phone's home region is in `regions`).
#[derive(Debug, Clone, PartialEq)]
pub struct TtsRule {
    /// Alias patterns: `*` any run of characters, `?` one character; empty for any alias.
    pub aliases: Vec<String>,
    /// Home regions; empty for any region.
    pub regions: Vec<RegionId>,
    /// Whether matching phones are TTS.
    pub tts: bool,
}

/// `[admin]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AdminSettings {
    /// Where the admin HTTP port listens.
    pub listen: SocketAddr,
    /// Bearer token required for changes, when set.
    pub token: Option<String>,
}

/// Index of a node in [`Config::nodes`].
pub type NodeIdx = usize;
/// Index of a trunk in [`Config::trunks`].
pub type TrunkIdx = usize;
/// Index of a route group in [`Config::route_groups`].
pub type RouteGroupIdx = usize;
/// Index of a route list in [`Config::route_lists`].
pub type RouteListIdx = usize;

/// `[[node]]`: a call-processing node of the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Unique name; what C-LANs, trunks and route lists name.
    pub name: String,
    /// Unique number.
    pub id: u32,
    /// Its call signalling address (sent in ACF when it places a call); `None` for a node
    /// only implied by the C-LANs.
    pub address: Option<SocketAddr>,
}

/// What kind of trunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrunkKind {
    /// A SIP trunk.
    Sip,
    /// An H.323 gateway.
    H323,
}

/// Where a trunk or route list is active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActiveOn {
    /// These nodes, in order (a route list runs on the first).
    Nodes(Vec<NodeIdx>),
    /// `run_on_all_nodes = true`: every node.
    AllNodes,
}

impl ActiveOn {
    /// Whether it is active on `node`.
    pub fn includes(&self, node: NodeIdx) -> bool {
        match self {
            ActiveOn::Nodes(nodes) => nodes.contains(&node),
            ActiveOn::AllNodes => true,
        }
    }
}

/// `[[trunk]]`: a SIP trunk or H.323 gateway (neither registers; they are active on nodes).
#[derive(Debug, Clone, PartialEq)]
pub struct Trunk {
    /// Unique name.
    pub name: String,
    /// SIP or H.323.
    pub kind: TrunkKind,
    /// The nodes it is active on.
    pub active_on: ActiveOn,
    /// Its far end.
    pub address: SocketAddr,
    /// Calls at once, ≥ 1; `None` for no limit.
    pub max_calls: Option<u32>,
}

/// How a route group picks its trunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// Always from the first trunk, the next only when it is busy.
    TopDown,
    /// The starting trunk moves on by one each call.
    Circular,
}

/// `[[route_group]]`: trunks in order.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteGroup {
    /// Unique name.
    pub name: String,
    /// Its trunks, in order, each once.
    pub trunks: Vec<TrunkIdx>,
    /// How a trunk is picked.
    pub distribution: Distribution,
}

/// `[[route_list]]`: route groups in order, tried top-down.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteList {
    /// Unique name.
    pub name: String,
    /// Its route groups, in order, each once.
    pub route_groups: Vec<RouteGroupIdx>,
    /// Its node group (it runs on the first) or every node.
    pub active_on: ActiveOn,
}

/// Where a route pattern sends a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteTarget {
    /// Straight at a trunk.
    Trunk(TrunkIdx),
    /// At a route list.
    RouteList(RouteListIdx),
}

/// `[[route_pattern]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutePattern {
    /// As written: digits, `*`, `#` literal; `X` one digit; `!` one or more digits; `.` the
    /// access-code separator (matches nothing).
    pub pattern: String,
    /// Where it sends calls.
    pub target: RouteTarget,
}

impl Config {
    /// The node named `name`, if there is one.
    pub fn node_index(&self, name: &str) -> Option<NodeIdx> {
        self.nodes.iter().position(|node| node.name == name)
    }

    /// The region numbered `id`, if it is defined.
    pub fn region(&self, id: RegionId) -> Option<&Region> {
        self.regions.iter().find(|region| region.id == id)
    }

    /// The C-LAN named `name`, if there is one.
    pub fn clan(&self, name: &str) -> Option<&Clan> {
        self.clans.iter().find(|clan| clan.name == name)
    }

    /// The home region of a phone: the longest-prefix match of its RAS source address in the
    /// IP network map, if any.
    pub fn mapped_region(&self, ip: IpAddr) -> Option<RegionId> {
        self.regions
            .iter()
            .flat_map(|region| region.networks.iter().map(move |net| (net, region.id)))
            .filter(|(net, _)| net.contains(&ip))
            .max_by_key(|(net, _)| net.prefix_len())
            .map(|(_, id)| id)
    }
}

impl TtsRule {
    /// Whether this rule covers a phone with these alias texts in this home region.
    pub fn matches<'a>(
        &self,
        aliases: impl IntoIterator<Item = &'a str>,
        region: RegionId,
    ) -> bool {
        let region_ok = self.regions.is_empty() || self.regions.contains(&region);
        let alias_ok = self.aliases.is_empty()
            || aliases
                .into_iter()
                .any(|alias| self.aliases.iter().any(|p| pattern_matches(p, alias)));
        region_ok && alias_ok
    }
}

/// Glob match of an alias pattern: `*` any run of characters (also none), `?` one character.
pub fn pattern_matches(pattern: &str, text: &str) -> bool {
    // Aliases and patterns are nearly always ASCII (digits, names): matched octet by octet,
    // with nothing allocated, as this runs for every rule and alias of every GRQ and RRQ.
    if pattern.is_ascii() && text.is_ascii() {
        return glob(pattern.as_bytes(), text.as_bytes(), b'*', b'?');
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    glob(&p, &t, '*', '?')
}

/// Iterative glob with one backtrack point, over any alphabet: linear in practice, never
/// exponential.
fn glob<T: Copy + PartialEq>(p: &[T], t: &[T], any_run: T, any_one: T) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == any_one || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == any_run {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == any_run)
}

#[cfg(test)]
mod tests {
    use super::pattern_matches;

    #[test]
    fn alias_patterns() {
        assert!(pattern_matches("5*", "50001"));
        assert!(pattern_matches("5*", "5"));
        assert!(!pattern_matches("5*", "60001"));
        assert!(pattern_matches("*", ""));
        assert!(pattern_matches("5?0*1", "58001"));
        assert!(!pattern_matches("5?0*1", "5800"));
        assert!(pattern_matches("*room*", "boardroom-1"));
        assert!(!pattern_matches("", "x"));
        // Beyond ASCII, `?` is one character, not one octet.
        assert!(pattern_matches("Zü?ich*", "Zürich-5"));
        assert!(pattern_matches("?", "ü"));
        assert!(!pattern_matches("??", "ü"));
    }
}
