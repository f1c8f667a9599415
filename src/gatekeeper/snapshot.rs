//! What the admin port shows: the state of every C-LAN and registration at one moment, in
//! the JSON shape of docs/rules.md §15 (`/api/clans`, `/api/registrations`).

use std::net::SocketAddr;

use super::{registry, Gatekeeper, SocketState};
use crate::config::{ClanKind, RegionId};

/// One C-LAN (`GET /api/clans`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClanView {
    /// Its name.
    pub name: String,
    /// Its region.
    pub region: RegionId,
    /// Its cluster node.
    pub node: String,
    /// Its RAS address (IPv4, or IPv6 for a C-LAN without IPv4).
    pub address: SocketAddr,
    /// Its IPv6 RAS address, when it has one beside an IPv4 `address` (dual stack).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address6: Option<SocketAddr>,
    /// 1 is best.
    pub priority: u8,
    /// Socket cap.
    pub max_sockets: u32,
    /// Sockets in use: in socket mode every place of a registered phone, its socket
    /// established or on its way (`established` + `setups` + `queued` + phones that have
    /// not connected yet).
    pub sockets: u32,
    /// GCF reservations.
    pub reserved: u32,
    /// In service?
    pub in_service: bool,
    /// `clan` or `pe`.
    pub kind: ClanKind,
    /// Its call signalling address (where it listens in socket mode).
    #[serde(default)]
    pub signal_address: Option<SocketAddr>,
    /// Socket mode: established connections (real TCP connections: sockets and call
    /// connections); 0 in count mode.
    #[serde(default)]
    pub established: u32,
    /// Routed calls: connections calls need beyond the phones' sockets (each holds a place,
    /// counted in `sockets` and `established`).
    #[serde(default)]
    pub call_connections: u32,
    /// Routed calls in progress with a leg on it.
    #[serde(default)]
    pub calls: u32,
    /// Socket mode: establishments in progress (at most `max_setups_per_clan`).
    #[serde(default)]
    pub setups: u32,
    /// Socket mode: TTS set-ups waiting for a free establishment slot.
    #[serde(default)]
    pub queued: u32,
    /// Its `warn_sockets` ("sockets before warning"), if it has one.
    #[serde(default)]
    pub warn_sockets: Option<u32>,
    /// Does its `warn_sockets` warning stand (raised, not yet cleared)?
    #[serde(default)]
    pub warning: bool,
}

/// One registration (`GET /api/registrations`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RegistrationView {
    /// Its `endpointIdentifier`.
    pub endpoint_id: String,
    /// Its aliases as text.
    pub aliases: Vec<String>,
    /// Where its RAS comes from.
    pub ras_address: SocketAddr,
    /// Home region.
    pub region: RegionId,
    /// The C-LAN holding its socket, or `None` (a TTS phone waiting for one).
    pub clan: Option<String>,
    /// The C-LAN its RRQ arrived at.
    pub registered_via: String,
    /// A TTS phone?
    pub tts: bool,
    /// Its AGL, C-LAN names in order.
    pub agl: Vec<String>,
    /// Granted time to live, seconds.
    pub ttl_s: u32,
    /// Where its socket stands (`counted` in count mode; in socket mode `waiting`,
    /// `queued`, `connecting`, `setup`, `established`, or `none`).
    #[serde(default)]
    pub socket: SocketState,
    /// Socket mode, TTS: sockets it declined, closing them before any call ran on them
    /// (docs/rules.md §8.6).
    #[serde(default)]
    pub socket_declines: u32,
    /// An Avaya endpoint (its RRQ carried Avaya's CCMS `nonStandardData`)?
    #[serde(default)]
    pub avaya: bool,
    /// The MAC address an Avaya endpoint's login request gave, `b4:b0:17:8d:29:c6`.
    #[serde(default)]
    pub mac: Option<String>,
}

/// The whole state at one moment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    /// Every C-LAN, in configuration order.
    pub clans: Vec<ClanView>,
    /// Every registration, oldest first.
    pub registrations: Vec<RegistrationView>,
    /// GCF reservations not yet used.
    pub reservations: usize,
    /// TTS phones registered without a socket.
    pub tts_pending: usize,
}

