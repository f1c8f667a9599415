//! SIGHUP: read `--config FILE` again and run on it without a restart.
//!
//! The file is checked first; a bad one is refused with a logged error naming the file and
//! field, and the running configuration stays. Then the sockets of new addresses (new
//! C-LANs, a new discovery address) are bound — one that cannot be bound refuses the reload
//! too — and the core takes the configuration ([`Gatekeeper::reload`]). Its URQs are sent
//! (some from removed C-LANs' addresses), and only then are the sockets of addresses no
//! longer used closed. `[admin]`, `multicast` and `sockets` changes need a restart; a reload
//! says so (and keeps the running `sockets` mode). `[limits]` apply at once, in the core and
//! here: the longest TPKT frame and the keep-alive of connections opened from now on.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tokio::net::UdpSocket;

use super::batch::Batch;
use super::send_all;
use crate::config::{self, Config};
use crate::gatekeeper::Gatekeeper;

/// What a reload touches in the server.
pub(super) struct Sockets<'a> {
    /// Every RAS socket by local address.
    pub sockets: &'a mut super::Sockets,
    /// The sockets the state task reads, with the local address each reports.
    pub readers: &'a mut Vec<(SocketAddr, Arc<UdpSocket>)>,
    /// What `/api/ras` watchers see of the URQs a reload sends.
    pub tap: &'a super::tap::Tap,
}

/// The role of an address in a configuration, for messages.
fn role(config: &Config, address: SocketAddr) -> String {
    match config
        .clans
        .iter()
        .find(|clan| clan.ras_addresses().any(|a| a == address))
    {
        Some(clan) => format!("C-LAN {}", clan.name),
        None => "discovery".to_string(),
    }
}

/// Reads `path` and runs on it; logs what happened. Nothing changes when it fails.
pub(super) async fn reload(path: &Path, gatekeeper: &mut Gatekeeper, server: Sockets<'_>) {
    let config = match config::load(path) {
        Ok(config) => config,
        Err(error) => {
            tracing::error!("reload refused: {error}; the running configuration stays");
            return;
        }
    };
    let running = gatekeeper.config();
    if config.admin != running.admin {
        tracing::warn!(
            "reload: [admin] changes (listen, token) take effect at the next start only"
        );
    }
    if config.gatekeeper.multicast != running.gatekeeper.multicast {
        tracing::warn!("reload: gatekeeper.multicast takes effect at the next start only");
    }
    let mut config = config;
    if config.gatekeeper.sockets != running.gatekeeper.sockets {
        // The signalling listeners are bound at start: the running mode stays, or the core
        // would wait for connections no listener takes (or ignore those it does).
        tracing::warn!(
            "reload: gatekeeper.sockets takes effect at the next start only; running on with \
             sockets = \"{}\"",
            match running.gatekeeper.sockets {
                config::SocketMode::Count => "count",
                config::SocketMode::Tcp => "tcp",
            }
        );
        config.gatekeeper.sockets = running.gatekeeper.sockets;
    }
    let wanted: Vec<SocketAddr> = std::iter::once(config.gatekeeper.discovery)
        .chain(config.gatekeeper.discovery6)
        .chain(config.clans.iter().flat_map(|clan| clan.ras_addresses()))
        .collect();
    let mut bound = Vec::new();
    for &address in &wanted {
        if server.sockets.contains_key(&address) {
            continue;
        }
        match crate::sockets::bind_udp(address) {
            Ok(socket) => bound.push((address, Arc::new(socket))),
            Err(error) => {
                tracing::error!(
                    "reload refused: {}: cannot bind {address} ({}): {error}; the running \
                     configuration stays",
                    path.display(),
                    role(&config, address)
                );
                return;
            }
        }
    }
    let clans_before: Vec<String> = running.clans.iter().map(|c| c.name.clone()).collect();
    let reloaded = match gatekeeper.reload(Instant::now(), config) {
        Ok(reloaded) => reloaded,
        Err(error) => {
            tracing::error!(
                "reload refused: {}: {error}; the running configuration stays",
                path.display()
            );
            return;
        }
    };
    for (address, socket) in bound {
        server.sockets.insert(address, socket.clone());
        server.readers.push((address, socket));
    }
    send_all(
        server.sockets,
        server.tap.if_watched(),
        &mut Batch::default(),
        &mut { reloaded.transmits },
    )
    .await;
    let unused: Vec<SocketAddr> = server
        .sockets
        .keys()
        .copied()
        .filter(|address| !wanted.contains(address))
        .collect();
    for address in &unused {
        server.sockets.remove(address);
    }
    server
        .readers
        .retain(|(address, _)| !unused.contains(address));
    let config = gatekeeper.config();
    let added: Vec<&str> = config
        .clans
        .iter()
        .map(|c| c.name.as_str())
        .filter(|name| !clans_before.iter().any(|before| before == name))
        .collect();
    let removed: Vec<&str> = clans_before
        .iter()
        .map(String::as_str)
        .filter(|name| config.clan(name).is_none())
        .collect();
    tracing::info!(
        path = %path.display(),
        clans = config.clans.len(),
        added = ?added,
        removed = ?removed,
        registrations = reloaded.registrations,
        unregistered = reloaded.unregistered.len(),
        calls_forgotten = reloaded.calls_forgotten,
        "configuration reloaded"
    );
    for line in &reloaded.unregistered {
        tracing::warn!("reload: unregistered with a URQ: {line}");
    }
}
