//! The config file as written: serde structs mirroring the keys of docs/rules.md §15 one for one.
//!
//! Nothing here is checked beyond what serde does (types, unknown keys, required keys);
//! addresses and networks stay text and region numbers stay wide integers, so that
//! [`super::convert`] can refuse them with a message naming the field. Every default lives in
//! a named function below, and the tables that may be left out (`[gatekeeper]`, `[agl]`,
//! `[admin]`) take the same functions through their `Default`; `[rebalance]` left out is
//! `None`, rebalancing off.

use serde::Deserialize;

use super::model::{
    CallSignalling, ClanKind, Distribution, LinkKind, SocketMode, TierMode, TrunkKind,
};

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    #[serde(default)]
    pub gatekeeper: GatekeeperFile,
    #[serde(default)]
    pub agl: AglFile,
    #[serde(default)]
    pub region: Vec<RegionFile>,
    #[serde(default)]
    pub link: Vec<LinkFile>,
    #[serde(default)]
    pub clan: Vec<ClanFile>,
    #[serde(default)]
    pub tts: Vec<TtsFile>,
    #[serde(default)]
    pub admin: AdminFile,
    #[serde(default)]
    pub node: Vec<NodeFile>,
    #[serde(default)]
    pub trunk: Vec<TrunkFile>,
    #[serde(default)]
    pub route_group: Vec<RouteGroupFile>,
    #[serde(default)]
    pub route_list: Vec<RouteListFile>,
    #[serde(default)]
    pub route_pattern: Vec<RoutePatternFile>,
    #[serde(default)]
    pub password: Vec<PasswordFile>,
    #[serde(default)]
    pub limits: LimitsFile,
    /// No default: without the table nobody is moved.
    #[serde(default)]
    pub rebalance: Option<RebalanceFile>,
}

/// `[rebalance]`. Numbers stay wide here so that convert can refuse a negative or oversized
/// one with a message naming the key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RebalanceFile {
    #[serde(default = "default_rebalance_enabled")]
    pub enabled: bool,
    pub tolerance: i64,
    pub moves_per_s: f64,
    #[serde(default = "default_rebalance_hold_off_s")]
    pub hold_off_s: i64,
}

/// `[[password]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PasswordFile {
    pub alias: String,
    pub secret: String,
}

/// `[[node]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NodeFile {
    pub name: String,
    pub id: i64,
    pub address: String,
}

/// `[[trunk]]`. `nodes` and `run_on_all_nodes` are checked together by convert.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrunkFile {
    pub name: String,
    pub kind: TrunkKind,
    #[serde(default)]
    pub nodes: Option<Vec<String>>,
    #[serde(default)]
    pub run_on_all_nodes: bool,
    pub address: String,
    #[serde(default)]
    pub max_calls: Option<u32>,
}

/// `[[route_group]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RouteGroupFile {
    pub name: String,
    pub trunks: Vec<String>,
    #[serde(default = "default_distribution")]
    pub distribution: Distribution,
}

/// `[[route_list]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RouteListFile {
    pub name: String,
    pub route_groups: Vec<String>,
    #[serde(default)]
    pub nodes: Option<Vec<String>>,
    #[serde(default)]
    pub run_on_all_nodes: bool,
}

/// `[[route_pattern]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RoutePatternFile {
    pub pattern: String,
    #[serde(default)]
    pub trunk: Option<String>,
    #[serde(default)]
    pub route_list: Option<String>,
}

/// CUCM's default distribution algorithm of a route group.
fn default_distribution() -> Distribution {
    Distribution::Circular
}

/// `[gatekeeper]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GatekeeperFile {
    #[serde(default = "default_discovery")]
    pub discovery: String,
    #[serde(default)]
    pub discovery6: Option<String>,
    #[serde(default = "default_multicast")]
    pub multicast: bool,
    #[serde(default = "default_gatekeeper_id")]
    pub gatekeeper_id: String,
    #[serde(default = "default_ttl_s")]
    pub ttl_s: u32,
    #[serde(default = "default_gcf_hold_s")]
    pub gcf_hold_s: u32,
    #[serde(default = "default_default_region")]
    pub default_region: i64,
    #[serde(default = "default_tier_mode")]
    pub tier_mode: TierMode,
    #[serde(default = "default_tts_default")]
    pub tts_default: bool,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default = "default_sockets")]
    pub sockets: SocketMode,
    #[serde(default = "default_max_setups_per_clan")]
    pub max_setups_per_clan: u32,
    #[serde(default = "default_setup_ms")]
    pub setup_ms: u32,
    #[serde(default = "default_setup_timeout_ms")]
    pub setup_timeout_ms: u32,
    #[serde(default = "default_keepalive_s")]
    pub keepalive_s: u32,
    #[serde(default = "default_call_signalling")]
    pub call_signalling: CallSignalling,
    #[serde(default = "default_call_setup_timeout_s")]
    pub call_setup_timeout_s: u32,
    #[serde(default)]
    pub strict_network_map: bool,
    #[serde(default = "default_password_window_s")]
    pub password_window_s: u32,
}