impl Gatekeeper {
    /// Every C-LAN's state.
    pub fn clans(&self) -> Vec<ClanView> {
        let calls = self.routed_calls_per_clan();
        self.config
            .clans
            .iter()
            .zip(self.loads.all())
            .zip(&self.signalling.clans)
            .enumerate()
            .map(|(idx, ((clan, load), sockets))| ClanView {
                name: clan.name.clone(),
                region: clan.region,
                node: clan.node.clone(),
                address: clan.address,
                address6: clan.address6.filter(|&a| a != clan.address),
                priority: clan.priority,
                max_sockets: load.cap,
                sockets: load.sockets,
                reserved: load.reserved,
                in_service: load.in_service,
                kind: clan.kind,
                signal_address: Some(clan.signal_address()),
                established: sockets.established + self.relay.per_clan[idx],
                call_connections: self.relay.per_clan[idx],
                calls: calls[idx],
                setups: sockets.setups,
                queued: sockets.queued,
                warn_sockets: self.loads.warnings().warn_sockets(idx),
                warning: self.loads.warnings().raised(idx),
            })
            .collect()
    }

    /// Every C-LAN's sockets now, in configuration order: its places as the cap counts them
    /// (`sockets` of [`clans`](Gatekeeper::clans)) and its established connections. What
    /// a sampler reads many times, without the names [`clans`](Gatekeeper::clans) copies.
    pub fn clan_sockets(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.loads
            .all()
            .iter()
            .zip(&self.signalling.clans)
            .zip(&self.relay.per_clan)
            .map(|((load, sockets), calls)| (load.sockets, sockets.established + calls))
    }

    /// Every registration's state, oldest first.
    pub fn registrations(&self) -> Vec<RegistrationView> {
        let name = |idx: usize| self.config.clans[idx].name.clone();
        self.registry
            .iter()
            .map(|(key, r)| RegistrationView {
                endpoint_id: registry::endpoint_id_text(key),
                aliases: r.aliases.iter().map(|alias| alias.to_string()).collect(),
                ras_address: r.ras_address(),
                region: r.region,
                clan: r.socket.map(name),
                registered_via: name(r.registered_via),
                tts: r.tts,
                agl: r.agl.iter().map(|&idx| name(idx)).collect(),
                ttl_s: r.ttl_s,
                socket: self.socket_state(key),
                socket_declines: self.socket_declines(key),
                avaya: r.avaya.is_some(),
                mac: r.avaya.and_then(|a| a.mac).map(|mac| mac.to_string()),
            })
            .collect()
    }

    /// The whole state.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            clans: self.clans(),
            registrations: self.registrations(),
            reservations: self.reservations.len(),
            tts_pending: self.tts_pending.len(),
        }
    }
}

/// One region (`GET /api/regions`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RegionView {
    /// Its id.
    pub id: RegionId,
    /// Its label.
    pub name: String,
    /// Its C-LANs, in configuration order.
    pub clans: Vec<String>,
    /// Sockets on its C-LANs.
    pub sockets: u32,
    /// Reservations on its C-LANs.
    pub reserved: u32,
    /// Sum of its in-service C-LANs' caps.
    pub max_sockets: u32,
    /// Phones whose home region it is.
    pub home_phones: usize,
    /// Of those, how many hold their socket in each other region (region id → phones): where
    /// this region spills to.
    pub spill_to: std::collections::BTreeMap<RegionId, usize>,
    /// Phones of other regions holding a socket here (region id → phones).
    pub spill_from: std::collections::BTreeMap<RegionId, usize>,
    /// Directly linked regions, ascending (GCF tier 2).
    pub direct: Vec<RegionId>,
    /// Indirectly linked regions offered (`agl = true`), ascending (tier 3).
    pub indirect: Vec<RegionId>,
}

