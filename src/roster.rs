//! Which phone is which: phone `n`'s region, address and whether it is TTS, as
//! `rasgk storm` numbers its phones. `rasgk plan` follows the same rule for a scenario
//! group given by regions, so that a planned phone and a storm's phone of the same number
//! are the same phone (tests/plan_live.rs and tests/drill_live.rs compare them one for one).
//!
//! The regions are taken round robin (a region listed twice gets twice the phones); within
//! its region a phone takes the next address of the block 127.R.1.1, 127.R.1.2, …,
//! 127.R.1.250, 127.R.2.1, …: 250 to each /24, so that .0 and .251–.255 stay free, and
//! 254 /24s, up to 127.R.254.250. Over IPv6 (`rasgk storm --ipv6`) the same numbers make
//! fd00:0:R::X:Y, written in the same decimal digits ([`address6`]): phone 127.12.2.51 is
//! fd00:0:12::2:51, and region R's phones are in fd00:0:R::/48. TTS phones are spread
//! evenly: phone `n` is TTS when the share's running total crosses a whole number at `n`.
//!
//! Routed calls (`rasgk storm --calls-per-s`) take turns too: call `j` of the storm is
//! placed by phone `j mod phones` ([`caller`]), which calls the phone half the storm away
//! ([`callee`]), so a phone places one call every `phones` calls and, while the calls last
//! less than that many calls' time, has at most one call of its own and one it answers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::config::Family;

/// Phones of a region on one 127.R.B.x block.
const PER_BLOCK: usize = 250;

/// The most phones a region's addresses hold: 127.R.1.1 to 127.R.254.250.
pub const MOST_PER_REGION: usize = PER_BLOCK * 254;

/// A region's phone addresses, first to last, as the help and errors name them.
pub fn span(family: Family) -> &'static str {
    match family {
        Family::V4 => "127.R.1.1 to 127.R.254.250",
        Family::V6 => "fd00:0:R::1:1 to fd00:0:R::254:250",
    }
}

/// Phone `n`'s region, and how many phones of that region come before it.
pub fn of_region(regions: &[u8], n: usize) -> (u8, usize) {
    let round = regions.len();
    let region = regions[n % round];
    let times = regions.iter().filter(|&&r| r == region).count();
    let earlier = regions[..n % round]
        .iter()
        .filter(|&&r| r == region)
        .count();
    (region, (n / round) * times + earlier)
}

/// Phone `n`'s place: its region R, then X and Y, the last two numbers of 127.R.X.Y (and of
/// fd00:0:R::X:Y). `n` must leave its region within [`MOST_PER_REGION`].
fn place(regions: &[u8], n: usize) -> (u8, u8, u8) {
    let (region, j) = of_region(regions, n);
    let (block, host) = (j / PER_BLOCK, j % PER_BLOCK);
    (region, (1 + block) as u8, (1 + host) as u8)
}

/// Phone `n`'s IPv4 address, 127.R.X.Y.
pub fn address(regions: &[u8], n: usize) -> Ipv4Addr {
    let (region, x, y) = place(regions, n);
    Ipv4Addr::new(127, region, x, y)
}

/// Phone `n`'s IPv6 address, fd00:0:R::X:Y: the numbers of its IPv4 address, each written
/// with the same decimal digits (region 12 is `12`, not `c`), so that the two read alike.
pub fn address6(regions: &[u8], n: usize) -> Ipv6Addr {
    let (region, x, y) = place(regions, n);
    let [region, x, y] = [region, x, y].map(decimal_digits);
    Ipv6Addr::new(0xfd00, 0, region, 0, 0, 0, x, y)
}

/// Phone `n`'s address of `family`.
pub fn address_of(family: Family, regions: &[u8], n: usize) -> IpAddr {
    match family {
        Family::V4 => address(regions, n).into(),
        Family::V6 => address6(regions, n).into(),
    }
}

/// The 16-bit group that reads as `number` does in decimal: 250 → 0x250.
fn decimal_digits(number: u8) -> u16 {
    let number = u16::from(number);
    ((number / 100) << 8) | ((number / 10 % 10) << 4) | (number % 10)
}

/// The region that `count` phones give the most phones, with how many (the first such
/// region listed); `None` for no regions.
pub fn fullest_region(regions: &[u8], count: usize) -> Option<(u8, usize)> {
    let (rounds, extra) = (count / regions.len().max(1), count % regions.len().max(1));
    let mut fullest: Option<(u8, usize)> = None;
    for &region in regions {
        let times = regions.iter().filter(|&&r| r == region).count();
        let early = regions[..extra].iter().filter(|&&r| r == region).count();
        let phones = rounds * times + early;
        if fullest.is_none_or(|(_, most)| phones > most) {
            fullest = Some((region, phones));
        }
    }
    fullest
}

/// Whether phone `n` is TTS, `share` of all phones being TTS.
pub fn is_tts(share: f64, n: usize) -> bool {
    ((n + 1) as f64 * share).floor() > (n as f64 * share).floor()
}

/// The TTS phones among phones `0..n`.
pub fn tts_before(share: f64, n: usize) -> usize {
    (n as f64 * share).floor() as usize
}

/// Phone `n`'s extension: TTS phones number up from `tts_from`, the others from `from`, each
/// in phone order.
pub fn extension(share: f64, tts_from: u32, from: u32, n: usize) -> u32 {
    let tts_before = tts_before(share, n) as u32;
    if is_tts(share, n) {
        tts_from + tts_before
    } else {
        from + (n as u32 - tts_before)
    }
}