impl Default for GatekeeperFile {
    fn default() -> Self {
        GatekeeperFile {
            discovery: default_discovery(),
            discovery6: None,
            multicast: default_multicast(),
            gatekeeper_id: default_gatekeeper_id(),
            ttl_s: default_ttl_s(),
            gcf_hold_s: default_gcf_hold_s(),
            default_region: default_default_region(),
            tier_mode: default_tier_mode(),
            tts_default: default_tts_default(),
            seed: None,
            sockets: default_sockets(),
            max_setups_per_clan: default_max_setups_per_clan(),
            setup_ms: default_setup_ms(),
            setup_timeout_ms: default_setup_timeout_ms(),
            keepalive_s: default_keepalive_s(),
            call_signalling: default_call_signalling(),
            call_setup_timeout_s: default_call_setup_timeout_s(),
            strict_network_map: false,
            password_window_s: default_password_window_s(),
        }
    }
}

/// `[agl]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AglFile {
    #[serde(default = "default_agl_max")]
    pub max: usize,
    #[serde(default = "default_agl_home")]
    pub home: usize,
    #[serde(default = "default_agl_direct")]
    pub direct: usize,
    #[serde(default = "default_agl_indirect")]
    pub indirect: usize,
}

impl Default for AglFile {
    fn default() -> Self {
        AglFile {
            max: default_agl_max(),
            home: default_agl_home(),
            direct: default_agl_direct(),
            indirect: default_agl_indirect(),
        }
    }
}

/// `[limits]`: what one source, or all of them, may make the gatekeeper hold or send.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LimitsFile {
    #[serde(default)]
    pub rate_per_source: u32,
    #[serde(default = "default_burst_per_source")]
    pub burst_per_source: u32,
    #[serde(default = "default_max_sources")]
    pub max_sources: u32,
    #[serde(default = "default_max_reservations")]
    pub max_reservations: u32,
    #[serde(default = "default_max_cached_replies")]
    pub max_cached_replies: u32,
    #[serde(default = "default_reflection_ratio")]
    pub reflection_ratio: u32,
    #[serde(default = "default_max_frame_octets")]
    pub max_frame_octets: u32,
}

impl Default for LimitsFile {
    fn default() -> Self {
        LimitsFile {
            rate_per_source: 0,
            burst_per_source: default_burst_per_source(),
            max_sources: default_max_sources(),
            max_reservations: default_max_reservations(),
            max_cached_replies: default_max_cached_replies(),
            reflection_ratio: default_reflection_ratio(),
            max_frame_octets: default_max_frame_octets(),
        }
    }
}

/// `[[region]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegionFile {
    pub id: i64,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub networks: Vec<String>,
}

/// `[[link]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkFile {
    pub regions: Vec<i64>,
    pub kind: LinkKind,
    #[serde(default = "default_link_agl")]
    pub agl: bool,
    #[serde(default = "default_link_symmetric")]
    pub symmetric: bool,
}

/// `[[clan]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClanFile {
    pub name: String,
    pub region: i64,
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub address6: Option<String>,
    #[serde(default = "default_clan_priority")]
    pub priority: u8,
    #[serde(default = "default_clan_max_sockets")]
    pub max_sockets: u32,
    #[serde(default = "default_clan_in_service")]
    pub in_service: bool,
    #[serde(default = "default_clan_kind")]
    pub kind: ClanKind,
    #[serde(default = "default_clan_node")]
    pub node: String,
    #[serde(default = "default_clan_signal_port")]
    pub signal_port: u16,
    #[serde(default)]
    pub warn_sockets: Option<u32>,
}

/// `[[tts]]`. `None` and an empty list both mean "not given".
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TtsFile {
    #[serde(default)]
    pub aliases: Option<Vec<String>>,
    #[serde(default)]
    pub regions: Option<Vec<i64>>,
    #[serde(default = "default_tts_rule_tts")]
    pub tts: bool,
}

/// `[admin]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AdminFile {
    #[serde(default = "default_admin_listen")]
    pub listen: String,
    #[serde(default)]
    pub token: Option<String>,
}

impl Default for AdminFile {
    fn default() -> Self {
        AdminFile {
            listen: default_admin_listen(),
            token: None,
        }
    }
}

fn default_discovery() -> String {
    "127.0.0.1:1719".to_owned()
}
fn default_multicast() -> bool {
    false
}
fn default_gatekeeper_id() -> String {
    "rasgk".to_owned()
}
fn default_ttl_s() -> u32 {
    300
}
fn default_gcf_hold_s() -> u32 {
    30
}
fn default_default_region() -> i64 {
    1
}
fn default_tier_mode() -> TierMode {
    TierMode::Ordered
}
fn default_tts_default() -> bool {
    false
}
fn default_sockets() -> SocketMode {
    SocketMode::Count
}

fn default_call_signalling() -> CallSignalling {
    CallSignalling::Direct
}

