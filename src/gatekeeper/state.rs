//! What survives a restart: registrations (with their sockets, hence the C-LAN loads) and
//! GCF reservations, as a [`State`] value that the server writes to `--state FILE`.
//!
//! Both directions are pure: [`Gatekeeper::snapshot_state`] reads the core at `now`,
//! [`Gatekeeper::restore`] builds a core from a configuration and a `State`. Times are kept
//! as wall-clock expiry (milliseconds since the UNIX epoch), because the core's `Instant`s
//! mean nothing in another process; restoring turns them back into `Instant`s at `now`, so a
//! registration keeps the time to live it had left, less the time the gatekeeper was down.
//!
//! C-LANs and regions are named (not indexed), so a state file written under one
//! configuration is restored under another as far as it fits: a registration whose C-LAN
//! (socket or the one it registered at) or region is gone is dropped, and so is a
//! reservation on a C-LAN that is gone; [`Restored`] says which and why. AGL entries on a
//! C-LAN that is gone are left out of the AGL. Registrations whose socket is on a C-LAN the
//! new configuration puts out of service are unregistered with a URQ, as when a C-LAN is
//! taken out of service. A cap below the restored load refuses new work and drops nobody.
//!
//! Not kept: the retransmission cache, gatekeeper-sent URQs still waiting for their UCF,
//! trunk calls in progress, counters, and admin changes of service state and caps (the
//! configuration decides those at start).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::registry::{self, Registration};
use super::topology::ClanIdx;
use super::{Gatekeeper, Reservation, StartError, Transmit, TTS_RETRY};
use crate::config::{Config, RegionId};
use crate::ras::avaya::AvayaEndpoint;
use crate::ras::{Alias, PackedAliases};

/// The version of the state format this rasgk writes and reads.
pub const STATE_VERSION: u32 = 1;

/// Everything [`Gatekeeper::restore`] needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// [`STATE_VERSION`].
    pub version: u32,
    /// Wall clock when it was taken, ms since the UNIX epoch.
    pub written_ms: u64,
    /// The highest endpoint key handed out: restored gatekeepers never hand it out again.
    pub last_key: u64,
    /// Registered endpoints, oldest first.
    pub registrations: Vec<SavedRegistration>,
    /// GCF reservations not yet used.
    pub reservations: Vec<SavedReservation>,
}

/// One registration in a [`State`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedRegistration {
    /// The key (`endpointIdentifier` is `EP` and the key in hex).
    pub key: u64,
    /// `terminalAlias`.
    pub aliases: Vec<Alias>,
    /// Its RAS source.
    pub source: SocketAddr,
    /// `rasAddress`.
    pub ras_address: SocketAddr,
    /// `callSignalAddress`.
    pub call_signal_address: Vec<SocketAddr>,
    /// A gateway?
    pub gateway: bool,
    /// An Avaya endpoint (with the MAC address its login request gave)?
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avaya: Option<AvayaEndpoint>,
    /// A gateway's `supportedPrefixes` (it is a trunk member).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<String>,
    /// Home region.
    pub region: RegionId,
    /// A TTS phone?
    pub tts: bool,
    /// Its full RRQ asked for the service frame (docs/rules.md §8.4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub service_frame: bool,
    /// The C-LAN its full RRQ arrived at, by name.
    pub registered_via: String,
    /// The C-LAN holding its socket, by name.
    pub socket: Option<String>,
    /// Its AGL, C-LAN names in order.
    pub agl: Vec<String>,
    /// Granted time to live, seconds.
    pub ttl_s: u32,
    /// Expiry, ms since the UNIX epoch.
    pub expires_ms: u64,
}

/// One reservation in a [`State`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedReservation {
    /// The RAS source the GCF went to.
    pub source: SocketAddr,
    /// The C-LAN, by name.
    pub clan: String,
    /// Expiry, ms since the UNIX epoch.
    pub expires_ms: u64,
}

