//! GRQ → GCF / GRJ (domain.md §1): the C-LAN a phone is sent to, and the reservation that
//! keeps a burst of GRQs from all landing on the same C-LAN.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{policy, Gatekeeper, Reservation, Timer};
use crate::ras::asn::GatekeeperRequest;
use crate::ras::reply::{self, GrjReason};
use crate::ras::RasMessage;

impl Gatekeeper {
    /// A GRQ: choose a C-LAN by the tiers of the phone's home region, reserve a place on it
    /// for `gcf_hold_s`, and name it in the GCF. A new GRQ from the same source replaces its
    /// earlier reservation.
    pub(super) fn gatekeeper_request(
        &mut self,
        now: Instant,
        local: SocketAddr,
        from: SocketAddr,
        grq: &GatekeeperRequest,
    ) -> Option<RasMessage> {
        let seq = grq.request_seq_num.0;
        self.release_reservation(from);
        let home = self.home_region(local, from.ip());
        let tiers = self.topology.tiers(home);
        let Some(clan) = policy::choose_clan(&tiers, &self.loads, self.config.gatekeeper.tier_mode)
        else {
            self.note_reject("GRJ", "resourceUnavailable");
            tracing::debug!(region = home, "GRJ resourceUnavailable: no C-LAN has room");
            return Some(reply::gatekeeper_reject(
                seq,
                &self.gatekeeper_id,
                GrjReason::ResourceUnavailable,
            ));
        };
        self.loads.reserve(clan);
        let expires = now + Duration::from_secs(u64::from(self.config.gatekeeper.gcf_hold_s));
        self.reservations.insert(
            from,
            Reservation {
                clan,
                expires,
                made: now,
            },
        );
        self.arm(expires, Timer::Reservation(from));
        tracing::debug!(region = home, clan = %self.config.clans[clan].name, "GCF");
        Some(reply::gatekeeper_confirm(
            seq,
            &self.gatekeeper_id,
            self.config.clans[clan].address,
        ))
    }
}
