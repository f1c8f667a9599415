//! A new configuration for a running gatekeeper (SIGHUP), without dropping registrations.
//!
//! The new core is built from the new configuration and the old core's
//! [`State`](super::state::State), as a restart would build it, and the rest of the old
//! core's life is carried over: counters, events, the AGL generator, the retransmission
//! cache, URQs waiting for their UCF, password time stamps, and trunk calls (when the
//! routing sections are unchanged; otherwise the calls in progress are forgotten; calls to
//! registered gateways when the nodes are unchanged).
//!
//! - New C-LANs start empty. Removed C-LANs: every phone registered at one or holding its
//!   socket on one is unregistered with a URQ (`reregistrationRequired`, its AGL from the new
//!   configuration) sent once from the removed C-LAN's address; the same for phones whose
//!   region is removed. Reservations on removed C-LANs are dropped.
//! - A C-LAN's `in_service` and `max_sockets` are the file's where the file changed them;
//!   where it did not, what an administrator set since stays. Taken out of service by the
//!   file: its phones get URQs as from the admin API. A lowered cap drops nobody.
//! - A C-LAN's `warn_sockets` warning stands across the reload; a changed threshold is
//!   judged at once against the current load (raised or cleared once, as ever).
//! - `[limits]` apply at once: the retransmission cache and the rate limit's table carry
//!   over under the new bounds (the oldest cached replies and least recently seen sources
//!   go first when they shrink; a source keeps its tokens, at most the new burst); the
//!   reservation cap and the reflection ratio are read where they apply.
//! - Regions, links, TTS rules, AGL quotas, passwords and the other `[gatekeeper]` keys
//!   take effect for what comes next (a registered phone keeps its region and AGL until it
//!   registers again). A new configuration without `seed` keeps the running one.
//! - `[rebalance]` applies at once: switched on, a check runs now; switched off, no timer is
//!   left. Phones held off stay held off (by the new `hold_off_s` only when moved again).

use std::time::Instant;

use super::events::{Ending, EndpointKey, Event};
use super::rate_limit::RateLimit;
use super::{policy, Gatekeeper, StartError, Timer, Transmit};
use crate::calls::Calls;
use crate::config::{Config, Limits};
use crate::ras::reply::UrqReason;

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// URQs to send (phones on removed or newly out-of-service C-LANs). Some leave from
    /// addresses of removed C-LANs: send them before closing those sockets.
    pub transmits: Vec<Transmit>,
    /// Registrations kept.
    pub registrations: usize,
    /// Registrations unregistered because their C-LAN or region is gone, one line each.
    pub unregistered: Vec<String>,
    /// Trunk calls in progress forgotten because the routing changed.
    pub calls_forgotten: usize,
}

impl Gatekeeper {
    /// `warn_sockets` warnings live on across a reload: crossings of the old life are
    /// reported now, the rebuild's are dropped, and each C-LAN of the new configuration
    /// starts from its old warning (none for a new C-LAN) and its load under the new
    /// threshold — so a reload raises or clears a warning only where it changed something.
    fn carry_warnings(&mut self, fresh: &mut Gatekeeper) {
        self.report_warnings();
        fresh.loads.warnings_mut().forget_crossings();
        for (idx, clan) in fresh.config.clans.iter().enumerate() {
            let raised = self
                .config
                .clans
                .iter()
                .position(|old| old.name == clan.name)
                .is_some_and(|old| self.loads.warnings().raised(old));
            let load = fresh.loads.get(idx).load();
            fresh.loads.warnings_mut().carry(idx, raised, load);
        }
    }