/// A callee that has not answered (Connect) within this is released `noAnswer`: the
/// three minutes of Q.931's T301 ("alerting received" to "connect"), as H323Plus's and
/// GnuGk's default connect timeouts are of that order.
fn default_call_setup_timeout_s() -> u32 {
    180
}
fn default_max_setups_per_clan() -> u32 {
    5
}
fn default_password_window_s() -> u32 {
    120
}
fn default_agl_max() -> usize {
    16
}
fn default_agl_home() -> usize {
    6
}
fn default_agl_direct() -> usize {
    6
}
fn default_agl_indirect() -> usize {
    4
}
fn default_link_agl() -> bool {
    false
}
fn default_link_symmetric() -> bool {
    true
}
fn default_clan_priority() -> u8 {
    1
}
fn default_clan_max_sockets() -> u32 {
    480
}
fn default_clan_in_service() -> bool {
    true
}
fn default_clan_kind() -> ClanKind {
    ClanKind::Clan
}
fn default_clan_node() -> String {
    "cm1".to_owned()
}
fn default_tts_rule_tts() -> bool {
    true
}
fn default_admin_listen() -> String {
    "127.0.0.1:7000".to_owned()
}
fn default_burst_per_source() -> u32 {
    20
}
fn default_max_sources() -> u32 {
    65_536
}
fn default_max_reservations() -> u32 {
    100_000
}
fn default_max_cached_replies() -> u32 {
    200_000
}
fn default_reflection_ratio() -> u32 {
    3
}
fn default_max_frame_octets() -> u32 {
    16_384
}
fn default_setup_ms() -> u32 {
    0
}
fn default_setup_timeout_ms() -> u32 {
    3000
}
fn default_keepalive_s() -> u32 {
    60
}
fn default_clan_signal_port() -> u16 {
    1720
}
fn default_rebalance_enabled() -> bool {
    true
}
fn default_rebalance_hold_off_s() -> i64 {
    600
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omitted_tables_take_the_documented_defaults() {
        let file: FileConfig = toml::from_str("").expect("empty file parses");
        let gk = &file.gatekeeper;
        assert_eq!(gk.discovery, "127.0.0.1:1719");
        assert!(!gk.multicast);
        assert_eq!(gk.gatekeeper_id, "rasgk");
        assert_eq!((gk.ttl_s, gk.gcf_hold_s, gk.default_region), (300, 30, 1));
        assert_eq!(gk.tier_mode, TierMode::Ordered);
        assert!(!gk.tts_default);
        assert_eq!(gk.seed, None);
        assert_eq!(gk.sockets, SocketMode::Count);
        assert_eq!(gk.max_setups_per_clan, 5);
        assert!(!gk.strict_network_map);
        assert_eq!(gk.password_window_s, 120);
        assert!(file.password.is_empty());
        let agl = &file.agl;
        assert_eq!((agl.max, agl.home, agl.direct, agl.indirect), (16, 6, 6, 4));
        assert_eq!(file.admin.listen, "127.0.0.1:7000");
        assert_eq!(file.admin.token, None);
        let limits = &file.limits;
        assert_eq!((limits.rate_per_source, limits.burst_per_source), (0, 20));
        assert_eq!(limits.max_sources, 65_536);
        assert_eq!(limits.max_reservations, 100_000);
        assert_eq!(limits.max_cached_replies, 200_000);
        assert_eq!(limits.reflection_ratio, 3);
        assert!(file.rebalance.is_none(), "no [rebalance]: nobody is moved");
    }

    #[test]
    fn a_rebalance_table_is_on_with_a_ten_minute_hold_off() {
        let file: FileConfig = toml::from_str("[rebalance]\ntolerance = 3\nmoves_per_s = 2\n")
            .expect("an integer rate parses as a number");
        let rebalance = file.rebalance.expect("the table");
        assert!(rebalance.enabled);
        assert_eq!((rebalance.tolerance, rebalance.hold_off_s), (3, 600));
        assert_eq!(rebalance.moves_per_s, 2.0);
    }

    #[test]
    fn empty_tables_take_the_same_defaults_as_omitted_ones() {
        let file: FileConfig =
            toml::from_str("[gatekeeper]\n[agl]\n[admin]\n").expect("empty tables parse");
        assert_eq!(file.gatekeeper.ttl_s, 300);
        assert_eq!(file.agl.max, 16);
        assert_eq!(file.admin.listen, "127.0.0.1:7000");
    }

    #[test]
    fn entry_defaults() {
        let file: FileConfig = toml::from_str(
            r#"
            [[region]]
            id = 1
            [[link]]
            regions = [1, 2]
            kind = "direct"
            [[clan]]
            name = "a"
            region = 1
            address = "127.0.1.1:1719"
            [[tts]]
            aliases = ["5*"]
            "#,
        )
        .expect("minimal entries parse");
        assert_eq!(file.region[0].name, "");
        assert!(file.region[0].networks.is_empty());
        assert!(!file.link[0].agl);
        assert!(file.link[0].symmetric);
        let clan = &file.clan[0];
        assert_eq!((clan.priority, clan.max_sockets), (1, 480));
        assert!(clan.in_service);
        assert_eq!(clan.kind, ClanKind::Clan);
        assert_eq!(clan.node, "cm1");
        assert!(file.tts[0].tts);
        assert_eq!(file.tts[0].regions, None);
    }
}
