//! Scale of the policy: core time per GRQ as the number of C-LANs grows (64, 1,024,
//! 10,000), through the whole `Gatekeeper::handle` path — decode, GCF choice, reservation,
//! encode — with 1,000 phones sending GRQs in turn (each new GRQ replaces its phone's
//! reservation, so the state stays the same size). `benches/policy.rs` measures the same
//! with criterion; `rasgk bench` measures it in alternating slices, each C-LAN count in
//! turn, so a change in the machine's load falls on all of them alike.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

use crate::config::{self, Clan, ClanKind, Link, LinkKind, Region};
use crate::gatekeeper::Gatekeeper;
use crate::phone::Phone;

use super::ceiling::median;

/// The C-LAN counts measured, smallest first.
pub const CLAN_COUNTS: [usize; 3] = [64, 1024, 10_000];

/// Slices of each C-LAN count.
const ROUNDS: usize = 5;

/// Phones sending GRQs in turn.
const PHONES: u32 = 1000;

/// `clans` C-LANs over 16 regions in a chain of direct links, every cap large.
pub fn topology(clans: usize) -> config::Config {
    let mut config = config::embedded_default();
    config.regions = (1..=16u16)
        .map(|id| Region {
            id,
            name: format!("r{id}"),
            networks: vec![ipnet::IpNet::from(ipnet::Ipv4Net::new_assert(
                Ipv4Addr::new(127, id as u8, 0, 0),
                16,
            ))],
        })
        .collect();
    config.links = (1..16u16)
        .map(|id| Link {
            near: id,
            far: id + 1,
            kind: LinkKind::Direct,
            agl: true,
            symmetric: true,
        })
        .collect();
    config.tts.clear();
    config.clans = (0..clans)
        .map(|i| Clan {
            name: format!("clan-{i}"),
            region: 1 + (i % 16) as u16,
            address: SocketAddr::from(([127, 0, 100 + (i / 250) as u8, 1 + (i % 250) as u8], 1719)),
            address6: None,
            priority: 1 + (i % 3) as u8,
            max_sockets: 1_000_000,
            in_service: true,
            kind: ClanKind::Clan,
            node: "cm1".into(),
            signal_port: 1720,
            warn_sockets: None,
        })
        .collect();
    config
}

/// A gatekeeper of `clans` C-LANs and the phones that send it GRQs.
pub struct Bed {
    gatekeeper: Gatekeeper,
    discovery: SocketAddr,
    phones: Vec<Phone>,
    next: usize,
}

impl Bed {
    /// The gatekeeper of [`topology`]`(clans)` and 1,000 phones of its 16 regions.
    pub fn new(clans: usize) -> Result<Bed, String> {
        let config = topology(clans);
        let discovery = config.gatekeeper.discovery;
        let gatekeeper = Gatekeeper::new(config)
            .map_err(|e| format!("cannot start a gatekeeper of {clans} C-LANs: {e}"))?;
        let phones = (0..PHONES)
            .map(|i| {
                let ip = Ipv4Addr::new(127, 1 + (i % 16) as u8, 1, 1 + (i / 16) as u8);
                Phone::extension(60_000 + i, SocketAddr::from((ip, 5000)))
            })
            .collect();
        Ok(Bed {
            gatekeeper,
            discovery,
            phones,
            next: 0,
        })
    }

    /// The next phone's next GRQ, built and answered; how many datagrams came back.
    pub fn grq(&mut self, now: Instant) -> usize {
        let at = self.next % self.phones.len();
        self.next += 1;
        let phone = &mut self.phones[at];
        let grq = phone.grq();
        self.gatekeeper
            .handle(now, self.discovery, phone.ras_address, &grq)
            .len()
    }
}

/// Core time per GRQ at each of [`CLAN_COUNTS`].
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// (C-LANs, microseconds per GRQ: the median of the slices).
    pub per_grq_us: Vec<(usize, f64)>,
}

impl Scale {
    /// Time per GRQ at the largest count over that at the smallest.
    pub fn ratio(&self) -> f64 {
        match (self.per_grq_us.first(), self.per_grq_us.last()) {
            (Some(&(_, smallest)), Some(&(_, largest))) if smallest > 0.0 => largest / smallest,
            _ => 0.0,
        }
    }
}

/// Measures `grqs` GRQs a slice at each C-LAN count, [`ROUNDS`] slices each, the counts in
/// turn; a tenth as many first, unmeasured, to warm each gatekeeper up. Every GRQ must be
/// answered (a GCF), or the figure would time something else.
pub fn measure(grqs: usize) -> Result<Scale, String> {
    let now = Instant::now();
    let mut beds = CLAN_COUNTS
        .iter()
        .map(|&clans| Bed::new(clans))
        .collect::<Result<Vec<_>, _>>()?;
    for bed in &mut beds {
        for _ in 0..grqs / 10 {
            bed.grq(now);
        }
    }
    let mut slices = vec![Vec::new(); beds.len()];
    for _ in 0..ROUNDS {
        for (bed, slices) in beds.iter_mut().zip(&mut slices) {
            let started = Instant::now();
            let mut answered = 0;
            for _ in 0..grqs {
                answered += bed.grq(now);
            }
            let micros = started.elapsed().as_secs_f64() * 1e6;
            if answered != grqs {
                return Err(format!(
                    "{} of {grqs} GRQs answered at {} C-LANs",
                    answered,
                    bed.gatekeeper.config().clans.len()
                ));
            }
            slices.push(micros / grqs.max(1) as f64);
        }
    }
    Ok(Scale {
        per_grq_us: CLAN_COUNTS
            .iter()
            .zip(&slices)
            .map(|(&clans, slices)| (clans, median(slices)))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_count_is_measured_and_every_grq_answered() {
        let scale = measure(200).unwrap();
        let counts: Vec<usize> = scale.per_grq_us.iter().map(|&(c, _)| c).collect();
        assert_eq!(counts, CLAN_COUNTS);
        assert!(scale.per_grq_us.iter().all(|&(_, us)| us > 0.0));
        assert!(scale.ratio() > 0.0);
    }

    #[test]
    fn the_topology_has_the_clans_asked_for_and_starts() {
        let config = topology(1024);
        assert_eq!(config.clans.len(), 1024);
        assert_eq!(config.regions.len(), 16);
        assert!(Gatekeeper::new(config).is_ok());
    }
}