/// What [`Gatekeeper::restore`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// Registrations restored.
    pub registrations: usize,
    /// Reservations restored.
    pub reservations: usize,
    /// Registrations and reservations that had expired while the gatekeeper was down.
    pub expired: usize,
    /// What did not fit the configuration, one line each (endpoint or source, and why).
    pub dropped: Vec<String>,
    /// The keys of the registrations among `dropped`.
    pub unfit: Vec<u64>,
    /// URQs to send: phones whose socket's C-LAN is out of service in the configuration.
    pub transmits: Vec<Transmit>,
}

fn millis(since_epoch: Duration) -> u64 {
    u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX)
}

/// Why a saved alias cannot be restored, if it cannot.
fn checked_alias(alias: &Alias) -> Result<(), String> {
    let result = match alias {
        Alias::DialledDigits(text) => Alias::dialled_digits(text).map(drop),
        Alias::H323Id(text) => Alias::h323_id(text).map(drop),
        _ => Ok(()),
    };
    result.map_err(|e| e.to_string())
}

impl Gatekeeper {
    /// The state to save at `now`: registrations and reservations with wall-clock expiry.
    pub fn snapshot_state(&self, now: Instant) -> State {
        let wall = self.wall_clock(now);
        let expiry = |at: Instant| millis(wall + at.saturating_duration_since(now));
        let name = |clan: ClanIdx| self.config.clans[clan].name.clone();
        let registrations = self
            .registry
            .iter()
            .map(|(key, r)| SavedRegistration {
                key,
                aliases: r.aliases.to_vec(),
                source: r.source,
                ras_address: r.ras_address(),
                call_signal_address: r.call_signal_address().to_vec(),
                gateway: r.gateway,
                avaya: r.avaya,
                prefixes: self
                    .trunk_members
                    .get(key)
                    .map(|member| member.prefixes.clone())
                    .unwrap_or_default(),
                region: r.region,
                tts: r.tts,
                service_frame: r.service_frame,
                registered_via: name(r.registered_via),
                socket: r.socket.map(name),
                agl: r.agl.iter().map(|&clan| name(clan)).collect(),
                ttl_s: r.ttl_s,
                expires_ms: expiry(r.expires),
            })
            .collect();
        let mut reservations: Vec<SavedReservation> = self
            .reservations
            .iter()
            .map(|(&source, r)| SavedReservation {
                source,
                clan: name(r.clan),
                expires_ms: expiry(r.expires),
            })
            .collect();
        reservations.sort_by_key(|r| (r.expires_ms, r.source));
        State {
            version: STATE_VERSION,
            written_ms: millis(wall),
            last_key: self.registry.last_key(),
            registrations,
            reservations,
        }
    }

    /// A gatekeeper on `config` holding what `state` holds, as far as it fits, at `now`,
    /// when the wall clock reads `wall` (time since the UNIX epoch).
    pub fn restore(
        config: Config,
        state: &State,
        now: Instant,
        wall: Duration,
    ) -> Result<(Gatekeeper, Restored), StartError> {
        let mut gatekeeper = Gatekeeper::new(config)?;
        gatekeeper.set_wall_clock(now, wall);
        let restored = gatekeeper.load_state(state, now);
        gatekeeper.adopt_places(now);
        // With `[rebalance]`, the restored loads are looked at once.
        gatekeeper.notice_loads(now);
        Ok((gatekeeper, restored))
    }