/// The phone that places call `j` of a storm of `phones` phones (at least 1).
pub fn caller(phones: usize, j: u64) -> usize {
    (j % phones.max(1) as u64) as usize
}

/// The phone that phone `n` calls: the one half the storm away, `(n + phones / 2) mod
/// phones` (itself in a storm of one phone, which the storm refuses).
pub fn callee(phones: usize, n: usize) -> usize {
    (n + phones / 2) % phones.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_take_turns_and_fill_their_blocks_250_at_a_time() {
        let regions = [1, 2, 1];
        let addresses: Vec<Ipv4Addr> = (0..6).map(|n| address(&regions, n)).collect();
        assert_eq!(
            addresses,
            [
                Ipv4Addr::new(127, 1, 1, 1),
                Ipv4Addr::new(127, 2, 1, 1),
                Ipv4Addr::new(127, 1, 1, 2),
                Ipv4Addr::new(127, 1, 1, 3),
                Ipv4Addr::new(127, 2, 1, 2),
                Ipv4Addr::new(127, 1, 1, 4),
            ]
        );
        assert_eq!(address(&[3], 250), Ipv4Addr::new(127, 3, 2, 1));
        assert_eq!(
            address(&[3], MOST_PER_REGION - 1),
            Ipv4Addr::new(127, 3, 254, 250)
        );
    }

    #[test]
    fn ipv6_phones_take_the_numbers_of_their_ipv4_addresses_in_the_same_digits() {
        let regions = [1, 12, 255];
        for n in (0..3_000).chain([MOST_PER_REGION * 3 - 1]) {
            let v4 = address(&regions, n);
            let v6 = address6(&regions, n);
            let [_, r, x, y] = v4.octets();
            assert_eq!(v6.to_string(), format!("fd00:0:{r}::{x}:{y}"), "phone {n}");
            assert_eq!(address_of(Family::V4, &regions, n), IpAddr::V4(v4));
            assert_eq!(address_of(Family::V6, &regions, n), IpAddr::V6(v6));
        }
        assert_eq!(
            address6(&[3], 0),
            "fd00:0:3::1:1".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(
            address6(&[3], 250),
            "fd00:0:3::2:1".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(
            address6(&[200], MOST_PER_REGION - 1),
            "fd00:0:200::254:250".parse::<Ipv6Addr>().unwrap()
        );
        // Every phone of a region lies in fd00:0:R::/48, one address each.
        let all: std::collections::HashSet<Ipv6Addr> =
            (0..2_000).map(|n| address6(&[7, 8], n)).collect();
        assert_eq!(all.len(), 2_000);
        assert!(all
            .iter()
            .all(|ip| matches!(ip.segments()[..3], [0xfd00, 0, 7 | 8])));
    }

    #[test]
    fn the_fullest_region_counts_what_the_addresses_give_it() {
        for (regions, count) in [
            (vec![1, 2, 3], 2_000),
            (vec![1, 2, 1], 7),
            (vec![4], 1),
            (vec![2, 1, 1, 2, 2], 13),
        ] {
            let (region, most) = fullest_region(&regions, count).unwrap();
            let counted = (0..count)
                .filter(|&n| of_region(&regions, n).0 == region)
                .count();
            assert_eq!(counted, most, "{regions:?} {count}");
            for &other in &regions {
                let theirs = (0..count).filter(|&n| of_region(&regions, n).0 == other);
                assert!(theirs.count() <= most);
            }
            // Every phone's index within its region is below its region's count.
            assert!((0..count).all(|n| of_region(&regions, n).1 < most));
        }
        assert_eq!(fullest_region(&[], 10), None);
    }

    #[test]
    fn tts_phones_are_spread_evenly_and_counted_before_each_phone() {
        for share in [0.0, 0.33, 0.5, 1.0] {
            let mut seen = 0;
            for n in 0..1_000 {
                assert_eq!(tts_before(share, n), seen, "share {share}, phone {n}");
                seen += usize::from(is_tts(share, n));
            }
            assert_eq!(seen, (1_000.0 * share) as usize);
        }
        let first: Vec<bool> = (0..4).map(|n| is_tts(0.5, n)).collect();
        assert_eq!(first, [false, true, false, true]);
        let extensions: Vec<u32> = (0..5).map(|n| extension(0.5, 500, 600, n)).collect();
        assert_eq!(extensions, [600, 500, 601, 501, 602]);
    }

    #[test]
    fn callers_take_turns_and_call_the_phone_half_the_storm_away() {
        let callers: Vec<usize> = (0..7).map(|j| caller(5, j)).collect();
        assert_eq!(callers, [0, 1, 2, 3, 4, 0, 1]);
        assert_eq!(callee(2_000, 0), 1_000);
        assert_eq!(callee(2_000, 1_000), 0, "the callee calls back its caller");
        assert_eq!(callee(5, 4), 1);
        // Nobody calls itself, and in 1,000 calls of 2,000 phones nobody is called twice.
        for phones in 2..50 {
            assert!((0..phones).all(|n| callee(phones, n) != n), "{phones}");
        }
        let called: std::collections::BTreeSet<usize> = (0..1_000)
            .map(|j| callee(2_000, caller(2_000, j)))
            .collect();
        assert_eq!(called.len(), 1_000);
    }
}