/// What a phone would get now (`GET /api/placement`): a dry run that changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Placement {
    /// Its home region.
    pub region: RegionId,
    /// Would it be a TTS phone?
    pub tts: bool,
    /// The C-LAN its GCF would name; `None`: GRJ `resourceUnavailable`.
    pub gcf: Option<String>,
    /// The C-LAN its socket would be on (for a TTS phone, chosen from the AGL).
    pub socket: Option<String>,
    /// The AGL its RCF would carry (offsets drawn from a copy of the generator).
    pub agl: Vec<String>,
}

impl Gatekeeper {
    /// Every region's load and spill.
    pub fn regions(&self) -> Vec<RegionView> {
        use std::collections::BTreeMap;
        let mut home_phones: BTreeMap<RegionId, usize> = BTreeMap::new();
        let mut spill: BTreeMap<(RegionId, RegionId), usize> = BTreeMap::new();
        for (_, registration) in self.registry.iter() {
            *home_phones.entry(registration.region).or_default() += 1;
            if let Some(clan) = registration.socket {
                let there = self.config.clans[clan].region;
                if there != registration.region {
                    *spill.entry((registration.region, there)).or_default() += 1;
                }
            }
        }
        self.config
            .regions
            .iter()
            .map(|region| {
                let members: Vec<usize> = (0..self.config.clans.len())
                    .filter(|&i| self.config.clans[i].region == region.id)
                    .collect();
                let loads = self.loads.all();
                let tiers = self.topology.tiers(region.id);
                RegionView {
                    id: region.id,
                    name: region.name.clone(),
                    clans: members.iter().map(|&i| self.clan_name(i)).collect(),
                    sockets: members.iter().map(|&i| loads[i].sockets).sum(),
                    reserved: members.iter().map(|&i| loads[i].reserved).sum(),
                    max_sockets: members
                        .iter()
                        .filter(|&&i| loads[i].in_service)
                        .map(|&i| loads[i].cap)
                        .sum(),
                    home_phones: home_phones.get(&region.id).copied().unwrap_or(0),
                    spill_to: spill
                        .iter()
                        .filter(|((from, _), _)| *from == region.id)
                        .map(|(&(_, to), &n)| (to, n))
                        .collect(),
                    spill_from: spill
                        .iter()
                        .filter(|((_, to), _)| *to == region.id)
                        .map(|(&(from, _), &n)| (from, n))
                        .collect(),
                    direct: tiers.direct.clone(),
                    indirect: tiers.indirect.clone(),
                }
            })
            .collect()
    }

    /// Where a phone from `ip` with these aliases would go now, sending its GRQ to the
    /// discovery address and its RRQ to the C-LAN named; nothing changes, not even the AGL
    /// generator.
    pub fn placement(&self, ip: std::net::IpAddr, aliases: &[crate::ras::Alias]) -> Placement {
        use super::policy;
        let family = crate::config::Family::of(ip);
        // The discovery address of the phone's family, where it would send its GRQ.
        let discovery = self
            .config
            .gatekeeper
            .discovery6
            .filter(|d| crate::config::Family::of(d.ip()) == family)
            .unwrap_or(self.config.gatekeeper.discovery);
        let region = self.home_region(discovery, ip);
        let tts = self.is_tts(aliases, region);
        let tiers = self.topology.tiers(region);
        let gcf = policy::choose_clan(
            &tiers,
            &self.loads,
            self.config.gatekeeper.tier_mode,
            family,
        );
        let mut loads = self.loads.clone();
        if let (Some(clan), false) = (gcf, tts) {
            loads.add_socket(clan);
        }
        let mut rng = self.rng.clone();
        let agl = match gcf {
            Some(_) => policy::build_agl(&tiers, &loads, &self.config.agl, family, &mut rng),
            None => Vec::new(),
        };
        let socket = if tts {
            policy::choose_tts_clan(&tiers, &loads, &agl)
        } else {
            gcf
        };
        Placement {
            region,
            tts,
            gcf: gcf.map(|i| self.clan_name(i)),
            socket: socket.map(|i| self.clan_name(i)),
            agl: agl.iter().map(|&i| self.clan_name(i)).collect(),
        }
    }
}