    pub(super) fn load_state(&mut self, state: &State, now: Instant) -> Restored {
        let wall_ms = millis(self.wall_clock(now));
        let left = |expires_ms: u64| {
            (expires_ms > wall_ms).then(|| now + Duration::from_millis(expires_ms - wall_ms))
        };
        let clans: HashMap<String, ClanIdx> = self
            .config
            .clans
            .iter()
            .enumerate()
            .map(|(idx, clan)| (clan.name.clone(), idx))
            .collect();
        let mut restored = Restored::default();
        let mut highest = state.last_key;
        for saved in &state.registrations {
            highest = highest.max(saved.key);
            let Some(expires) = left(saved.expires_ms) else {
                restored.expired += 1;
                continue;
            };
            match self.restore_registration(saved, expires, &clans) {
                Ok(()) => restored.registrations += 1,
                Err(why) => {
                    restored.unfit.push(saved.key);
                    restored.dropped.push(format!(
                        "registration {} ({}): {why}",
                        registry::endpoint_id_text(saved.key),
                        saved.source
                    ));
                }
            }
        }
        self.registry.skip_past(highest);
        for saved in &state.reservations {
            let Some(expires) = left(saved.expires_ms) else {
                restored.expired += 1;
                continue;
            };
            let Some(&clan) = clans.get(saved.clan.as_str()) else {
                restored.dropped.push(format!(
                    "reservation of {} on C-LAN {:?}: no such C-LAN in the configuration",
                    saved.source, saved.clan
                ));
                continue;
            };
            if self.reservations.get(&saved.source).is_some()
                || self.registry.by_source(saved.source).is_some()
                || !self.loads.get(clan).in_service
            {
                // A second reservation of one source, one of a registered source, or one
                // on a C-LAN out of service: nothing a GCF would have left.
                restored.dropped.push(format!(
                    "reservation of {} on C-LAN {:?}: the source is registered or reserved \
                     already, or the C-LAN is out of service",
                    saved.source, saved.clan
                ));
                continue;
            }
            self.loads.reserve(clan);
            self.reservations.insert(
                saved.source,
                Reservation {
                    clan,
                    expires,
                    made: now,
                },
            );
            restored.reservations += 1;
        }
        // Sockets on C-LANs the configuration puts out of service: as if taken out now.
        for clan in 0..self.config.clans.len() {
            if !self.loads.get(clan).in_service && self.loads.get(clan).sockets > 0 {
                restored.transmits.extend(self.drain_clan(now, clan));
            }
        }
        if !self.tts_pending.is_empty() {
            self.tts_retry_at = Some(now + TTS_RETRY);
        }
        // Restoring is not news for the event watchers.
        self.events.drain().for_each(drop);
        restored
    }

    fn restore_registration(
        &mut self,
        saved: &SavedRegistration,
        expires: Instant,
        clans: &HashMap<String, ClanIdx>,
    ) -> Result<(), String> {
        let clan = |name: &str| {
            clans
                .get(name)
                .copied()
                .ok_or_else(|| format!("C-LAN {name:?} is not in the configuration"))
        };
        let registered_via = clan(&saved.registered_via)?;
        let socket = saved.socket.as_deref().map(clan).transpose()?;
        if self.config.region(saved.region).is_none() {
            return Err(format!(
                "region {} is not in the configuration",
                saved.region
            ));
        }
        for alias in &saved.aliases {
            checked_alias(alias)?;
            if self.registry.by_alias(alias).is_some() {
                return Err(format!(
                    "alias {alias} is registered twice in the state file"
                ));
            }
        }
        if saved.call_signal_address.is_empty() {
            return Err("no callSignalAddress".to_string());
        }
        if self.registry.by_source(saved.source).is_some() || self.registry.get(saved.key).is_some()
        {
            return Err("its source or key is registered twice in the state file".to_string());
        }
        let agl: Vec<ClanIdx> = saved
            .agl
            .iter()
            .filter_map(|name| clans.get(name).copied())
            .collect();
        let family = crate::config::Family::of(saved.source.ip());
        let agl = self.agls[family as usize].intern(&agl);
        if let Some(clan) = socket {
            self.loads.add_socket(clan);
        } else if saved.tts {
            self.tts_pending.insert(saved.key);
        }
        self.registry.insert(
            saved.key,
            Registration {
                aliases: PackedAliases::from(&saved.aliases[..]),
                source: saved.source,
                addresses: registry::EndpointAddresses::new(
                    saved.source,
                    saved.ras_address,
                    saved.call_signal_address.clone().into(),
                ),
                gateway: saved.gateway,
                avaya: saved.avaya,
                region: saved.region,
                tts: saved.tts,
                service_frame: saved.service_frame,
                registered_via,
                socket,
                agl,
                ttl_s: saved.ttl_s,
                expires,
            },
        );
        self.arm_expiry(expires, saved.key);
        if saved.gateway {
            self.join_trunk(saved.key, saved.prefixes.iter().cloned());
        }
        Ok(())
    }
}