    /// Runs on `config` from now on (see the module doc). On an error the gatekeeper is
    /// unchanged.
    pub fn reload(&mut self, now: Instant, mut config: Config) -> Result<Reloaded, StartError> {
        if config.gatekeeper.seed.is_none() {
            config.gatekeeper.seed = self.config.gatekeeper.seed;
        }
        let loaded = config.clone();
        for clan in &mut config.clans {
            let (Some(before), Some(current)) =
                (self.loaded.clan(&clan.name), self.config.clan(&clan.name))
            else {
                continue;
            };
            if before.in_service == clan.in_service {
                clan.in_service = current.in_service;
            }
            if before.max_sockets == clan.max_sockets {
                clan.max_sockets = current.max_sockets;
            }
        }
        let routing_unchanged = self.config.nodes == config.nodes
            && self.config.trunks == config.trunks
            && self.config.route_groups == config.route_groups
            && self.config.route_lists == config.route_lists
            && self.config.route_patterns == config.route_patterns;
        let mut fresh = Gatekeeper::new(config)?;
        fresh.loaded = loaded;
        fresh.wall = self.wall;
        let state = self.snapshot_state(now);
        let restored = fresh.load_state(&state, now);
        self.carry_warnings(&mut fresh);
        let mut reloaded = Reloaded {
            transmits: restored.transmits,
            registrations: restored.registrations,
            unregistered: restored.dropped,
            calls_forgotten: 0,
        };

        // Carried over before the URQs below, so that their sequence numbers continue.
        fresh.rng = self.rng.clone();
        fresh.next_seq = self.next_seq;
        fresh.stats = std::mem::take(&mut self.stats);
        fresh.events = std::mem::take(&mut self.events);
        fresh.retransmits = std::mem::take(&mut self.retransmits);
        // [limits] of the new file, on the tables carried over (the other limits are read
        // from the configuration where they apply).
        fresh
            .retransmits
            .set_max(fresh.config.limits.max_cached_replies);
        fresh.rate_limit =
            std::mem::replace(&mut self.rate_limit, RateLimit::new(&Limits::default()));
        fresh.rate_limit.reconfigure(&fresh.config.limits);
        // A lowered reservation cap holds at once: the reservations that run out first go,
        // as when a GCF finds the table full.
        while fresh.reservations.len() > fresh.config.limits.max_reservations {
            let Some(oldest) = fresh.reservations.oldest() else {
                break;
            };
            fresh.release_reservation(oldest);
            fresh.stats.reservations_dropped += 1;
        }
        fresh.passwords = self.passwords.renewed(&fresh.config);
        let addresses = fresh.local_addresses();
        for (key, pending) in std::mem::take(&mut self.pending_urqs) {
            if addresses.contains(&pending.transmit.local) {
                fresh.arm(pending.next, Timer::Urq(key.0, key.1));
                fresh.pending_urqs.insert(key, pending);
            }
        }
        if routing_unchanged {
            fresh.calls = std::mem::replace(&mut self.calls, Calls::new(&fresh.config, 0));
        } else {
            reloaded.calls_forgotten = self.calls.len();
        }
        // Calls to registered gateways: kept while the nodes stay the same, the gateway and
        // its caller still registered.
        let members = std::mem::take(&mut self.trunk_members);
        if self.config.nodes == fresh.config.nodes {
            let registry = &fresh.registry;
            fresh
                .trunk_members
                .carry_from(members, |key| registry.get(key).is_some());
        } else {
            reloaded.calls_forgotten += members.calls().count();
        }

        // Registrations on removed C-LANs or regions: a URQ each, from where they registered.
        for &key in &restored.unfit {
            let Some(old) = self.registry.get(key) else {
                continue;
            };
            fresh.calls.end_all_of(key);
            fresh.trunk_members.end_all_of(key);
            let family = old.family();
            let local = self.ras_address(old.registered_via, family);
            let region = if fresh.config.region(old.region).is_some() {
                old.region
            } else {
                fresh.config.gatekeeper.default_region
            };
            let tiers = fresh.topology.tiers(region).into_owned();
            let agl = policy::build_agl(
                &tiers,
                &fresh.loads,
                &fresh.config.agl,
                family,
                &mut fresh.rng,
            );
            let reason = UrqReason::ReregistrationRequired;
            reloaded
                .transmits
                .extend(fresh.urq_from(now, local, (key, old), reason, &agl, false));
            fresh.events.push(Event::Unregistered {
                endpoint_id: EndpointKey(key),
                reason: Ending::Reconfigured,
                clan: old.socket.map(|clan| self.clan_label(clan)),
            });
        }
        fresh.carry_connections(now, self);
        // Hold-offs and the last move carry over; a check follows at once under the new
        // settings (none when `[rebalance]` is gone).
        fresh.rebalance = self.rebalance.reconfigured(fresh.config.rebalance);
        fresh.rebalance.wake(now);
        *self = fresh;
        Ok(reloaded)
    }
}
