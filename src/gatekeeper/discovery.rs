//! GRQ → GCF / GRJ (docs/rules.md §4): the C-LAN a phone is sent to, and the reservation that
//! keeps a burst of GRQs from all landing on the same C-LAN.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::topology::ClanIdx;
use super::{policy, Gatekeeper, Reply, Reservation};
use crate::config::Family;
use crate::ras::reply::{self, GrjReason};
use crate::ras::Discovery;

impl Gatekeeper {
    /// A GRQ: choose a C-LAN by the tiers of the phone's home region, reserve a place on it
    /// for `gcf_hold_s`, and name it in the GCF. A new GRQ from the same source replaces its
    /// earlier reservation. A phone that is registered already (it lost its RCF, or starts
    /// over) counts its own socket as room: when the choice falls on the C-LAN holding it,
    /// no reservation is needed, and a full system never refuses it its own place.
    ///
    /// A phone known to be TTS already at its GRQ ([`tts_at_discovery`]) takes no
    /// reservation either (docs/rules.md §4.3): its socket goes where docs/rules.md §7 puts
    /// it, not to the GCF's C-LAN, so a reservation would hold a place it never takes and
    /// push non-TTS phones of the same burst away from where the rules put them. Its GCF
    /// names the C-LAN docs/rules.md §4 chooses, where it registers.
    ///
    /// [`tts_at_discovery`]: Gatekeeper::tts_at_discovery
    pub(super) fn gatekeeper_request(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
        discovery: &Discovery<'_>,
    ) -> Option<Reply> {
        let seq = discovery.seq;
        if self.excluded(from) {
            self.note_reject("GRJ", "terminalExcluded");
            tracing::debug!("GRJ terminalExcluded: outside the network map");
            return Some(
                reply::gatekeeper_reject(seq, &self.gatekeeper_id, GrjReason::TerminalExcluded)
                    .into(),
            );
        }
        self.release_reservation(from);
        let home = self.home_region(local, from.ip());
        let family = Family::of(from.ip());
        let tiers = self.topology.tiers(home);
        let own_socket = self
            .registry
            .by_source(from)
            .and_then(|key| self.registry.get(key))
            .filter(|registration| !registration.tts)
            .and_then(|registration| registration.socket)
            .filter(|&clan| self.loads.get(clan).in_service);
        if let Some(own) = own_socket {
            self.loads.remove_socket(own);
        }
        let chosen = policy::choose_clan(
            &tiers,
            &self.loads,
            self.config.gatekeeper.tier_mode,
            family,
        );
        if let Some(own) = own_socket {
            self.loads.add_socket(own);
        }
        if let (Some(clan), Some(own)) = (chosen, own_socket) {
            if clan == own {
                tracing::debug!(region = home, clan = %self.config.clans[clan].name, "GCF: its own socket's C-LAN");
                let address = self.ras_address(clan, family);
                return Some(self.gatekeeper_confirm(seq, address, discovery.avaya.is_some()));
            }
        }
        // A gateway takes no socket: with every C-LAN full, it registers at the first one of
        // its tiers in service all the same.
        let for_gateway = || {
            tiers.group_clans.iter().flatten().copied().find(|&clan| {
                let load = self.loads.get(clan);
                load.in_service && load.serves(family)
            })
        };
        let chosen = match chosen.filter(|&clan| self.loads.get(clan).available()) {
            None if discovery.gateway => for_gateway(),
            chosen => chosen,
        };
        let Some(clan) = chosen else {
            self.note_reject("GRJ", "resourceUnavailable");
            tracing::debug!(region = home, "GRJ resourceUnavailable: no C-LAN has room");
            return Some(
                reply::gatekeeper_reject(seq, &self.gatekeeper_id, GrjReason::ResourceUnavailable)
                    .into(),
            );
        };
        if discovery.gateway {
            // A gateway is a trunk member: it never takes a C-LAN socket, so no place.
            tracing::debug!(region = home, clan = %self.config.clans[clan].name, "GCF, no reservation: a gateway");
            let address = self.ras_address(clan, family);
            return Some(self.gatekeeper_confirm(seq, address, discovery.avaya.is_some()));
        }
        if self.tts_at_discovery(discovery, home) {
            self.stats.gcf_tts += 1;
            tracing::debug!(region = home, clan = %self.config.clans[clan].name, "GCF, no reservation: a TTS phone");
            let address = self.ras_address(clan, family);
            return Some(self.gatekeeper_confirm(seq, address, discovery.avaya.is_some()));
        }
        self.hold_place(now, from, clan);
        tracing::debug!(region = home, clan = %self.config.clans[clan].name, "GCF");
        let address = self.ras_address(clan, family);
        Some(self.gatekeeper_confirm(seq, address, discovery.avaya.is_some()))
    }

    /// Reserves a place on `clan` for `source` for `gcf_hold_s` (docs/rules.md §4.3), replacing
    /// any reservation it held: for a GCF, and for a phone rebalancing moves
    /// (docs/rules.md §9.2). When the table is full, the reservation that runs out first
    /// makes room.
    pub(super) fn hold_place(&mut self, now: Instant, source: SocketAddr, clan: ClanIdx) {
        self.release_reservation(source);
        if self.reservations.len() >= self.config.limits.max_reservations {
            // Full: the reservation that runs out first makes room (see `reservations`).
            if let Some(oldest) = self.reservations.oldest() {
                self.release_reservation(oldest);
                self.stats.reservations_dropped += 1;
            }
        }
        self.loads.reserve(clan);
        let expires = now + Duration::from_secs(u64::from(self.config.gatekeeper.gcf_hold_s));
        self.reservations.insert(
            source,
            Reservation {
                clan,
                expires,
                made: now,
            },
        );
    }
}
