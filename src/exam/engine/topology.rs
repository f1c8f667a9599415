//! What the exam knows of its gatekeeper: C-LANs with their addresses and regions, the
//! discovery addresses, the direct links, the socket mode.

use std::net::SocketAddr;

use crate::config::{Config, LinkKind, RegionId, SocketMode};

/// What the exam needs to know of its gatekeeper.
#[derive(Debug, Clone)]
pub struct Topology {
    pub(super) clans: Vec<Spot>,
    pub(super) discovery: Vec<SocketAddr>,
    direct_links: Vec<(RegionId, RegionId)>,
    pub(super) socket_mode: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Spot {
    pub(super) name: String,
    pub(super) addresses: Vec<SocketAddr>,
    pub(super) region: RegionId,
    pub(super) in_service: bool,
}

impl Topology {
    /// The topology of a configuration.
    pub fn of(config: &Config) -> Topology {
        let mut discovery = vec![config.gatekeeper.discovery];
        discovery.extend(config.gatekeeper.discovery6);
        Topology {
            clans: config
                .clans
                .iter()
                .map(|clan| Spot {
                    name: clan.name.clone(),
                    addresses: clan.ras_addresses().collect(),
                    region: clan.region,
                    in_service: clan.in_service,
                })
                .collect(),
            discovery,
            direct_links: config
                .links
                .iter()
                .filter(|l| l.kind == LinkKind::Direct)
                .flat_map(|l| {
                    let back = l.symmetric.then_some((l.far, l.near));
                    std::iter::once((l.near, l.far)).chain(back)
                })
                .collect(),
            socket_mode: config.gatekeeper.sockets == SocketMode::Tcp,
        }
    }

    pub(super) fn clan_at(&self, address: SocketAddr) -> Option<usize> {
        self.clans
            .iter()
            .position(|c| c.addresses.contains(&address))
    }

    pub(super) fn clan_of_ip(&self, ip: std::net::IpAddr) -> Option<usize> {
        self.clans
            .iter()
            .position(|c| c.addresses.iter().any(|a| a.ip() == ip))
    }

    pub(super) fn name_at(&self, address: SocketAddr) -> String {
        self.clan_at(address)
            .map_or_else(|| address.to_string(), |i| self.clans[i].name.clone())
    }

    pub(super) fn linked_directly(&self, home: RegionId, other: RegionId) -> bool {
        self.direct_links.contains(&(home, other))
    }
}
