//! The GCF reservations (docs/rules.md §4.3), one per RAS source, with the order they run out in:
//! what expires next, and at `[limits] max_reservations` the oldest one to make room for a new
//! one.
//!
//! A flood of GRQs from one source only ever holds one reservation (each replaces the last);
//! the cap is for GRQs from very many sources, which would otherwise hold a place each for
//! `gcf_hold_s`. Dropping the oldest rather than refusing the newest keeps the gatekeeper
//! answering new phones: a real phone sends its RRQ within milliseconds of its GCF.
//!
//! Every reservation lasts `gcf_hold_s` from its GRQ, so they run out in the order they were
//! made: the order is a queue, not a sorted tree. A reservation replaced or taken away leaves
//! its place in the queue behind, marked dead by a serial number that no longer matches its
//! source's; dead places are dropped when they reach the front, and swept out in one pass
//! when they outnumber the live ones. Every GRQ replaces a reservation, and this made its
//! bookkeeping two hash probes and a push where it was four tree updates (two here and two
//! in the gatekeeper's timers): `rasgk bench` showed those updates as a tenth of the
//! gatekeeper thread's time under a GRQ load. (A reservation restored from a state file may
//! run out before the newest one queued; it is put in its place.)

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::Instant;

use super::Reservation;

/// Dead places the queue may hold beyond twice the live ones before it is swept.
const SLACK: usize = 1024;

/// Reservations by source, and in the order they run out.
#[derive(Debug, Default)]
pub(super) struct Reservations {
    /// Each source's reservation and the serial of its place in `queue`. Sources are
    /// whatever a peer sends from: seeded per process.
    by_source: HashMap<SocketAddr, (Reservation, u64), foldhash::fast::RandomState>,
    /// (expiry, source, serial) in expiry order. The front is always live (or the queue
    /// empty).
    queue: VecDeque<(Instant, SocketAddr, u64)>,
    /// The serial the next reservation gets.
    next_serial: u64,
}

/// Whether a place in the queue is its source's reservation still (not replaced or taken
/// away since).
fn is_live(
    by_source: &HashMap<SocketAddr, (Reservation, u64), foldhash::fast::RandomState>,
    (_, source, serial): (Instant, SocketAddr, u64),
) -> bool {
    by_source.get(&source).is_some_and(|r| r.1 == serial)
}

impl Reservations {
    /// The reservation of a source.
    pub fn get(&self, source: &SocketAddr) -> Option<&Reservation> {
        self.by_source
            .get(source)
            .map(|(reservation, _)| reservation)
    }

    /// Keeps a source's reservation (replacing any it had).
    pub fn insert(&mut self, source: SocketAddr, reservation: Reservation) {
        let serial = self.next_serial;
        self.next_serial += 1;
        self.by_source.insert(source, (reservation, serial));
        let place = (reservation.expires, source, serial);
        if self
            .queue
            .back()
            .is_none_or(|&(last, _, _)| last <= reservation.expires)
        {
            self.queue.push_back(place);
        } else {
            let at = self
                .queue
                .partition_point(|&(expires, _, _)| expires <= reservation.expires);
            self.queue.insert(at, place);
        }
        if self.queue.len() > 2 * self.by_source.len() + SLACK {
            let by_source = &self.by_source;
            self.queue.retain(|&place| is_live(by_source, place));
        }
        self.settle();
    }

    /// Takes a source's reservation away.
    pub fn remove(&mut self, source: &SocketAddr) -> Option<Reservation> {
        let (reservation, _) = self.by_source.remove(source)?;
        self.settle();
        Some(reservation)
    }

    /// Drops dead places from the front, so that the front is the next to run out.
    fn settle(&mut self) {
        while let Some(&place) = self.queue.front() {
            if is_live(&self.by_source, place) {
                break;
            }
            self.queue.pop_front();
        }
    }

    /// The source whose reservation runs out first.
    pub fn oldest(&self) -> Option<SocketAddr> {
        self.queue.front().map(|&(_, source, _)| source)
    }

    /// When the next reservation runs out.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.queue.front().map(|&(expires, _, _)| expires)
    }

    /// Takes away the reservation that runs out first, if it has run out at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<(SocketAddr, Reservation)> {
        let &(expires, source, _) = self.queue.front()?;
        if expires > now {
            return None;
        }
        let reservation = self.remove(&source)?;
        Some((source, reservation))
    }

    /// Reservations held.
    pub fn len(&self) -> usize {
        self.by_source.len()
    }

    /// Every reservation, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&SocketAddr, &Reservation)> {
        self.by_source
            .iter()
            .map(|(source, (reservation, _))| (source, reservation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn source(n: u16) -> SocketAddr {
        SocketAddr::from(([127, 1, 0, 1], n))
    }

    #[test]
    fn the_oldest_is_the_one_that_runs_out_first() {
        let t0 = Instant::now();
        let at = |s: u64| Reservation {
            clan: 0,
            expires: t0 + Duration::from_secs(s),
            made: t0,
        };
        let mut reservations = Reservations::default();
        reservations.insert(source(1), at(30));
        reservations.insert(source(2), at(10));
        reservations.insert(source(3), at(20));
        assert_eq!(reservations.oldest(), Some(source(2)));
        // Replaced: its old place is gone from the order.
        reservations.insert(source(2), at(40));
        assert_eq!(reservations.oldest(), Some(source(3)));
        assert_eq!(reservations.len(), 3);
        assert!(reservations.remove(&source(3)).is_some());
        assert_eq!(reservations.oldest(), Some(source(1)));
        assert_eq!(
            reservations.next_expiry(),
            Some(t0 + Duration::from_secs(30))
        );
    }

    #[test]
    fn they_run_out_in_order_and_only_when_due() {
        let t0 = Instant::now();
        let at = |s: u64| Reservation {
            clan: s as usize,
            expires: t0 + Duration::from_secs(s),
            made: t0,
        };
        let mut reservations = Reservations::default();
        for s in [5, 1, 3, 2, 4] {
            reservations.insert(source(s as u16), at(s));
        }
        // Source 4 replaced with a later reservation: it runs out last.
        reservations.insert(source(4), at(9));
        assert!(reservations.pop_due(t0).is_none());
        let mut out = Vec::new();
        while let Some((from, r)) = reservations.pop_due(t0 + Duration::from_secs(8)) {
            out.push((from.port(), r.clan));
        }
        assert_eq!(out, [(1, 1), (2, 2), (3, 3), (5, 5)]);
        assert_eq!(reservations.len(), 1);
        assert_eq!(
            reservations
                .pop_due(t0 + Duration::from_secs(9))
                .map(|(s, _)| s),
            Some(source(4))
        );
        assert_eq!((reservations.len(), reservations.queue.len()), (0, 0));
    }

    #[test]
    fn a_flood_from_one_source_at_one_instant_holds_a_bounded_queue() {
        let t0 = Instant::now();
        let mut reservations = Reservations::default();
        for n in 0..100_000u32 {
            reservations.insert(
                source(1 + (n % 3) as u16),
                Reservation {
                    clan: 0,
                    expires: t0,
                    made: t0,
                },
            );
        }
        assert_eq!(reservations.len(), 3);
        assert!(reservations.queue.len() <= 2 * 3 + SLACK + 1);
        let mut due = 0;
        while reservations.pop_due(t0).is_some() {
            due += 1;
        }
        assert_eq!((due, reservations.queue.len()), (3, 0));
    }
}
