//! What the admin port shows: the state of every C-LAN and registration at one moment, in
//! the JSON shape of domain.md §8 (`/api/clans`, `/api/registrations`).

use std::net::SocketAddr;

use super::Gatekeeper;
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
    /// Its RAS address.
    pub address: SocketAddr,
    /// 1 is best.
    pub priority: u8,
    /// Socket cap.
    pub max_sockets: u32,
    /// Sockets in use.
    pub sockets: u32,
    /// GCF reservations.
    pub reserved: u32,
    /// In service?
    pub in_service: bool,
    /// `clan` or `pe`.
    pub kind: ClanKind,
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
        self.config
            .clans
            .iter()
            .zip(self.loads.all())
            .map(|(clan, load)| ClanView {
                name: clan.name.clone(),
                region: clan.region,
                node: clan.node.clone(),
                address: clan.address,
                priority: clan.priority,
                max_sockets: load.cap,
                sockets: load.sockets,
                reserved: load.reserved,
                in_service: load.in_service,
                kind: clan.kind,
            })
            .collect()
    }

    /// Every registration's state, oldest first.
    pub fn registrations(&self) -> Vec<RegistrationView> {
        let name = |idx: usize| self.config.clans[idx].name.clone();
        self.registry
            .iter()
            .map(|(_, r)| RegistrationView {
                endpoint_id: r.endpoint_id.text(),
                aliases: r.aliases.iter().map(ToString::to_string).collect(),
                ras_address: r.ras_address,
                region: r.region,
                clan: r.socket.map(name),
                registered_via: name(r.registered_via),
                tts: r.tts,
                agl: r.agl.iter().map(|&idx| name(idx)).collect(),
                ttl_s: r.ttl_s,
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
