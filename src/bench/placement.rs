//! Where a burst's non-TTS phones end when TTS phones share the burst (docs/rules.md §4.3): a
//! TTS phone known as TTS at its GRQ takes no reservation, so the non-TTS phones of a
//! burst are placed exactly as the rules place them without the TTS phones.
//!
//! A burst is every phone's GRQ first, then every phone's RRQ at the C-LAN its GCF named
//! (what a storm of phones booting at once looks like to the gatekeeper), run through
//! [`Gatekeeper::handle`] in virtual time: no sockets, no clock. The figure is how many
//! non-TTS phones hold their socket on another C-LAN than in the same burst without its
//! TTS phones; 0 is the rule.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

use crate::config::Config;
use crate::gatekeeper::Gatekeeper;
use crate::phone::{Answer, Phone};

/// Phones of the bench's burst (the issue's: 2,000 region-1 phones on the default
/// topology).
pub const PHONES: usize = 2_000;

/// Share of TTS phones in the bench's burst, percent.
pub const TTS_PERCENT: usize = 30;

/// The phones of a burst from `network`.0.0/16: `phones` of them, phone `i` TTS when
/// `i % 10 < tts_percent / 10` (extension `5xxxxx`, which the default `[[tts]]` rule `5*`
/// makes TTS), the others extension `6xxxxx`.
pub fn phones(network: [u8; 2], phones: usize, tts_percent: usize) -> Vec<Phone> {
    (0..phones)
        .map(|i| {
            let tts = i % 10 < tts_percent / 10;
            let extension = if tts { 500_000 } else { 600_000 } + i as u32;
            let ip = Ipv4Addr::new(network[0], network[1], (i / 250) as u8, 1 + (i % 250) as u8);
            Phone::extension(extension, SocketAddr::from((ip, 5000)))
        })
        .collect()
}

/// Where a burst's phones ended: per C-LAN in configuration order, its name and the
/// non-TTS and TTS phones holding their socket there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    /// (C-LAN, non-TTS sockets, TTS sockets).
    pub clans: Vec<(String, u32, u32)>,
    /// Phones that got no GCF or no RCF.
    pub refused: usize,
}

impl Ended {
    /// Non-TTS sockets on the named C-LAN.
    pub fn non_tts_on(&self, clan: &str) -> u32 {
        self.clans
            .iter()
            .find(|(name, ..)| name == clan)
            .map_or(0, |&(_, non_tts, _)| non_tts)
    }
}

/// Runs a burst of `phones` against a new gatekeeper on `config`.
pub fn burst(config: Config, phones: &mut [Phone]) -> Result<Ended, String> {
    let discovery = config.gatekeeper.discovery;
    let mut gatekeeper =
        Gatekeeper::new(config).map_err(|e| format!("cannot start the gatekeeper: {e}"))?;
    let now = Instant::now();
    let mut refused = 0;
    let mut named = Vec::with_capacity(phones.len());
    for phone in phones.iter_mut() {
        let grq = phone.grq();
        let replies = gatekeeper.handle(now, discovery, phone.ras_address, &grq);
        let clan = match replies.first().map(|reply| Answer::read(&reply.payload)) {
            Some(Ok(Answer::Gcf {
                ras_address: Some(clan),
                ..
            })) => Some(clan),
            _ => None,
        };
        named.push(clan);
    }
    for (phone, clan) in phones.iter_mut().zip(named) {
        let Some(clan) = clan else {
            refused += 1;
            continue;
        };
        let rrq = phone.rrq();
        let replies = gatekeeper.handle(now, clan, phone.ras_address, &rrq);
        match replies.first().map(|reply| Answer::read(&reply.payload)) {
            Some(Ok(answer @ Answer::Rcf { .. })) => phone.learn(&answer),
            _ => refused += 1,
        }
    }
    let mut clans: Vec<(String, u32, u32)> = gatekeeper
        .clans()
        .into_iter()
        .map(|clan| (clan.name, 0, 0))
        .collect();
    for registration in gatekeeper.registrations() {
        let Some(entry) = clans
            .iter_mut()
            .find(|(name, ..)| Some(name) == registration.clan.as_ref())
        else {
            continue;
        };
        if registration.tts {
            entry.2 += 1;
        } else {
            entry.1 += 1;
        }
    }
    Ok(Ended { clans, refused })
}

/// The bench's figure: the burst with and without its TTS phones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Phones in the burst.
    pub phones: usize,
    /// Of them TTS, percent.
    pub tts_percent: usize,
    /// The whole burst.
    pub with_tts: Ended,
    /// The same burst without its TTS phones.
    pub without_tts: Ended,
}

impl Placement {
    /// Non-TTS phones whose socket is on another C-LAN than without the TTS phones.
    pub fn moved(&self) -> u32 {
        let differences: u32 = self
            .with_tts
            .clans
            .iter()
            .zip(&self.without_tts.clans)
            .map(|(with, without)| with.1.abs_diff(without.1))
            .sum();
        differences / 2
    }

    /// One line: the figure and the non-TTS sockets per C-LAN.
    pub fn line(&self) -> String {
        let each: Vec<String> = self
            .with_tts
            .clans
            .iter()
            .filter(|&&(_, non_tts, _)| non_tts > 0)
            .map(|(name, non_tts, _)| format!("{name} {non_tts}"))
            .collect();
        format!(
            "{} region-1 phones, {} % TTS: {} non-TTS phones placed otherwise than without \
             the TTS phones (non-TTS sockets: {}); {} refused",
            self.phones,
            self.tts_percent,
            self.moved(),
            each.join(", "),
            self.with_tts.refused
        )
    }
}

/// The burst of `phones` region-1 phones, [`TTS_PERCENT`] of them TTS, on the default
/// topology, and the same burst without its TTS phones.
pub fn measure(phones: usize) -> Result<Placement, String> {
    let config = crate::config::embedded_default();
    let mut all = self::phones([127, 1], phones, TTS_PERCENT);
    let with_tts = burst(config.clone(), &mut all)?;
    let mut non_tts: Vec<Phone> = self::phones([127, 1], phones, TTS_PERCENT)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % 10 >= TTS_PERCENT / 10)
        .map(|(_, phone)| phone)
        .collect();
    let without_tts = burst(config, &mut non_tts)?;
    Ok(Placement {
        phones,
        tts_percent: TTS_PERCENT,
        with_tts,
        without_tts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench's own burst, as `rasgk bench` runs it: no non-TTS phone moves, and none
    /// leaves the priority-1 boards of region 1 while they have room.
    #[test]
    fn tts_phones_move_no_non_tts_phone() {
        let placement = measure(PHONES).unwrap();
        assert_eq!(placement.moved(), 0, "{}", placement.line());
        let ended = &placement.with_tts;
        assert_eq!(ended.refused, 0);
        assert_eq!(
            (ended.non_tts_on("clan-1a"), ended.non_tts_on("clan-1b")),
            (480, 480),
            "{ended:?}"
        );
        let elsewhere: u32 = ["clan-2a", "clan-2b", "clan-3a", "clan-3b"]
            .iter()
            .map(|clan| ended.non_tts_on(clan))
            .sum();
        assert_eq!(elsewhere, 0, "{ended:?}");
        let line = placement.line();
        assert!(
            line.contains(": 0 non-TTS phones placed otherwise"),
            "{line}"
        );
        assert!(
            line.contains("(non-TTS sockets: clan-1a 480, clan-1b 480, clan-1c 220, pe-1 220)"),
            "{line}"
        );
    }
}
