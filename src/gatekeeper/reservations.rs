//! The GCF reservations (docs/rules.md §4.3), one per RAS source, with the order they run out in,
//! so that at `[limits] max_reservations` the oldest one can make room for a new one.
//!
//! A flood of GRQs from one source only ever holds one reservation (each replaces the last);
//! the cap is for GRQs from very many sources, which would otherwise hold a place each for
//! `gcf_hold_s`. Dropping the oldest rather than refusing the newest keeps the gatekeeper
//! answering new phones: a real phone sends its RRQ within milliseconds of its GCF.

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::time::Instant;

use super::Reservation;

/// Reservations by source, and by expiry.
#[derive(Debug, Default)]
pub(super) struct Reservations {
    by_source: HashMap<SocketAddr, Reservation>,
    by_expiry: BTreeSet<(Instant, SocketAddr)>,
}

impl Reservations {
    /// The reservation of a source.
    pub fn get(&self, source: &SocketAddr) -> Option<&Reservation> {
        self.by_source.get(source)
    }

    /// Keeps a source's reservation (replacing any it had).
    pub fn insert(&mut self, source: SocketAddr, reservation: Reservation) {
        if let Some(old) = self.by_source.insert(source, reservation) {
            self.by_expiry.remove(&(old.expires, source));
        }
        self.by_expiry.insert((reservation.expires, source));
    }

    /// Takes a source's reservation away.
    pub fn remove(&mut self, source: &SocketAddr) -> Option<Reservation> {
        let reservation = self.by_source.remove(source)?;
        self.by_expiry.remove(&(reservation.expires, *source));
        Some(reservation)
    }

    /// The source whose reservation runs out first.
    pub fn oldest(&self) -> Option<SocketAddr> {
        self.by_expiry.first().map(|&(_, source)| source)
    }

    /// Reservations held.
    pub fn len(&self) -> usize {
        self.by_source.len()
    }

    /// Every reservation, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&SocketAddr, &Reservation)> {
        self.by_source.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_oldest_is_the_one_that_runs_out_first() {
        let t0 = Instant::now();
        let source = |n: u16| SocketAddr::from(([127, 1, 0, 1], n));
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
        // Replaced: its old expiry is gone from the order.
        reservations.insert(source(2), at(40));
        assert_eq!(reservations.oldest(), Some(source(3)));
        assert_eq!(reservations.len(), 3);
        assert!(reservations.remove(&source(3)).is_some());
        assert_eq!(reservations.oldest(), Some(source(1)));
        assert_eq!(reservations.by_expiry.len(), reservations.len());
    }
}
